"""Compaction: TTL pruning of low-importance automatic observations (off by default).

Only memories with origin 'auto' whose effective importance is below `max_importance` and
that were last seen more than `ttl_days` ago are pruned; transcript chunks and explicit or
reflected memories never are. Pruned memories leave tombstones, so the next ingest does not
observe them again. `dry_run` (the default) only previews.
"""

from __future__ import annotations

from datetime import datetime

from causantic.errors import UsageError
from causantic.store import memories as sql
from causantic.store.db import Store
from causantic.timestamps import days_ago, iso_utc


def prune(store: Store, *, ttl_days: float, max_importance: float = 4.0, dry_run: bool = True,
          now: datetime | None = None) -> dict[str, object]:
    """Preview or prune; returns {count, ids, dry_run, text}.

    Raises
    ------
    UsageError : ttl_days is not positive.
    """
    if ttl_days <= 0:
        raise UsageError(f"ttl must be a positive number of days, not {ttl_days:g}")
    cutoff = iso_utc(days_ago(ttl_days, now))
    rows = [m for m in sql.select(store.conn, origins=("auto",), include_duplicates=True,
                                  order="created")
            if m.last_seen_at < cutoff and m.effective_importance < max_importance]
    ids = [m.id for m in rows]
    if not dry_run and ids:
        sql.delete(store.conn, ids, f"prune: auto, importance < {max_importance:g}, "
                                    f"older than {ttl_days:g} days")
    verb = "Would prune" if dry_run else "Pruned"
    lines = [f"{verb} {len(ids)} automatic observation{'s' if len(ids) != 1 else ''} with "
             f"effective importance < {max_importance:g} last seen before {cutoff[:10]}"
             + (" (tombstones keep them from coming back)." if ids and not dry_run else ".")]
    lines += [f"  {m.id} · {m.type} · {m.text[:80]}" for m in rows[:10]]
    if len(rows) > 10:
        lines.append(f"  … and {len(rows) - 10} more")
    if dry_run and ids:
        lines.append("Nothing was deleted; add --yes to prune.")
    return {"count": len(ids), "ids": ids, "dry_run": dry_run, "text": "\n".join(lines)}
