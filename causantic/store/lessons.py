"""The lessons table: error episodes derived from a session's chunks (see `causantic.lessons`).

Rows are replaced per session (`replace_session`), so re-ingesting a session is idempotent;
ids are content hashes of the session and the error signature. Reads used by the PostToolUse
hook (`find_by_message`) are one indexed query.
"""

from __future__ import annotations

import json
from collections import namedtuple

import apsw

from causantic.records import Record
from causantic.store.sql import marks

COLUMNS = (
    "id", "session_id", "project", "time", "tool", "program", "error_class", "signature",
    "sig_hash", "msg_hash", "informative", "error", "subject", "occurrences", "attempts",
    "resolved", "fix", "fix_command", "fix_files", "fix_time", "fix_commit", "error_chunk",
    "fix_chunk", "change_chunks",
)
_SELECT = "SELECT " + ", ".join(COLUMNS) + " FROM lessons"


class LessonRow(Record):
    """One stored lesson; JSON columns (`attempts`, `fix_files`, `change_chunks`) as text."""

    __slots__ = COLUMNS
    id: str
    session_id: str
    project: str
    time: str
    tool: str
    program: str
    error_class: str
    signature: str
    sig_hash: str
    msg_hash: str
    informative: int
    error: str
    subject: str
    occurrences: int
    attempts: str
    resolved: int
    fix: str
    fix_command: str
    fix_files: str
    fix_time: str
    fix_commit: str
    error_chunk: str
    fix_chunk: str
    change_chunks: str

    def __init__(self, *values: object, **named: object) -> None:
        self._init(**dict(zip(COLUMNS, values)), **named)


def replace_session(conn: apsw.Connection, session_id: str, rows: list[LessonRow]) -> None:
    """Make the session's lessons exactly `rows` (inside the caller's transaction).

    Unchanged rows are left in place, so an incremental ingest rewrites only what changed.
    """
    old = {r[0]: r[1:] for r in conn.execute(
        "SELECT " + ", ".join(COLUMNS) + " FROM lessons WHERE session_id = ?", (session_id,))}
    new = {r.id: r for r in rows}
    for lesson_id, values in old.items():
        row = new.get(lesson_id)
        if row is None or tuple(getattr(row, c) for c in COLUMNS[1:]) != values:
            conn.execute("DELETE FROM lessons WHERE id = ?", (lesson_id,))
    placeholders = marks(len(COLUMNS))
    for row in rows:
        conn.execute(
            f"INSERT OR IGNORE INTO lessons({', '.join(COLUMNS)}) VALUES ({placeholders})",
            tuple(getattr(row, c) for c in COLUMNS),
        )


# A named tuple, not a dataclass: the PostToolUse hook may derive lessons (hook path).
EventChunk = namedtuple("EventChunk", ["id", "agent_id", "start_time", "text", "meta"])
EventChunk.__doc__ = "One chunk of a session, as its tool results and texts are read from it."


def event_chunks(conn: apsw.Connection, session_id: str) -> list[EventChunk]:
    """Every chunk of the session in reading order (as `causantic.derive_state` reads them)."""
    return [EventChunk(*r) for r in conn.execute(
        "SELECT id, agent_id, start_time, text, meta FROM chunks WHERE session_id = ?"
        " ORDER BY start_time, agent_id != '', agent_id, offset, part",
        (session_id,),
    )]


def sessions_with_chunks(conn: apsw.Connection) -> list[str]:
    """Every session id that has stored chunks."""
    return [r[0] for r in conn.execute("SELECT DISTINCT session_id FROM chunks")]


def delete_orphans(conn: apsw.Connection) -> None:
    """Delete the lessons of sessions that no longer have chunks (forgotten ones)."""
    conn.execute("DELETE FROM lessons WHERE session_id NOT IN"
                 " (SELECT DISTINCT session_id FROM chunks)")


def shown_msg_hashes(conn: apsw.Connection, session_id: str) -> set[str]:
    """Message hashes of the lessons the hooks already offered in this session (the ledger's
    `lesson_ids` of its injections)."""
    ids: set[str] = set()
    for (raw,) in conn.execute(
        "SELECT lesson_ids FROM injections WHERE session_id = ? AND lesson_ids != '[]'",
        (session_id,),
    ):
        ids.update(json.loads(raw))
    if not ids:
        return set()
    from causantic.store.sql import select_in  # PostToolUse hook: only once a lesson was shown

    return {r[0] for r in select_in(conn, "SELECT msg_hash FROM lessons WHERE id IN ({marks})",
                                    ids)}


def _distinct(rows: list[LessonRow], limit: int) -> list[LessonRow]:
    """The first `limit` rows, each episode once: a session forked from another (`/branch`,
    `--fork-session`) holds a copy of the parent's history, records and times included, so
    its lessons repeat the parent's. A copy is the same error at the same moment with the
    same fix; the same error met again in another session is a new episode and stays."""
    seen: set[tuple[str, str, str, str]] = set()
    out = []
    for row in rows:
        key = (row.project, row.time, row.sig_hash, row.fix_time)
        if key not in seen:
            seen.add(key)
            out.append(row)
            if len(out) == limit:
                break
    return out


#: Rows read per row returned once forked copies were dropped, so the limit still fills.
_OVERFETCH = 4


def _read_distinct(conn: apsw.Connection, sql: str, args: tuple[object, ...],
                   limit: int) -> list[LessonRow]:
    """`sql` (ending in LIMIT ?) read with `limit`, each episode once (`_distinct`); read
    again with more rows only when copies were dropped and more rows may exist, so the
    common case (no fork) costs what one plain read does."""
    rows = [LessonRow(*r) for r in conn.execute(sql, (*args, limit))]
    out = _distinct(rows, limit)
    if len(out) < len(rows) == limit:
        out = _distinct([LessonRow(*r) for r in conn.execute(sql, (*args, limit * _OVERFETCH))],
                       limit)
    return out


def list_lessons(
    conn: apsw.Connection,
    project: str | None = None,
    resolved: bool | None = None,
    limit: int = 50,
) -> list[LessonRow]:
    """Lessons, newest first, optionally of one project and resolved or not."""
    where: list[str] = []
    args: list[object] = []
    if project:
        where.append("project = ?")
        args.append(project)
    if resolved is not None:
        where.append("resolved = ?")
        args.append(int(resolved))
    sql = _SELECT + (" WHERE " + " AND ".join(where) if where else "")
    return _read_distinct(conn, sql + " ORDER BY time DESC, id LIMIT ?", tuple(args), limit)


def find_by_message(
    conn: apsw.Connection, msg_hashes: list[str], limit: int = 20
) -> list[LessonRow]:
    """Informative lessons whose normalised message has one of these hashes, newest first."""
    if not msg_hashes:
        return []
    return _read_distinct(  # one statement, not batches: the ORDER BY and LIMIT span all hashes
        conn, f"{_SELECT} WHERE msg_hash IN ({marks(len(msg_hashes))}) AND informative = 1"
        " ORDER BY time DESC, id LIMIT ?", tuple(msg_hashes), limit)


def search_lessons(
    conn: apsw.Connection, match: str, project: str | None = None, limit: int = 3
) -> list[LessonRow]:
    """Lessons whose text matches an FTS5 `match` expression (built by `fts_query`), best first."""
    sql = (f"{_SELECT} WHERE rowid IN (SELECT rowid FROM lessons_fts WHERE lessons_fts MATCH ?"
           " ORDER BY rank LIMIT 50) AND informative = 1")
    args: list[object] = [match]
    if project:
        sql += " AND project = ?"
        args.append(project)
    return _read_distinct(conn, sql + " ORDER BY resolved DESC, time DESC, id LIMIT ?",
                          tuple(args), limit)


def count(conn: apsw.Connection) -> tuple[int, int]:
    """(lessons, resolved lessons)."""
    row = conn.execute("SELECT count(*), coalesce(sum(resolved), 0) FROM lessons").get
    return int(row[0]), int(row[1])
