"""The SQL helpers every store module shares: batched `IN (...)` queries and table probes.

SQLite caps the number of bound parameters per statement (32,766 here, 999 in old builds),
and long `IN` lists also plan worse, so every query over a caller-sized id list runs in
batches of at most `MAX_IN` values. Write the statement once with `{marks}` where the
placeholders go:

    for row in select_in(conn, "SELECT id, text FROM chunks WHERE id IN ({marks})", ids):
        ...
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import apsw

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")

#: Values bound per `IN (...)` list.
MAX_IN = 500


def batches(values: Iterable[T], size: int = MAX_IN) -> Iterator[list[T]]:
    """Split `values` into lists of at most `size` items (none for no values)."""
    items = values if isinstance(values, list) else list(values)
    for start in range(0, len(items), size):
        yield items[start : start + size]


def marks(count: int) -> str:
    """`?,?,?` with `count` placeholders, for one `IN (...)` list."""
    return ",".join("?" * count)


def select_in(
    conn: apsw.Connection,
    sql: str,
    values: Iterable[Any],
    before: Sequence[Any] = (),
    after: Sequence[Any] = (),
    size: int = MAX_IN,
) -> Iterator[tuple[Any, ...]]:
    """Run `sql` once per batch of `values` and yield every row.

    `{marks}` in `sql` becomes the batch's placeholders; `before` and `after` are bound
    around them, in the order their `?` stand in the statement. With no values nothing
    runs. Rows of different batches come in batch order; an `ORDER BY` or `LIMIT` applies
    within one batch only.
    """
    for batch in batches(values, size):
        yield from conn.execute(sql.format(marks=marks(len(batch))), (*before, *batch, *after))


def execute_in(
    conn: apsw.Connection,
    sql: str,
    values: Iterable[Any],
    before: Sequence[Any] = (),
    after: Sequence[Any] = (),
    size: int = MAX_IN,
) -> None:
    """Like `select_in` for statements that return nothing (UPDATE, DELETE)."""
    for _ in select_in(conn, sql, values, before, after, size):
        pass


def table_names(conn: apsw.Connection) -> set[str]:
    """The names of every table (virtual ones included) in the main schema."""
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def table_exists(conn: apsw.Connection, name: str) -> bool:
    """Whether a table (virtual tables included) named `name` exists in the main schema."""
    return conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone() is not None


def data_version(conn: apsw.Connection) -> int:
    """SQLite's count of commits by *other* connections to this database, as this connection
    sees it (`PRAGMA data_version`): it changed if someone else committed in between."""
    return int(conn.execute("PRAGMA data_version").get)
