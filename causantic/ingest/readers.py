"""Reading transcript files in parallel: a read function run over jobs, results in order.

A first ingest (or `import --from episodic-memory`) reads every transcript a user has, often
hundreds of megabytes. Parsing, redacting and chunking a file is pure Python and takes no
database (`pipeline.read_file`), about half the work of an ingest; writing stays in the one
process that holds the database. So when a run has at least `MIN_BYTES` to read in at least
two files, reader processes (one per core, at most `MAX_READERS`) read ahead while this
process writes what they have read, in the order the files would have been read here: the
store is the same, byte for byte, as a read in one process gives (a test checks).

Reader processes are forked (Linux): they inherit the read function (its redaction rules,
exclusions) instead of receiving it pickled, start in milliseconds, and are killed by the
kernel when the ingest process dies (`PR_SET_PDEATHSIG`), however it dies. Where fork is not
the platform's way (macOS, Windows), or not safe (another thread runs, or ONNX Runtime is
loaded), files are read here, one after another, as before. Readers ignore Ctrl-C: the ingest process stops them and says what it kept. A
reader that dies (killed, out of memory) is not a failure: what it had not read is read here.
Readers read ahead while this process writes, so neither waits for the other, but only so
far (`AHEAD`, `AHEAD_BYTES`): memory holds a few parsed files, never all of them.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Callable, Generator, Sequence
from typing import Any, TypeVar

#: A run reads in reader processes only with at least this many bytes to read...
MIN_BYTES = 8 << 20
#: ...and with at most this many of them (beyond it, this process's writing is the limit).
MAX_READERS = 4

#: Read ahead: at most this many jobs per reader in flight, and past one per reader, no
#: more than this many bytes to read. Results wait in this process's memory as objects,
#: and many large ones there slowed its writing (Python's garbage collector walks them):
#: 650 MB of 32 MB files took 235 s with 16 in flight against 215 s in one process.
AHEAD = 8
AHEAD_BYTES = 24 << 20

J = TypeVar("J")
R = TypeVar("R")
#: What reading one job gave: (the read or None, why the file was kept out or None, the
#: error that stopped the read or None).
Outcome = tuple[Any, str | None, Exception | None]

_read_in_this_reader: Callable[[Any], tuple[Any, str | None]] | None = None
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def read_one(read: Callable[[J], tuple[R | None, str | None]], job: J) -> Outcome:
    """``read(job)``, with the errors a file can cause (gone, unreadable, not decodable)
    given back as a value instead of raised."""
    try:
        item, kept_out = read(job)
    except (OSError, ValueError) as exc:
        return None, None, exc
    return item, kept_out, None


def reader_count(jobs: int, total_bytes: int, asked: int | None = None) -> int:
    """How many reader processes to use (1: read here): ``asked`` when given, else one per
    core up to MAX_READERS when there is enough to read and fork is how processes start."""
    if asked is not None:
        return max(1, asked) if _can_fork() else 1
    if jobs < 2 or total_bytes < MIN_BYTES or not _can_fork():
        return 1
    return max(1, min(os.cpu_count() or 1, MAX_READERS, jobs))


def read_all(jobs: Sequence[J], read: Callable[[J], tuple[R | None, str | None]],
             readers: int, sizes: Sequence[int] | None = None
             ) -> Generator[Outcome, None, None]:
    """``read_one(read, job)`` for every job, yielded in the jobs' order; with ``readers``
    > 1, run in that many forked reader processes (``sizes``: each job's bytes to read,
    which bound how far they read ahead)."""
    if readers <= 1:
        for job in jobs:
            yield read_one(read, job)
        return
    yield from _in_readers(jobs, read, readers, sizes or [0] * len(jobs))


def _in_readers(jobs: Sequence[J], read: Callable[[J], tuple[R | None, str | None]],
                readers: int, sizes: Sequence[int]) -> Generator[Outcome, None, None]:
    # deferred: only a run with enough to read starts reader processes
    import multiprocessing
    from concurrent.futures import Future, ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    pool = ProcessPoolExecutor(readers, mp_context=multiprocessing.get_context("fork"),
                               initializer=_start_reader, initargs=(read, os.getpid()))
    pending: deque[tuple[J, int, Future[Outcome] | None]] = deque()
    waiting = iter(zip(jobs, sizes, strict=True))
    ahead = 0  # bytes of the jobs in flight
    broken = False  # a reader died: from then on every job is read here, in its turn

    def submit_more() -> None:
        nonlocal ahead, broken
        while not broken and (len(pending) < readers or (
                ahead < AHEAD_BYTES and len(pending) < AHEAD * readers)):
            nxt = next(waiting, None)
            if nxt is None:
                return
            try:
                future = pool.submit(_read_here, nxt[0])
            except BrokenProcessPool:
                broken, future = True, None
            pending.append((nxt[0], nxt[1], future))
            ahead += nxt[1]

    try:
        submit_more()
        while pending:
            job, size, future = pending.popleft()
            ahead -= size
            if future is not None and not broken:
                try:
                    outcome = future.result()
                except BrokenProcessPool:
                    broken = True
                else:
                    yield outcome
                    submit_more()
                    continue
            yield read_one(read, job)
        for job, _ in waiting:
            yield read_one(read, job)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _can_fork() -> bool:
    """Fork is the platform's way (Linux) and safe here: no other thread of ours runs, and
    no ONNX Runtime (whose thread pools a fork would copy half-way) is loaded."""
    # deferred: asked once a run, only when there is enough to read
    import threading

    return (sys.platform.startswith("linux") and threading.active_count() == 1
            and "onnxruntime" not in sys.modules)


def _start_reader(read: Callable[[Any], tuple[Any, str | None]], parent: int) -> None:
    """In each reader: keep the read function (inherited, not pickled), leave Ctrl-C to the
    ingest process (one key press must not print a traceback per reader), and die with it:
    a reader outliving a killed ingest would wait on its queue forever."""
    # deferred: only reader processes need them
    import ctypes
    import signal

    global _read_in_this_reader
    _read_in_this_reader = read
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # no prctl: a reader then ends when it next finds its parent gone
    if os.getppid() != parent:  # the ingest died before the line above took effect
        os._exit(1)


def _read_here(job: Any) -> Outcome:
    assert _read_in_this_reader is not None
    return read_one(_read_in_this_reader, job)
