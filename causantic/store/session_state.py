"""The session_state table: one JSON document per session, derived from its chunks.

The document is whatever `causantic.derive_state` computes; this module only stores it
with the chunk count and end time it was computed from, so readers can tell a stale row.
"""

from __future__ import annotations

from collections import namedtuple

import apsw

from causantic.records import Record

# Named tuples, not dataclasses: the session-start hook loads states through this module.
StateChunk = namedtuple("StateChunk", ["id", "agent_id", "kind", "start_time", "end_time", "meta",
                                       "text"])
StateChunk.__doc__ = "One chunk of a session, as a state is computed from it."
SessionInfo = namedtuple("SessionInfo", ["project", "git_branch", "title", "cwd"])
SessionInfo.__doc__ = "What a state records of the session's row in the sessions table."
ChunkSpan = namedtuple("ChunkSpan", ["chunks", "end_time"])
ChunkSpan.__doc__ = "How many chunks a session has and when the last one ends (a state's key)."


class StoredState(Record):
    """One stored row (a `Record`: the hook path skips generating a dataclass)."""

    __slots__ = ("session_id", "project", "start_time", "end_time", "chunks", "state")
    session_id: str
    project: str
    start_time: str
    end_time: str
    chunks: int
    state: str  # JSON

    def __init__(self, session_id: str, project: str, start_time: str, end_time: str,
                 chunks: int, state: str) -> None:
        self._init(session_id=session_id, project=project, start_time=start_time,
                   end_time=end_time, chunks=chunks, state=state)  # state: JSON


def save_state(
    conn: apsw.Connection,
    session_id: str,
    project: str,
    start_time: str,
    end_time: str,
    chunks: int,
    state: str,
) -> None:
    """Insert or replace a session's state."""
    conn.execute(
        "INSERT INTO session_state(session_id, project, start_time, end_time, chunks, state)"
        " VALUES (?,?,?,?,?,?) ON CONFLICT(session_id) DO UPDATE SET project = excluded.project,"
        " start_time = excluded.start_time, end_time = excluded.end_time,"
        " chunks = excluded.chunks, state = excluded.state,"
        " computed_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')",
        (session_id, project, start_time, end_time, chunks, state),
    )


def get_state(conn: apsw.Connection, session_id: str) -> StoredState | None:
    row = conn.execute(
        "SELECT session_id, project, start_time, end_time, chunks, state FROM session_state"
        " WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    return StoredState(*row) if row else None


def delete_state(conn: apsw.Connection, session_id: str) -> None:
    conn.execute("DELETE FROM session_state WHERE session_id = ?", (session_id,))


# -- what a state is computed from ----------------------------------------------------------


def state_chunks(conn: apsw.Connection, session_id: str) -> list[StateChunk]:
    """Every chunk of the session in reading order: by time, the main conversation before
    sub-agents at the same time, then position in the file."""
    return [StateChunk(*r) for r in conn.execute(
        "SELECT id, agent_id, kind, start_time, end_time, meta, text FROM chunks"
        " WHERE session_id = ? ORDER BY start_time, agent_id != '', agent_id, offset, part",
        (session_id,),
    )]


def session_info(conn: apsw.Connection, session_id: str) -> SessionInfo | None:
    """The session row's project, branch, title and cwd; None when there is no row."""
    row = conn.execute(
        "SELECT project, git_branch, title, cwd FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    return SessionInfo(*row) if row else None


def chunk_span(conn: apsw.Connection, session_id: str) -> ChunkSpan:
    """The session's chunk count and latest end time (0 and None without chunks)."""
    row: tuple = conn.execute(
        "SELECT count(*), max(end_time) FROM chunks WHERE session_id = ?", (session_id,)
    ).fetchone() or (0, None)  # an aggregate always returns one row
    return ChunkSpan(*row)


def latest_summary(conn: apsw.Connection, session_id: str) -> str:
    """The text of the session's newest stored compaction summary chunk ('' when none)."""
    row = conn.execute(
        "SELECT text FROM chunks WHERE session_id = ? AND kind = 'summary'"
        " ORDER BY start_time DESC LIMIT 1", (session_id,)).fetchone()
    return row[0] if row else ""
