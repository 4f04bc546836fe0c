"""Lookups on topic memberships that need nothing of `store.topics`.

`store.topics` defines dataclasses (importing `dataclasses` costs the session-start hook
~10 ms, `inspect` and `ast` with it); the hook asks `any_members`, then `active_topics` for
the briefing's line, and memory reflection groups memories by the topics of the chunks they
cite.
"""

from __future__ import annotations

from collections.abc import Iterable

import apsw


def any_members(conn: apsw.Connection) -> bool:
    """Whether the topic_members table holds a row (False for a file from before topics)."""
    try:
        return conn.execute("SELECT 1 FROM topic_members LIMIT 1").fetchone() is not None
    except apsw.SQLError:  # a database from before topics existed
        return False


def topic_names_of(conn: apsw.Connection, chunk_ids: Iterable[str]) -> list[tuple[str, str]]:
    """(chunk id, topic name) for those of these chunks that belong to a topic.

    Raises apsw.SQLError on a file from before topics.
    """
    from causantic.store.sql import select_in  # not on the hook path, which loads only any_members

    return list(select_in(
        conn,
        "SELECT c.id, t.name FROM chunks c JOIN topic_members tm ON tm.chunk_rowid ="
        " c.rowid JOIN topics t ON t.id = tm.topic_id WHERE c.id IN ({marks})",
        chunk_ids,
    ))


def active_topics(
    conn: apsw.Connection, project: str, *, recent: int = 200, limit: int = 5,
    own_only: bool = False,
) -> list[tuple[int, str, int]]:
    """(topic id, name, chunks) of the topics most present among a project's latest chunks;
    ``own_only``: only topics without chunks of other projects ([] on a file from before
    topics).

    Reads at most ``recent`` chunks through the (project, start_time) index: bounded cost for
    the session-start hook whatever the size of memory.
    """
    own = (" WHERE NOT EXISTS (SELECT 1 FROM topic_members o JOIN chunks oc ON oc.rowid ="
           " o.chunk_rowid WHERE o.topic_id = t.id AND oc.project != ?)") if own_only else ""
    try:
        rows = list(conn.execute(
            "SELECT t.id, t.name, count(*) AS k FROM"
            " (SELECT rowid FROM chunks WHERE project = ? ORDER BY start_time DESC LIMIT ?) c"
            " JOIN topic_members m ON m.chunk_rowid = c.rowid JOIN topics t ON t.id = m.topic_id"
            f"{own} GROUP BY t.id ORDER BY k DESC, t.id LIMIT ?",
            (project, recent, *((project,) if own_only else ()), limit),
        ))
    except apsw.SQLError:  # a database from before topics existed
        return []
    return [(int(i), str(n), int(k)) for i, n, k in rows]
