"""The session-start briefing's "Active topics" line.

Kept apart from `causantic.topics.maps`, whose dataclasses (through `store.topics`) would cost
the hook about 10 ms to import: this module needs one query and a string.
"""

from __future__ import annotations

import apsw

from causantic.store.topic_members import active_topics


def active_topics_line(conn: apsw.Connection, project: str, *, limit: int = 3,
                       own_only: bool = False) -> str:
    """``Active topics: a, b, c (#1, 12 recent chunks); …`` for a project's latest chunks,
    or ''. ``own_only``: only topics no other project has chunks in."""
    found = active_topics(conn, project, limit=limit, own_only=own_only)
    if not found:
        return ""
    return "Active topics: " + "; ".join(f"{name} (#{i}, {n} recent chunks)" for i, name, n in found)
