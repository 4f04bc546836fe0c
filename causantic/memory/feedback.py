"""Feedback on a memory: helpful or harmful, with a reason.

Effective importance = base + 0.5 x (helpful - harmful). Feedback never refreshes a memory's
recency (`last_seen_at`): in Engram every retrieval and vote made a memory "recent" again,
so what was shown once kept being shown (a rich-get-richer loop).
"""

from __future__ import annotations

from causantic.errors import UsageError
from causantic.store import memories as sql
from causantic.store.db import Store


def feedback(store: Store, ref: str, helpful: bool, reason: str | None = None) -> dict[str, object]:
    """Record one vote on the memory `ref` (id or unique prefix); return the new state.

    Raises
    ------
    UsageError : no such memory, or an ambiguous prefix.
    """
    conn = store.conn
    found = sql.resolve_ids(conn, ref)
    if not found:
        raise UsageError(f"no memory {ref!r}; `causantic memories` lists their ids")
    if len(found) > 1:
        raise UsageError(f"memory id {ref!r} is ambiguous ({', '.join(found)}); give more of it")
    memory_id = found[0]
    sql.add_feedback(conn, memory_id, helpful, (reason or "").strip() or None)
    m = sql.get(conn, memory_id)
    assert m is not None
    text = (f"Recorded {'helpful' if helpful else 'harmful'} feedback on {m.id}: effective "
            f"importance {m.effective_importance:g} (base {m.importance:g}, {m.helpful} helpful,"
            f" {m.harmful} harmful).")
    return {"id": m.id, "helpful": m.helpful, "harmful": m.harmful,
            "importance": m.importance, "effective_importance": m.effective_importance,
            "text": text}
