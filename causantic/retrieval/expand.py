"""Cluster expansion: siblings of the top hits join the search candidates (source `cluster`).

Hybrid search only, and off unless asked for (``search(..., cluster_expansion=True)``, or
``[search] cluster_expansion = true`` in config.toml for the CLI, MCP and hooks): on our
evaluation it did not beat hybrid search without it (see bench/topics.py and the README).

How (after the original causantic's §6.3): walk the fused candidates best first; for each one
in a topic, until ``TOPICS`` distinct topics have been expanded, take up to ``SIBLINGS``
members of that topic that are not candidates yet (and, with a project filter, belong to the
project), nearest first, either to the topic's centroid (stored distances, an index scan) or
to the hit itself (``order="hit"``: cosine of the stored mean vectors among the
``HIT_POOL`` members nearest the centroid). A sibling scores ``weight × hit score × (1 −
angular distance to the centroid)``, the thin-chunk factor applies as to any candidate, and
MMR then picks among hits and siblings as usual.

Pure SQL plus a little numpy for ``order="hit"`` (search has imported numpy by then).
"""

from __future__ import annotations

import apsw

from causantic.errors import UsageError
from causantic.retrieval.render import Hit
from causantic.store import topics as topic_store
from causantic.store.hits import load_hits

#: Distinct topics expanded per query, siblings added per topic (the original's 3 × 5).
TOPICS = 3
SIBLINGS = 5
#: Members read per topic when ordering siblings by closeness to the hit.
HIT_POOL = 100
ORDERS = ("centroid", "hit")


def expand(
    conn: apsw.Connection,
    hits: list[Hit],
    *,
    project: str | None = None,
    topics: int = TOPICS,
    siblings: int = SIBLINGS,
    order: str = "centroid",
    weight: float = 1.0,
) -> list[Hit]:
    """The candidates plus the siblings of the best ones, by score (stable: siblings tie after).

    Parameters
    ----------
    hits : fused candidates, best first
    project : only siblings of this project
    topics, siblings : distinct topics expanded, and siblings added per topic
    order : "centroid" (nearest the topic centroid first; what search uses) or "hit"
        (nearest the hit first; bench/topics.py compares them through `bench.variants`)
    weight : scale of a sibling's score relative to its hit's (search: 1)
    """
    if order not in ORDERS:
        raise UsageError(f"unknown sibling order {order!r}; use one of {', '.join(ORDERS)}")
    if not hits or topics < 1 or siblings < 1 or not topic_store.ready(conn):
        return hits
    # deferred: heavy: pulls numpy, only needed here
    from causantic.retrieval import fusion

    taken = {h.chunk_id for h in hits}
    membership = topic_store.topics_of(conn, [h.chunk_id for h in hits])
    done: set[int] = set()
    added: list[tuple[str, float, tuple[str, ...]]] = []
    for hit in hits:
        if len(done) >= topics:
            break
        topic = membership.get(hit.chunk_id)
        if topic is None or topic[0] in done:
            continue
        done.add(topic[0])
        for cid, dist in _siblings(conn, topic[0], hit.chunk_id, project, taken, siblings, order):
            score = weight * hit.score * (1.0 - dist)
            if score > 0:
                added.append((cid, score, ("cluster",)))
                taken.add(cid)
    if not added:
        return hits
    extra = [h.replace(score=h.score * fusion.THIN_FACTOR) if fusion.is_thin(h.text) else h
             for h in load_hits(conn, added)]
    return sorted(hits + extra, key=lambda h: -h.score)


def _siblings(
    conn: apsw.Connection, topic_id: int, hit_id: str, project: str | None, taken: set[str],
    k: int, order: str,
) -> list[tuple[str, float]]:
    """Up to k (chunk id, distance to centroid) of a topic's members not yet taken."""
    pool = topic_store.members(conn, topic_id, project=project, order="distance",
                               limit=HIT_POOL if order == "hit" else k + len(taken))
    free = [(cid, dist) for cid, dist, _ in pool if cid not in taken]
    if order == "centroid" or len(free) <= k:
        return free[:k]
    # deferred: heavy: pulls numpy, only needed here
    from causantic.retrieval.vector import chunk_vectors

    vecs = chunk_vectors(conn, [hit_id] + [cid for cid, _ in free])
    anchor = vecs.get(hit_id)
    if anchor is None:
        return free[:k]
    ranked = sorted(free, key=lambda cd: -float(vecs[cd[0]] @ anchor) if cd[0] in vecs else 2.0)
    return ranked[:k]
