"""Retrieval variants the benchmarks compare with the product's; the product never uses them.

Each is built from product building blocks through two seams, so the product keeps one way
of doing each step and no experiment knob reaches the CLI, the MCP tools or the hooks:

* `causantic.retrieval.search.search_with(steps, ...)`: hybrid search with another fusion of
  its keyword and vector lists, another cluster expansion or no rerank (`Steps`);
* `causantic.retrieval.chains.walk_seeded(..., seed_mode, search_steps)`: recall/predict
  seeded from another search mode or other hybrid steps.

Variants:

* `search(..., fusion="rrf")`: Reciprocal Rank Fusion (k = 60), the hybrid fusion used before
  score fusion, without the token rerank (its scores are not on the scale the rerank adds
  to; `bench.search_quality`'s ``hybrid-rrf`` rows; why it lost: the module docstring of
  `causantic.retrieval.fusion`);
* `search(..., rerank=False)` and `recall` / `predict` with ``rerank=False``: hybrid without
  the token rerank (`causantic.retrieval.rerank`; `bench.answers` prints them beside the
  product);
* `search(..., cluster_expansion=True, order=..., weight=...)`: topic siblings nearest the
  hit instead of the centroid, or scaled (`bench.topics`);
* `recall` / `predict` with ``search_mode`` keyword or vector seeds (`bench.answers`);
* `RELEVANCE_ONLY`: memories ranked by relevance alone (`bench.memories`; the product's
  weights are `causantic.memory.rank.DEFAULT` or the config's).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import apsw

from causantic.errors import UsageError
from causantic.memory.rank import Weights
from causantic.retrieval.chains import BACKWARD, FORWARD, walk_seeded
from causantic.retrieval.render import Answer, Hit
from causantic.retrieval.search import PRODUCT, Expand, Steps, no_rerank, search_with
from causantic.store.db import Store

FUSIONS = ("score", "rrf")
RRF_K = 60
RELEVANCE_ONLY = Weights(1.0, 0.0, 0.0)
#: The product's hybrid steps without the token rerank.
WITHOUT_RERANK: Steps = replace(PRODUCT, rerank=no_rerank)


def rrf(
    lists: Sequence[tuple[str, Sequence[str]]], k: int = RRF_K
) -> list[tuple[str, float, tuple[str, ...]]]:
    """Reciprocal Rank Fusion: [(source, ids best first), ...] -> [(id, score, sources)].

    A chunk at 1-based rank r of a list gains ``1 / (k + r)``; it lets chunks ranked ~10th
    by both lists outrank one list's first hit. Ties keep first appearance.
    """
    scores: dict[str, float] = {}
    sources: dict[str, list[str]] = {}
    for source, ids in lists:
        for rank, cid in enumerate(dict.fromkeys(ids), start=1):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (k + rank)
            sources.setdefault(cid, []).append(source)
    order = sorted(scores, key=lambda c: -scores[c])  # stable: first appearance breaks ties
    return [(cid, scores[cid], tuple(sources[cid])) for cid in order]


def rrf_fusion(conn: apsw.Connection, query: str, keyword: list[tuple[str, float]],
               vector: list[tuple[str, float]], thin: set[str]
               ) -> list[tuple[str, float, tuple[str, ...]]]:
    """A `search.Fuse` ranking by `rrf` over both lists; thin chunks scaled as in the product."""
    from causantic.retrieval.fusion import THIN_FACTOR

    fused = rrf([("keyword", [c for c, _ in keyword]), ("vector", [c for c, _ in vector])])
    return [(c, s * (THIN_FACTOR if c in thin else 1.0), src) for c, s, src in fused]


def _expansion(order: str, weight: float) -> Expand:
    from causantic.retrieval.expand import expand

    def siblings(conn: apsw.Connection, hits: list[Hit], project: str | None) -> list[Hit]:
        return expand(conn, hits, project=project, order=order, weight=weight)

    return siblings


def search(store: Store, query: str, *, fusion: str = "score", order: str = "centroid",
           weight: float = 1.0, rerank: bool = True, **options: Any) -> Answer:
    """`causantic.retrieval.search.search` with a hybrid ``fusion`` ("score", the product's,
    or "rrf", which never reranks), without the token rerank if ``rerank`` is false, and, with
    ``cluster_expansion=True``, siblings in ``order`` scaled by ``weight``. Other keyword
    arguments are search's.

    Raises
    ------
    UsageError : ``fusion`` is not one of FUSIONS (and whatever `search` raises).
    """
    if fusion not in FUSIONS:
        raise UsageError(f"unknown fusion {fusion!r}; use one of {', '.join(FUSIONS)}")
    steps = PRODUCT if rerank else WITHOUT_RERANK
    if fusion == "rrf":
        steps = replace(steps, fuse=rrf_fusion, rerank=no_rerank)
    if (order, weight) != ("centroid", 1.0):
        steps = replace(steps, expand=_expansion(order, weight))
    return search_with(steps, store, query, **options)


def _walker(direction: str) -> Callable[..., Answer]:
    def seeded(store: Store, query: str, *, search_mode: str = "hybrid", rerank: bool = True,
               **options: Any) -> Answer:
        return walk_seeded(store, query, direction, search_mode,
                           search_steps=PRODUCT if rerank else WITHOUT_RERANK, **options)

    return seeded


#: `chains.recall` / `chains.predict` with seeds from ``search_mode`` (keyword, vector, hybrid),
#: without the token rerank if ``rerank`` is false.
recall = _walker(BACKWARD)
predict = _walker(FORWARD)
