"""`forget` by project, session, time or query also covers explicit memories.

`causantic.forget` deletes chunks (and, through their evidence, the automatic memories drawn
from them); this module selects the memories matching the same criteria so that "forget
project X" or "forget what mentions the API key" does not leave remembered statements behind.
A memory matches when every given criterion holds: its project (global memories are never
selected by project), its session, its creation time in [after, before), and for a query a
cosine >= threshold with its vector (the model's, when memory vectors exist) or else a share
of the query's terms >= threshold. Deleting leaves tombstones (`store.memories.delete`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from causantic.memory.recall import cosines, coverage, has_memories
from causantic.retrieval.fts import query_terms
from causantic.store import memories as sql
from causantic.store.db import Store


def matching(store: Store, *, project: str | None, session_id: str | None, after: str | None,
             before: str | None, query: str | None, threshold: float,
             model_dir: Path | None = None) -> list[sql.MemoryRow]:
    """The memories every given criterion selects (none when no criterion is given)."""

    if not any((project, session_id, after, before, query)) or not has_memories(store.conn):
        return []
    rows = sql.select(store.conn, project=project, include_global=False,
                      include_duplicates=True, created_after=after, created_before=before,
                      order="created")
    if session_id:
        rows = [r for r in rows if r.session_id == session_id]
    if query:
        cos = cosines(store.conn, query, project, None if model_dir is None else str(model_dir))
        terms = query_terms(query)
        rows = [r for r in rows if (cos[r.rowid] if r.rowid in cos
                                    else coverage(terms, r.text)) >= threshold]
    return rows


def forget_matching(store: Store, rows: Sequence[sql.MemoryRow], *, dry_run: bool,
                    reason: str) -> str:
    """Delete (unless dry_run) the selected memories; one line plus a few examples, or ''."""
    if not rows:
        return ""
    if not dry_run:
        sql.delete(store.conn, [r.id for r in rows], reason)
    n = len(rows)
    noun = f"{n} memor{'y' if n == 1 else 'ies'}"
    head = (f"{'Would also forget' if dry_run else 'Also forgot'} {noun} (remembered observations, "
            "tombstoned):")
    lines = [head] + [f"  {r.id} · {r.type} · {' '.join(r.text.split())[:80]}" for r in rows[:5]]
    if n > 5:
        lines.append(f"  … and {n - 5} more")
    return "\n".join(lines)
