"""The edges table: causal links between chunks (`next`, `brief`, `debrief`, `continues`, ...)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import apsw

from causantic.store.sql import select_in


class Neighbour(NamedTuple):
    """One edge seen from the chunk it was looked up by: `near` -> `far`, strongest weight."""

    near: str
    far: str
    weight: float


def neighbours(conn: apsw.Connection, chunk_ids: Sequence[str], backward: bool) -> Iterator[Neighbour]:
    """The edges into (`backward`) or out of these chunks, one per pair, with their top weight."""
    near, far = ("dst", "src") if backward else ("src", "dst")
    for a, b, weight in select_in(
        conn,
        f"SELECT {near}, {far}, max(weight) FROM edges WHERE {near} IN ({{marks}})"
        f" GROUP BY {near}, {far}",
        chunk_ids,
    ):
        yield Neighbour(a, b, float(weight))


def continues_into(conn: apsw.Connection, chunk_id: str) -> set[str]:
    """The chunks with a `continues` edge into this one (a session's first chunk)."""
    return {
        row[0]
        for row in conn.execute("SELECT src FROM edges WHERE dst = ? AND kind = 'continues'", (chunk_id,))
    }


def delete_continues(conn: apsw.Connection, src: str, dst: str) -> None:
    """Drop one `continues` edge."""
    conn.execute("DELETE FROM edges WHERE src = ? AND dst = ? AND kind = 'continues'", (src, dst))


def upsert_edges(conn: apsw.Connection, edges: Sequence[tuple[str, str, str, float]]) -> int:
    """Insert (src, dst, kind, weight) edges, updating the weight of existing ones; return how
    many (src, dst, kind) were new."""
    if not edges:
        return 0
    # Primary-key lookups, not a count of the whole table (~2 ms twice per session at 100k).
    new = sum(
        conn.execute("SELECT 1 FROM edges WHERE src = ? AND dst = ? AND kind = ?",
                     (src, dst, kind)).fetchone() is None
        for src, dst, kind in {edge[:3] for edge in edges}
    )
    conn.executemany(
        "INSERT INTO edges(src, dst, kind, weight) VALUES (?,?,?,?)"
        " ON CONFLICT(src, dst, kind) DO UPDATE SET weight = excluded.weight",
        edges,
    )
    return new
