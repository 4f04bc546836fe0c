"""Opening the one SQLite file: permissions, pragmas, migrations, error translation.

Invariants every connection gets: WAL journal, a busy timeout, foreign keys on, and
`BEGIN IMMEDIATE` for the outermost `with conn:` so a writer takes the write lock up front
instead of failing half way through. Files we create are private (0600 in a 0700 folder);
SQLite gives the -wal and -shm files the database file's mode.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import apsw

from causantic.errors import CausanticError, DatabaseBusy, DatabaseCorrupt

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
def open_store(path: Path, *, readonly: bool = False) -> Iterator[Store]:
    """Open (creating and migrating if needed) the database at `path`.

    Read-only opens never create or migrate; a missing database is a `CausanticError`
    telling the user to ingest first.

    Raises
    ------
    DatabaseBusy : another process held the write lock past the busy timeout.
    DatabaseCorrupt : the file is not a SQLite database or is damaged.
    CausanticError : the file or its folder cannot be created or opened.
    """
    store = _connect(path, readonly)
    try:
        yield store
    except apsw.BusyError as exc:
        raise busy_error(path) from exc
    except (apsw.NotADBError, apsw.CorruptError) as exc:
        raise corrupt_error(path) from exc
    finally:
        store.close()


def busy_error(path: Path) -> DatabaseBusy:
    return DatabaseBusy(
        f"{path.name} stayed locked for {BUSY_TIMEOUT_MS // 1000} s; "
        "another causantic process is writing. Try again."
    )


def corrupt_error(path: Path) -> DatabaseCorrupt:
    return DatabaseCorrupt(
        f"{path} is not a causantic database or is damaged; move it aside and run "
        "`causantic ingest` to rebuild it from your transcripts"
    )


def _connect(path: Path, readonly: bool) -> Store:
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
        raise CausanticError(f"cannot open {path}: check that it exists and is readable") from exc
    store = Store(conn, path, readonly)
    try:
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        conn.transaction_mode = "IMMEDIATE"
        conn.execute("PRAGMA foreign_keys = ON")
        if not readonly:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            if mode and str(mode[0]).lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            from causantic.store.schema import migrate

            migrate(conn, path)
        else:
            from causantic.store.schema import check_version, needs_migration

            check_version(conn, path)
            if needs_migration(conn):
                # An older file opened for reading: upgrade it once (with its backup), then
                # read. Queries are written for the current schema only.
                conn.close()
                _connect(path, readonly=False).close()
                return _connect(path, readonly=True)
    except apsw.BusyError as exc:
        conn.close()
        raise busy_error(path) from exc
    except (apsw.NotADBError, apsw.CorruptError) as exc:
        conn.close()
        raise corrupt_error(path) from exc
    except BaseException:
        conn.close()
        raise
    return store


def _create_private(path: Path) -> None:
    """Create the database's folder (0700) and an empty file (0600) if missing."""
    folder = path.parent
    try:
        if not folder.exists():
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(folder, 0o700)
        if not path.exists():
            fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
            os.close(fd)
    except FileExistsError:
        pass
    except OSError as exc:
        raise CausanticError(f"cannot create {path}: {exc.strerror}") from exc
