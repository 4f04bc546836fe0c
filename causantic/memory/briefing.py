"""The memory part of the session-start briefing: SQL only (no numpy, onnxruntime or mcp).

It lists the project's (and global) instructions and decisions, most important first, near
duplicates collapsed, within a character budget, and one line when reflection is due.
"""

from __future__ import annotations

import apsw

from causantic.memory.triggers import reflection_line
from causantic.store import memories as sql
from causantic.tokens import clip_line

BRIEFING_TYPES = ("instruction", "decision")
MAX_ITEMS = 12


def briefing_block(conn: apsw.Connection, project: str, max_chars: int) -> str:
    """'Standing instructions and decisions' lines for the briefing, or '' when there are none."""
    try:
        rows = sql.select(conn, project=project, types=BRIEFING_TYPES, order="importance",
                          limit=MAX_ITEMS)
    except apsw.SQLError:  # a database from before memories existed
        return ""
    lines: list[str] = []
    if rows:
        lines.append("Standing instructions and decisions (causantic memories; `causantic "
                     "feedback ID --harmful` if one is wrong):")
        for m in rows:
            line = f"- [{m.type}] {clip_line(m.text, 240)} ({m.id})"
            if sum(len(x) + 1 for x in lines) + len(line) > max_chars:
                break
            lines.append(line)
        if len(lines) == 1:
            lines = []
    due = reflection_line(conn, project)
    if due and sum(len(x) + 1 for x in lines) + len(due) <= max_chars:
        lines.append(due)
    return "\n".join(lines)
