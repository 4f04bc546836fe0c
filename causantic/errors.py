"""Errors a user can act on.

Every failure we expect carries a one-line message that says what happened, to what, and what
to do next. `str(exc)` is printed as is by the CLI; `exit_code` follows DESIGN.md section 4
(1 failure, 2 bad usage or input).
"""


class CausanticError(Exception):
    """A failure the user can act on; str(exc) is printed as is."""

    exit_code = 1


class UsageError(CausanticError):
    """Bad usage or bad input (exit code 2)."""

    exit_code = 2


class DatabaseBusy(CausanticError):
    """The database stayed locked by another process past the busy timeout."""


class DatabaseCorrupt(CausanticError):
    """The database file is not a SQLite database or is damaged."""


class ModelUnavailable(CausanticError):
    """The embedding model (or the vector extension) cannot be loaded."""


class Interrupted(CausanticError):
    """The user stopped the work (Ctrl-C); the message says what was kept and how to go on."""

    exit_code = 130


class DiskFull(CausanticError):
    """The disk (or the database's size limit) is full; nothing was half-written."""


class ReadOnlyFolder(CausanticError):
    """The database or its folder cannot be written; reading still works."""


def describe(exc: Exception) -> str:
    """One line for an unexpected exception (the CLI and the MCP tools print it, never a traceback)."""
    name = type(exc).__name__
    if name == "FullError" or getattr(exc, "errno", None) == 28:  # ENOSPC
        return "the disk is full; free some space and run the command again"
    if name in ("BusyError", "LockedError"):
        return "the database stayed locked; another causantic process is writing. Try again."
    if name in ("NotADBError", "CorruptError", "NoFTS5Error"):
        return "the database is damaged or not a causantic database; move it aside and re-ingest"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return f"unexpected {name}: {exc} (run with --debug for details)"
