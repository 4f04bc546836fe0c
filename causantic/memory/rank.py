"""Three-factor ranking of memories: relevance, importance, recency (pure Python).

Each factor's raw value is min-max normalised over the candidates (a factor on which every
candidate is equal contributes nothing), then score = w_rel * relevance + w_imp * importance
+ w_rec * recency with the weights renormalised to sum to 1. Raw values:

- relevance: cosine of query and memory vectors blended with the keyword score (the share
  of the query's terms the memory holds); keyword only when a memory has no vector yet;
- importance: effective importance, base + 0.5 x (helpful - harmful);
- recency: logical by default, 0.5 ** (sessions of the project started since the memory
  was last observed / `half_life_sessions`); with ``clock='wall'``, 0.5 ** (days since /
  `half_life_days`). Feedback and retrieval never refresh it (only a real repeat does), so
  there is no rich-get-richer loop.

The defaults were chosen on `bench/memories.py`'s labelled queries (see README).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from datetime import UTC, datetime

from causantic.records import Record
from causantic.store.memories import MemoryRow
from causantic.timestamps import parse_iso


class Weights(Record):
    """Ranking parameters (weights need not sum to 1: they are renormalised)."""

    __slots__ = ("relevance", "importance", "recency", "clock", "half_life_sessions",
                 "half_life_days")
    relevance: float
    importance: float
    recency: float
    clock: str  # "logical" | "wall"
    half_life_sessions: float
    half_life_days: float

    def __init__(self, relevance: float = 0.4, importance: float = 0.3, recency: float = 0.3,
                 clock: str = "logical", half_life_sessions: float = 10.0,
                 half_life_days: float = 7.0) -> None:
        if clock not in ("logical", "wall"):
            raise ValueError(f"clock must be 'logical' or 'wall', not {clock!r}")
        if min(relevance, importance, recency) < 0 or relevance + importance + recency <= 0:
            raise ValueError("weights must be non-negative and not all zero")
        self._init(relevance=relevance, importance=importance, recency=recency, clock=clock,
                   half_life_sessions=half_life_sessions, half_life_days=half_life_days)


DEFAULT = Weights()


class Candidate(Record):
    """A memory with its raw factors and, after ranking, its score."""

    __slots__ = ("memory", "relevance", "importance", "recency", "score")
    memory: MemoryRow
    relevance: float
    importance: float
    recency: float
    score: float

    def __init__(self, memory: MemoryRow, relevance: float, importance: float, recency: float,
                 score: float = 0.0) -> None:
        self._init(memory=memory, relevance=relevance, importance=importance, recency=recency,
                   score=score)


def relevance(cosine: float | None, keyword: float) -> float:
    """Raw relevance from a cosine (None: no vector) and a keyword score in [0, 1]."""
    if cosine is None:
        return 0.25 + 0.5 * keyword
    return 0.75 * cosine + 0.25 * keyword


def recency(memory: MemoryRow, weights: Weights, session_starts: Sequence[str],
            now: datetime | None = None) -> float:
    """Raw recency in (0, 1]: 1 for a memory seen in the latest session (or just now)."""
    if weights.clock == "wall":
        seen = parse_iso(memory.last_seen_at, or_now=True)
        days = max(0.0, ((now or datetime.now(UTC)) - seen).total_seconds() / 86400)
        return 0.5 ** (days / weights.half_life_days)
    since = len(session_starts) - bisect.bisect_right(session_starts, memory.last_seen_at)
    return 0.5 ** (since / weights.half_life_sessions)


def rank(candidates: Sequence[Candidate], weights: Weights = DEFAULT) -> list[Candidate]:
    """Score candidates by the normalised weighted sum; best first (ties: newer first)."""
    if not candidates:
        return []
    total = weights.relevance + weights.importance + weights.recency
    rel = _minmax([c.relevance for c in candidates])
    imp = _minmax([c.importance for c in candidates])
    rec = _minmax([c.recency for c in candidates])
    scored = [
        c.replace(score=(weights.relevance * r + weights.importance * i + weights.recency * t)
                  / total)
        for c, r, i, t in zip(candidates, rel, imp, rec)
    ]
    scored.sort(key=lambda c: c.memory.last_seen_at, reverse=True)
    scored.sort(key=lambda c: (-c.score, -c.relevance))  # stable: ties stay newest first
    return scored


def _minmax(values: list[float]) -> list[float]:
    lo, hi = min(values), max(values)
    if hi - lo < 1e-12:
        return [0.0] * len(values)
    return [(v - lo) / (hi - lo) for v in values]


