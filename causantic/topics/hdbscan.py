"""HDBSCAN* clustering in numpy alone (no scipy, scikit-learn or numba at run time).

The algorithm is the standard one (Campello, Moulavi & Sander 2013; McInnes & Healy 2017) and
matches scikit-learn's ``HDBSCAN(algorithm="brute")`` and the ``hdbscan`` package on the
parameters both share. Each stage is one private function:

1. ``_check_params`` / ``_check_data``: every parameter is checked against one table, and the
   data for shape, type and NaN/inf rows, before any work is done.
2. ``_find_duplicates`` groups byte-identical rows, so that each distinct row is computed once
   (its copies count ``counts`` times in core distances and are walked as separate points by
   Prim), and ``_prepare_points`` prepares the distinct rows: L2-normalised for
   ``cosine``/``angular``, then centred (all three metrics are functions of Euclidean
   distance, which centring does not change, while the float32 rounding error below is
   proportional to the squared norms), kept in float64 plus two float32 GEMM operands
   ``[-2x, |x|^2, 1]`` and ``[x, 1, |x|^2]``.
3. ``_sq_distance_rows``: squared Euclidean distances of up to ``MAX_BLOCK_ROWS`` rows against
   all rows by one float32 GEMM of those operands (``|a|^2 + |b|^2 - 2 a.b``, no other pass).
   That expansion loses precision for close pairs, so ``_refine`` recomputes every pair below
   ``_REFINE_RATIO * (|a|^2 + max |x|^2)`` in float64 from the difference, wherever the result
   could depend on it: duplicates and the diagonal are exactly 0, near-duplicates are ordered
   as in float64, and all other distances carry a relative error around 1e-6.
4. ``_core_sq_distances``: the squared distance to the ``min_samples``-th nearest point, counting
   the point itself (see Notes of :func:`hdbscan`), by ``partition`` of row blocks.
5. ``_mutual_reachability``: ``max(core(a), core(b), d(a, b))``.
6. ``_prim``: Prim's algorithm from point 0 with a dense "best weight" vector over the points
   outside the tree (ties go to the lowest index). Up to n = 8192 (``_DENSE_MAX_BYTES``) the
   whole float32 mutual-reachability matrix is built in the same GEMM pass as the core
   distances (``_dense_mutual_reachability``), so Prim's loop makes no BLAS call. Beyond
   that, the rows it needs are computed by GEMM in batches of likely next vertices
   (``_PRIM_BATCH``) and cached: about 1.25 n rows are computed and memory is O(n d) plus
   ``4 * _PRIM_BATCH * n`` bytes; the n x n matrix is never stored.
7. ``_single_linkage``: Prim's path ``(order[i], order[i + 1], weight[i])`` sorted by weight
   and merged by union-find into a scipy-style linkage (node ``n + i`` is made by row ``i``).
   The path gives the same components at every threshold as the MST itself, and it is what
   scikit-learn and the hdbscan package merge, with the same ``argmin`` tie-breaking and the
   same sort; mutual-reachability weights tie often (every weight equal to a core distance),
   and the order of tied merges decides which side of a split a point lands on, so this is
   what makes results agree with theirs beyond the clusters' cores.
8. ``_condense``: the condensed tree for ``min_cluster_size``: walking down from the root, a
   split into two children of at least ``min_cluster_size`` points makes two new clusters,
   otherwise the small side's points "fall out" of the parent at ``lambda = 1 / distance``.
9. ``_stabilities``, ``_select_eom`` (excess of mass; the root only with
   ``allow_single_cluster``), ``_select_leaf``.
10. ``_label`` and ``_probabilities`` (as scikit-learn: ``min(lambda_p, lambda_max) /
    lambda_max`` within the selected cluster).

Memory is bounded by row blocks: ``4 * block_rows * n`` bytes of float32 distances (capped at
``_BLOCK_MAX_BYTES``) on top of about ``16 * n * d`` bytes of prepared data, plus the
``4 * n**2`` byte matrix (at most 256 MiB) when n <= 8192.

Distances and metrics
---------------------
All work up to the MST is done on squared Euclidean ("chord") distances of the prepared rows.
``euclidean`` uses them as they are; for ``cosine`` and ``angular`` the rows are unit vectors,
and the chord ``c = |a - b| = 2 sin(theta / 2)`` is converted at the end: ``cosine`` is
``1 - cos(theta) = c^2 / 2`` and ``angular`` is ``theta / pi = 2 arcsin(c / 2) / pi`` (in
[0, 1], a true metric on the sphere). This is exact, not an approximation: each conversion
``g`` is strictly increasing, so it commutes with taking the k-th smallest distance (core
distances) and with ``max`` (mutual reachability), ``g(max(x, y, z)) = max(g(x), g(y), g(z))``;
a minimum spanning tree depends only on the order of edge weights, so the MST, the
single-linkage merge order and the shape of the condensed tree are the same for all three
metrics on unit vectors. What differs is ``lambda = 1 / g(distance)``: cluster stabilities
(excess of mass) and membership probabilities are sums and ratios of lambdas, so ``eom``
selection and ``probabilities`` do depend on the metric; ``leaf`` labels do not.

Invariants other stages rely on
-------------------------------
- Condensed-tree cluster ids start at ``n`` (the root) and a child's id is larger than its
  parent's, so ascending ids are a top-down order and descending ids a bottom-up one.
- Every point is the child of exactly one condensed-tree row, with the lambda at which it left
  the last cluster it belonged to.
- Lambdas never decrease from a cluster to its rows (merge distances never decrease upward).

Deviations from the reference libraries, all in degenerate cases
----------------------------------------------------------------
- Fewer points than ``min_cluster_size`` gives all noise, even with ``allow_single_cluster``
  (scikit-learn raises when ``min_samples`` exceeds n; here it is capped at n).
- A cluster born and dying at infinite lambda (exact duplicates) adds 0, not NaN, to stability.
- Probabilities are relative to the largest *finite* lambda of the cluster: where the
  references divide by infinity (a cluster holding ``min_samples`` exact duplicates) and give
  every other member 0, this gives a graded strength; points at infinite lambda get 1.
- ``leaf`` selection on a tree whose root never splits selects the root if
  ``allow_single_cluster`` (the references select nothing).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

__all__ = ["HDBSCAN", "Clustering", "CondensedTree", "hdbscan", "METRICS", "SELECTION_METHODS"]

Metric = Literal["euclidean", "cosine", "angular"]
SelectionMethod = Literal["eom", "leaf"]

METRICS: tuple[str, ...] = ("euclidean", "cosine", "angular")
SELECTION_METHODS: tuple[str, ...] = ("eom", "leaf")

#: Largest row block for one GEMM: numpy's bundled OpenBLAS segfaults on some large single
#: GEMMs (tech-facts section 5), and a block of rows bounds memory.
MAX_BLOCK_ROWS = 4096
#: A row block of float32 distances is capped at this size whatever ``block_rows`` says.
_BLOCK_MAX_BYTES = 256 * 2**20
#: Pairs whose GEMM squared distance is below this fraction of the squared norms are
#: recomputed exactly in float64 (float32 rounding of |a|^2 + |b|^2 - 2a.b is about 1e-6 of
#: the norms, so unrefined distances keep a relative error far below 1e-3).
_REFINE_RATIO = 2.0**-8
#: Pairs per chunk of the float64 recomputation (bounds its temporary memory).
_REFINE_CHUNK = 4096
#: Rows of mutual reachability computed per GEMM in Prim's algorithm.
_PRIM_BATCH = 512
#: Up to this size (n <= 8192) the float32 n x n mutual-reachability matrix is kept whole.
_DENSE_MAX_BYTES = 256 * 2**20

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class CondensedTree:
    """The condensed cluster tree, one row per parent/child edge (scikit-learn's layout).

    Attributes
    ----------
    parent : ndarray of shape (n_rows,), dtype int64
        Cluster id of the parent; the root is ``n_points``.
    child : ndarray of shape (n_rows,), dtype int64
        A point index (``< n_points``) or a child cluster id (``> n_points``).
    lambda_val : ndarray of shape (n_rows,), dtype float64
        ``1 / distance`` at which the child left the parent (``inf`` at distance 0).
    child_size : ndarray of shape (n_rows,), dtype int64
        1 for a point, the number of points for a cluster.
    n_points : int
        Number of clustered points.
    """

    parent: IntArray
    child: IntArray
    lambda_val: npt.NDArray[np.float64]
    child_size: IntArray
    n_points: int

    @property
    def n_tree_clusters(self) -> int:
        """Number of clusters in the tree, root included (0 for an empty tree)."""
        if self.n_points == 0:
            return 0
        return int(max(self.child.max(initial=0), self.n_points) - self.n_points + 1)


@dataclass(frozen=True)
class Clustering:
    """The result of :func:`hdbscan`.

    Attributes
    ----------
    labels : ndarray of shape (n_samples,), dtype int64
        Cluster label per point, ``0 .. n_clusters - 1``, or -1 for noise. Labels follow the
        order of cluster ids in the condensed tree (as in scikit-learn).
    probabilities : ndarray of shape (n_samples,), dtype float64
        Membership strength in [0, 1]: ``min(lambda_p, lambda_max) / lambda_max`` where
        ``lambda_p`` is the lambda at which the point left the tree and ``lambda_max`` the
        largest finite lambda in its cluster; 0 for noise.
    condensed_tree : CondensedTree
        The condensed tree the labels were selected from.
    """

    labels: IntArray
    probabilities: npt.NDArray[np.float64]
    condensed_tree: CondensedTree

    @property
    def n_clusters(self) -> int:
        """Number of clusters found (noise excluded)."""
        return int(self.labels.max(initial=-1)) + 1


# ---------------------------------------------------------------------------------------------
# 1. Parameters and data


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


# One table: parameter -> (accepts, what it must be). Checked before any work.
_PARAMS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "min_cluster_size": (lambda v: _is_int(v) and v >= 2, "an integer >= 2"),
    "min_samples": (lambda v: v is None or (_is_int(v) and v >= 1), "None or an integer >= 1"),
    "metric": (lambda v: isinstance(v, str) and v in METRICS, "one of " + ", ".join(METRICS)),
    "cluster_selection_method": (
        lambda v: isinstance(v, str) and v in SELECTION_METHODS,
        "one of " + ", ".join(SELECTION_METHODS),
    ),
    "allow_single_cluster": (lambda v: isinstance(v, bool | np.bool_), "True or False"),
    "block_rows": (
        lambda v: _is_int(v) and 1 <= v <= MAX_BLOCK_ROWS,
        f"an integer from 1 to {MAX_BLOCK_ROWS}",
    ),
}


def _check_params(**params: Any) -> None:
    """Raise ValueError naming the first parameter outside the table's accepted values."""
    for name, value in params.items():
        accepts, expected = _PARAMS[name]
        if not accepts(value):
            raise ValueError(f"HDBSCAN {name}={value!r} is not valid; it must be {expected}")


def _check_data(X: npt.ArrayLike, metric: str) -> npt.NDArray[np.float64]:
    """Return X as a 2-D float64 array, or raise ValueError saying what is wrong with it.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features), real numbers
    metric : str
        For ``cosine``/``angular`` rows of length 0 are rejected (their angle is undefined).

    Returns
    -------
    ndarray of shape (n_samples, n_features), dtype float64
    """
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(
            f"HDBSCAN needs a 2-D array (n_samples, n_features); got shape {arr.shape}"
        )
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_) or np.iscomplexobj(arr):
        raise ValueError(f"HDBSCAN needs real numbers; got dtype {arr.dtype}")
    arr = np.asarray(arr, dtype=np.float64)
    if arr.shape[0] and arr.shape[1] == 0:
        raise ValueError(f"HDBSCAN needs at least one feature; got shape {arr.shape}")
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        raise ValueError(
            f"{int(bad.sum())} of {arr.shape[0]} rows contain NaN or infinite values "
            f"(first: row {int(np.flatnonzero(bad)[0])}); drop or repair them before clustering"
        )
    if metric in ("cosine", "angular") and arr.shape[0]:
        zero = ~(arr != 0).any(axis=1)
        if zero.any():
            raise ValueError(
                f"{int(zero.sum())} of {arr.shape[0]} rows are all zeros (first: row "
                f"{int(np.flatnonzero(zero)[0])}); {metric} distance is undefined for them"
            )
    return arr


@dataclass(frozen=True)
class _Duplicates:
    """Rows that repeat exactly. ``first`` (u,) int64: the first row of each distinct row, in
    row order; ``inverse`` (n,) int64: the distinct row of each row; ``counts`` (u,) int64."""

    first: IntArray
    inverse: IntArray
    counts: IntArray


def _find_duplicates(X: npt.NDArray[np.float64]) -> _Duplicates | None:
    """Group byte-identical rows; None when every row is distinct.

    A hash picks the candidates: each row's 64-bit patterns times random odd integers,
    summed with wrap-around (exact integer arithmetic, so identical rows always collide);
    candidates are then compared byte by byte.
    """
    n, d = X.shape
    bits = np.ascontiguousarray(X).view(np.uint64)
    multipliers = np.random.default_rng(0).integers(1, 2**63, d, dtype=np.uint64) | np.uint64(1)
    key = bits @ multipliers
    _, key_group, key_count = np.unique(key, return_inverse=True, return_counts=True)
    candidates = np.flatnonzero(key_count[key_group] > 1)
    if not candidates.size:
        return None
    rows = np.ascontiguousarray(bits[candidates]).view(np.dtype((np.void, 8 * d))).ravel()
    _, first_in_group, group = np.unique(rows, return_index=True, return_inverse=True)
    owner = np.arange(n, dtype=np.int64)
    owner[candidates] = candidates[first_in_group[group.ravel()]]
    first = np.flatnonzero(owner == np.arange(n))
    if len(first) == n:
        return None
    rank = np.empty(n, dtype=np.int64)
    rank[first] = np.arange(len(first), dtype=np.int64)
    inverse = rank[owner]
    return _Duplicates(first, inverse, np.bincount(inverse).astype(np.int64))


# ---------------------------------------------------------------------------------------------
# 2-3. Prepared points and blocked distances


@dataclass(frozen=True)
class _Points:
    """Rows ready for distance work; all arrays describe the same prepared points.

    Attributes
    ----------
    exact : ndarray of shape (n, d), dtype float64
        Normalised (cosine, angular) and centred rows, for exact recomputation.
    lhs, rhs : ndarray of shape (n, d + 2), dtype float32
        ``[-2x, |x|^2, 1]`` and ``[x, 1, |x|^2]`` (x rounded to float32), so that
        ``lhs[i] @ rhs[j] = |x_i|^2 + |x_j|^2 - 2 x_i.x_j``: one GEMM gives squared distances.
    refine_below : ndarray of shape (n,), dtype float32
        From row i, a pair whose GEMM squared distance is below ``refine_below[i]`` is
        recomputed from ``exact`` (``_REFINE_RATIO * (|x_i|^2 + max_k |x_k|^2)``).
    """

    exact: npt.NDArray[np.float64]
    lhs: npt.NDArray[np.float32]
    rhs: npt.NDArray[np.float32]
    refine_below: npt.NDArray[np.float32]

    @property
    def n(self) -> int:
        return int(self.exact.shape[0])


def _prepare_points(X: npt.NDArray[np.float64], metric: str) -> _Points:
    """Normalise (cosine, angular) and centre the rows; build the GEMM operands.

    Centring changes no Euclidean distance but shrinks the norms, which is what the float32
    rounding error of ``|a|^2 + |b|^2 - 2a.b`` is proportional to.
    """
    exact = np.array(X, dtype=np.float64, copy=True)
    if metric in ("cosine", "angular"):
        exact /= np.linalg.norm(exact, axis=1, keepdims=True)
    if len(exact):
        exact -= exact.mean(axis=0)
    n, d = exact.shape
    lhs = np.empty((n, d + 2), dtype=np.float32)
    rhs = np.empty((n, d + 2), dtype=np.float32)
    rhs[:, :d] = exact
    x = rhs[:, :d].astype(np.float64)
    sq_norms = np.einsum("ij,ij->i", x, x)
    del x
    np.multiply(rhs[:, :d], np.float32(-2.0), out=lhs[:, :d])
    lhs[:, d] = sq_norms
    lhs[:, d + 1] = 1.0
    rhs[:, d] = 1.0
    rhs[:, d + 1] = sq_norms
    top = float(sq_norms.max(initial=0.0))
    refine_below = (_REFINE_RATIO * (sq_norms + top)).astype(np.float32)
    return _Points(exact, lhs, rhs, refine_below)


def _block_size(n: int, block_rows: int) -> int:
    """Rows per block: ``block_rows``, fewer if an (rows, n) float32 block would exceed
    ``_BLOCK_MAX_BYTES``."""
    return max(1, min(block_rows, _BLOCK_MAX_BYTES // max(1, 4 * n)))


def _row_blocks(n: int, block_rows: int) -> Iterator[slice]:
    """Consecutive slices of ``_block_size(n, block_rows)`` rows covering ``range(n)``."""
    rows = _block_size(n, block_rows)
    for start in range(0, n, rows):
        yield slice(start, min(start + rows, n))


def _exact_sq_distances(
    exact: npt.NDArray[np.float64], rows: IntArray, cols: IntArray
) -> npt.NDArray[np.float64]:
    """Squared distances ``|exact[rows[k]] - exact[cols[k]]|^2`` in float64, in chunks."""
    out = np.empty(len(rows), dtype=np.float64)
    for start in range(0, len(rows), _REFINE_CHUNK):
        stop = start + _REFINE_CHUNK
        diff = exact[rows[start:stop]] - exact[cols[start:stop]]
        out[start:stop] = np.einsum("ij,ij->i", diff, diff)
    return out


def _sq_distance_rows(points: _Points, rows: slice | IntArray) -> npt.NDArray[np.float32]:
    """GEMM squared distances of ``points[rows]`` to all points (not yet refined).

    Parameters
    ----------
    points : _Points
    rows : slice or ndarray of int64
        At most ``MAX_BLOCK_ROWS`` rows.

    Returns
    -------
    ndarray of shape (len(rows), n), dtype float32
        Accurate to about 1e-6 of the squared norms; may be slightly negative for close pairs.
    """
    return points.lhs[rows] @ points.rhs.T


def _refine(points: _Points, block: npt.NDArray[np.float32], rows: IntArray) -> None:
    """Recompute in float64, in place, the entries of ``block`` below their row's threshold.

    ``block[k]`` holds the squared distances of point ``rows[k]`` to all points. Afterwards
    every duplicate pair and the diagonal are exactly 0 and no entry is negative.
    """
    r, c = np.nonzero(block < points.refine_below[rows, None])
    if r.size:
        block[r, c] = _exact_sq_distances(points.exact, rows[r], c)


# ---------------------------------------------------------------------------------------------
# 4-5. Core distances and mutual reachability


def _kth_smallest(
    block: npt.NDArray[np.float32], k: int, counts: IntArray | None
) -> npt.NDArray[np.float32]:
    """The k-th smallest entry of each row, each column counted ``counts[j]`` times.

    Partitions ``block`` in place when every count is 1.
    """
    if counts is None:
        block.partition(k - 1, axis=1)
        return block[:, k - 1].copy()
    # every column counts at least once, so the k smallest columns hold the answer
    kk = min(k, block.shape[1])
    cols = np.argpartition(block, kk - 1, axis=1)[:, :kk]
    values = np.take_along_axis(block, cols, axis=1)
    order = np.argsort(values, axis=1)
    values = np.take_along_axis(values, order, axis=1)
    reached = np.cumsum(counts[np.take_along_axis(cols, order, axis=1)], axis=1) >= k
    return values[np.arange(len(values)), np.argmax(reached, axis=1)]


def _core_sq_distances(
    points: _Points, min_samples: int, block_rows: int, counts: IntArray | None = None
) -> npt.NDArray[np.float32]:
    """Squared core distance of every point, one row block at a time.

    Only rows whose approximate k-th distance is below twice their refinement threshold are
    refined (and re-selected): in every other row the refinable entries all lie strictly
    before the k-th, so refining them could not change it.

    Parameters
    ----------
    points : _Points
    min_samples : int
        1 <= min_samples <= total count; the point itself counts as its own first neighbour.
    block_rows : int
    counts : ndarray of shape (n,), dtype int64, optional
        How many rows each point stands for (exact duplicates); None for all ones.

    Returns
    -------
    ndarray of shape (n,), dtype float32
        The ``min_samples``-th smallest squared distance of each row (0 for min_samples=1).
    """
    core = np.empty(points.n, dtype=np.float32)
    for rows in _row_blocks(points.n, block_rows):
        core[rows] = _kth_smallest(_sq_distance_rows(points, rows), min_samples, counts)
    close = np.flatnonzero(core < 2 * points.refine_below).astype(np.int64)
    step = _block_size(points.n, block_rows)
    for start in range(0, len(close), step):
        ids = close[start : start + step]
        block = _sq_distance_rows(points, ids)
        _refine(points, block, ids)
        core[ids] = _kth_smallest(block, min_samples, counts)
    return core


def _mutual_reachability(
    sq_dist: npt.NDArray[np.float32],
    core_rows: npt.NDArray[np.float32],
    core_cols: npt.NDArray[np.float32],
    out: npt.NDArray[np.float32] | None = None,
) -> npt.NDArray[np.float32]:
    """``max(core_rows[i], core_cols[j], sq_dist[i, j])`` for a block of a distance matrix.

    Squared or not does not matter (squaring is increasing). ``out`` may be ``sq_dist``.

    Parameters
    ----------
    sq_dist : ndarray of shape (r, c), dtype float32
    core_rows : ndarray of shape (r,), dtype float32
    core_cols : ndarray of shape (c,), dtype float32
    out : ndarray of shape (r, c), dtype float32, optional

    Returns
    -------
    ndarray of shape (r, c), dtype float32
    """
    result = np.maximum(sq_dist, core_rows[:, None], out=out)
    return np.maximum(result, core_cols[None, :], out=result)


def _mutual_reachability_rows(
    points: _Points, core: npt.NDArray[np.float32], rows: IntArray
) -> npt.NDArray[np.float32]:
    """Squared mutual reachability of ``points[rows]`` to all points.

    A row needs refining only if its core distance is below twice its threshold: otherwise
    every refinable entry is masked by the core distance in the max.

    Returns
    -------
    ndarray of shape (len(rows), n), dtype float32
    """
    block = _sq_distance_rows(points, rows)
    close = np.flatnonzero(core[rows] < 2 * points.refine_below[rows])
    if close.size:
        sub = block[close]
        _refine(points, sub, rows[close])
        block[close] = sub
    return _mutual_reachability(block, core[rows], core, out=block)


def _dense_mutual_reachability(
    points: _Points, min_samples: int, block_rows: int, counts: IntArray | None = None
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """The whole squared mutual-reachability matrix and the squared core distances, from one
    pass of row-block GEMMs (for small n: Prim then needs no further GEMM).

    Same values as :func:`_core_sq_distances` and :func:`_mutual_reachability_rows`.

    Returns
    -------
    mr : ndarray of shape (n, n), dtype float32
    core : ndarray of shape (n,), dtype float32
    """
    n = points.n
    mr = np.empty((n, n), dtype=np.float32)
    core = np.empty(n, dtype=np.float32)
    for rows in _row_blocks(n, block_rows):
        np.matmul(points.lhs[rows], points.rhs.T, out=mr[rows])
        core[rows] = _kth_smallest(mr[rows].copy(), min_samples, counts)
    for i in np.flatnonzero(core < 2 * points.refine_below).tolist():
        ids = np.array([i], dtype=np.int64)
        _refine(points, mr[i : i + 1], ids)
        core[i] = _kth_smallest(mr[i : i + 1].copy(), min_samples, counts)[0]
    for rows in _row_blocks(n, block_rows):
        _mutual_reachability(mr[rows], core[rows], core, out=mr[rows])
    return mr, core


# ---------------------------------------------------------------------------------------------
# 6. Minimum spanning tree (Prim)


@dataclass(frozen=True)
class _Path:
    """Prim's order ``order[0] = 0, order[1], ...`` and the weight ``weight[i]`` (float64,
    length n - 1) at which ``order[i + 1]`` joined the tree.

    The edges ``(order[i], order[i + 1], weight[i])`` form a path, not the MST itself, but
    they give the same single-linkage components at every threshold: if ``order[i + 1]``
    joined through ``order[s]`` (s <= i), every vertex between them joined at a weight <=
    ``weight[i]`` (Prim would otherwise have taken ``order[i + 1]`` first). scikit-learn and
    the hdbscan package build their hierarchy from this same path, so equal weights (common:
    many mutual-reachability values equal a core distance) are merged in the same order.
    """

    order: IntArray
    weight: npt.NDArray[np.float64]


def _prim(
    points: _Points,
    core: npt.NDArray[np.float32],
    owner: IntArray | None = None,
    batch: int = _PRIM_BATCH,
    dense: npt.NDArray[np.float32] | None = None,
) -> _Path:
    """Prim's algorithm from point 0 on the squared mutual-reachability graph.

    The points outside the tree are kept in ascending order with their best weight to the
    tree (a dense vector), so ``argmin`` breaks ties by lowest index, as scikit-learn does.
    Each step needs the new point's row of weights: from ``dense`` if given, else computed
    by GEMM in batches: when the new point has no cached row, rows are computed for it and
    for the ``batch - 1`` outside points with the smallest best weights, which are likely to
    join next; cached rows still wanted are kept. In practice about 1.25 rows per point are
    computed, and a row of a GEMM costs a fraction of a GEMV. Memory: ``4 * batch * n`` bytes
    of cached rows (``batch`` is lowered to keep that under ``_BLOCK_MAX_BYTES``).

    Exact duplicates share one distinct row: a point's row of weights is its distinct row's
    row, gathered through ``owner`` (the weight between two copies is their core distance,
    which is what the distinct row holds at its own column).

    Parameters
    ----------
    points : _Points
        The distinct rows (u of them).
    core : ndarray of shape (u,), dtype float32
        Squared core distances of the distinct rows.
    owner : ndarray of shape (n,), dtype int64, optional
        The distinct row of each point; None when every point is its own row.
    batch : int
        Rows per GEMM.
    dense : ndarray of shape (u, u), dtype float32, optional
        The precomputed squared mutual-reachability matrix.

    Returns
    -------
    _Path over the n points, weights in squared mutual reachability.
    """
    owner = np.arange(points.n, dtype=np.int64) if owner is None else owner
    n = len(owner)
    batch = max(2, _block_size(points.n, batch))
    order = np.zeros(n, dtype=np.int64)
    weight = np.empty(max(n - 1, 0), dtype=np.float64)
    outside = np.arange(1, n, dtype=np.int64)
    outside_row = owner[1:].copy()
    best = np.full(max(n - 1, 0), np.inf, dtype=np.float32)
    if dense is None:
        cache = np.empty((min(batch, points.n), points.n), dtype=np.float32)
        slot: dict[int, int] = {}  # distinct row -> row of `cache`
    else:
        cache = dense
        slot = {r: r for r in range(points.n)}
    v = 0
    for step in range(n - 1):
        m = n - 1 - step
        row = int(owner[v])
        if row not in slot:
            finite = np.flatnonzero(np.isfinite(best[:m]))
            if finite.size > batch - 1:
                finite = finite[np.argpartition(best[finite], batch - 2)[: batch - 1]]
            wanted = list(dict.fromkeys([row, *outside_row[finite].tolist()]))[: len(cache)]
            kept = {r: slot[r] for r in wanted if r in slot}
            new = [r for r in wanted if r not in kept]
            free = sorted(set(range(len(cache))) - set(kept.values()))[: len(new)]
            cache[free] = _mutual_reachability_rows(points, core, np.array(new, dtype=np.int64))
            slot = kept | dict(zip(new, free))
        np.minimum(best[:m], cache[slot[row]].take(outside_row[:m]), out=best[:m])
        j = int(np.argmin(best[:m]))
        v = int(outside[j])
        order[step + 1], weight[step] = v, best[j]
        outside[j : m - 1] = outside[j + 1 : m]
        outside_row[j : m - 1] = outside_row[j + 1 : m]
        best[j : m - 1] = best[j + 1 : m]
    return _Path(order, weight)


def _prim_path(
    points: _Points, min_samples: int, block_rows: int, copies: _Duplicates | None
) -> _Path:
    """Core distances and Prim's path: from a dense mutual-reachability matrix when it fits
    in ``_DENSE_MAX_BYTES`` (one GEMM pass, no GEMM inside Prim's loop), else batched."""
    counts = None if copies is None else copies.counts
    owner = None if copies is None else copies.inverse
    if 4 * points.n * points.n <= _DENSE_MAX_BYTES:
        mr, core = _dense_mutual_reachability(points, min_samples, block_rows, counts)
        return _prim(points, core, owner, dense=mr)
    core = _core_sq_distances(points, min_samples, block_rows, counts)
    return _prim(points, core, owner)


def _to_metric(sq_chord: npt.NDArray[np.float64], metric: str) -> npt.NDArray[np.float64]:
    """Convert squared Euclidean distances of prepared rows to the metric's distances."""
    sq = np.maximum(sq_chord, 0.0)
    if metric == "cosine":
        return sq / 2.0
    chord = np.sqrt(sq)
    if metric == "angular":
        return 2.0 * np.arcsin(np.minimum(chord / 2.0, 1.0)) / math.pi
    return chord


# ---------------------------------------------------------------------------------------------
# 7-8. Single linkage and condensed tree


@dataclass(frozen=True)
class _Linkage:
    """scipy-style linkage: row i merges ``left[i]`` and ``right[i]`` at ``distance[i]`` into
    node ``n + i`` of ``size[i]`` points (nodes < n are points)."""

    left: IntArray
    right: IntArray
    distance: npt.NDArray[np.float64]
    size: IntArray


def _single_linkage(path: _Path) -> _Linkage:
    """Merge Prim's path edges ``(order[i], order[i + 1])`` by increasing weight (union-find).

    Sorted by numpy's default ``argsort``, as scikit-learn and the hdbscan package do, so
    tied weights merge in the same order as theirs.
    """
    n = len(path.order)
    a, b = path.order[:-1], path.order[1:]
    order = np.argsort(path.weight)
    parent = list(range(2 * n - 1))
    sizes = [1] * n + [0] * (n - 1)
    left = np.empty(n - 1, dtype=np.int64)
    right = np.empty(n - 1, dtype=np.int64)
    size = np.empty(n - 1, dtype=np.int64)

    def find(x: int) -> int:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    for i, (ea, eb) in enumerate(zip(a[order].tolist(), b[order].tolist())):
        ra, rb = find(ea), find(eb)
        if ra == rb:
            raise AssertionError("minimum spanning tree edge closes a cycle")
        node = n + i
        parent[ra] = parent[rb] = node
        sizes[node] = sizes[ra] + sizes[rb]
        left[i], right[i], size[i] = ra, rb, sizes[node]
    return _Linkage(left, right, path.weight[order], size)


def _condense(linkage: _Linkage, min_cluster_size: int) -> CondensedTree:
    """Condense a linkage: only splits into two sides of >= min_cluster_size make clusters.

    Walks down from the root breadth-first (so cluster ids number as in scikit-learn). A
    side smaller than ``min_cluster_size`` has all its points fall out of the current
    cluster at that merge's lambda; a single large side carries the cluster on. The points
    under any linkage node are a contiguous slice of the dendrogram's leaf order, so falling
    out costs O(points) in total.
    """
    n = len(linkage.left) + 1
    left, right = linkage.left.tolist(), linkage.right.tolist()
    dist, sizes = linkage.distance.tolist(), linkage.size.tolist()

    def node_size(x: int) -> int:
        return 1 if x < n else sizes[x - n]

    # leaf order: start[x] is where node x's points begin in `order`
    start = [0] * (2 * n - 1)
    for i in range(n - 2, -1, -1):
        s = start[n + i]
        start[left[i]] = s
        start[right[i]] = s + node_size(left[i])
    order = np.empty(n, dtype=np.int64)
    order[np.asarray(start[:n], dtype=np.int64)] = np.arange(n, dtype=np.int64)

    c_parent: list[int] = []
    c_child: list[int] = []
    c_lambda: list[float] = []
    c_size: list[int] = []
    fall_parent: list[int] = []
    fall_start: list[int] = []
    fall_count: list[int] = []
    fall_lambda: list[float] = []

    root = 2 * n - 2
    cluster_of = {root: n}
    next_id = n + 1
    queue = deque([root]) if n > 1 else deque()
    while queue:
        node = queue.popleft()
        i = node - n
        lam = 1.0 / dist[i] if dist[i] > 0.0 else math.inf
        cluster = cluster_of[node]
        sides = ((left[i], node_size(left[i])), (right[i], node_size(right[i])))
        if sides[0][1] >= min_cluster_size and sides[1][1] >= min_cluster_size:
            for side, count in sides:
                cluster_of[side] = next_id
                c_parent.append(cluster)
                c_child.append(next_id)
                c_lambda.append(lam)
                c_size.append(count)
                next_id += 1
                queue.append(side)
            continue
        for side, count in sides:
            if count >= min_cluster_size:
                cluster_of[side] = cluster
                queue.append(side)
            else:
                fall_parent.append(cluster)
                fall_start.append(start[side])
                fall_count.append(count)
                fall_lambda.append(lam)

    counts = np.asarray(fall_count, dtype=np.int64)
    starts = np.asarray(fall_start, dtype=np.int64)
    # positions in `order` of every fallen point, segment by segment
    offsets = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(counts) - counts, counts
    )
    points = order[np.repeat(starts, counts) + offsets]
    parent = np.concatenate(
        [
            np.asarray(c_parent, dtype=np.int64),
            np.repeat(np.asarray(fall_parent, dtype=np.int64), counts),
        ]
    )
    child = np.concatenate([np.asarray(c_child, dtype=np.int64), points])
    lambda_val = np.concatenate(
        [
            np.asarray(c_lambda, dtype=np.float64),
            np.repeat(np.asarray(fall_lambda, dtype=np.float64), counts),
        ]
    )
    child_size = np.concatenate(
        [np.asarray(c_size, dtype=np.int64), np.ones(len(points), dtype=np.int64)]
    )
    return CondensedTree(parent, child, lambda_val, child_size, n)


# ---------------------------------------------------------------------------------------------
# 9. Stability and cluster selection


def _cluster_rows(tree: CondensedTree) -> npt.NDArray[np.bool_]:
    return tree.child >= tree.n_points


def _stabilities(tree: CondensedTree) -> npt.NDArray[np.float64]:
    """Excess of mass of every tree cluster: sum over its rows of (lambda - birth) * size.

    Returns
    -------
    ndarray of shape (n_tree_clusters,), dtype float64, indexed by ``cluster_id - n_points``.
    """
    k, n = tree.n_tree_clusters, tree.n_points
    birth = np.zeros(k, dtype=np.float64)
    rows = _cluster_rows(tree)
    birth[tree.child[rows] - n] = tree.lambda_val[rows]
    parent_birth = birth[tree.parent - n]
    # inf - inf (born and left at distance 0) counts as 0, not NaN
    excess = np.zeros(len(tree.lambda_val), dtype=np.float64)
    np.subtract(tree.lambda_val, parent_birth, out=excess, where=tree.lambda_val != parent_birth)
    stability: npt.NDArray[np.float64] = np.bincount(
        tree.parent - n, weights=excess * tree.child_size, minlength=k
    ).astype(np.float64)
    return stability


def _tree_parents(tree: CondensedTree) -> IntArray:
    """Parent index of every tree cluster (index = id - n_points); -1 for the root."""
    k, n = tree.n_tree_clusters, tree.n_points
    parents = np.full(k, -1, dtype=np.int64)
    rows = _cluster_rows(tree)
    parents[tree.child[rows] - n] = tree.parent[rows] - n
    return parents


def _root_selectable(
    tree: CondensedTree, min_cluster_size: int, allow_single_cluster: bool
) -> bool:
    return allow_single_cluster and tree.n_points >= min_cluster_size


def _select_eom(
    tree: CondensedTree,
    stability: npt.NDArray[np.float64],
    *,
    allow_single_cluster: bool,
    min_cluster_size: int,
) -> npt.NDArray[np.bool_]:
    """Excess-of-mass selection: keep a cluster unless its children's best total is larger.

    Bottom-up (descending ids) a cluster is *chosen* when its stability is at least the sum
    of its children's carried stabilities, and then carries its own; otherwise it carries the
    children's sum. Top-down, a chosen cluster is selected unless an ancestor was chosen. The
    root takes part only with ``allow_single_cluster`` (and at least min_cluster_size points).

    Returns
    -------
    ndarray of shape (n_tree_clusters,), dtype bool
    """
    k = tree.n_tree_clusters
    parents = _tree_parents(tree)
    carried = stability.astype(np.float64, copy=True)
    children_sum = np.zeros(k, dtype=np.float64)
    chosen = np.zeros(k, dtype=bool)
    lowest = 0 if _root_selectable(tree, min_cluster_size, allow_single_cluster) else 1
    for c in range(k - 1, lowest - 1, -1):
        if children_sum[c] > carried[c]:
            carried[c] = children_sum[c]
        else:
            chosen[c] = True
        if parents[c] >= 0:
            children_sum[parents[c]] += carried[c]
    selected = np.zeros(k, dtype=bool)
    blocked = np.zeros(k, dtype=bool)
    for c in range(k):
        p = parents[c]
        blocked[c] = p >= 0 and (blocked[p] or chosen[p])
        selected[c] = chosen[c] and not blocked[c]
    return selected


def _select_leaf(
    tree: CondensedTree, *, allow_single_cluster: bool, min_cluster_size: int
) -> npt.NDArray[np.bool_]:
    """Select the leaves of the cluster tree (the root only if it is the only cluster and
    ``allow_single_cluster``).

    Returns
    -------
    ndarray of shape (n_tree_clusters,), dtype bool
    """
    k = tree.n_tree_clusters
    parents = _tree_parents(tree)
    selected = np.ones(k, dtype=bool)
    selected[parents[parents >= 0]] = False
    if k == 1 and not _root_selectable(tree, min_cluster_size, allow_single_cluster):
        selected[0] = False
    return selected


# ---------------------------------------------------------------------------------------------
# 10. Labels and probabilities


def _label(tree: CondensedTree, selected: npt.NDArray[np.bool_]) -> IntArray:
    """Label each point with the selected cluster above it; -1 if none.

    Selected clusters are numbered in id order. If the root itself is selected (a single
    cluster), a point is labelled only if it left the tree at a lambda >= the root's largest
    row lambda, as in scikit-learn and the hdbscan package.

    Returns
    -------
    ndarray of shape (n_points,), dtype int64
    """
    n, k = tree.n_points, tree.n_tree_clusters
    labels = np.full(n, -1, dtype=np.int64)
    if k == 0 or not selected.any():
        return labels
    number = np.full(k, -1, dtype=np.int64)
    number[selected] = np.arange(int(selected.sum()), dtype=np.int64)
    parents = _tree_parents(tree)
    owner = np.full(k, -1, dtype=np.int64)
    for c in range(k):  # ascending ids: parents before children
        owner[c] = c if selected[c] else (owner[parents[c]] if parents[c] >= 0 else -1)
    point_rows = ~_cluster_rows(tree)
    points = tree.child[point_rows]
    in_cluster = owner[tree.parent[point_rows] - n]
    labels[points] = np.where(in_cluster >= 0, number[np.maximum(in_cluster, 0)], -1)
    if selected[0]:
        threshold = tree.lambda_val[tree.parent == n].max()
        labels[points[tree.lambda_val[point_rows] < threshold]] = -1
    return labels


def _probabilities(
    tree: CondensedTree, labels: IntArray, selected: npt.NDArray[np.bool_]
) -> npt.NDArray[np.float64]:
    """Membership strength ``min(lambda_p, lambda_max) / lambda_max`` of labelled points.

    ``lambda_p`` is the lambda at which the point left the tree and ``lambda_max`` the largest
    finite lambda among the rows of its selected cluster; infinite ``lambda_p`` or a zero
    ``lambda_max`` give 1. Noise gets 0.

    Returns
    -------
    ndarray of shape (n_points,), dtype float64, in [0, 1]
    """
    n, k = tree.n_points, tree.n_tree_clusters
    probabilities = np.zeros(n, dtype=np.float64)
    if k == 0 or not selected.any():
        return probabilities
    finite = np.isfinite(tree.lambda_val)
    deaths = np.zeros(k, dtype=np.float64)
    np.maximum.at(deaths, tree.parent[finite] - n, tree.lambda_val[finite])
    point_rows = ~_cluster_rows(tree)
    points = tree.child[point_rows]
    lam = tree.lambda_val[point_rows]
    label = labels[points]
    clustered = label >= 0
    cluster_ids = np.flatnonzero(selected)
    death = np.where(clustered, deaths[cluster_ids[np.maximum(label, 0)]], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        strength = np.where(
            np.isinf(lam) | (death == 0.0),
            1.0,
            np.minimum(lam, death) / np.where(death == 0.0, 1.0, death),
        )
    probabilities[points] = np.where(clustered, strength, 0.0)
    return probabilities


# ---------------------------------------------------------------------------------------------
# Public API


def hdbscan(
    X: npt.ArrayLike,
    *,
    min_cluster_size: int = 5,
    min_samples: int | None = None,
    metric: Metric = "euclidean",
    cluster_selection_method: SelectionMethod = "eom",
    allow_single_cluster: bool = False,
    block_rows: int = 2048,
) -> Clustering:
    """Cluster the rows of X by HDBSCAN*.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features), real and finite
        float32 unit vectors (e.g. MiniLM embeddings) are the intended input; any dtype is
        accepted and copied to float64 (plus a float32 working copy).
    min_cluster_size : int, default 5
        Smallest group of points counted as a cluster (>= 2).
    min_samples : int or None, default None (= min_cluster_size)
        Neighbourhood size for core distances, counting the point itself; capped at
        n_samples.
    metric : {"euclidean", "cosine", "angular"}, default "euclidean"
        ``cosine`` is ``1 - cos``; ``angular`` is ``arccos(cos) / pi``; both normalise rows
        first (all-zero rows are rejected).
    cluster_selection_method : {"eom", "leaf"}, default "eom"
    allow_single_cluster : bool, default False
        Let excess of mass pick the root, i.e. report everything as one cluster.
    block_rows : int, default 2048
        Rows per distance block (1 to 4096): memory for distances is about
        ``4 * block_rows * n_samples`` bytes, capped at 256 MiB, on top of about
        ``16 * n_samples * n_features`` bytes of prepared data; up to 8,192 distinct rows the
        ``4 * n_samples**2`` byte mutual-reachability matrix is kept too.

    Returns
    -------
    Clustering
        ``labels`` (n_samples,) int64 with -1 for noise, ``probabilities`` (n_samples,)
        float64 in [0, 1], ``condensed_tree``.

    Raises
    ------
    ValueError
        A parameter outside its accepted values, X not 2-D real numbers, rows with NaN or
        infinite values, or (cosine, angular) all-zero rows.

    Notes
    -----
    ``min_samples`` counts the point itself, as in scikit-learn: the core distance is the
    distance to the ``min_samples``-th nearest point when the point is its own first. The
    ``hdbscan`` package does not count the point itself: its ``min_samples=m`` equals
    ``min_samples=m + 1`` here. With n_samples < min_cluster_size every point is noise.
    """
    _check_params(
        min_cluster_size=min_cluster_size,
        min_samples=min_samples,
        metric=metric,
        cluster_selection_method=cluster_selection_method,
        allow_single_cluster=allow_single_cluster,
        block_rows=block_rows,
    )
    data = _check_data(X, metric)
    n = data.shape[0]
    if n < 2:
        empty_i = np.empty(0, dtype=np.int64)
        tree = CondensedTree(empty_i, empty_i, np.empty(0, dtype=np.float64), empty_i, n)
        return Clustering(np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=np.float64), tree)
    k = min(min_samples or min_cluster_size, n)
    copies = _find_duplicates(data)
    points = _prepare_points(data if copies is None else data[copies.first], metric)
    del data
    path = _prim_path(points, k, block_rows, copies)
    del points
    path = _Path(path.order, _to_metric(path.weight, metric))
    tree = _condense(_single_linkage(path), min_cluster_size)
    if cluster_selection_method == "eom":
        selected = _select_eom(
            tree,
            _stabilities(tree),
            allow_single_cluster=allow_single_cluster,
            min_cluster_size=min_cluster_size,
        )
    else:
        selected = _select_leaf(
            tree, allow_single_cluster=allow_single_cluster, min_cluster_size=min_cluster_size
        )
    labels = _label(tree, selected)
    return Clustering(labels, _probabilities(tree, labels, selected), tree)


class HDBSCAN:
    """scikit-learn-style estimator around :func:`hdbscan` (same parameters and meaning).

    After :meth:`fit`: ``labels_`` (n_samples,) int64 with -1 for noise, ``probabilities_``
    (n_samples,) float64, ``n_clusters_`` int, ``condensed_tree_`` and ``clustering_``.
    Parameters are checked when the estimator is made, so a typo fails before any data is
    loaded.
    """

    labels_: IntArray
    probabilities_: npt.NDArray[np.float64]
    n_clusters_: int
    condensed_tree_: CondensedTree
    clustering_: Clustering

    def __init__(
        self,
        min_cluster_size: int = 5,
        min_samples: int | None = None,
        metric: Metric = "euclidean",
        cluster_selection_method: SelectionMethod = "eom",
        allow_single_cluster: bool = False,
        block_rows: int = 2048,
    ) -> None:
        _check_params(
            min_cluster_size=min_cluster_size,
            min_samples=min_samples,
            metric=metric,
            cluster_selection_method=cluster_selection_method,
            allow_single_cluster=allow_single_cluster,
            block_rows=block_rows,
        )
        self.min_cluster_size = min_cluster_size
        self.min_samples = min_samples
        self.metric: Metric = metric
        self.cluster_selection_method: SelectionMethod = cluster_selection_method
        self.allow_single_cluster = allow_single_cluster
        self.block_rows = block_rows

    def fit(self, X: npt.ArrayLike, y: object = None) -> HDBSCAN:
        """Cluster X (see :func:`hdbscan`); ``y`` is ignored. Returns self."""
        result = hdbscan(
            X,
            min_cluster_size=self.min_cluster_size,
            min_samples=self.min_samples,
            metric=self.metric,
            cluster_selection_method=self.cluster_selection_method,
            allow_single_cluster=self.allow_single_cluster,
            block_rows=self.block_rows,
        )
        self.clustering_ = result
        self.labels_ = result.labels
        self.probabilities_ = result.probabilities
        self.n_clusters_ = result.n_clusters
        self.condensed_tree_ = result.condensed_tree
        return self

    def fit_predict(self, X: npt.ArrayLike, y: object = None) -> IntArray:
        """Cluster X and return ``labels_``."""
        return self.fit(X).labels_
