"""Reading another tool's SQLite file (an importer's source, e.g. claude-mem's database).

The file is not ours: it is opened read-only (never a WAL index, never a migration) and read
generically, table by table, with the columns it has. What the rows mean stays with the
importer (`causantic.transfer`); SQL stays here, like all SQL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw

from causantic.errors import CausanticError, UsageError


def open_readonly(path: Path) -> apsw.Connection:
    """Open another tool's SQLite file without writing to it (not even a WAL index).

    Raises
    ------
    UsageError : the file is missing or not a SQLite database.
    """
    if not path.is_file():
        raise UsageError(f"no database at {path}")
    uri = path.resolve().as_uri()
    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    for query in ("?mode=ro", "?mode=ro&immutable=1"):  # immutable: a folder we cannot write
        try:
            conn = apsw.Connection(uri + query, flags=flags)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except (apsw.NotADBError, apsw.CorruptError):
            raise UsageError(f"{path} is not a SQLite database") from None
        except apsw.CantOpenError:
            continue
    raise CausanticError(f"cannot open {path} read-only")


def table_rows(conn: apsw.Connection, table: str) -> list[dict[str, Any]]:
    """Every row of `table` as {column: value}, by `id`; [] for a table without columns."""
    cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
    if not cols:
        return []
    return [dict(zip(cols, row, strict=True))
            for row in conn.execute(f'SELECT {", ".join(cols)} FROM "{table}" ORDER BY id')]
