"""Opening the one SQLite file: permissions, pragmas, migrations, error translation.

Invariants every connection gets: WAL journal, a busy timeout, foreign keys on, and
`BEGIN IMMEDIATE` for the outermost `with conn:` so a writer takes the write lock up front
instead of failing half way through. Files we create are private (0600 in a 0700 folder);
SQLite gives the -wal and -shm files the database file's mode.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

import apsw

from causantic.errors import CausanticError, DatabaseBusy, DatabaseCorrupt, DiskFull, ReadOnlyFolder
from causantic.fsutil import private_dir

BUSY_TIMEOUT_MS = 5_000


class Store:
    """An open database: the apsw connection plus what we know about it."""

    def __init__(self, conn: apsw.Connection, path: Path, readonly: bool) -> None:
        self.conn = conn
        self.path = path
        self.readonly = readonly
        self._vec: bool | None = None

    def load_vec(self) -> bool:
        """Load the sqlite-vec extension once; False (never an exception) if it cannot load.

        The shared library is located without importing the `sqlite_vec` Python module,
        which would pull numpy into hook processes.
        """
        if self._vec is None:
            path = vec_extension_path()
            try:
                if path is None:
                    raise apsw.ExtensionLoadingError("sqlite-vec is not installed")
                self.conn.enable_load_extension(True)
                self.conn.load_extension(path)
                self._vec = True
            except apsw.Error:
                self._vec = False
            finally:
                with contextlib.suppress(apsw.Error):
                    self.conn.enable_load_extension(False)
        return self._vec

    def check_integrity(self) -> None:
        """Raise DatabaseCorrupt unless `PRAGMA quick_check` passes (a page read per page:
        about 10 ms per 10 MB of database). Writers call it before their first write, so
        nothing is added to a damaged file that only its untouched pages would reveal."""
        try:
            result = [row[0] for row in self.conn.execute("PRAGMA quick_check(1)")]
        except (apsw.NotADBError, apsw.CorruptError) as exc:
            raise corrupt_error(self.path) from exc
        if result != ["ok"]:
            raise corrupt_error(self.path)

    def close(self) -> None:
        self.conn.close()


def vec_extension_path() -> str | None:
    """Path of sqlite-vec's loadable library without the suffix, or None if not installed."""
    import importlib.util  # here, not at the top: readers that never load vectors skip it

    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        return None
    base = os.path.join(list(spec.submodule_search_locations)[0], "vec0")
    for suffix in (".so", ".dylib", ".dll"):
        if os.path.exists(base + suffix):
            return base
    return None


@contextlib.contextmanager
def open_store(path: Path, *, readonly: bool = False,
               busy_timeout_ms: int | None = None) -> Iterator[Store]:
    """Open (creating and migrating if needed) the database at `path`.

    Read-only opens never create or migrate; a missing database is a `CausanticError`
    telling the user to ingest first.

    Raises
    ------
    DatabaseBusy : another process held the write lock past the busy timeout.
    DatabaseCorrupt : the file is not a SQLite database or is damaged.
    DiskFull : the disk filled up while writing (the transaction was rolled back).
    ReadOnlyFolder : a write was needed but the file or its folder is read-only.
    CausanticError : the file or its folder cannot be created or opened.
    """
    store = _connect(path, readonly, busy_timeout_ms or BUSY_TIMEOUT_MS)
    try:
        yield store
    except apsw.Error as exc:
        error = translate(exc, path, busy_timeout_ms or BUSY_TIMEOUT_MS)
        if error is None:
            raise
        raise error from exc
    finally:
        store.close()


def translate(exc: BaseException, path: Path, busy_ms: int = BUSY_TIMEOUT_MS
              ) -> CausanticError | None:
    """The one-line error naming the real cause of an SQLite failure, or None if unknown."""
    cause = exc.__context__
    if isinstance(exc, apsw.SQLError) and cause is not None and "no transaction" in str(exc):
        # SQLITE_FULL (and a few others) roll the transaction back themselves; the context
        # manager's own rollback then fails and hides the real cause.
        return translate(cause, path, busy_ms)
    if isinstance(exc, apsw.BusyError | apsw.LockedError):
        return busy_error(path, busy_ms)
    # FTS5 reports a damaged index of a file that has FTS5 as "no FTS5".
    if isinstance(exc, apsw.NotADBError | apsw.CorruptError | apsw.NoFTS5Error):
        return corrupt_error(path)
    if isinstance(exc, apsw.FullError) or getattr(exc, "errno", None) == errno.ENOSPC:
        return DiskFull(
            f"the disk holding {path} is full; nothing was half-written. Free some space "
            "and run the command again"
        )
    if isinstance(exc, apsw.ReadOnlyError | apsw.CantOpenError):
        return readonly_error(path)
    return None


def readonly_error(path: Path) -> CausanticError:
    folder = path.parent
    if path.exists() and not (os.access(folder, os.W_OK) and os.access(path, os.W_OK)):
        return ReadOnlyFolder(
            f"cannot write to {path}: it or its folder {folder} is read-only; reading still "
            "works (search, recall, briefings). Make it writable, or point --db at a copy"
        )
    return CausanticError(f"cannot open {path}: check that it exists and is readable")


#: How long opening a file that needs migrating waits for another writer (see `_connect`).
MIGRATE_WAIT_MS = 60_000


def busy_error(path: Path, busy_ms: int = BUSY_TIMEOUT_MS) -> DatabaseBusy:
    return DatabaseBusy(
        f"{path.name} stayed locked for {busy_ms / 1000:g} s; "
        "another causantic process is writing. Try again."
    )


def corrupt_error(path: Path) -> DatabaseCorrupt:
    return DatabaseCorrupt(
        f"{path} is not a causantic database or is damaged; move it aside and run "
        "`causantic ingest` to rebuild it from your transcripts"
    )


def _connect(path: Path, readonly: bool, busy_ms: int = BUSY_TIMEOUT_MS) -> Store:
    path = Path(path)
    if readonly:
        if not path.exists():
            raise CausanticError(f"no memory yet at {path}; run `causantic ingest` first")
        flags = apsw.SQLITE_OPEN_READONLY
    else:
        _create_private(path)
        flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    try:
        conn = apsw.Connection(str(path), flags=flags)
    except apsw.CantOpenError as exc:
        raise readonly_error(path) from exc
    store = Store(conn, path, readonly)
    try:
        conn.set_busy_timeout(busy_ms)
        conn.transaction_mode = "IMMEDIATE"
        conn.execute("PRAGMA foreign_keys = ON")
        if not readonly:
            _use_wal(conn, busy_ms)
            conn.execute("PRAGMA synchronous = NORMAL")
            # deferred: hook fast path: loaded only when this runs
            from causantic.store.schema import MIGRATIONS, migrate, schema_version

            if schema_version(conn) != len(MIGRATIONS):  # older: migrate; newer: refused
                # Another process may be migrating this very file and then go straight on
                # to a long ingest batch; wait for it as an ingest batch would (a hook's
                # short budget stays short).
                if busy_ms >= BUSY_TIMEOUT_MS:
                    conn.set_busy_timeout(MIGRATE_WAIT_MS)
                migrate(conn, path)
                conn.set_busy_timeout(busy_ms)
        else:
            # deferred: hook fast path: loaded only when this runs
            from causantic.store.schema import check_version, needs_migration

            check_version(conn, path)
            if needs_migration(conn):
                # An older file opened for reading: upgrade it once (with its backup), then
                # read. Queries are written for the current schema only.
                conn.close()
                _connect(path, readonly=False).close()
                return _connect(path, readonly=True, busy_ms=busy_ms)
    except apsw.CantOpenError as exc:
        conn.close()
        if readonly and not os.access(path.parent, os.W_OK):
            # A WAL file in a read-only folder: SQLite cannot create its -shm index. Nothing
            # can write here either, so reading the file as immutable is safe.
            return _connect_immutable(path)
        raise readonly_error(path) from exc
    except apsw.Error as exc:
        conn.close()
        error = translate(exc, path, busy_ms)
        if error is None:
            raise
        raise error from exc
    except BaseException:
        conn.close()
        raise
    return store


def _use_wal(conn: apsw.Connection, busy_ms: int) -> None:
    """Switch to WAL. Two processes creating the same new file at once: SQLite answers the
    loser's journal-mode change with an immediate SQLITE_BUSY, without calling the busy
    handler, so retry here for as long as the busy timeout would have waited."""
    # deferred: hook fast path: loaded only when this runs
    import time

    deadline = time.monotonic() + busy_ms / 1000
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            if mode and str(mode[0]).lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except apsw.BusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def _connect_immutable(path: Path) -> Store:
    # deferred: hook fast path: loaded only when this runs
    from urllib.parse import quote

    uri = f"file:{quote(str(path.resolve()))}?mode=ro&immutable=1"
    conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        # deferred: hook fast path: loaded only when this runs
        from causantic.store.schema import check_version, needs_migration

        check_version(conn, path)
        if needs_migration(conn):
            raise ReadOnlyFolder(
                f"{path} was written by an older causantic and must be upgraded, but its "
                "folder is read-only; make it writable once, or point --db at a copy"
            )
    except apsw.Error as exc:
        conn.close()
        error = translate(exc, path)
        if error is None:
            raise
        raise error from exc
    except BaseException:
        conn.close()
        raise
    return Store(conn, path, True)


def _create_private(path: Path) -> None:
    """Create the database's folder (0700) and an empty file (0600) if missing."""
    folder = path.parent
    try:
        private_dir(folder)
        if not path.exists():
            fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
            os.close(fd)
    except FileExistsError:
        pass
    except OSError as exc:
        raise CausanticError(f"cannot create {path}: {exc.strerror}") from exc
