"""Cheap facts about memory as a whole: is it empty, how many chunks, the top rowid, which
ids are stored, any vectors.

Apart from `store/chunks.py` because the hooks ask them (the prompt hook's IDF needs the
chunk count): this module imports nothing but apsw, while `chunks.py` costs ~5 ms to import.
"""

from __future__ import annotations

from collections.abc import Iterable

import apsw

from causantic.store.sql import select_in, table_exists


def any_chunks(conn: apsw.Connection) -> bool:
    """Whether memory holds any chunk."""
    return conn.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is not None


def max_rowid(conn: apsw.Connection) -> int:
    """The highest chunk rowid (0 when empty): about the number of chunks ever stored."""
    return int(conn.execute("SELECT coalesce(max(rowid), 0) FROM chunks").get)


def count_chunks(conn: apsw.Connection) -> int:
    """How many chunks are stored."""
    return int(conn.execute("SELECT count(*) FROM chunks").get)


def existing_ids(conn: apsw.Connection, ids: Iterable[str]) -> set[str]:
    """Which of these chunk ids are stored."""
    return {r[0] for r in select_in(conn, "SELECT id FROM chunks WHERE id IN ({marks})", ids)}


def any_vectors(conn: apsw.Connection) -> bool:
    """Whether any chunk has a vector (any model); False before the vector tables exist."""
    return table_exists(conn, "chunk_vectors_meta") and conn.execute(
        "SELECT 1 FROM chunk_vectors_meta LIMIT 1").fetchone() is not None
