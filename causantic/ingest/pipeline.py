"""The ingest pipeline: read -> turns -> chunks (redacted) -> store -> link.

Per file, incrementally: a checkpoint remembers the file's identity (device, inode, size,
mtime, a hash of its first bytes), the end of the last complete line read, and the start of
its newest turn (which may still be growing). An unchanged file costs one `stat`. An appended
file is parsed from the start of its newest turn: the chunks read from there are replaced,
and the stream is relinked so the first new chunk follows the previous tail. A rewritten or
truncated file is read again from the start.

Every file's checkpoint is looked up first (`_plan`); files are then read and chunked outside
any transaction (`read_file`, in reader processes when a run has enough to read:
`causantic.ingest.readers`), in order, and written in batches: the files read
since the last write, up to about `_BATCH_BYTES` of transcript (a session is never split from
its sub-agent files), go into one short transaction with their checkpoints, and the sessions
they touched are relinked and their states recomputed once, at the end of that same
transaction (not once per file, which redid a whole session for each of its sub-agents). The
transaction re-checks every file's checkpoint: a file another process ingested meanwhile is
left out and redone from its new checkpoint. A batch commits or vanishes as a whole, chunk
ids are content hashes and edges are unique, so ingesting twice, concurrently, or after a
crash half way gives the same store as once.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import apsw

from causantic.derive_state import refresh as refresh_session_states
from causantic.errors import DatabaseBusy, UsageError
from causantic.ingest.chunking import DEFAULT_MAX_TOKENS, Chunk, Redact, chunk_turn
from causantic.ingest.exclude import Exclusions, head_cwd
from causantic.ingest.linking import link_project_continuations, link_session
from causantic.ingest.readers import Outcome, read_all, read_one, reader_count
from causantic.ingest.scrub import scrub_parsed
from causantic.lessons.episodes import refresh as refresh_lessons
from causantic.store import files as file_table
from causantic.store import sql as store_sql
from causantic.store.chunks import adopt_project, delete_from, forgotten_keys, insert_chunks
from causantic.store.db import Store
from causantic.store.sessions import SessionRow, file_session_starts, get_session, upsert_session
from causantic.timestamps import iso_utc
from causantic.transcripts.discover import TranscriptFile, agents_with_files, discover
from causantic.transcripts.project import checkout_for_cwd, project_for_cwd
from causantic.transcripts.turns import ParsedFile, is_warmup, parse_transcript

_HEAD_BYTES = 4096
_RETRIES = 5
_BATCH_BYTES = 8 << 20  # transcript bytes read per write transaction, about
_BUSY_WAIT_S = 60.0  # how long a batch waits for other writers before ingest gives up


@dataclass
class IngestReport:
    """What one ingest run did."""

    files: int = 0
    files_read: int = 0
    files_unchanged: int = 0
    kept_out: dict[str, int] = field(default_factory=dict)  # why -> files (`ingest.exclude`)
    chunks_added: int = 0
    chunks_replaced: int = 0
    edges_added: int = 0
    sessions: set[str] = field(default_factory=set)
    bad_lines: int = 0
    redactions: int = 0
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    readers: int = 1  # processes that read files (`causantic.ingest.readers`)

    @property
    def files_excluded(self) -> int:
        """Files kept out of memory, whatever the reason."""
        return sum(self.kept_out.values())

    def as_dict(self) -> dict[str, object]:
        return {
            "files": self.files,
            "files_read": self.files_read,
            "files_unchanged": self.files_unchanged,
            "files_excluded": self.files_excluded,
            "kept_out": self.kept_out,
            "chunks_added": self.chunks_added,
            "chunks_replaced": self.chunks_replaced,
            "edges_added": self.edges_added,
            "sessions_touched": len(self.sessions),
            "bad_lines": self.bad_lines,
            "redactions": self.redactions,
            "problems": self.problems,
            "seconds": round(self.seconds, 3),
            "readers": self.readers,
        }


def ingest_paths(
    store: Store,
    paths: list[Path],
    redact: Redact,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    on_file: Callable[[TranscriptFile, IngestReport], None] | None = None,
    check_integrity: bool = True,
    exclusions: Exclusions | None = None,
    readers: int | None = None,
    deadline: float | None = None,
) -> IngestReport:
    """Ingest every transcript under `paths` (files or folders) into the store.

    `on_file` is called once per file, after the file's work is committed (or found
    unnecessary, or failed). With `check_integrity`, the file is checked (`PRAGMA
    quick_check`) before the first write, so nothing is written into a damaged file.
    A file whose session works in a folder kept out of memory (`exclusions`, default: the
    `.nocausantic` marker files alone) stores nothing, not even a checkpoint, so it is read
    in full once it is no longer kept out. `readers`: how many processes read files
    (`causantic.ingest.readers`; None: as many as it finds worth it, 1: this one alone).
    `deadline` (a `time.monotonic()` value): past it, a write that finds another process
    writing gives up instead of waiting for it (a hook that must answer in time).

    Raises
    ------
    UsageError : a path does not exist.
    DatabaseCorrupt : the integrity check failed.
    DatabaseBusy : another process kept writing past the wait (or past `deadline`); what
        was committed before stays, and a rerun reads only the rest.
    """
    started = time.perf_counter()
    try:
        found = discover(paths)
    except FileNotFoundError as exc:
        raise UsageError(f"no such file or folder: {exc}") from exc
    report = IngestReport(files=len(found))
    exclusions = exclusions or Exclusions()
    batch: list[_Read] = []
    batch_bytes = 0
    checked = not check_integrity
    jobs = [(tf, _plan_or_report(store, tf, report, on_file))
            for tf in _with_sub_agents_after_parents(found)]
    todo = [job for _, job in jobs if job is not None]
    read = partial(read_file, redact=redact, max_tokens=max_tokens, exclusions=exclusions)
    report.readers = reader_count(len(todo), sum(j.to_read for j in todo), readers)
    loaded = read_all(todo, read, report.readers, [j.to_read for j in todo])
    try:
        for tf, job in jobs:
            # Cut only before a main session, so a session's sub-agent files share its
            # batch (its links and state are then computed once).
            if batch_bytes >= _BATCH_BYTES and tf.kind == "session":
                checked = checked or _check(store)
                _commit(store, batch, redact, report, max_tokens, on_file, deadline)
                batch, batch_bytes = [], 0
            if job is None:
                continue
            item = _report_read(job, next(loaded), report, on_file)
            if item is not None:
                batch.append(item)
                batch_bytes += item.bytes_read
    finally:
        loaded.close()  # stops the reader processes, if any, on an error or Ctrl-C
    if batch and not checked:
        _check(store)
    _commit(store, batch, redact, report, max_tokens, on_file, deadline)
    report.seconds = time.perf_counter() - started
    return report


def _check(store: Store) -> bool:
    """Before the first write of a run: a damaged file is reported, never written into."""
    store.check_integrity()
    return True


def _with_sub_agents_after_parents(found: list[TranscriptFile]) -> list[TranscriptFile]:
    """Discovery order (main sessions first), but each session's sub-agent files (known by
    their folder) right after it. Sub-agent files of unknown parents stay at the end."""
    parents = {tf.session_hint for tf in found if tf.kind == "session" and tf.session_hint}
    children: dict[str, list[TranscriptFile]] = {}
    rest: list[TranscriptFile] = []
    for tf in found:
        if tf.kind == "subagent" and tf.session_hint in parents:
            children.setdefault(tf.session_hint, []).append(tf)
        elif tf.kind == "subagent":
            rest.append(tf)
    out: list[TranscriptFile] = []
    for tf in found:
        if tf.kind == "session":
            out.append(tf)
            out += children.pop(tf.session_hint, []) if tf.session_hint else []
    return out + rest


@dataclass(frozen=True)
class ReadJob:
    """A file to read, with what the store knows of it (`_plan`): all `read_file` needs."""

    tf: TranscriptFile
    path: str
    st: os.stat_result
    checkpoint: file_table.Checkpoint | None
    attempt: int

    @property
    def to_read(self) -> int:
        """Bytes past what was read before, about (a rewritten file is read whole)."""
        done = self.checkpoint.complete_offset if self.checkpoint is not None else 0
        return self.st.st_size - min(done, self.st.st_size)


@dataclass
class _Read:
    """One file read and chunked, waiting to be written."""

    tf: TranscriptFile
    path: str
    st: os.stat_result
    head: str
    start: int
    checkpoint: file_table.Checkpoint | None
    parsed: ParsedFile  # its turns are dropped once chunked
    chunks: list[Chunk]
    warmup: bool
    attempt: int

    @property
    def bytes_read(self) -> int:
        return self.st.st_size - self.start


def _plan_or_report(
    store: Store, tf: TranscriptFile, report: IngestReport,
    on_file: Callable[[TranscriptFile, IngestReport], None] | None, attempt: int = 0,
) -> ReadJob | None:
    """`_plan`, with a failure or an unchanged file reported (and `on_file` told) here."""
    try:
        job = _plan(store, tf, report, attempt)
    except (OSError, ValueError) as exc:
        report.problems.append(f"{tf.path}: {exc}")
        job = None
    if job is None and on_file is not None:
        on_file(tf, report)
    return job


def _report_read(
    job: ReadJob, outcome: Outcome, report: IngestReport,
    on_file: Callable[[TranscriptFile, IngestReport], None] | None,
) -> _Read | None:
    """What reading a job gave: the file read, or a failure or a file kept out reported
    (and `on_file` told) here."""
    item, kept_out, error = outcome
    if error is not None:
        report.problems.append(f"{job.tf.path}: {error}")
    if kept_out:
        report.kept_out[kept_out] = report.kept_out.get(kept_out, 0) + 1
    if item is None and on_file is not None:
        on_file(job.tf, report)
    return item


def _read_or_report(
    store: Store,
    tf: TranscriptFile,
    redact: Redact,
    report: IngestReport,
    max_tokens: int,
    on_file: Callable[[TranscriptFile, IngestReport], None] | None,
    exclusions: Exclusions | None,
    attempt: int = 0,
) -> _Read | None:
    """One file planned and read here, in this process, everything reported."""
    job = _plan_or_report(store, tf, report, on_file, attempt)
    if job is None:
        return None
    read = partial(read_file, redact=redact, max_tokens=max_tokens, exclusions=exclusions)
    return _report_read(job, read_one(read, job), report, on_file)


def _plan(store: Store, tf: TranscriptFile, report: IngestReport, attempt: int) -> ReadJob | None:
    """What reading a file needs from the store (its checkpoint); None if there is nothing
    to do (unchanged, gone, not a regular file)."""
    conn = store.conn
    path = str(tf.path.resolve())
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("its name is not valid UTF-8 and cannot be stored; rename it to "
                         "ingest it") from None
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None  # deleted since discovery (Claude Code's cleanup): nothing to do
    if not stat.S_ISREG(st.st_mode):
        return None  # a FIFO or device named *.jsonl: opening it could block forever
    checkpoint = file_table.get_checkpoint(conn, path)
    if checkpoint is not None and checkpoint.same_stat(
        st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns
    ):
        report.files_unchanged += 1
        return None
    return ReadJob(tf, path, st, checkpoint, attempt)


def read_file(
    job: ReadJob, redact: Redact, max_tokens: int, exclusions: Exclusions | None,
) -> tuple[_Read | None, str | None]:
    """Read a file from its checkpoint and chunk it, touching no database (so it may run in
    another process): the read, or None and why the file is kept out (by ``exclusions``;
    None: not checked)."""
    tf, path, st, checkpoint = job.tf, job.path, job.st, job.checkpoint
    with open(path, "rb") as f:
        data = _map(f, st.st_size)
        try:
            cwd = head_cwd(data) if exclusions is not None else ""
            why = exclusions.reason(cwd) if exclusions is not None and cwd else None
            if why:
                return None, why
            head = hashlib.sha1(data[:_HEAD_BYTES]).hexdigest()
            start, state, counted = 0, {}, 0
            if (
                checkpoint is not None
                and st.st_size >= checkpoint.complete_offset
                and _head_matches(data, checkpoint)
            ):
                start, state = checkpoint.resume_offset, checkpoint.resume_state
                counted = checkpoint.complete_offset
            parsed = _parse(tf, data, start, state, counted)
        finally:
            if isinstance(data, mmap.mmap):
                data.close()
    if exclusions is not None and not cwd:  # no cwd near the start: the one parsing found
        cwd = next((c for i in parsed.sessions.values() for c in (i.cwd, i.agent_cwd) if c), "")
        why = exclusions.reason(cwd)
        if why:
            return None, why
    warmup = tf.kind == "subagent" and is_warmup(parsed)
    chunks: list[Chunk] = []
    if not warmup:  # a warm-up file stores nothing but its checkpoint
        # The one place transcript text enters: everything stored is derived from `parsed`.
        scrub_parsed(parsed, redact)
        undated = iso_utc(datetime.fromtimestamp(st.st_mtime, UTC))  # a stream without any timestamp: when it was written
        for turn in parsed.turns:
            chunks += chunk_turn(turn, redact, max_tokens, fallback_time=undated)
    parsed.turns = []  # the tool outputs they hold are no longer needed
    return _Read(tf, path, st, head, start, checkpoint, parsed, chunks, warmup,
                 job.attempt), None


def _map(f, size: int) -> bytes | mmap.mmap:
    if size == 0:
        return b""
    try:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return f.read()


def _head_matches(data: bytes | mmap.mmap, checkpoint: file_table.Checkpoint) -> bool:
    # The hash covered the file's first bytes as they were then: a file shorter than
    # _HEAD_BYTES that grew is compared on its old length (it used to be read again whole).
    head = data[: min(_HEAD_BYTES, checkpoint.size)]
    return hashlib.sha1(head).hexdigest() == checkpoint.head_hash or (
        checkpoint.head_hash == "" and checkpoint.complete_offset == 0
    )


def _parse(
    tf: TranscriptFile, data: bytes | mmap.mmap, start: int, state: dict, counted: int
) -> ParsedFile:
    default_session = tf.session_hint or tf.path.stem
    with_files = agents_with_files(tf.path, tf.session_hint) if tf.kind == "session" else frozenset()
    return parse_transcript(
        data,  # type: ignore[arg-type]
        start=start,
        state=state,
        default_session=default_session,
        agent_id=tf.agent_id,
        agents_with_files=with_files,
        count_from=counted,
    )


def _session_rows(
    conn: apsw.Connection, tf: TranscriptFile, parsed: ParsedFile, file_id: int, start: int
) -> tuple[dict[str, str], list[SessionRow], set[str]]:
    """Each session's project and its row, from what the file says and what is stored, and
    the sessions that had no project before (their stored chunks take the one found now).

    Decided so that reading a file in steps gives what one read gives: a stored session keeps
    its project (from the first cwd it named), and a session continues another when an
    earlier-starting one shares its file, stored start times and earlier parts included.
    """
    projects: dict[str, str] = {}
    rows: list[SessionRow] = []
    unnamed: set[str] = set()
    known_rows = {sid: get_session(conn, sid) for sid in parsed.sessions}
    starts: dict[str, str | None] = {}
    if tf.kind == "session":
        starts = file_session_starts(conn, file_id, start) if start else {}
        for sid, info in parsed.sessions.items():
            known = known_rows[sid]
            times = [t for t in (info.start_time, known and known.start_time, starts.get(sid)) if t]
            starts[sid] = min(times) if times else None
    first = min(starts, key=lambda sid: (starts[sid] or "", sid), default=None)
    for info in parsed.sessions.values():
        known = known_rows[info.session_id]
        if known is not None and known.project != "unknown":
            project, project_path = known.project, known.project_path
        else:
            # A sub-agent file read before its parent names the project by its own folder.
            p = project_for_cwd(info.cwd or info.agent_cwd)
            project, project_path = p.name, p.path or None
            if known is not None:
                unnamed.add(info.session_id)
        projects[info.session_id] = project
        rows.append(
            SessionRow(
                id=info.session_id,
                project=project,
                project_path=project_path,
                cwd=info.cwd if tf.kind == "session" else None,
                git_branch=info.git_branch,
                title=info.title,
                start_time=info.start_time if tf.kind == "session" else None,
                end_time=info.end_time if tf.kind == "session" else None,
                # A later session sharing a file with an earlier one continues it.
                continued=info.continued or (tf.kind == "session" and info.session_id != first),
                forked_from=info.forked_from,
                checkout=(checkout_for_cwd(info.cwd) or None) if tf.kind == "session" else None,
            )
        )
    return projects, rows, unnamed


def _commit(
    store: Store,
    batch: list[_Read],
    redact: Redact,
    report: IngestReport,
    max_tokens: int,
    on_file: Callable[[TranscriptFile, IngestReport], None] | None,
    deadline: float | None = None,
) -> None:
    """Write a batch; files another process changed meanwhile are read again and retried."""
    while batch:
        try:
            written, stale = _write_waiting(store, batch, report, deadline)
        except (OSError, ValueError) as exc:
            if len(batch) > 1:  # find the culprit: every other file still gets written
                for item in batch:
                    _commit(store, [item], redact, report, max_tokens, on_file, deadline)
                return
            report.problems.append(f"{batch[0].tf.path}: {exc}")
            written, stale = [], []
            if on_file is not None:
                on_file(batch[0].tf, report)
        for item in written:
            report.files_read += 1
            report.bad_lines += item.parsed.stats.bad_lines
            if on_file is not None:
                on_file(item.tf, report)
        batch = []
        for item in stale:
            if item.attempt + 1 >= _RETRIES:
                report.problems.append(
                    f"{item.path}: changed by another process during every attempt; skipped"
                )
                if on_file is not None:
                    on_file(item.tf, report)
                continue
            again = _read_or_report(  # None: it was let in the first time
                store, item.tf, redact, report, max_tokens, on_file, None, item.attempt + 1
            )
            if again is not None:
                batch.append(again)


def _write_waiting(
    store: Store, batch: list[_Read], report: IngestReport, give_up_at: float | None = None
) -> tuple[list[_Read], list[_Read]]:
    """`_write`, tried again with backoff while another process holds the write lock past
    the busy timeout, for as long as that process keeps committing, and for _BUSY_WAIT_S once
    it stops (a writer stuck in a transaction, not one busy with a large ingest).

    Waiting for progress rather than for a fixed time matters with reader processes: an
    ingest whose next write is always ready can hold the lock for minutes, one write after
    another, and a second ingest gave up after 60 s (two of four in `bench.robustness`).
    Past `give_up_at` (a `time.monotonic()` value) it waits no more, progress or not."""
    deadline = time.monotonic() + _BUSY_WAIT_S
    delay = 0.5
    seen = store_sql.data_version(store.conn)
    while True:
        try:
            return _write(store, batch, report)
        except DatabaseBusy:
            now = store_sql.data_version(store.conn)
            if now != seen:  # another writer committed meanwhile: it is making progress
                seen, deadline = now, time.monotonic() + _BUSY_WAIT_S
            elif time.monotonic() + delay > deadline:
                raise
            if give_up_at is not None and time.monotonic() + delay > give_up_at:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 8.0, _BUSY_WAIT_S)


def _write(
    store: Store, batch: list[_Read], report: IngestReport
) -> tuple[list[_Read], list[_Read]]:
    """Write a batch in one transaction: (files written, files changed by another process)."""
    conn = store.conn
    written: list[_Read] = []
    stale: list[_Read] = []
    added_total = replaced_total = redactions = 0
    touched: set[str] = set()
    touched_projects: set[str] = set()
    try:
        with conn:
            for item in batch:
                if file_table.get_checkpoint(conn, item.path) != item.checkpoint:
                    stale.append(item)
                    continue
                added, replaced, sessions, projects = _write_file(conn, item)
                touched |= sessions
                touched_projects |= projects
                added_total += max(0, added - min(added, replaced))
                replaced_total += min(added, replaced)
                redactions += sum(c.redactions for c in item.chunks)
                written.append(item)
            edges = sum(link_session(conn, sid) for sid in sorted(touched))
            for project in sorted(touched_projects):
                edges += link_project_continuations(conn, project)
            refresh_session_states(conn, touched)
            refresh_lessons(conn, touched)
    except apsw.BusyError as exc:
        names = ", ".join(item.tf.path.name for item in batch[:3])
        raise DatabaseBusy(
            f"{store.path.name} stayed locked for 5 s while ingesting {names}"
            f"{' and more' if len(batch) > 3 else ''}; another causantic process is writing."
            " Try again."
        ) from exc
    report.chunks_added += added_total
    report.chunks_replaced += replaced_total
    report.edges_added += edges
    report.sessions |= touched
    report.redactions += redactions
    return written, stale


def _write_file(conn: apsw.Connection, item: _Read) -> tuple[int, int, set[str], set[str]]:
    """One file's rows (inside `_write`'s transaction): (added, replaced, sessions, projects)."""
    tf, parsed, chunks = item.tf, item.parsed, item.chunks
    file_id = file_table.ensure_file(conn, item.path, tf.kind, tf.session_hint, tf.agent_id)
    projects, sessions, unnamed = (
        ({}, [], set()) if item.warmup else _session_rows(conn, tf, parsed, file_id, item.start)
    )
    forgotten = forgotten_keys(conn, "session", [row.id for row in sessions])
    for row in sessions:
        if row.id not in forgotten:  # a forgotten session stays gone, title included
            upsert_session(conn, row)
            if row.project != "unknown" and row.id in unnamed:
                adopt_project(conn, row.id, row.project)
    # Sub-agent chunks take the project of the stored parent session.
    for sid in {c.session_id for c in chunks} - set(projects):
        known = get_session(conn, sid)
        projects[sid] = known.project if known else "unknown"
    replaced = delete_from(conn, file_id, item.start)
    added = insert_chunks(conn, chunks, projects, file_id)
    st = item.st
    file_table.save_checkpoint(
        conn,
        file_id,
        dev=st.st_dev,
        ino=st.st_ino,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        head_hash=item.head,
        complete_offset=parsed.stats.complete_offset,
        resume_offset=parsed.resume_offset,
        resume_state=parsed.resume_state,
        bad_lines=parsed.stats.bad_lines,
        recount=parsed.stats.count_from == 0,
        session_id=next(iter(parsed.sessions), ""),
    )
    touched = {c.session_id for c in chunks} | {s.id for s in sessions}
    return added, replaced, touched, {projects.get(s, "unknown") for s in touched}
