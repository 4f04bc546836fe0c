"""Memory upkeep run by ingest and embed: automatic observations, TTL pruning, vectors.

Both run after the chunks are committed, so a failure here loses nothing: the next run
scans again from the same watermark.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from causantic.memory import option
from causantic.memory.observe import Redact
from causantic.store.db import Store


def after_ingest(store: Store, raw: Mapping[str, Any] | None, redact: Redact | None) -> dict[str, int]:
    """Automatic observations from new chunks (`[memory] auto`, on by default), then the
    TTL pruning of low-importance automatic ones when `[memory] ttl_days` is set (off: 0)."""
    counts: dict[str, int] = {}
    if option(raw, "auto", True):
        from causantic.memory.auto import scan

        counts = scan(store.conn, redact)
    ttl = float(option(raw, "ttl_days", 0.0))
    if ttl > 0:
        from causantic.memory.compact import prune

        result = prune(store, ttl_days=ttl, max_importance=float(option(raw, "prune_below", 4.0)),
                       dry_run=False)
        counts["pruned"] = int(result["count"])  # type: ignore[call-overload]
    return counts


def embed_memories(store: Store, raw: Mapping[str, Any] | None, model_dir: Path | None) -> int:
    """Vectors for memories that have none (and near-duplicate links); -1 without a model."""
    from causantic.memory.observe import embed_memories as run

    return run(store, model_dir=None if model_dir is None else str(model_dir),
               near_days=float(option(raw, "near_days", 7.0)), only_if_available=True)
