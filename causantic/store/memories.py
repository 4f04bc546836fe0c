"""The memories tables: observations, citations, feedback, vectors, marks (SQL only).

Nothing here imports numpy: the session-start hook reads the briefing's memories through
this module. Vectors are passed in and out as bytes (float32).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import apsw

from causantic.records import Record
from causantic.store.sql import batches, marks, select_in

_COLUMNS = ("id, project, type, text, importance, origin, count, helpful, harmful, duplicate_of,"
            " session_id, created_at, last_seen_at, meta, rowid")


class MemoryRow(Record):
    """One stored memory as read back (see the `memories` table in `store.schema`)."""

    __slots__ = ("id", "project", "type", "text", "importance", "origin", "count", "helpful",
                 "harmful", "duplicate_of", "session_id", "created_at", "last_seen_at", "meta",
                 "rowid")
    id: str
    project: str
    type: str
    text: str
    importance: float
    origin: str
    count: int
    helpful: int
    harmful: int
    duplicate_of: str | None
    session_id: str | None
    created_at: str
    last_seen_at: str
    meta: str
    rowid: int

    def __init__(self, id: str, project: str, type: str, text: str, importance: float,
                 origin: str, count: int, helpful: int, harmful: int, duplicate_of: str | None,
                 session_id: str | None, created_at: str, last_seen_at: str, meta: str,
                 rowid: int) -> None:
        self._init(id=id, project=project, type=type, text=text, importance=importance,
                   origin=origin, count=count, helpful=helpful, harmful=harmful,
                   duplicate_of=duplicate_of, session_id=session_id, created_at=created_at,
                   last_seen_at=last_seen_at, meta=meta, rowid=rowid)

    @property
    def effective_importance(self) -> float:
        """Base importance + 0.5 x (helpful - harmful) (Engram's rule)."""
        return self.importance + 0.5 * (self.helpful - self.harmful)


class NewMemory(Record):
    """A memory to write: already redacted, with its content-hash id."""

    __slots__ = ("id", "project", "type", "text", "importance", "origin", "session_id",
                 "created_at", "redactions", "cites", "meta")
    id: str
    project: str
    type: str
    text: str
    importance: float
    origin: str
    session_id: str | None
    created_at: str
    redactions: int
    cites: tuple[str, ...]
    meta: dict[str, object]

    def __init__(self, id: str, project: str, type: str, text: str, importance: float,
                 origin: str, session_id: str | None, created_at: str, redactions: int = 0,
                 cites: tuple[str, ...] = (), meta: dict[str, object] | None = None) -> None:
        self._init(id=id, project=project, type=type, text=text, importance=importance,
                   origin=origin, session_id=session_id, created_at=created_at,
                   redactions=redactions, cites=tuple(cites), meta=meta or {})


def upsert(conn: apsw.Connection, memory: NewMemory, *, count_repeat: bool = True) -> str:
    """Insert a memory or record an exact repeat of it; return 'created', 'repeated' or 'known'.

    A repeat raises `count` (unless ``count_repeat`` is false: automatic observations count
    a repeat only when it comes with new evidence), keeps the higher base importance and the
    later `last_seen_at`, and adds the citations. Call inside a transaction.
    """
    row = conn.execute("SELECT count, importance, last_seen_at FROM memories WHERE id = ?",
                       (memory.id,)).fetchone()
    if row is None:
        conn.execute(
            "INSERT INTO memories(id, project, type, text, importance, origin, session_id,"
            " created_at, last_seen_at, redactions, meta) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (memory.id, memory.project, memory.type, memory.text, memory.importance,
             memory.origin, memory.session_id, memory.created_at, memory.created_at,
             memory.redactions, json.dumps(memory.meta, sort_keys=True)),
        )
        add_citations(conn, memory.id, memory.cites)
        return "created"
    new_cites = add_citations(conn, memory.id, memory.cites)
    if not count_repeat and not new_cites:
        return "known"
    conn.execute(
        "UPDATE memories SET count = count + 1, importance = max(importance, ?),"
        " last_seen_at = max(last_seen_at, ?) WHERE id = ?",
        (memory.importance, memory.created_at, memory.id),
    )
    return "repeated"


def add_citations(conn: apsw.Connection, memory_id: str, chunk_ids: Iterable[str]) -> int:
    """Link a memory to chunks; return how many links are new."""
    before = conn.total_changes()
    conn.executemany("INSERT OR IGNORE INTO memory_citations(memory_id, chunk_id) VALUES (?, ?)",
                     [(memory_id, c) for c in dict.fromkeys(chunk_ids) if c])
    return conn.total_changes() - before


def citations(conn: apsw.Connection, memory_ids: Sequence[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {m: [] for m in memory_ids}
    for mid, cid in select_in(
        conn, "SELECT memory_id, chunk_id FROM memory_citations WHERE memory_id IN ({marks})"
        " ORDER BY memory_id, chunk_id", memory_ids,
    ):
        out[mid].append(cid)
    return out


def get(conn: apsw.Connection, memory_id: str) -> MemoryRow | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return MemoryRow(*row) if row else None


def resolve_ids(conn: apsw.Connection, prefix: str) -> list[str]:
    """Memory ids equal to or starting with ``prefix`` (at most 3, enough to say it is ambiguous)."""
    prefix = prefix.strip()
    exact = conn.execute("SELECT id FROM memories WHERE id = ?", (prefix,)).fetchone()
    if exact:
        return [exact[0]]
    if not prefix.startswith("mem_"):
        prefix = "mem_" + prefix
    like = prefix.replace("\\", "").replace("%", "").replace("_", "\\_") + "%"
    return [r[0] for r in conn.execute(
        "SELECT id FROM memories WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT 3", (like,))]


def select(
    conn: apsw.Connection,
    *,
    project: str | None = None,
    types: Sequence[str] = (),
    origins: Sequence[str] = (),
    include_global: bool = True,
    include_duplicates: bool = False,
    created_before: str | None = None,
    created_after: str | None = None,
    rowids: Sequence[int] | None = None,
    order: str = "recent",
    limit: int | None = None,
) -> list[MemoryRow]:
    """Memories filtered by project (plus global ones), type, origin and time, bound parameters only.

    ``order``: 'recent' (last seen first), 'importance' (effective importance, then recent),
    'created' (oldest first).
    """
    sql = f"SELECT {_COLUMNS} FROM memories WHERE 1"
    args: list[object] = []
    if project is not None:
        sql += " AND (project = ?" + (" OR project = ''" if include_global else "") + ")"
        args.append(project)
    for column, values in (("type", types), ("origin", origins)):
        if values:
            sql += f" AND {column} IN ({marks(len(values))})"
            args.extend(values)
    if not include_duplicates:
        sql += " AND duplicate_of IS NULL"
    if created_before:
        sql += " AND created_at < ?"
        args.append(created_before)
    if created_after:
        sql += " AND created_at >= ?"
        args.append(created_after)
    if rowids is not None:
        if not rowids:
            return []
        sql += f" AND rowid IN ({marks(len(rowids))})"  # one statement: ORDER BY, LIMIT span all
        args.extend(rowids)
    sql += {
        "recent": " ORDER BY last_seen_at DESC, rowid DESC",
        "importance": " ORDER BY importance + 0.5 * (helpful - harmful) DESC, last_seen_at DESC",
        "created": " ORDER BY created_at, rowid",
    }[order]
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    return [MemoryRow(*row) for row in conn.execute(sql, args)]


def duplicates_of(conn: apsw.Connection, memory_ids: Sequence[str]) -> dict[str, list[str]]:
    """Original id -> ids of the near duplicates linked to it."""
    out: dict[str, list[str]] = {}
    for mid, orig in select_in(
        conn, "SELECT id, duplicate_of FROM memories WHERE duplicate_of IN ({marks})"
        " ORDER BY created_at", memory_ids,
    ):
        out.setdefault(orig, []).append(mid)
    return out


def fts_match(conn: apsw.Connection, match: str, project: str | None,
              limit: int = 50) -> list[tuple[int, float]]:
    """(memory rowid, BM25 score, higher is better) for an FTS5 MATCH expression."""
    rows: list[tuple] = conn.execute(
        "SELECT m.rowid, -bm25(memories_fts, 1.0, 0.0) AS s FROM memories_fts"
        " JOIN memories m ON m.rowid = memories_fts.rowid"
        " WHERE memories_fts MATCH ? AND m.duplicate_of IS NULL"
        + (" AND (m.project = ? OR m.project = '')" if project is not None else "")
        + " ORDER BY s DESC LIMIT ?",
        (match, project, limit) if project is not None else (match, limit),
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def add_feedback(conn: apsw.Connection, memory_id: str, helpful: bool, reason: str | None) -> None:
    """Count one helpful/harmful vote and keep its reason; `last_seen_at` is not touched."""
    with conn:
        conn.execute("INSERT INTO memory_feedback(memory_id, helpful, reason) VALUES (?, ?, ?)",
                     (memory_id, 1 if helpful else 0, reason))
        column = "helpful" if helpful else "harmful"
        conn.execute(f"UPDATE memories SET {column} = {column} + 1 WHERE id = ?", (memory_id,))


def feedback_reasons(conn: apsw.Connection, memory_id: str) -> list[tuple[bool, str, str]]:
    return [(bool(h), r or "", t) for h, r, t in conn.execute(
        "SELECT helpful, reason, created_at FROM memory_feedback WHERE memory_id = ? ORDER BY id",
        (memory_id,))]


def delete(conn: apsw.Connection, memory_ids: Sequence[str], reason: str) -> int:
    """Delete memories (citations, feedback and vectors cascade) and leave tombstones."""
    n = 0
    with conn:
        for batch in batches(memory_ids):
            places = marks(len(batch))
            conn.execute(f"UPDATE main.memories SET duplicate_of = NULL WHERE duplicate_of IN ({places})",
                         batch)
            before = conn.total_changes()
            conn.execute(f"DELETE FROM main.memories WHERE id IN ({places})", batch)
            n += conn.total_changes() - before
            conn.executemany(
                "INSERT OR IGNORE INTO forgotten(scope, key, reason) VALUES ('memory', ?, ?)",
                [(m, reason) for m in batch],
            )
    return n


def forgotten(conn: apsw.Connection, memory_ids: Sequence[str]) -> set[str]:
    return {r[0] for r in select_in(
        conn, "SELECT key FROM forgotten WHERE scope = 'memory' AND key IN ({marks})", memory_ids)}


def unforget(conn: apsw.Connection, memory_id: str) -> None:
    """Drop a memory's tombstone (an explicit `remember` of forgotten text means it)."""
    conn.execute("DELETE FROM forgotten WHERE scope = 'memory' AND key = ?", (memory_id,))


def auto_citing(conn: apsw.Connection, chunk_ids: Sequence[str]) -> list[str]:
    """Ids of automatic memories whose evidence includes any of these chunks."""
    return list(dict.fromkeys(r[0] for r in select_in(
        conn, "SELECT DISTINCT c.memory_id FROM memory_citations c JOIN memories m ON m.id ="
        " c.memory_id WHERE m.origin = 'auto' AND c.chunk_id IN ({marks})", chunk_ids)))


# -- vectors -------------------------------------------------------------------------------


def pending_vectors(conn: apsw.Connection, model_id: str) -> list[tuple[int, str]]:
    """(rowid, text) of memories without a vector of this model, oldest first."""
    return [(r, t) for r, t in conn.execute(
        "SELECT m.rowid, m.text FROM memories m LEFT JOIN memory_vectors v"
        " ON v.memory_rowid = m.rowid AND v.model_id = ? WHERE v.memory_rowid IS NULL"
        " ORDER BY m.created_at, m.rowid", (model_id,))]


def write_vector(conn: apsw.Connection, rowid: int, model_id: str, vector: bytes) -> None:
    conn.execute("INSERT OR REPLACE INTO memory_vectors(memory_rowid, model_id, vector)"
                 " VALUES (?, ?, ?)", (rowid, model_id, vector))


def vectors(conn: apsw.Connection, model_id: str, rowids: Sequence[int] | None = None,
            project: str | None = None) -> dict[int, bytes]:
    """Memory rowid -> float32 vector bytes (only this model's), for given rowids or a project."""
    sql = ("SELECT v.memory_rowid, v.vector FROM memory_vectors v JOIN memories m"
           " ON m.rowid = v.memory_rowid WHERE v.model_id = ?")
    if rowids is not None:
        return dict(select_in(conn, sql + " AND v.memory_rowid IN ({marks})", rowids,
                              before=(model_id,)))
    if project is not None:
        return dict(conn.execute(sql + " AND (m.project = ? OR m.project = '')"
                                 " AND m.duplicate_of IS NULL", (model_id, project)))
    return dict(conn.execute(sql + " AND m.duplicate_of IS NULL", (model_id,)))


def link_duplicate(conn: apsw.Connection, memory_id: str, original_id: str) -> None:
    conn.execute("UPDATE memories SET duplicate_of = ? WHERE id = ? AND id != ?",
                 (original_id, memory_id, original_id))


# -- marks: the auto-observation scan position, reflection times ---------------------------


def get_mark(conn: apsw.Connection, name: str) -> str | None:
    row = conn.execute("SELECT value FROM memory_marks WHERE name = ?", (name,)).fetchone()
    return row[0] if row else None


def set_mark(conn: apsw.Connection, name: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO memory_marks(name, value) VALUES (?, ?)", (name, value))


def sessions_after(conn: apsw.Connection, rowid: int) -> list[str]:
    """Sessions with main-conversation chunks added after a chunk rowid."""
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT session_id FROM chunks WHERE rowid > ? AND agent_id = ''", (rowid,))]


class MainChunk(Record):
    """A main-conversation chunk of a session, as the automatic observation reads it."""

    __slots__ = ("id", "start_time", "text", "project", "meta")
    id: str
    start_time: str
    text: str
    project: str
    meta: str  # JSON (`causantic.ingest.chunking`)

    def __init__(self, id: str, start_time: str, text: str, project: str, meta: str) -> None:
        self._init(id=id, start_time=start_time, text=text, project=project, meta=meta)


def main_chunks(conn: apsw.Connection, session_id: str) -> list[MainChunk]:
    """The session's main-conversation chunks (no sub-agents), in file order."""
    return [MainChunk(*r) for r in conn.execute(
        "SELECT id, start_time, text, project, meta FROM chunks WHERE session_id = ?"
        " AND agent_id = '' ORDER BY offset, part", (session_id,))]


def chunk_ids_from(conn: apsw.Connection, prefix: str) -> list[str]:
    """Up to two chunk ids starting with a hex `prefix` (an index range, not LIKE): enough to
    tell whether the prefix is unique."""
    return [r[0] for r in conn.execute("SELECT id FROM chunks WHERE id >= ? AND id < ? LIMIT 2",
                                       (prefix, prefix + "g"))]


def has_any(conn: apsw.Connection) -> bool:
    """Whether any memory is stored (False for a file from before the memories migration)."""
    try:
        return conn.execute("SELECT 1 FROM memories LIMIT 1").fetchone() is not None
    except apsw.SQLError:  # a database opened before the migration (read-only elsewhere)
        return False


def has_project(conn: apsw.Connection, project: str) -> bool:
    """Whether a memory is stored under exactly this project name."""
    try:
        return conn.execute("SELECT 1 FROM memories WHERE project = ? LIMIT 1",
                            (project,)).fetchone() is not None
    except apsw.SQLError:  # a database opened before the memories migration (read-only)
        return False


def has_vectors(conn: apsw.Connection, model_id: str) -> bool:
    """Whether any memory has a vector of this model."""
    return conn.execute("SELECT 1 FROM memory_vectors WHERE model_id = ? LIMIT 1",
                        (model_id,)).fetchone() is not None


def session_starts(conn: apsw.Connection, project: str | None) -> list[str]:
    """Start times of the project's sessions (all sessions without a project), sorted."""
    if project:
        rows = conn.execute("SELECT start_time FROM sessions WHERE project = ?"
                            " AND start_time IS NOT NULL ORDER BY start_time", (project,))
    else:
        rows = conn.execute("SELECT start_time FROM sessions WHERE start_time IS NOT NULL"
                            " ORDER BY start_time")
    return [r[0] for r in rows]


def counts_since(conn: apsw.Connection, project: str, since: str | None) -> tuple[int, float]:
    """(observations, summed base importance) of the project created after ``since``
    (reflections excluded: they are the answer to a trigger, not a reason for one)."""
    row = conn.execute(
        "SELECT count(*), coalesce(sum(importance), 0) FROM memories WHERE (project = ?"
        " OR project = '') AND origin != 'reflection' AND created_at > ?",
        (project, since or ""),
    ).get
    return int(row[0]), float(row[1])
