"""Topic maintenance: `causantic topics rebuild`, and new chunks joining topics between rebuilds.

Rebuild
-------
1. Read every chunk vector of the current model (the unit mean of its windows).
2. Cluster them with HDBSCAN (`causantic.topics.hdbscan`), angular metric,
   ``min_cluster_size = min_samples = 4`` by default, excess-of-mass selection. On chunk
   embeddings of coding sessions, excess of mass tends to keep one giant cluster (on the
   shared transcripts: 766 of 792 chunks, i.e. "everything"), because all such chunks are
   more alike than anything else. So a cluster holding more than ``MAX_SHARE`` of all chunks
   is clustered again on its own members, recursively (at most ``MAX_DEPTH`` levels); its
   split is kept when it yields at least two clusters, and the points that split calls
   noise become unassigned. This plays the role of the reference library's
   ``max_cluster_size``, with only the public `HDBSCAN` API.
3. Each topic's centroid is the unit mean of its members; each member records its HDBSCAN
   membership strength and its angular distance (``arccos(cos) / pi``) to the centroid.
   Chunks HDBSCAN left as noise join the nearest centroid when it is within the threshold
   (default 0.10), the same rule new chunks follow between rebuilds; the rest stay unassigned.
4. Names by class-based TF-IDF (`causantic.topics.naming`) over at most ``NAME_SAMPLE``
   members per topic (nearest the centroid) and ``BACKGROUND_SAMPLE`` unassigned chunks.
5. One write transaction replaces every topic and membership, after all of the above was
   computed without a lock; chunks deleted or re-embedded meanwhile are skipped, chunks
   embedded meanwhile join the new centroids by the threshold rule. A failure anywhere
   leaves the previous topics as they were.

Automatic rebuilds
------------------
After each embedding run (`causantic ingest`, `causantic embed`, the hooks' background
worker), `refresh` rebuilds when memory has no topics yet and holds at least `AUTO_FIRST`
chunk vectors, or when it grew by `AUTO_GROWTH` of the last build (and at least `AUTO_FIRST`
chunks) since, up to ``[topics] auto_rebuild`` chunk vectors (0: never). Past that size a
rebuild takes tens of seconds and some hundreds of MB, so it is left to `causantic topics
rebuild`. Growth is geometric, so a store rebuilt this way sees about 25 rebuilds on its way
to 20,000 chunks, most of them under a second.

Between rebuilds
----------------
The embed step (`causantic.ingest.embed.embed_pending`) hands each batch of freshly embedded
chunks to an `Assigner`: each chunk joins its nearest topic centroid if the angular distance
is within the threshold (``[topics] threshold`` in config.toml), else stays unassigned.
Centroids do not move; the next rebuild recomputes everything.

numpy is imported inside the functions that need it, so importing this module is cheap.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import apsw

from causantic.config import TopicSettings
from causantic.errors import CausanticError
from causantic.model import MODEL_ID
from causantic.store import topics as topic_store
from causantic.store.counts import any_chunks
from causantic.store.db import Store

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_DEFAULT = TopicSettings()  # `[topics]` as config.KEYS sets it by default
#: A cluster holding more than this share of all chunks is clustered again (module doc).
MAX_SHARE = 0.10
MAX_DEPTH = 6
#: Automatic rebuilds (module doc): the fewest chunk vectors worth clustering, and the growth
#: since the last build that calls for a new one.
AUTO_FIRST = 100
AUTO_GROWTH = 0.25
#: Texts read per topic for naming (nearest the centroid first), and unassigned texts.
NAME_SAMPLE = 150
BACKGROUND_SAMPLE = 2000


def angular(cos: npt.ArrayLike) -> np.ndarray:
    """Angular distance ``arccos(cos) / pi`` (0 = same direction, 1 = opposite)."""
    # deferred: heavy: numpy, only needed here
    import numpy as np

    return np.arccos(np.clip(np.asarray(cos, dtype=np.float64), -1.0, 1.0)) / math.pi


# -- clustering ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Clusters:
    """Labels (-1 = noise) and membership strengths of clustered rows."""

    labels: np.ndarray  # (n,) int64
    probabilities: np.ndarray  # (n,) float64


def cluster(
    X: np.ndarray,
    *,
    min_cluster_size: int = _DEFAULT.min_cluster_size,
    min_samples: int = _DEFAULT.min_samples,
    max_share: float = MAX_SHARE,
    max_depth: int = MAX_DEPTH,
) -> Clusters:
    """Cluster unit vectors by HDBSCAN (angular), splitting oversized clusters (module doc).

    Parameters
    ----------
    X : ndarray of shape (n, dim), float32, rows of unit length
    min_cluster_size, min_samples : int
        As in `causantic.topics.hdbscan.HDBSCAN` (``min_samples`` counts the point itself).
    max_share : float
        A cluster with more than ``max_share * n`` rows is clustered again on its own.
    max_depth : int
        Levels of re-clustering at most.

    Returns
    -------
    Clusters
        Labels numbered from 0 by decreasing size (ties: lowest first row), -1 for noise.
    """
    # deferred: heavy: numpy, only needed here
    import numpy as np

    # deferred: heavy: pulls numpy, only needed here
    from causantic.topics.hdbscan import HDBSCAN

    n = len(X)
    cap = max(max_share * n, 2 * min_cluster_size)
    groups: list[tuple[np.ndarray, np.ndarray]] = []  # (row indices, probabilities)

    def fit(idx: np.ndarray, depth: int) -> list[tuple[np.ndarray, np.ndarray]]:
        model = HDBSCAN(min_cluster_size=min_cluster_size, min_samples=min_samples,
                        metric="angular").fit(X[idx])
        found = []
        for k in range(model.n_clusters_):
            mask = model.labels_ == k
            found.append((idx[mask], model.probabilities_[mask]))
        out: list[tuple[np.ndarray, np.ndarray]] = []
        for rows, probs in found:
            if len(rows) > cap and depth < max_depth:
                parts = fit(rows, depth + 1)
                if len(parts) >= 2:
                    out.extend(parts)
                    continue
            out.append((rows, probs))
        return out

    if n:
        groups = fit(np.arange(n), 0)
    groups.sort(key=lambda g: (-len(g[0]), int(g[0].min())))
    labels = np.full(n, -1, dtype=np.int64)
    probabilities = np.zeros(n, dtype=np.float64)
    for label, (rows, probs) in enumerate(groups):
        labels[rows] = label
        probabilities[rows] = probs
    return Clusters(labels, probabilities)


def unit_means(X: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """(k, dim) float32: the unit mean of each label's rows."""
    # deferred: heavy: numpy, only needed here
    import numpy as np

    sums = np.zeros((k, X.shape[1]), dtype=np.float64)
    np.add.at(sums, labels[labels >= 0], X[labels >= 0])
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    return (sums / np.maximum(norms, 1e-12)).astype(np.float32)


def nearest(X: np.ndarray, centroids: np.ndarray, block: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """For each row, the index of the nearest centroid and its angular distance.

    Row blocks keep each matrix product small (large single GEMMs crash numpy's bundled
    OpenBLAS here: tech-facts section 5).
    """
    # deferred: heavy: numpy, only needed here
    import numpy as np

    idx = np.zeros(len(X), dtype=np.int64)
    dist = np.ones(len(X), dtype=np.float64)
    if not len(centroids):
        return idx, dist
    for start in range(0, len(X), block):
        sims = X[start : start + block] @ centroids.T
        best = sims.argmax(axis=1)
        idx[start : start + block] = best
        dist[start : start + block] = angular(sims[np.arange(len(best)), best])
    return idx, dist


# -- rebuild -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RebuildReport:
    """What `rebuild` did."""

    model_id: str
    chunks: int  # vectors clustered
    topics: int
    clustered: int  # chunks HDBSCAN put in a topic
    rescued: int  # noise chunks that joined a centroid within the threshold
    late: int  # chunks embedded while the rebuild computed, that joined a topic
    skipped: int  # chunks deleted or re-embedded while the rebuild computed
    largest: int
    threshold: float
    compute_seconds: float
    write_seconds: float

    @property
    def seconds(self) -> float:
        return self.compute_seconds + self.write_seconds

    def as_dict(self) -> dict[str, object]:
        return {
            "model_id": self.model_id, "chunks": self.chunks, "topics": self.topics,
            "in_topics": self.clustered + self.rescued, "clustered": self.clustered,
            "rescued": self.rescued, "late": self.late, "skipped": self.skipped,
            "unassigned": self.chunks - self.clustered - self.rescued, "largest": self.largest,
            "threshold": self.threshold,
            "seconds": round(self.seconds, 3), "compute_seconds": round(self.compute_seconds, 3),
            "write_seconds": round(self.write_seconds, 3),
        }

    def summary(self) -> str:
        """One line for the terminal."""
        if not self.topics:
            return (f"Found no topics among {self.chunks} chunks (a topic needs at least a few "
                    f"similar chunks); previous topics were cleared. {self.seconds:.1f} s.")
        text = (f"Built {self.topics} topics from {self.chunks} chunks in {self.seconds:.1f} s: "
                f"{self.clustered + self.rescued} chunks in topics (largest {self.largest})")
        if self.rescued:
            text += f", {self.rescued} of them joined by distance"
        text += f", {self.chunks - self.clustered - self.rescued} unassigned."
        if self.late:
            text += f" {self.late} chunks embedded meanwhile joined too."
        return text + " List them with `causantic topics`."


def rebuild(
    store: Store,
    *,
    settings: TopicSettings | None = None,
    model_id: str = MODEL_ID,
    max_share: float = MAX_SHARE,
) -> RebuildReport:
    """Cluster every chunk vector into topics and replace the stored topics (module doc).

    Raises
    ------
    CausanticError
        No chunk has vectors of this model yet (run `causantic embed` first).
    """
    # deferred: heavy: numpy, only needed here
    import numpy as np

    # deferred: hook fast path: loaded only when this runs
    from causantic.topics.naming import BACKGROUND, name_topics

    settings = settings or TopicSettings()
    conn = store.conn
    started = time.perf_counter()
    snapshot = topic_store.all_vectors(conn, model_id)
    if not snapshot:
        # deferred: heavy: pulls numpy, only needed here
        from causantic.store.vectors import META_TABLE, other_model, table_exists

        other = other_model(conn, model_id) if table_exists(conn, META_TABLE) else None
        if other is not None:
            raise CausanticError(f"the stored vectors come from model {other}, not {model_id}: "
                                 "run `causantic reindex`, then `causantic topics rebuild`")
        if not any_chunks(conn):
            raise CausanticError("memory is empty: run `causantic ingest`, then "
                                 "`causantic topics rebuild`")
        raise CausanticError("no chunk vectors yet: run `causantic embed`, then "
                             "`causantic topics rebuild`")
    rowids = np.array([r for r, _, _ in snapshot], dtype=np.int64)
    X = np.frombuffer(b"".join(v for _, _, v in snapshot), dtype=np.float32).reshape(len(snapshot), -1)
    found = cluster(X, min_cluster_size=settings.min_cluster_size,
                    min_samples=settings.min_samples, max_share=max_share)
    labels = found.labels.copy()
    k = int(labels.max()) + 1 if len(labels) else 0
    cents = unit_means(X, labels, k)
    dist = np.ones(len(X), dtype=np.float64)
    rescued = 0
    if k:
        members = labels >= 0
        dist[members] = angular(np.einsum("ij,ij->i", X[members], cents[labels[members]]))
        noise = np.flatnonzero(~members)
        near, near_dist = nearest(X[noise], cents)
        close = near_dist <= settings.threshold
        labels[noise[close]] = near[close]
        dist[noise[close]] = near_dist[close]
        rescued = int(close.sum())
    names = name_topics(_naming_classes(conn, rowids, found.labels, dist, BACKGROUND))
    new_topics = [
        topic_store.NewTopic(label + 1, names[label].name, names[label].terms, cents[label].tobytes())
        for label in range(k)
    ]
    memberships = [
        topic_store.Membership(int(rowids[i]), snapshot[i][1], int(labels[i]) + 1,
                               float(found.probabilities[i]) if found.labels[i] >= 0 else None,
                               float(dist[i]))
        for i in np.flatnonzero(labels >= 0)
    ]
    compute_seconds = time.perf_counter() - started
    params = {"min_cluster_size": settings.min_cluster_size, "min_samples": settings.min_samples,
              "metric": "angular", "selection": "eom", "max_share": max_share,
              "threshold": settings.threshold}
    started = time.perf_counter()
    with conn:
        topic_store.clear(conn)
        topic_store.insert_topics(conn, new_topics)
        written = topic_store.insert_members(conn, memberships, model_id)
        late = _assign_late(conn, set(rowids.tolist()), cents, settings.threshold, model_id)
        topic_store.save_build(conn, topic_store.BuildInfo(
            datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z", model_id, len(X),
            params, round(compute_seconds, 3)))
    sizes = np.bincount(labels[labels >= 0], minlength=k) if k else np.zeros(0, dtype=np.int64)
    return RebuildReport(
        model_id=model_id, chunks=len(X), topics=k, clustered=int((found.labels >= 0).sum()),
        rescued=rescued, late=late, skipped=len(memberships) - written,
        largest=int(sizes.max()) if k else 0, threshold=settings.threshold,
        compute_seconds=compute_seconds, write_seconds=time.perf_counter() - started,
    )


def rebuild_due(conn: apsw.Connection, *, max_chunks: int, model_id: str = MODEL_ID) -> str | None:
    """Why the topics should be rebuilt now (module doc, "Automatic rebuilds"), or None."""
    if max_chunks <= 0:
        return None
    # deferred: SQL only (the module imports numpy only for its vector functions)
    from causantic.store.vectors import counts

    n = counts(conn).by_model.get(model_id, 0)
    if not AUTO_FIRST <= n <= max_chunks:
        return None
    built = topic_store.build_info(conn)
    if built is None:
        return "no topics yet"
    if built.model_id != model_id:
        return "the topics came from another model's vectors"
    grown = n - built.chunks
    if grown >= max(AUTO_FIRST, AUTO_GROWTH * built.chunks):
        return f"{grown} chunks embedded since they were built"
    return None


def refresh(store: Store, settings: TopicSettings, *,
            model_id: str = MODEL_ID) -> tuple[str, RebuildReport] | None:
    """Rebuild the topics if `rebuild_due` says so: why, and what the rebuild did; else None.

    Raises
    ------
    apsw.Error : the database was busy past its timeout when the new topics were written
        (the previous topics stay).
    """
    reason = rebuild_due(store.conn, max_chunks=settings.auto_rebuild, model_id=model_id)
    if reason is None:
        return None
    return reason, rebuild(store, settings=settings, model_id=model_id)


def _naming_classes(
    conn: apsw.Connection, rowids: np.ndarray, labels: np.ndarray, dist: np.ndarray,
    background: int,
) -> dict[int, list[str]]:
    """Texts per topic label (nearest the centroid first, capped) plus a background sample."""
    # deferred: heavy: numpy, only needed here
    import numpy as np

    picks: dict[int, np.ndarray] = {}
    for label in range(int(labels.max()) + 1 if len(labels) else 0):
        rows = np.flatnonzero(labels == label)
        picks[label] = rows[np.argsort(dist[rows], kind="stable")[:NAME_SAMPLE]]
    noise = np.flatnonzero(labels < 0)
    if len(noise) > BACKGROUND_SAMPLE:  # evenly spaced: deterministic, spread over time
        noise = noise[np.linspace(0, len(noise) - 1, BACKGROUND_SAMPLE).astype(np.int64)]
    picks[background] = noise
    wanted = sorted({int(rowids[i]) for rows in picks.values() for i in rows})
    text = topic_store.texts(conn, wanted)
    return {label: [text[int(rowids[i])] for i in rows if int(rowids[i]) in text]
            for label, rows in picks.items()}


def _assign_late(
    conn: apsw.Connection, clustered: set[int], centroids: np.ndarray, threshold: float,
    model_id: str,
) -> int:
    """Inside the rebuild's transaction: chunks embedded since the snapshot join the new
    centroids by the threshold rule (their previous memberships were just cleared)."""
    new = [r for r in topic_store.vector_rowids(conn, model_id) if r not in clustered]
    if not new or not len(centroids):
        return 0
    return _join_nearest(conn, topic_store.mean_vectors_by_rowid(conn, new, model_id),
                         centroids, list(range(1, len(centroids) + 1)), threshold, model_id)


def _join_nearest(
    conn: apsw.Connection, rows: Sequence[tuple[int, str, bytes]], centroids: np.ndarray,
    topic_ids: Sequence[int], threshold: float, model_id: str,
) -> int:
    """Write memberships for the rows whose nearest centroid is within the threshold."""
    # deferred: heavy: numpy, only needed here
    import numpy as np

    if not rows or not len(centroids):
        return 0
    X = np.frombuffer(b"".join(v for _, _, v in rows), dtype=np.float32).reshape(len(rows), -1)
    if X.shape[1] != centroids.shape[1]:
        return 0
    near, dist = nearest(X, centroids)
    joined = [
        topic_store.Membership(rows[i][0], rows[i][1], int(topic_ids[near[i]]), None, float(dist[i]))
        for i in range(len(rows)) if dist[i] <= threshold
    ]
    return topic_store.insert_members(conn, joined, model_id) if joined else 0


# -- between rebuilds ----------------------------------------------------------------------


class Assigner:
    """Joins freshly embedded chunks to the nearest topic centroid within the threshold.

    Made once per embed run (`load`), called after each written batch (`assign`). If a
    rebuild replaced the topics in between, the centroids are reloaded inside the write
    transaction, so a chunk never joins a topic id from an older build.
    """

    def __init__(self, threshold: float, model_id: str) -> None:
        self.threshold = threshold
        self.model_id = model_id
        self._built_at: str | None = None
        self._ids: list[int] = []
        self._centroids: np.ndarray | None = None

    @classmethod
    def load(cls, conn: apsw.Connection, model_id: str, threshold: float) -> Assigner | None:
        """An assigner for this model, or None when there are no topics of this model."""
        info = topic_store.build_info(conn)
        if info is None or info.model_id != model_id:
            return None
        assigner = cls(threshold, model_id)
        assigner._reload(conn, info.built_at)
        return assigner if assigner._ids else None

    def _reload(self, conn: apsw.Connection, built_at: str) -> None:
        # deferred: heavy: numpy, only needed here
        import numpy as np

        rows = topic_store.centroids(conn)
        self._built_at = built_at
        self._ids = [i for i, _ in rows]
        self._centroids = (np.frombuffer(b"".join(b for _, b in rows), dtype=np.float32)
                           .reshape(len(rows), -1) if rows else np.zeros((0, 0), np.float32))

    def assign(self, conn: apsw.Connection, rowids: Sequence[int]) -> int:
        """Assign these chunks (by rowid) if their stored vectors are current; how many joined.

        A chunk already in a topic is left where it is.
        """
        if not rowids:
            return 0
        with conn:
            info = topic_store.build_info(conn)
            if info is None or info.model_id != self.model_id:
                return 0
            if info.built_at != self._built_at:
                self._reload(conn, info.built_at)
            assert self._centroids is not None
            taken = topic_store.topics_of_rowids(conn, rowids)
            rows = [r for r in topic_store.mean_vectors_by_rowid(
                conn, [r for r in rowids if r not in taken], self.model_id)]
            joined = _join_nearest(conn, rows, self._centroids, self._ids, self.threshold,
                                   self.model_id)
        return joined  # after the block: apsw types `with conn` as one that may swallow errors
