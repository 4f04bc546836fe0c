"""HDBSCAN benchmark: our numpy HDBSCAN* against scikit-learn and the hdbscan package.

Data: unit vectors that look like chunk embeddings: 40 planted Gaussian topics of unequal
size on the 384-d sphere, around centres that share a common direction (intra-topic cosine
about 0.55), plus 20 % scattered chunks as noise; float32, 6,000 and 20,000 rows. With
``CAUSANTIC_BENCH_VECTORS=<file.npy>`` (an (n, d) array of real embeddings) a third data set
is added; it has no ground truth, so only the agreement between implementations is shown.

Each fit runs in a fresh worker process (``python -m bench.hdbscan --worker SPEC``) that loads
the vectors from a .npy file, imports its library and then times the fit alone, so the peak
RSS is that of a process that did one fit (the interpreter, the library and the data
included; the RSS just before the fit is shown too). ``fit s`` is the best wall time of up to
three runs in that process (fewer once they add up to 20 s), ``CPU s`` that run's CPU time
over all threads, ``load`` the 1-minute load average when the worker started: on a shared
machine the wall times of every row grow with it. The reference libraries run with
``OPENBLAS_CORETYPE=Haswell`` (numpy's OpenBLAS can segfault on large GEMMs otherwise, see
shared/reference/tech-facts.md section 5) and under a timeout
(``CAUSANTIC_BENCH_HDBSCAN_TIMEOUT`` seconds, default 900); a crash or timeout is printed as
such. Ours runs in the default environment: it must not need that workaround.

All fits use ``min_cluster_size=10`` and the Euclidean metric (the same clustering as
``angular`` on unit vectors up to the lambda scale; a ``causantic angular`` row shows it),
and ``min_samples=10`` counted scikit-learn's way (the point itself included), which is
``min_samples=9`` in the hdbscan package. ``causantic 1 thread`` runs ours with
``OPENBLAS_NUM_THREADS=1``: on a busy machine an OpenBLAS thread spinning between GEMMs
competes with Prim's loop, and one thread can be faster. Columns: fit seconds, peak RSS,
ratio = their fit time / ours on the same data, clusters, noise points, adjusted Rand index
against the planted topics (noise is one more class) and against ours.

``tiny=True`` runs 300 points through ours and scikit-learn's brute-force HDBSCAN only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import REPO_ROOT, cli_main, print_table, write_result

NAME = "hdbscan"
MIN_CLUSTER_SIZE = 10
MIN_SAMPLES = 10  # scikit-learn's convention (counts the point itself)
OURS = "causantic"
REPEATS = 3
REPEAT_BUDGET_S = 20.0

#: name -> (library it needs, description for the table notes)
IMPLEMENTATIONS: dict[str, str] = {
    "causantic": "causantic.topics.hdbscan, metric=euclidean",
    "causantic angular": "causantic.topics.hdbscan, metric=angular",
    "causantic 1 thread": "causantic.topics.hdbscan, metric=euclidean, OPENBLAS_NUM_THREADS=1",
    "sklearn brute": 'sklearn.cluster.HDBSCAN(algorithm="brute")',
    "sklearn default": "sklearn.cluster.HDBSCAN() (auto: kd-tree)",
    "hdbscan boruvka": "hdbscan.HDBSCAN(core_dist_n_jobs=2) (default: boruvka kd-tree)",
    "hdbscan generic": 'hdbscan.HDBSCAN(algorithm="generic") on float64',
}
TINY_IMPLEMENTATIONS = ("causantic", "sklearn brute")
MEASURED_ELSEWHERE = (
    "Measured elsewhere (tech-facts section 5, another machine): scikit-learn default 37 s "
    "and hdbscan 19 s at 6,000 x 384; the original TypeScript tool about 73 s at 6,000 x 512."
)


# ---------------------------------------------------------------------------------------------
# Data


def planted_sphere(
    n: int, *, k: int = 40, d: int = 384, noise: float = 0.2, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """k Gaussian topics of unequal size on the unit sphere plus scattered noise.

    Returns X (n, d) float32 unit rows, shuffled, and the truth (n,) int64 with -1 for noise.
    """
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
    y = np.concatenate([truth, np.full(n_noise, -1, dtype=np.int64)])
    order = rng.permutation(n)
    return X[order].astype(np.float32), y[order]


def adjusted_rand_index(a: np.ndarray, b: np.ndarray) -> float:
    """Adjusted Rand index of two labelings (each label, -1 included, is one class)."""
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    n = len(a)
    if n < 2:
        return 1.0
    cells = np.bincount(ia * (ib.max() + 1) + ib).astype(np.float64)
    rows = np.bincount(ia).astype(np.float64)
    cols = np.bincount(ib).astype(np.float64)

    def pairs(x: np.ndarray) -> float:
        return float((x * (x - 1) / 2).sum())

    index, row_pairs, col_pairs = pairs(cells), pairs(rows), pairs(cols)
    expected = row_pairs * col_pairs / (n * (n - 1) / 2)
    maximum = (row_pairs + col_pairs) / 2
    if maximum == expected:
        return 1.0
    return (index - expected) / (maximum - expected)


# ---------------------------------------------------------------------------------------------
# Worker: one fit in a fresh process


def _status_mb(field: str) -> float:
    """A memory field of /proc/self/status (VmRSS now, VmHWM peak) in MB.

    VmHWM is the peak of this process image; ``getrusage``'s ``ru_maxrss`` is not usable
    here because Linux carries it over from the parent across fork and exec.
    """
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return round(int(line.split()[1]) / 1024.0, 1)
    return float("nan")


def _fitter(impl: str) -> Callable[[np.ndarray], np.ndarray]:
    """Import the implementation's library and return X -> labels."""
    import warnings

    warnings.simplefilter("ignore")
    if impl.startswith("causantic"):
        from causantic.topics import hdbscan as ours

        metric: ours.Metric = "angular" if impl.endswith("angular") else "euclidean"

        def fit_ours(X: np.ndarray) -> np.ndarray:
            return ours.hdbscan(
                X, min_cluster_size=MIN_CLUSTER_SIZE, min_samples=MIN_SAMPLES, metric=metric
            ).labels

        return fit_ours
    if impl.startswith("sklearn"):
        from sklearn.cluster import HDBSCAN

        algorithm = "brute" if impl.endswith("brute") else "auto"

        def fit_sklearn(X: np.ndarray) -> np.ndarray:
            model = HDBSCAN(
                min_cluster_size=MIN_CLUSTER_SIZE,
                min_samples=MIN_SAMPLES,
                algorithm=algorithm,
                copy=True,
            )
            return np.asarray(model.fit(X).labels_)

        return fit_sklearn
    if impl.startswith("hdbscan"):
        import hdbscan as reference  # the package, not causantic.topics.hdbscan

        generic = impl.endswith("generic")

        def fit_reference(X: np.ndarray) -> np.ndarray:
            # the hdbscan package does not count the point itself in min_samples
            if generic:
                model = reference.HDBSCAN(
                    min_cluster_size=MIN_CLUSTER_SIZE,
                    min_samples=MIN_SAMPLES - 1,
                    algorithm="generic",
                )
                return np.asarray(model.fit(X.astype(np.float64)).labels_)
            model = reference.HDBSCAN(
                min_cluster_size=MIN_CLUSTER_SIZE,
                min_samples=MIN_SAMPLES - 1,
                core_dist_n_jobs=2,
            )
            return np.asarray(model.fit(X).labels_)

        return fit_reference
    raise ValueError(f"unknown implementation {impl!r}")


def worker(spec: dict[str, str]) -> dict[str, Any]:
    """Load the data, import the library, time the fit (best of up to ``REPEATS`` runs while
    they take under ``REPEAT_BUDGET_S`` in all), save the first run's labels."""
    X = np.load(spec["data"])
    started = time.perf_counter()
    fit = _fitter(spec["impl"])
    import_s = time.perf_counter() - started
    rss_before = _status_mb("VmRSS")
    load = os.getloadavg()[0]
    walls: list[float] = []
    cpus: list[float] = []
    labels: np.ndarray | None = None
    while len(walls) < REPEATS and sum(walls) < REPEAT_BUDGET_S:
        started, cpu = time.perf_counter(), time.process_time()
        out = np.asarray(fit(X), dtype=np.int64)
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
        labels = out if labels is None else labels
    assert labels is not None
    np.save(spec["labels"], labels)
    best = int(np.argmin(walls))
    return {
        "fit_s": round(walls[best], 3),
        "cpu_s": round(cpus[best], 3),
        "runs_s": [round(w, 3) for w in walls],
        "load_avg_1min": round(load, 2),
        "import_s": round(import_s, 2),
        "rss_before_fit_mb": rss_before,
        "peak_rss_mb": _status_mb("VmHWM"),
        "clusters": int(labels.max(initial=-1)) + 1,
        "noise": int((labels == -1).sum()),
    }


def _run_worker(impl: str, data: Path, labels: Path, timeout: float) -> dict[str, Any]:
    """One fit in a fresh process; status ok, timeout, crashed (signal) or failed."""
    env = dict(os.environ)
    if not impl.startswith("causantic"):
        env["OPENBLAS_CORETYPE"] = "Haswell"
    if impl.endswith("1 thread"):
        env["OPENBLAS_NUM_THREADS"] = "1"
    spec = json.dumps({"impl": impl, "data": str(data), "labels": str(labels)})
    args = [sys.executable, "-m", "bench.hdbscan", "--worker", spec]
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            args, capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "wall_s": round(time.perf_counter() - started, 1)}
    if proc.returncode < 0:
        return {"status": "crashed", "signal": -proc.returncode}
    if proc.returncode != 0:
        return {"status": "failed", "error": proc.stderr.strip()[-600:]}
    return {"status": "ok", **json.loads(proc.stdout.strip().splitlines()[-1])}


# ---------------------------------------------------------------------------------------------
# Runner


def _datasets(tiny: bool) -> list[tuple[str, np.ndarray, np.ndarray | None, tuple[str, ...]]]:
    """(name, X, truth or None, implementations to run)."""
    if tiny:
        X, y = planted_sphere(300, k=6, seed=0)
        return [("planted 300 x 384", X, y, TINY_IMPLEMENTATIONS)]
    every = tuple(IMPLEMENTATIONS)
    sets: list[tuple[str, np.ndarray, np.ndarray | None, tuple[str, ...]]] = []
    for n, seed in ((6000, 0), (20000, 1)):
        X, y = planted_sphere(n, seed=seed)
        sets.append((f"planted {n:,} x 384", X, y, every))
    path = os.environ.get("CAUSANTIC_BENCH_VECTORS")
    if path:
        real = np.load(path).astype(np.float32)
        sets.append((f"real {real.shape[0]:,} x {real.shape[1]}", real, None, every))
    return sets


def _fmt_ari(value: float | None, not_applicable: bool) -> str:
    if value is None:
        return "n/a" if not_applicable else ""
    return f"{value:.3f}"


def _fmt_status(result: dict[str, Any]) -> str:
    if result["status"] == "crashed":
        return f"crashed (signal {result['signal']})"
    if result["status"] == "timeout":
        return f"timeout ({result['wall_s']} s)"
    return result["status"]


def run(tiny: bool = False) -> dict[str, Any]:
    """Fit every implementation on every data set in fresh processes; print and save."""
    timeout = float(os.environ.get("CAUSANTIC_BENCH_HDBSCAN_TIMEOUT", "120" if tiny else "900"))
    payload: dict[str, Any] = {
        "params": {"min_cluster_size": MIN_CLUSTER_SIZE, "min_samples_sklearn": MIN_SAMPLES},
        "implementations": IMPLEMENTATIONS,
        "notes": MEASURED_ELSEWHERE,
        "datasets": [],
    }
    with tempfile.TemporaryDirectory(prefix="causantic-bench-hdbscan-") as tmp:
        for name, X, truth, impls in _datasets(tiny):
            data = Path(tmp) / "data.npy"
            np.save(data, X)
            results: dict[str, dict[str, Any]] = {}
            labels: dict[str, np.ndarray] = {}
            for impl in impls:
                out = Path(tmp) / f"{impl.replace(' ', '_')}.npy"
                results[impl] = _run_worker(impl, data, out, timeout)
                if results[impl]["status"] == "ok":
                    labels[impl] = np.load(out)
            ours_s = results[OURS].get("fit_s") if results[OURS]["status"] == "ok" else None
            rows = []
            for impl in impls:
                r = results[impl]
                ok = r["status"] == "ok"
                if ok and truth is not None:
                    r["ari_truth"] = round(adjusted_rand_index(truth, labels[impl]), 4)
                if ok and OURS in labels:
                    r["ari_vs_ours"] = round(adjusted_rand_index(labels[OURS], labels[impl]), 4)
                if ok and ours_s:
                    r["ratio_vs_ours"] = round(r["fit_s"] / ours_s, 1)
                r["ari_vs"] = {
                    other: round(adjusted_rand_index(labels[impl], labels[other]), 4)
                    for other in labels
                    if ok and other != impl
                }
                rows.append(
                    {
                        "implementation": impl,
                        "fit s": r.get("fit_s", _fmt_status(r)),
                        "CPU s": r.get("cpu_s", ""),
                        "load": r.get("load_avg_1min", ""),
                        "peak RSS MB": r.get("peak_rss_mb", ""),
                        "RSS before fit MB": r.get("rss_before_fit_mb", ""),
                        "theirs / ours": r.get("ratio_vs_ours", ""),
                        "clusters": r.get("clusters", ""),
                        "noise": r.get("noise", ""),
                        "ARI truth": _fmt_ari(r.get("ari_truth"), ok and truth is None),
                        "ARI vs ours": _fmt_ari(r.get("ari_vs_ours"), False),
                    }
                )
            print_table(f"HDBSCAN on {name}, min_cluster_size={MIN_CLUSTER_SIZE}", rows)
            done = [impl for impl in impls if impl in labels]
            if len(done) > 2:
                matrix = [
                    {
                        "ARI": impl,
                        **{o: _fmt_ari(results[impl]["ari_vs"].get(o, 1.0), False) for o in done},
                    }
                    for impl in done
                ]
                print_table(f"Agreement between implementations on {name} (ARI)", matrix)
            payload["datasets"].append(
                {"name": name, "n": int(X.shape[0]), "d": int(X.shape[1]), "results": results}
            )
    if not tiny:
        print(MEASURED_ELSEWHERE + "\n")
    write_result(NAME, payload, tiny)
    return payload


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.hdbscan [--tiny]``; ``--worker SPEC`` is the per-fit subprocess."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--worker" in args:
        print(json.dumps(worker(json.loads(args[args.index("--worker") + 1]))))
        return 0
    return cli_main(run, args)


if __name__ == "__main__":
    sys.exit(main())
