"""When reflection is due (SQL only): Engram's triggers without its background LLM job.

Since the project's last reflection (or ever): summed importance of new observations >=
`IMPORTANCE_SUM`, or >= `OBSERVATIONS` of them, or >= `HOURS` hours with at least
`MIN_NEW` new ones. Reflection itself is done by the calling agent (`causantic.memory.reflect`).
"""

from __future__ import annotations

from datetime import UTC, datetime

import apsw

from causantic.store import memories as sql
from causantic.timestamps import parse_iso

IMPORTANCE_SUM = 150.0
OBSERVATIONS = 100
HOURS = 24.0
MIN_NEW = 3


def mark_name(project: str) -> str:
    return f"reflected:{project}"


def due(conn: apsw.Connection, project: str, now: datetime | None = None) -> str | None:
    """Why reflection is due for the project, or None."""
    last = sql.get_mark(conn, mark_name(project))
    count, total = sql.counts_since(conn, project, last)
    if count == 0:
        return None
    if total >= IMPORTANCE_SUM:
        return f"{count} new observations of summed importance {total:g} (≥ {IMPORTANCE_SUM:g})"
    if count >= OBSERVATIONS:
        return f"{count} new observations (≥ {OBSERVATIONS})"
    if count >= MIN_NEW:
        if last is None:
            return f"{count} observations and no reflection yet"
        when = parse_iso(last)
        hours = ((now or datetime.now(UTC)) - when).total_seconds() / 3600
        if hours >= HOURS:
            return f"{count} new observations, {hours:.0f} h since the last reflection"
    return None


def reflection_line(conn: apsw.Connection, project: str) -> str:
    """One briefing line when reflection is due, else ''.

    Stated as a fact, not an order: Claude Code's hook guidance warns that imperative text
    injected out of band can trip Claude's prompt-injection defences."""
    why = due(conn, project)
    if why is None:
        return ""
    return (f"Reflection due ({why}): the causantic MCP tool `reflect` gathers them as "
            "evidence, and `observe` (type insight or procedure, with cites) keeps what they "
            "teach.")
