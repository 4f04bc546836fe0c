"""Topic tables (migration `create_topics`): SQL only, no numpy, so hooks can read them.

A rebuild replaces every topic and membership in one transaction, which the caller opens
(`causantic.topics.maintain`); these functions are the statements it runs. Counts, time spans
and projects are never stored: `topic_stats` counts them from the memberships, so a chunk
deleted by `forget` or by ingest (foreign-key cascade) is gone from every figure at once.
Memberships are written only for chunks whose vector row still holds the vector that was
clustered (same chunk id, same model), so a chunk deleted or rewritten while a rebuild was
computing is skipped rather than failing the foreign key.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import apsw

from causantic.store.sql import select_in, table_exists

TOPICS = "topics"
MEMBERS = "topic_members"
BUILD = "topic_build"
META = "chunk_vectors_meta"


@dataclass(frozen=True)
class NewTopic:
    """A topic to write: its id, name, terms (best first) and unit centroid (float32 bytes)."""

    id: int
    name: str
    terms: Sequence[str]
    centroid: bytes


@dataclass(frozen=True)
class Membership:
    """One chunk in one topic; ``probability`` None = joined by nearest centroid."""

    chunk_rowid: int
    chunk_id: str
    topic_id: int
    probability: float | None
    distance: float


@dataclass(frozen=True)
class BuildInfo:
    """When and from what the current topics were built."""

    built_at: str
    model_id: str
    chunks: int
    params: dict[str, object]
    seconds: float


@dataclass
class TopicStats:
    """A topic with figures counted from its current members."""

    id: int
    name: str
    terms: list[str]
    size: int = 0
    first: str = ""
    last: str = ""
    projects: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {"id": self.id, "name": self.name, "terms": self.terms, "size": self.size,
                "first": self.first, "last": self.last, "projects": self.projects}


def ready(conn: apsw.Connection) -> bool:
    """Whether the topic tables exist (a read-only open of an older file may lack them)."""
    return table_exists(conn, BUILD)


def clear(conn: apsw.Connection) -> None:
    """Delete every topic and membership (inside the rebuild's transaction)."""
    conn.execute(f"DELETE FROM {MEMBERS}")
    conn.execute(f"DELETE FROM {TOPICS}")


def drop_empty(conn: apsw.Connection) -> int:
    """Delete topics left without members (their name and centroid came from deleted chunks).
    `main.` as in `chunks.delete_rowids`."""
    conn.execute("DELETE FROM main.topics AS t WHERE NOT EXISTS"
                 " (SELECT 1 FROM topic_members m WHERE m.topic_id = t.id)")
    return conn.changes()


def insert_topics(conn: apsw.Connection, topics: Iterable[NewTopic]) -> None:
    conn.executemany(
        f"INSERT INTO {TOPICS}(id, name, terms, centroid) VALUES (?, ?, ?, ?)",
        [(t.id, t.name, json.dumps(list(t.terms), ensure_ascii=False), t.centroid)
         for t in topics],
    )


def insert_members(conn: apsw.Connection, members: Iterable[Membership], model_id: str) -> int:
    """Write memberships of chunks whose vector is still the one clustered; returns how many.

    A membership replaces the chunk's previous one (a chunk is in at most one topic).
    """
    before = conn.total_changes()
    conn.executemany(
        f"INSERT OR REPLACE INTO {MEMBERS}(chunk_rowid, topic_id, probability, distance)"
        f" SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM {META}"
        " WHERE chunk_rowid = ? AND chunk_id = ? AND model_id = ?)",
        [(m.chunk_rowid, m.topic_id, m.probability, m.distance, m.chunk_rowid, m.chunk_id,
          model_id) for m in members],
    )
    return conn.total_changes() - before


def save_build(conn: apsw.Connection, info: BuildInfo) -> None:
    conn.execute(
        f"INSERT OR REPLACE INTO {BUILD}(id, built_at, model_id, chunks, params, seconds)"
        " VALUES (1, ?, ?, ?, ?, ?)",
        (info.built_at, info.model_id, info.chunks, json.dumps(info.params), info.seconds),
    )


def build_info(conn: apsw.Connection) -> BuildInfo | None:
    """The current build, or None when topics were never built."""
    if not ready(conn):
        return None
    row = conn.execute(
        f"SELECT built_at, model_id, chunks, params, seconds FROM {BUILD} WHERE id = 1"
    ).fetchone()
    if row is None:
        return None
    return BuildInfo(row[0], row[1], int(row[2]), json.loads(row[3] or "{}"), float(row[4]))


def centroids(conn: apsw.Connection) -> list[tuple[int, bytes]]:
    """(topic id, centroid bytes) of every topic, by id."""
    if not ready(conn):
        return []
    return [(int(i), bytes(b)) for i, b in conn.execute(f"SELECT id, centroid FROM {TOPICS} ORDER BY id")]


def vector_rowids(conn: apsw.Connection, model_id: str) -> list[int]:
    """Chunk rowids with vectors of this model (the model index covers it: no blob reads)."""
    return [r[0] for r in conn.execute(
        f"SELECT chunk_rowid FROM {META} WHERE model_id = ?", (model_id,))]


def mean_vectors_by_rowid(
    conn: apsw.Connection, rowids: Sequence[int], model_id: str
) -> list[tuple[int, str, bytes]]:
    """(chunk rowid, chunk id, unit mean vector bytes) of these rowids, this model only."""
    return [
        (int(r), str(c), bytes(v)) for r, c, v in select_in(
            conn, f"SELECT chunk_rowid, chunk_id, vector FROM {META}"
            " WHERE chunk_rowid IN ({marks}) AND +model_id = ?", rowids, after=(model_id,))
    ]


def all_vectors(conn: apsw.Connection, model_id: str) -> list[tuple[int, str, bytes]]:
    """(chunk rowid, chunk id, vector bytes) of every chunk embedded by this model."""
    return [(int(r), str(c), bytes(v)) for r, c, v in conn.execute(
        f"SELECT chunk_rowid, chunk_id, vector FROM {META} WHERE model_id = ?"
        " ORDER BY chunk_rowid", (model_id,))]


def texts(conn: apsw.Connection, rowids: Sequence[int]) -> dict[int, str]:
    """chunk rowid -> text."""
    return {
        int(r): t for r, t in select_in(conn, "SELECT rowid, text FROM chunks WHERE rowid IN ({marks})", rowids)
    }


def topic_stats(conn: apsw.Connection) -> list[TopicStats]:
    """Every topic that still has members, with counts from its members (by id)."""
    if not ready(conn):
        return []
    out: dict[int, TopicStats] = {
        int(i): TopicStats(int(i), n, json.loads(t or "[]"))
        for i, n, t in conn.execute(f"SELECT id, name, terms FROM {TOPICS}")
    }
    for topic, project, n, first, last in conn.execute(
        f"SELECT m.topic_id, c.project, count(*), min(c.start_time), max(c.end_time)"
        f" FROM {MEMBERS} m JOIN chunks c ON c.rowid = m.chunk_rowid"
        " GROUP BY m.topic_id, c.project"
    ):
        s = out.get(int(topic))
        if s is None:
            continue
        s.size += int(n)
        s.projects[project] = int(n)
        s.first = min(s.first, first) if s.first else first
        s.last = max(s.last, last)
    return [s for s in out.values() if s.size]


def topic_row(conn: apsw.Connection, topic_id: int) -> tuple[str, list[str]] | None:
    """(name, terms) of a topic, or None."""
    if not ready(conn):
        return None
    row = conn.execute(f"SELECT name, terms FROM {TOPICS} WHERE id = ?", (topic_id,)).fetchone()
    return None if row is None else (row[0], json.loads(row[1] or "[]"))


def members(
    conn: apsw.Connection, topic_id: int, *, project: str | None = None, limit: int | None = None,
    order: str = "time",
) -> list[tuple[str, float, float | None]]:
    """(chunk id, distance, probability) of a topic's members, oldest first (``order="time"``)
    or nearest the centroid first (``order="distance"``)."""
    sql = (f"SELECT c.id, m.distance, m.probability FROM {MEMBERS} m"
           " JOIN chunks c ON c.rowid = m.chunk_rowid WHERE m.topic_id = ?")
    args: list[object] = [topic_id]
    if project is not None:
        sql += " AND c.project = ?"
        args.append(project)
    sql += " ORDER BY c.start_time, c.rowid" if order == "time" else " ORDER BY m.distance, c.rowid"
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    return [(str(c), float(d), None if p is None else float(p)) for c, d, p in conn.execute(sql, args)]


def topics_of(conn: apsw.Connection, chunk_ids: Sequence[str]) -> dict[str, tuple[int, float]]:
    """chunk id -> (topic id, distance) for the chunks that are in a topic."""
    out: dict[str, tuple[int, float]] = {}
    if not ready(conn):
        return out
    for cid, topic, dist in select_in(
        conn, f"SELECT c.id, m.topic_id, m.distance FROM chunks c CROSS JOIN {MEMBERS} m"
        " ON m.chunk_rowid = c.rowid WHERE c.id IN ({marks})", chunk_ids
    ):
        out[str(cid)] = (int(topic), float(dist))
    return out


def topics_of_rowids(conn: apsw.Connection, rowids: Sequence[int]) -> dict[int, int]:
    """chunk rowid -> topic id for the rowids that are in a topic."""
    return {
        int(r): int(t) for r, t in select_in(
            conn, f"SELECT chunk_rowid, topic_id FROM {MEMBERS} WHERE chunk_rowid IN ({{marks}})", rowids
        )
    }
