"""The session_state table: one JSON document per session, derived from its chunks.

The document is whatever `causantic.session_state` computes; this module only stores it
with the chunk count and end time it was computed from, so readers can tell a stale row.
"""

from __future__ import annotations

import apsw

from causantic.records import Record


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
