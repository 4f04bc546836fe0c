"""The injection ledger: what memory causantic handed to Claude Code, and what it cost.

One row per injection (a hook's additionalContext, an MCP tool's answer): event, session,
project, characters, tokens, and the chunk and lesson ids it held. Writing is one INSERT in
autocommit mode; hooks open a small writable connection for it only when they inject.
"""

from __future__ import annotations

import json

import apsw

from causantic.records import Record
from causantic.tokens import approx_tokens


class Injection(Record):
    """One ledger row."""

    __slots__ = ("time", "event", "session_id", "project", "chars", "tokens", "chunk_ids",
                 "lesson_ids")
    time: str
    event: str
    session_id: str
    project: str
    chars: int
    tokens: int
    chunk_ids: list[str]
    lesson_ids: list[str]

    def __init__(self, time: str, event: str, session_id: str, project: str, chars: int,
                 tokens: int, chunk_ids: list[str], lesson_ids: list[str]) -> None:
        self._init(time=time, event=event, session_id=session_id, project=project, chars=chars,
                   tokens=tokens, chunk_ids=chunk_ids, lesson_ids=lesson_ids)

    def as_dict(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.__slots__}


def record(
    conn: apsw.Connection,
    event: str,
    text: str,
    *,
    session_id: str = "",
    project: str = "",
    chunk_ids: list[str] | tuple[str, ...] = (),
    lesson_ids: list[str] | tuple[str, ...] = (),
) -> None:
    """Append one injection (tokens estimated as for budgets, `causantic.tokens`)."""
    conn.execute(
        "INSERT INTO injections(event, session_id, project, chars, tokens, chunk_ids, lesson_ids)"
        " VALUES (?,?,?,?,?,?,?)",
        (event, session_id or "", project or "", len(text), approx_tokens(text),
         json.dumps(list(chunk_ids)), json.dumps(list(lesson_ids))),
    )


def record_at(path: str, event: str, text: str, **fields: object) -> None:
    """`record` through a fresh writable connection to the database file at `path` (hooks,
    whose store is opened read-only). Never migrates: the file was opened for reading first.
    """
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READWRITE)
    try:
        conn.set_busy_timeout(1_000)
        conn.execute("PRAGMA synchronous = NORMAL")  # WAL: no fsync per commit on a hook path
        record(conn, event, text, **fields)  # type: ignore[arg-type]
    finally:
        conn.close()


def entries(conn: apsw.Connection, session_id: str | None = None,
            limit: int = 100) -> list[Injection]:
    """Injections, newest first; of one session when given (8+ characters of its id)."""
    sql = ("SELECT time, event, session_id, project, chars, tokens, chunk_ids, lesson_ids"
           " FROM injections")
    args: tuple[object, ...] = ()
    if session_id:
        sql += " WHERE session_id LIKE ?"
        args = (session_id.replace("%", "") + "%",)
    rows = conn.execute(sql + " ORDER BY rowid DESC LIMIT ?", (*args, limit))
    return [Injection(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]), json.loads(r[7]))
            for r in rows]


def per_session(conn: apsw.Connection, limit: int = 20) -> list[tuple[str, int, int, str]]:
    """(session, injections, tokens, last time) for the sessions injected into most recently."""
    return [tuple(r) for r in conn.execute(
        "SELECT session_id, count(*), sum(tokens), max(time) FROM injections"
        " GROUP BY session_id ORDER BY max(time) DESC LIMIT ?", (limit,))]
