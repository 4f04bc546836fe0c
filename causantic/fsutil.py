"""Small file helpers: private folders, atomic writes, locks (a stdlib-only leaf module).

Everything causantic creates is private: folders 0700, files 0600. Writes that replace a file
go through a temporary file in the same folder and `os.replace`, so a reader (Claude Code
watching settings.json, a hook reading the status file) never sees half a file.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

try:  # POSIX only; on other systems locks become no-ops (hooks still never fail)
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]


def private_dir(path: Path) -> Path:
    """Create `path` if missing, and every missing folder above it, each 0700; return it.

    `Path.mkdir(parents=True)` gives the parents it creates the default mode (0755 under the
    usual umask), so `~/.causantic` made on the way to `~/.causantic/state` would be readable
    by everyone: each level is made here instead. Folders that already exist are left as
    they are.
    """
    missing: list[Path] = []
    here = path
    while not here.is_dir() and here != here.parent:
        missing.append(here)
        here = here.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            if not folder.is_dir():
                raise
            continue  # made by another process meanwhile: theirs, and made the same way
        with contextlib.suppress(OSError):
            os.chmod(folder, 0o700)  # a umask can take bits off the mode mkdir asked for
    return path


def atomic_write(path: Path, text: str, mode: int = 0o600, *, durable: bool = True) -> None:
    """Replace `path` with `text` atomically (`durable`: fsync first, ~1-100 ms).

    A new file gets `mode`; an existing file keeps its permission bits. A symlink (dotfile
    managers link settings.json) is followed, so the link stays and its target changes.
    """
    path = Path(os.path.realpath(path))
    try:
        current = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        current = mode
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.chmod(tmp, current)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def overwrite(path: Path, text: str, mode: int = 0o600) -> None:
    """Rewrite `path` in place (created with `mode` if missing). Not atomic: call it only while
    holding a lock that every reader of the file also takes.

    Cheaper than `atomic_write` for a small file rewritten often: on ext4, renaming over an
    existing file flushes the new one's blocks first (2-4 ms per hook run here).
    """
    data = text.encode("utf-8")
    fd = os.open(path, os.O_CREAT | os.O_RDWR, mode)
    try:
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def open_private_append(path: Path, max_bytes: int = 1 << 20) -> int:
    """Open a log file for appending (0600), truncating it first when over `max_bytes`."""
    private_dir(path.parent)
    try:
        if os.path.getsize(path) > max_bytes:
            os.truncate(path, 0)
    except OSError:
        pass
    return os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600)


@contextlib.contextmanager
def file_lock(path: Path, *, timeout: float | None = None) -> Iterator[bool]:
    """Hold an exclusive `flock` on `path` (created 0600) for the block.

    Yields True when the lock is held. With a `timeout` (seconds; 0 = try once) it yields
    False if another process still holds the lock when the time is up; without one it waits
    as long as it takes. The lock dies with its process, so a crashed holder never leaves a
    stale lock behind.
    """
    private_dir(path.parent)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        if fcntl is None:
            yield True
            return
        if not _acquire(fd, timeout):
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _acquire(fd: int, timeout: float | None) -> bool:
    assert fcntl is not None
    if timeout is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return True
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.25)
