"""Lookups on topic memberships that need nothing of `store.topics`.

`store.topics` defines dataclasses (importing `dataclasses` costs the session-start hook
~6 ms); the hook asks `any_members` before it loads the topic map, and memory reflection
groups memories by the topics of the chunks they cite.
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
