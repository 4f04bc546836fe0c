"""Tests for the numpy HDBSCAN* in causantic.topics.hdbscan.

Each stage is checked on a hand-built input; the whole is checked against scikit-learn's
``HDBSCAN(algorithm="brute")`` (exact, deterministic) and the ``hdbscan`` package on fixed
seeds. Both are test-only dependencies; the module itself must not import them.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from causantic.topics import hdbscan as H
from causantic.topics.hdbscan import HDBSCAN, CondensedTree, hdbscan

sklearn_cluster = pytest.importorskip("sklearn.cluster")
sklearn_metrics = pytest.importorskip("sklearn.metrics")
adjusted_rand_score = sklearn_metrics.adjusted_rand_score

MODULE_PATH = Path(H.__file__)


# ---------------------------------------------------------------------------------------------
# Data and oracles


def planted_sphere(
    n: int, *, k: int = 40, d: int = 384, noise: float = 0.2, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors that look like chunk embeddings: k Gaussian clusters of unequal sizes
    around centres sharing a common direction (intra-cluster cosine about 0.55), plus a
    fraction of scattered noise; float32, shuffled. Returns (X, truth with -1 for noise)."""
    rng = np.random.default_rng(seed)
    n_noise = int(round(n * noise))
    n_clustered = n - n_noise
    common = rng.standard_normal(d)
    common /= np.linalg.norm(common)
    centres = rng.standard_normal((k, d))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    centres += 0.5 * common
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    truth = rng.choice(k, n_clustered, p=rng.dirichlet(np.full(k, 3.0)))
    spread = rng.uniform(0.8, 1.25, k) / np.sqrt(d)
    clustered = centres[truth] + rng.standard_normal((n_clustered, d)) * spread[truth, None]
    scattered = rng.standard_normal((n_noise, d))
    scattered /= np.linalg.norm(scattered, axis=1, keepdims=True)
    scattered += 0.5 * common
    X = np.vstack([clustered, scattered])
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.concatenate([truth, np.full(n_noise, -1)])
    order = rng.permutation(n)
    return X[order].astype(np.float32), y[order]


def blobs(n: int, *, std: float | list[float] = 1.0, centers: int = 4, seed: int = 0) -> np.ndarray:
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(n, centers=centers, cluster_std=std, random_state=seed)
    return X


def sklearn_fit(X: np.ndarray, **params: Any) -> Any:
    """scikit-learn's exact HDBSCAN (brute force, float64)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        algorithm = "auto" if params.get("metric") == "precomputed" else "brute"
        return sklearn_cluster.HDBSCAN(algorithm=algorithm, copy=True, **params).fit(X)


def assert_agrees(
    ours: np.ndarray,
    theirs: np.ndarray,
    *,
    min_ari: float,
    max_noise_diff: float = 0.01,
) -> None:
    ari = adjusted_rand_score(theirs, ours)
    noise_diff = int(np.sum((ours == -1) != (theirs == -1)))
    assert ari >= min_ari, f"ARI {ari:.4f} < {min_ari}"
    assert noise_diff <= max_noise_diff * len(ours), f"{noise_diff} points differ in noise"


def assert_probabilities_close(
    ours: H.Clustering, theirs: Any, *, atol: float = 1e-4, min_fraction: float = 0.99
) -> None:
    """Where both put a point in the same cluster, membership strengths agree."""
    same = ours.labels == theirs.labels_
    assert same.mean() >= min_fraction
    np.testing.assert_allclose(ours.probabilities[same], theirs.probabilities_[same], atol=atol)


# ---------------------------------------------------------------------------------------------
# 1. Parameters and data


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("min_cluster_size", 1, "an integer >= 2"),
        ("min_cluster_size", 5.0, "an integer >= 2"),
        ("min_cluster_size", True, "an integer >= 2"),
        ("min_samples", 0, "None or an integer >= 1"),
        ("metric", "manhattan", "one of euclidean, cosine, angular"),
        ("cluster_selection_method", "excess", "one of eom, leaf"),
        ("allow_single_cluster", "yes", "True or False"),
        ("block_rows", 0, "an integer from 1 to 4096"),
        ("block_rows", 8192, "an integer from 1 to 4096"),
    ],
)
def test_bad_parameter_is_rejected_naming_it_before_any_work(
    name: str, value: object, expected: str
) -> None:
    """A typo fails at once, in the estimator's constructor and the function, with the
    accepted values in the message."""
    with pytest.raises(ValueError, match=f"{name}={value!r}.*{expected}"):
        HDBSCAN(**{name: value})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=name):
        hdbscan(np.zeros((3, 2)), **{name: value})  # type: ignore[arg-type]


def test_nan_and_inf_rows_are_rejected_with_their_count() -> None:
    """Bad embeddings must not silently become noise or poison the distances."""
    X = np.random.default_rng(0).standard_normal((10, 4))
    X[2, 1] = np.nan
    X[5, 0] = np.inf
    X[7] = -np.inf
    with pytest.raises(
        ValueError, match=r"3 of 10 rows contain NaN or infinite values \(first: row 2\)"
    ):
        HDBSCAN().fit(X)


@pytest.mark.parametrize(
    ("X", "message"),
    [
        (np.zeros(5), "2-D array"),
        (np.zeros((2, 3, 4)), "2-D array"),
        (np.array([["a", "b"], ["c", "d"]]), "real numbers"),
        (np.ones((3, 2), dtype=complex), "real numbers"),
        (np.zeros((3, 0)), "at least one feature"),
    ],
)
def test_data_that_is_not_a_real_matrix_is_rejected(X: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        hdbscan(X)


def test_all_zero_rows_are_rejected_for_angular_metrics_only() -> None:
    """The angle of a zero vector is undefined; Euclidean distance is not."""
    X = np.eye(6)
    X[4] = 0.0
    with pytest.raises(ValueError, match=r"1 of 6 rows are all zeros \(first: row 4\); cosine"):
        hdbscan(X, metric="cosine")
    with pytest.raises(ValueError, match="angular distance is undefined"):
        hdbscan(X, metric="angular")
    assert len(hdbscan(X, min_cluster_size=2).labels) == 6


# ---------------------------------------------------------------------------------------------
# 2-3. Prepared points and distances


def test_prepared_operands_give_squared_distances_in_one_product() -> None:
    X = np.array([[1.0, 2.0], [4.0, 6.0], [-1.0, 0.5]])
    points = H._prepare_points(X, "euclidean")
    expected = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(points.lhs @ points.rhs.T, expected, atol=1e-4)
    np.testing.assert_allclose(points.exact.mean(axis=0), 0.0, atol=1e-12)


def test_angular_preparation_normalises_rows() -> None:
    X = np.array([[3.0, 4.0], [0.0, 2.0], [5.0, 0.0]])
    points = H._prepare_points(X, "angular")
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    expected = ((unit[:, None, :] - unit[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(points.lhs @ points.rhs.T, expected, atol=1e-6)


def test_refinement_makes_duplicates_exactly_zero_and_close_pairs_exact() -> None:
    """float32 |a|^2 + |b|^2 - 2ab is off by ~1e-3 here; duplicates must be 0 exactly (they
    decide whether lambda is infinite) and close pairs must keep their order."""
    X = np.array([[0.0, 0.0], [0.0, 0.0], [1e-3, 0.0], [3e-3, 0.0], [1e4, 0.0], [1e4, 1.0]])
    points = H._prepare_points(X, "euclidean")
    rows = np.arange(len(X))
    block = H._sq_distance_rows(points, rows)
    H._refine(points, block, rows)
    exact = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    assert block[0, 1] == 0.0 and block[1, 0] == 0.0
    assert np.all(np.diag(block) == 0.0)
    np.testing.assert_allclose(block[:4, :4], exact[:4, :4], rtol=1e-6)
    assert block[0, 2] < block[0, 3]
    assert np.all(block >= 0.0)


def test_exact_duplicates_are_grouped_under_their_first_occurrence() -> None:
    X = np.array([[1.0, 2.0], [3.0, 4.0], [1.0, 2.0], [5.0, 6.0], [3.0, 4.0], [1.0, 2.0]])
    copies = H._find_duplicates(X)
    assert copies is not None
    assert copies.first.tolist() == [0, 1, 3]
    assert copies.inverse.tolist() == [0, 1, 0, 2, 1, 0]
    assert copies.counts.tolist() == [3, 2, 1]
    assert H._find_duplicates(X[[0, 1, 3]]) is None
    # equal up to the last bit is not a duplicate
    assert H._find_duplicates(np.array([[1.0, 2.0], [1.0, np.nextafter(2.0, 3.0)]])) is None


def test_kth_smallest_counts_each_column_by_its_multiplicity() -> None:
    block = np.array([[0.0, 4.0, 1.0, 9.0], [4.0, 0.0, 2.0, 5.0]], dtype=np.float32)
    counts = np.array([3, 1, 2, 1])
    np.testing.assert_array_equal(H._kth_smallest(block.copy(), 3, counts), [0.0, 2.0])
    np.testing.assert_array_equal(H._kth_smallest(block.copy(), 4, counts), [1.0, 4.0])
    np.testing.assert_array_equal(H._kth_smallest(block.copy(), 6, counts), [4.0, 4.0])
    np.testing.assert_array_equal(H._kth_smallest(block.copy(), 2, None), [1.0, 2.0])


# ---------------------------------------------------------------------------------------------
# 4-5. Core distances and mutual reachability


@pytest.mark.parametrize(
    ("min_samples", "expected"),
    [
        (1, [0, 0, 0, 0, 0]),  # the point itself
        (2, [1, 1, 2, 4, 8]),  # nearest other point
        (3, [3, 2, 3, 6, 12]),
    ],
)
def test_core_distance_counts_the_point_itself(min_samples: int, expected: list[float]) -> None:
    """scikit-learn's convention: min_samples=2 means the nearest *other* point."""
    X = np.array([[0.0], [1.0], [3.0], [7.0], [15.0]])
    points = H._prepare_points(X, "euclidean")
    for block_rows in (1, 2, 2048):
        core = H._core_sq_distances(points, min_samples, block_rows)
        np.testing.assert_allclose(np.sqrt(core), expected, atol=1e-5)


def test_core_distance_of_points_with_enough_duplicates_is_zero() -> None:
    X = np.array([[5.0, 5.0]] * 3 + [[5.0, 5.001], [9.0, 9.0]])
    points = H._prepare_points(X, "euclidean")
    core = H._core_sq_distances(points, 3, 2048)
    assert np.all(core[:3] == 0.0)
    np.testing.assert_allclose(core[3], 1e-6, rtol=1e-4)


def test_mutual_reachability_is_the_max_of_both_cores_and_the_distance() -> None:
    d = np.array([[0.0, 1.0, 9.0], [1.0, 0.0, 4.0], [9.0, 4.0, 0.0]], dtype=np.float32)
    core = np.array([2.0, 0.5, 5.0], dtype=np.float32)
    expected = [[2.0, 2.0, 9.0], [2.0, 0.5, 5.0], [9.0, 5.0, 5.0]]
    np.testing.assert_array_equal(H._mutual_reachability(d, core, core), expected)
    np.testing.assert_array_equal(
        H._mutual_reachability(d[1:], core[1:], core), [[2.0, 0.5, 5.0], [9.0, 5.0, 5.0]]
    )


# ---------------------------------------------------------------------------------------------
# 6. Minimum spanning tree


def test_prim_visits_a_line_in_order_with_its_gaps() -> None:
    X = np.array([[0.0], [7.0], [1.0], [3.0]])
    points = H._prepare_points(X, "euclidean")
    path = H._prim(points, np.zeros(4, dtype=np.float32))
    assert path.order.tolist() == [0, 2, 3, 1]
    np.testing.assert_allclose(path.weight, [1.0, 4.0, 16.0], rtol=1e-6)


def test_prim_breaks_ties_by_lowest_index() -> None:
    """Equal weights are everywhere in mutual reachability; the order must be the one the
    references use so that tied merges resolve the same way."""
    X = np.array([[0.0], [-1.0], [1.0], [2.0]])
    points = H._prepare_points(X, "euclidean")
    path = H._prim(points, np.zeros(4, dtype=np.float32))
    assert path.order.tolist() == [0, 1, 2, 3]


def kruskal_weight(mr: np.ndarray) -> float:
    """Total weight of a minimum spanning tree, by brute-force Kruskal."""
    n = len(mr)
    i, j = np.triu_indices(n, 1)
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    total = 0.0
    for k in np.argsort(mr[i, j], kind="stable"):
        a, b = find(int(i[k])), find(int(j[k]))
        if a != b:
            parent[a] = b
            total += float(mr[i[k], j[k]])
    return total


def test_prim_path_has_the_weights_of_a_minimum_spanning_tree() -> None:
    X, _ = planted_sphere(300, k=6, d=16, seed=4)
    points = H._prepare_points(X.astype(np.float64), "euclidean")
    core = H._core_sq_distances(points, 5, 64)
    mr = H._mutual_reachability(H._sq_distance_rows(points, np.arange(300)), core, core)
    path = H._prim(points, core)
    assert sorted(path.order.tolist()) == list(range(300))
    assert path.weight.sum() == pytest.approx(kruskal_weight(mr.astype(np.float64)), rel=1e-6)


def test_prim_result_does_not_depend_on_batch_size() -> None:
    X, _ = planted_sphere(700, k=8, seed=5)
    points = H._prepare_points(X.astype(np.float64), "euclidean")
    core = H._core_sq_distances(points, 10, 256)
    reference = H._prim(points, core, batch=512)
    for batch in (16, 100):
        path = H._prim(points, core, batch=batch)
        # a GEMM's rounding can depend on its shape: weights agree to float32 precision
        np.testing.assert_array_equal(path.order, reference.order)
        np.testing.assert_allclose(path.weight, reference.weight, rtol=1e-6)


def test_prim_over_distinct_rows_equals_prim_over_all_rows() -> None:
    """Duplicates are computed once but walked as separate points, in the same order."""
    base, _ = planted_sphere(200, k=4, d=16, seed=6)
    X = np.vstack([base, base[:40], base[:10]]).astype(np.float64)[
        np.random.default_rng(6).permutation(250)
    ]
    copies = H._find_duplicates(X)
    assert copies is not None and len(copies.first) == 200
    distinct = H._prepare_points(X[copies.first], "euclidean")
    core = H._core_sq_distances(distinct, 5, 64, copies.counts)
    deduplicated = H._prim(distinct, core, copies.inverse)
    everything = H._prepare_points(X, "euclidean")
    full_core = H._core_sq_distances(everything, 5, 64)
    np.testing.assert_allclose(core[copies.inverse], full_core, rtol=1e-6)
    direct = H._prim(everything, full_core)
    np.testing.assert_allclose(deduplicated.weight, direct.weight, rtol=1e-6)
    # GEMMs of different shapes round differently on some CPUs (seen on AMD EPYC), so two
    # points joining at tied weights may swap; the order may differ only inside such ties.
    differ = np.flatnonzero(deduplicated.order != direct.order)
    for run in np.split(differ, np.flatnonzero(np.diff(differ) > 1) + 1) if differ.size else []:
        assert set(deduplicated.order[run]) == set(direct.order[run])
        tied = direct.weight[run.min() - 1 : run.max()]
        np.testing.assert_allclose(tied, tied[0], rtol=1e-5)


def test_dense_matrix_holds_the_same_weights_as_the_batched_rows() -> None:
    X, _ = planted_sphere(400, k=5, d=24, seed=17)
    X[50] = X[51]  # a duplicate pair: the refined rows must agree too
    points = H._prepare_points(X.astype(np.float64), "euclidean")
    mr, core = H._dense_mutual_reachability(points, 7, 64)
    np.testing.assert_allclose(core, H._core_sq_distances(points, 7, 64), rtol=1e-6)
    rows = H._mutual_reachability_rows(points, core, np.arange(400))
    np.testing.assert_allclose(mr, rows, rtol=1e-6, atol=1e-7)
    assert mr[50, 51] == mr[51, 50] == core[50]


def test_dense_and_batched_prim_give_the_same_clustering(monkeypatch: pytest.MonkeyPatch) -> None:
    """n <= 8192 keeps the whole matrix; larger n computes rows in batches. Same result."""
    X, _ = planted_sphere(900, k=10, seed=18)
    X = np.vstack([X, X[:30]])
    dense = hdbscan(X, min_cluster_size=8)
    monkeypatch.setattr(H, "_DENSE_MAX_BYTES", 0)
    batched = hdbscan(X, min_cluster_size=8)
    np.testing.assert_array_equal(batched.labels, dense.labels)
    np.testing.assert_allclose(batched.probabilities, dense.probabilities, atol=1e-6)


def test_metric_conversion_from_squared_chords() -> None:
    # unit vectors at 0, 90 and 180 degrees: squared chords 0, 2, 4
    sq = np.array([0.0, 2.0, 4.0])
    np.testing.assert_allclose(H._to_metric(sq, "euclidean"), [0.0, np.sqrt(2), 2.0])
    np.testing.assert_allclose(H._to_metric(sq, "cosine"), [0.0, 1.0, 2.0])
    np.testing.assert_allclose(H._to_metric(sq, "angular"), [0.0, 0.5, 1.0])


# ---------------------------------------------------------------------------------------------
# 7-8. Single linkage and the condensed tree


def test_single_linkage_merges_path_edges_by_weight() -> None:
    path = H._Path(np.array([0, 1, 2, 3]), np.array([1.0, 3.0, 2.0]))
    linkage = H._single_linkage(path)
    assert linkage.left.tolist() == [0, 2, 4]
    assert linkage.right.tolist() == [1, 3, 5]
    assert linkage.distance.tolist() == [1.0, 2.0, 3.0]
    assert linkage.size.tolist() == [2, 2, 4]


def hand_linkage() -> H._Linkage:
    """Two triples {0,1,2} (node 8) and {3,4,5} (node 10) join at 4 (node 11); point 6 joins
    everything at 8 (node 12, the root)."""
    return H._Linkage(
        left=np.array([0, 7, 3, 9, 8, 11]),
        right=np.array([1, 2, 4, 5, 10, 6]),
        distance=np.array([1.0, 2.0, 1.0, 2.0, 4.0, 8.0]),
        size=np.array([2, 3, 2, 3, 6, 7]),
    )


def rows(tree: CondensedTree) -> set[tuple[int, int, float, int]]:
    return set(
        zip(
            tree.parent.tolist(),
            tree.child.tolist(),
            tree.lambda_val.tolist(),
            tree.child_size.tolist(),
        )
    )


def test_condense_keeps_only_splits_into_two_large_sides() -> None:
    tree = H._condense(hand_linkage(), min_cluster_size=3)
    assert tree.n_points == 7 and tree.n_tree_clusters == 3
    assert rows(tree) == {
        (7, 6, 0.125, 1),  # point 6 falls out of the root
        (7, 8, 0.25, 3),
        (7, 9, 0.25, 3),
        (8, 0, 0.5, 1),
        (8, 1, 0.5, 1),
        (8, 2, 0.5, 1),
        (9, 3, 0.5, 1),
        (9, 4, 0.5, 1),
        (9, 5, 0.5, 1),
    }


def test_condense_with_a_large_min_cluster_size_leaves_only_the_root() -> None:
    tree = H._condense(hand_linkage(), min_cluster_size=4)
    assert tree.n_tree_clusters == 1
    assert set(tree.parent.tolist()) == {7}
    assert sorted(tree.child.tolist()) == list(range(7))


def hand_tree(inner_lambda: float = 1.3) -> CondensedTree:
    """Root 10 splits at lambda 1 into 11 (6 points) and 12 (4 points); 11 splits at 1.2
    into 13 {0,1,2} and 14 {3,4,5}, whose points leave at ``inner_lambda``."""
    parent = [10, 10, 11, 11] + [13] * 3 + [14] * 3 + [12] * 4
    child = [11, 12, 13, 14, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    lam = [1.0, 1.0, 1.2, 1.2] + [inner_lambda] * 6 + [2.0, 3.0, 3.0, 1.5]
    size = [6, 4, 3, 3] + [1] * 10
    return CondensedTree(
        np.array(parent), np.array(child), np.array(lam), np.array(size), n_points=10
    )


def test_stability_is_the_excess_of_mass_of_each_cluster() -> None:
    stability = H._stabilities(hand_tree())
    np.testing.assert_allclose(stability, [10.0, 1.2, 5.5, 0.3, 0.3])


def test_stability_of_a_cluster_born_and_dying_at_infinite_lambda_is_not_nan() -> None:
    tree = CondensedTree(
        np.array([4, 4, 5, 5, 6, 6]),
        np.array([5, 6, 0, 1, 2, 3]),
        np.array([np.inf, np.inf, np.inf, np.inf, np.inf, np.inf]),
        np.array([2, 2, 1, 1, 1, 1]),
        n_points=4,
    )
    stability = H._stabilities(tree)
    assert np.isinf(stability[0]) and stability[1] == 0.0 and stability[2] == 0.0


def select(tree: CondensedTree, method: str, allow_single_cluster: bool = False) -> np.ndarray:
    if method == "eom":
        return H._select_eom(
            tree,
            H._stabilities(tree),
            allow_single_cluster=allow_single_cluster,
            min_cluster_size=3,
        )
    return H._select_leaf(tree, allow_single_cluster=allow_single_cluster, min_cluster_size=3)


def test_eom_prefers_a_parent_more_stable_than_its_children() -> None:
    tree = hand_tree(inner_lambda=1.3)  # 13 and 14 barely outlive their birth
    selected = select(tree, "eom")
    assert selected.tolist() == [False, True, True, False, False]
    assert H._label(tree, selected).tolist() == [0] * 6 + [1] * 4


def test_eom_prefers_children_more_stable_than_their_parent() -> None:
    tree = hand_tree(inner_lambda=5.0)
    selected = select(tree, "eom")
    assert selected.tolist() == [False, False, True, True, True]
    assert H._label(tree, selected).tolist() == [1, 1, 1, 2, 2, 2, 0, 0, 0, 0]


def test_leaf_selects_the_leaves_whatever_their_stability() -> None:
    tree = hand_tree(inner_lambda=1.3)
    selected = select(tree, "leaf")
    assert selected.tolist() == [False, False, True, True, True]
    assert H._label(tree, selected).tolist() == [1, 1, 1, 2, 2, 2, 0, 0, 0, 0]


def test_root_is_selected_only_when_single_cluster_is_allowed() -> None:
    """The original tool let the root win by default: everything became one topic."""
    tree = hand_tree(inner_lambda=1.3)  # root stability 10 > children's 1.2 + 5.5
    assert not select(tree, "eom")[0]
    selected = select(tree, "eom", allow_single_cluster=True)
    assert selected.tolist() == [True, False, False, False, False]
    assert H._label(tree, selected).tolist() == [0] * 10


def test_single_cluster_leaves_out_points_that_left_the_root_early() -> None:
    """As in scikit-learn: with the root selected, points that fell out of it before its
    last split are noise."""
    tree = H._condense(hand_linkage(), min_cluster_size=3)
    selected = select(tree, "eom", allow_single_cluster=True)
    assert selected[0]
    assert H._label(tree, selected).tolist() == [0] * 6 + [-1]


def test_probabilities_are_lambda_relative_to_the_cluster_maximum() -> None:
    tree = hand_tree(inner_lambda=1.3)
    selected = select(tree, "eom")
    labels = H._label(tree, selected)
    probabilities = H._probabilities(tree, labels, selected)
    # cluster 11's largest lambda is 1.2 (its split); its points left later: 1.0
    np.testing.assert_allclose(probabilities, [1.0] * 6 + [2 / 3, 1.0, 1.0, 0.5])


def test_probabilities_ignore_infinite_lambdas_when_scaling() -> None:
    """Exact duplicates leave at infinite lambda; the other members keep graded strengths
    instead of all dividing by infinity."""
    tree = CondensedTree(
        np.array([6, 6, 7, 7, 7, 7, 8, 8]),
        np.array([7, 8, 0, 1, 2, 3, 4, 5]),
        np.array([1.0, 1.0, np.inf, np.inf, 2.0, 4.0, 3.0, 3.0]),
        np.array([4, 2, 1, 1, 1, 1, 1, 1]),
        n_points=6,
    )
    selected = np.array([False, True, True])
    labels = H._label(tree, selected)
    assert labels.tolist() == [0, 0, 0, 0, 1, 1]
    np.testing.assert_allclose(
        H._probabilities(tree, labels, selected), [1.0, 1.0, 0.5, 1.0, 1.0, 1.0]
    )


def test_noise_has_zero_probability() -> None:
    tree = hand_tree()
    selected = np.zeros(5, dtype=bool)
    labels = H._label(tree, selected)
    assert labels.tolist() == [-1] * 10
    assert H._probabilities(tree, labels, selected).tolist() == [0.0] * 10


# ---------------------------------------------------------------------------------------------
# Against the reference implementations


@pytest.mark.parametrize(
    ("name", "X", "params"),
    [
        ("separated blobs", blobs(600, std=0.6, seed=1), {"min_cluster_size": 10}),
        (
            "different densities",
            blobs(600, std=[0.3, 0.8, 1.6, 2.5], seed=2),
            {"min_cluster_size": 15},
        ),
        (
            "min_samples below min_cluster_size",
            blobs(500, seed=3),
            {"min_cluster_size": 20, "min_samples": 4},
        ),
        (
            "uniform noise mixed in",
            np.vstack(
                [blobs(450, std=0.5, seed=4), np.random.default_rng(4).uniform(-12, 12, (150, 2))]
            ),
            {"min_cluster_size": 12},
        ),
        (
            "duplicated points",
            np.repeat(blobs(200, std=0.7, seed=5), 3, axis=0),
            {"min_cluster_size": 9},
        ),
        (
            "8-d blobs, leaf",
            blobs(800, centers=8, seed=6) @ np.random.default_rng(6).standard_normal((2, 8)),
            {"min_cluster_size": 10, "cluster_selection_method": "leaf"},
        ),
    ],
)
def test_matches_scikit_learn_on_clean_data(
    name: str, X: np.ndarray, params: dict[str, Any]
) -> None:
    ours = hdbscan(X, **params)
    theirs = sklearn_fit(X, **params)
    assert ours.n_clusters == theirs.labels_.max() + 1, name
    assert_agrees(ours.labels, theirs.labels_, min_ari=0.99)
    assert_probabilities_close(ours, theirs)


@pytest.mark.parametrize("seed", [0, 1])
def test_matches_scikit_learn_on_embedding_like_vectors(seed: int) -> None:
    """40 topics of unequal size on the 384-d sphere plus 20 % scattered chunks."""
    X, truth = planted_sphere(2500, seed=seed)
    ours = HDBSCAN(min_cluster_size=10).fit(X)
    theirs = sklearn_fit(X, min_cluster_size=10)
    assert_agrees(ours.labels_, theirs.labels_, min_ari=0.95)
    assert_probabilities_close(ours.clustering_, theirs, min_fraction=0.95)
    assert adjusted_rand_score(truth, ours.labels_) > 0.9


def test_cosine_matches_scikit_learn_cosine_on_unnormalised_vectors() -> None:
    X, _ = planted_sphere(1500, k=20, seed=7)
    X = X * np.random.default_rng(7).uniform(0.5, 3.0, (len(X), 1)).astype(np.float32)
    ours = hdbscan(X, min_cluster_size=10, metric="cosine")
    theirs = sklearn_fit(X.astype(np.float64), min_cluster_size=10, metric="cosine")
    assert_agrees(ours.labels, theirs.labels_, min_ari=0.95)
    assert_probabilities_close(ours, theirs, min_fraction=0.95)


def test_angular_matches_scikit_learn_on_precomputed_angles() -> None:
    X, _ = planted_sphere(1500, k=20, seed=8)
    unit = X.astype(np.float64)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    angles = np.arccos(np.clip(unit @ unit.T, -1.0, 1.0)) / np.pi
    np.fill_diagonal(angles, 0.0)
    ours = hdbscan(X, min_cluster_size=10, metric="angular")
    theirs = sklearn_fit(angles, min_cluster_size=10, metric="precomputed")
    assert_agrees(ours.labels, theirs.labels_, min_ari=0.95)
    assert_probabilities_close(ours, theirs, min_fraction=0.95)


def test_matches_the_hdbscan_package_with_its_min_samples_convention() -> None:
    """The hdbscan package does not count the point itself: its min_samples=m is ours m+1."""
    hdbscan_package = pytest.importorskip("hdbscan")
    X = blobs(700, std=[0.4, 0.9, 1.3, 0.7], seed=9)
    ours = hdbscan(X, min_cluster_size=12, min_samples=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = hdbscan_package.HDBSCAN(
            min_cluster_size=12, min_samples=5, algorithm="generic"
        ).fit(X)
    assert_agrees(ours.labels, theirs.labels_, min_ari=0.99)
    assert_probabilities_close(ours, theirs)


@pytest.mark.parametrize("method", ["eom", "leaf"])
def test_leaf_and_eom_each_match_scikit_learn_where_they_differ(method: str) -> None:
    """Nested blobs: eom keeps the big groups, leaf splits them into their sub-blobs."""
    rng = np.random.default_rng(10)
    centres = np.array([[0, 0], [3, 0], [30, 0], [33, 0]], dtype=float)
    X = np.vstack([c + rng.standard_normal((120, 2)) * 0.5 for c in centres])
    params: dict[str, Any] = {"min_cluster_size": 40, "cluster_selection_method": method}
    ours = hdbscan(X, **params)
    theirs = sklearn_fit(X, **params)
    assert ours.n_clusters == (2 if method == "eom" else 4)
    assert_agrees(ours.labels, theirs.labels_, min_ari=0.99)
    assert_probabilities_close(ours, theirs)


def test_allow_single_cluster_matches_scikit_learn_on_one_blob() -> None:
    X = blobs(300, centers=1, seed=11)
    assert hdbscan(X, min_cluster_size=25).n_clusters == 0
    ours = hdbscan(X, min_cluster_size=25, allow_single_cluster=True)
    theirs = sklearn_fit(X, min_cluster_size=25, allow_single_cluster=True)
    assert ours.n_clusters == 1
    np.testing.assert_array_equal(ours.labels, theirs.labels_)
    assert_probabilities_close(ours, theirs, min_fraction=1.0)


def test_leaf_labels_are_the_same_for_all_three_metrics_on_unit_vectors() -> None:
    """The metrics are increasing functions of one another on the sphere, so the tree has
    the same shape; only lambdas (stability, probabilities) differ."""
    X, _ = planted_sphere(1200, k=15, seed=12)
    labels = [
        hdbscan(X, min_cluster_size=10, metric=m, cluster_selection_method="leaf").labels
        for m in ("euclidean", "cosine", "angular")
    ]
    np.testing.assert_array_equal(labels[0], labels[2])
    np.testing.assert_array_equal(labels[1], labels[2])


# ---------------------------------------------------------------------------------------------
# Edge cases


@pytest.mark.parametrize("n", [0, 1, 2, 4])
def test_fewer_points_than_min_cluster_size_are_all_noise(n: int) -> None:
    X = np.random.default_rng(n).standard_normal((n, 3))
    for allow in (False, True):
        result = hdbscan(X, min_cluster_size=5, allow_single_cluster=allow)
        assert result.labels.tolist() == [-1] * n
        assert result.probabilities.tolist() == [0.0] * n
        assert result.n_clusters == 0
        assert result.labels.dtype == np.int64 and result.probabilities.dtype == np.float64


def test_min_samples_larger_than_the_data_is_capped() -> None:
    X = blobs(30, centers=1, seed=13)
    result = hdbscan(X, min_cluster_size=5, min_samples=100)
    assert len(result.labels) == 30


def test_identical_points_are_one_cluster_only_if_allowed() -> None:
    X = np.ones((3000, 4))
    assert hdbscan(X, min_cluster_size=5).n_clusters == 0
    result = hdbscan(X, min_cluster_size=5, allow_single_cluster=True)
    assert result.labels.tolist() == [0] * 3000
    assert result.probabilities.tolist() == [1.0] * 3000


def test_groups_of_duplicates_denser_than_min_samples_become_clusters() -> None:
    """Each group has more copies than min_samples: core distance 0, lambda infinite."""
    rng = np.random.default_rng(14)
    groups = rng.standard_normal((6, 8)) * 10
    X = np.vstack([np.repeat(groups, 12, axis=0), rng.standard_normal((20, 8)) * 10])
    result = hdbscan(X, min_cluster_size=8)
    assert result.n_clusters == 6
    assert np.isinf(result.condensed_tree.lambda_val).any()
    clustered = result.labels[:72].reshape(6, 12)
    assert all(len(set(row)) == 1 and row[0] >= 0 for row in clustered.tolist())
    assert np.all((result.probabilities >= 0.0) & (result.probabilities <= 1.0))


def test_estimator_exposes_sklearn_style_attributes() -> None:
    X, _ = planted_sphere(400, k=5, seed=15)
    model = HDBSCAN(min_cluster_size=10, metric="angular")
    assert model.fit(X) is model
    assert model.labels_.dtype == np.int64 and model.labels_.shape == (400,)
    assert model.probabilities_.dtype == np.float64
    assert np.all((model.probabilities_ >= 0.0) & (model.probabilities_ <= 1.0))
    assert np.all(model.probabilities_[model.labels_ == -1] == 0.0)
    assert model.n_clusters_ == model.labels_.max() + 1 == 5
    assert model.condensed_tree_ is model.clustering_.condensed_tree
    np.testing.assert_array_equal(model.fit_predict(X.tolist()), model.labels_)


def test_block_rows_does_not_change_the_result() -> None:
    X, _ = planted_sphere(500, k=6, seed=16)
    reference = hdbscan(X, min_cluster_size=8)
    for block_rows in (1, 33, 4096):
        result = hdbscan(X, min_cluster_size=8, block_rows=block_rows)
        np.testing.assert_array_equal(result.labels, reference.labels)
        np.testing.assert_allclose(result.probabilities, reference.probabilities, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Dependencies


def test_module_imports_only_numpy_and_the_standard_library() -> None:
    tree = ast.parse(MODULE_PATH.read_text())
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    assert roots - set(sys.stdlib_module_names) == {"numpy"}


def test_importing_and_running_pulls_in_no_scipy_sklearn_or_numba() -> None:
    code = (
        "import json, sys\n"
        "import numpy as np\n"
        "from causantic.topics.hdbscan import hdbscan\n"
        "r = hdbscan(np.random.default_rng(0).standard_normal((200, 8)), min_cluster_size=5)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'scipy', 'sklearn', 'numba', 'hdbscan'})\n"
        "print(json.dumps({'bad': bad, 'n': len(r.labels)}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=MODULE_PATH.parents[2],
    )
    summary = json.loads(out.stdout)
    assert summary == {"bad": [], "n": 200}
