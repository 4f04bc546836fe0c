"""Memory upkeep run by ingest and embed: automatic observations, TTL pruning, vectors.

Both run after the chunks are committed, so a failure here loses nothing: the next run
scans again from the same watermark.
"""

from __future__ import annotations

from pathlib import Path

from causantic.config import MemorySettings
from causantic.memory.observe import Redact
from causantic.store.db import Store


def after_ingest(store: Store, memory: MemorySettings, redact: Redact | None) -> dict[str, int]:
    """Automatic observations from new chunks (`[memory] auto`, on by default), then the
    TTL pruning of low-importance automatic ones when `[memory] ttl_days` is set (off: 0)."""
    counts: dict[str, int] = {}
    if memory.auto:
        # deferred: hook fast path: loaded only when this runs
        from causantic.memory.auto import scan

        counts = scan(store.conn, redact)
    if memory.ttl_days > 0:
        # deferred: hook fast path: loaded only when this runs
        from causantic.memory.compact import prune

        result = prune(store, ttl_days=memory.ttl_days, max_importance=memory.prune_below,
                       dry_run=False)
        counts["pruned"] = int(result["count"])  # type: ignore[call-overload]
    return counts


def embed_memories(store: Store, memory: MemorySettings, model_dir: Path | None) -> int:
    """Vectors for memories that have none (and near-duplicate links); -1 without a model."""
    # deferred: hook fast path: loaded only when this runs
    from causantic.memory.observe import embed_memories as run

    return run(store, model_dir=None if model_dir is None else str(model_dir),
               near_days=memory.near_days, only_if_available=True)
