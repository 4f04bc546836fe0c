"""Chunk rows as `Hit`s: the rows every result list (search, chains, topics, reconstruct) is built from.

`Hit` is a `Record`, not a dataclass, and this module imports nothing heavy: the
session-start hook renders hits.
"""

from __future__ import annotations

from collections.abc import Sequence

from causantic.records import Record
from causantic.store.sql import select_in

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    import apsw


class Hit(Record):
    """One retrieved chunk as reported to users and tools (read-only; `replace` copies).

    A `Record`, not a dataclass: the session-start hook renders hits, and `dataclasses`
    pulls in `inspect`, `ast` and `dis` (~6 ms per hook process).
    """

    __slots__ = ("chunk_id", "session_id", "project", "agent_id", "start_time", "end_time",
                 "score", "sources", "text", "kind", "seed", "also", "changed")
    chunk_id: str
    session_id: str
    project: str
    agent_id: str
    start_time: str
    end_time: str
    score: float
    sources: tuple[str, ...]
    text: str
    kind: str
    seed: bool  # recall/predict: the chunk search found (the rest came by the chain)
    also: tuple[str, ...]  # search: lower-ranked matches of the same turn shown in this result
    changed: tuple[str, ...]  # files its work edited that have changed on disk since (freshness)

    def __init__(self, chunk_id: str, session_id: str, project: str, agent_id: str,
                 start_time: str, end_time: str, score: float, sources: tuple[str, ...],
                 text: str, kind: str = "turn", seed: bool = False,
                 also: tuple[str, ...] = (), changed: tuple[str, ...] = ()) -> None:
        self._init(chunk_id=chunk_id, session_id=session_id, project=project,
                   agent_id=agent_id, start_time=start_time, end_time=end_time, score=score,
                   sources=sources, text=text, kind=kind, seed=seed, also=also, changed=changed)

    @property
    def chunk_ids(self) -> tuple[str, ...]:
        """Every chunk this result shows a match of: its own, then those folded into it."""
        return (self.chunk_id, *self.also)

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "chunk_id": self.chunk_id,
            "session_id": self.session_id,
            "project": self.project,
            "start_time": self.start_time,
            "end_time": self.end_time,
            "score": round(self.score, 6),
            "sources": list(self.sources),
            "text": self.text,
        }
        if self.also:
            out["also_matched"] = list(self.also)
        if self.changed:
            out["changed_since"] = list(self.changed)
        return out


#: The chunk columns a `Hit` is made of, in `Hit`'s order (score and sources come from the caller).
COLUMNS = "id, session_id, project, agent_id, start_time, end_time, text, kind"


def load_hits(conn: apsw.Connection, ranked: Sequence[tuple[str, float, tuple[str, ...]]]) -> list[Hit]:
    """Fetch chunk rows for (chunk id, score, sources) in rank order; missing ids are dropped."""
    if not ranked:
        return []
    rows: dict[str, tuple] = {
        row[0]: row
        for row in select_in(conn, f"SELECT {COLUMNS} FROM chunks WHERE id IN ({{marks}})",
                             [r[0] for r in ranked])
    }
    out = []
    for cid, score, sources in ranked:
        row = rows.get(cid)
        if row is not None:
            out.append(Hit(row[0], row[1], row[2], row[3], row[4], row[5], score, sources,
                           row[6], row[7]))
    return out


def load_hit(conn: apsw.Connection, chunk_id: str) -> Hit | None:
    """One chunk as a `Hit` with score 0 and no sources, or None when it is not stored."""
    row = conn.execute(f"SELECT {COLUMNS} FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
    if row is None:
        return None
    return Hit(row[0], row[1], row[2], row[3], row[4], row[5], 0.0, (), row[6], row[7])


def chunk_ids(conn: apsw.Connection, rowids: Sequence[int]) -> list[tuple[int, str, str]]:
    """(rowid, chunk id, project) of these chunk rowids (keyword search's matches)."""
    return list(select_in(conn, "SELECT rowid, id, project FROM chunks WHERE rowid IN ({marks})", rowids))
