"""Topics: rebuild cost, how well new chunks join topics between rebuilds, cluster expansion.

1. ``causantic topics rebuild`` timed in a fresh process (wall time, peak memory VmHWM) on
   the shared transcripts' chunk vectors and on a synthetic memory of 20,000 chunks (384-d
   unit vectors with 40 planted topics and 20 % noise from `bench.hdbscan.planted_sphere`,
   texts of ~300 words drawn from a per-topic and a shared vocabulary).
2. Between rebuilds: the shared corpus is clustered without its newest 20 % of chunks, which
   then join the nearest centroid within an angular threshold; compared with clustering all
   chunks at once (a train topic is matched to the full-run topic most of its members went
   to): share of new chunks that join a topic, and of those, share that joined the topic the
   full run puts them in (precision); recall = agreeing joins / new chunks the full run put
   in a topic.
3. Cluster expansion on the evaluation sets, hybrid search with and without it:
   bench/queries/coding.json on the shared transcripts (session found at rank 1 / top 5,
   MRR; as bench/search_quality.py), variants of the sibling order and weight; and LoCoMo
   (evidence found in the top 5 / 10 and in the first 2,000 tokens; as bench/locomo.py).

``python -m bench.topics [--tiny]``; ``--worker SPEC`` is the per-rebuild subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import REPO_ROOT, TRANSCRIPTS_DIR, print_table, write_result

SYNTHETIC_N = 20_000
TINY_N = 600
HOLDOUT = 0.2
THRESHOLDS = (0.10, 0.15, 0.20, 0.25)
#: (label, order, weight) of the expansion variants compared on the coding queries.
VARIANTS = (("centroid order, weight 1 (original)", "centroid", 1.0),
            ("centroid order, weight 0.75", "centroid", 0.75),
            ("hit order, weight 1", "hit", 1.0),
            ("hit order, weight 0.75", "hit", 0.75))


# -- 1. rebuild cost -----------------------------------------------------------------------


def _status_mb(field: str) -> float:
    """A memory field of /proc/self/status in MB (VmHWM: this process image's peak)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return round(int(line.split()[1]) / 1024.0, 1)
    return float("nan")


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    """One `topics rebuild` on a database, in this (fresh) process."""
    from causantic.store import open_store
    from causantic.topics.maintain import rebuild

    before = _status_mb("VmRSS")
    with open_store(Path(spec["db"])) as store:
        started = time.perf_counter()
        report = rebuild(store)
        wall = time.perf_counter() - started
    return {"wall_s": round(wall, 2), "compute_s": round(report.compute_seconds, 2),
            "write_s": round(report.write_seconds, 3), "rss_before_mb": before,
            "peak_rss_mb": _status_mb("VmHWM"), "chunks": report.chunks, "topics": report.topics,
            "in_topics": report.clustered + report.rescued, "largest": report.largest,
            "load_avg_1min": round(os.getloadavg()[0], 2)}


def _rebuild_in_child(db: Path, timeout: float = 1800) -> dict[str, Any]:
    spec = json.dumps({"db": str(db)})
    proc = subprocess.run([sys.executable, "-m", "bench.topics", "--worker", spec],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=timeout)
    if proc.returncode != 0:
        return {"status": f"failed ({proc.returncode})", "error": proc.stderr.strip()[-500:]}
    return {"status": "ok", **json.loads(proc.stdout.strip().splitlines()[-1])}


def synthetic_db(folder: Path, n: int, seed: int = 0) -> tuple[Path, np.ndarray]:
    """A memory of n chunks with planted-topic vectors and matching texts (no vec0 table:
    rebuild reads only the bookkeeping table). Returns the path and the planted truth."""
    from bench.hdbscan import planted_sphere
    from causantic.model import MODEL_ID
    from causantic.store import open_store

    X, truth = planted_sphere(n, k=40, d=384, noise=0.2, seed=seed)
    rng = np.random.default_rng(seed + 1)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))

    def words(count: int) -> list[str]:
        return ["".join(rng.choice(letters, int(rng.integers(4, 10)))) for _ in range(count)]

    shared = words(3000)
    own = [words(12) for _ in range(40)]
    db = folder / "synthetic.db"
    with open_store(db) as store, store.conn:
        conn = store.conn
        for i in range(n):
            body = list(rng.choice(shared, 240))
            if truth[i] >= 0:
                body += list(rng.choice(own[truth[i]], 60))
            rng.shuffle(body)
            text = "[User]\n" + " ".join(body[:30]) + "\n\n[Assistant]\n" + " ".join(body[30:])
            when = f"2026-01-{1 + i * 28 // n:02d}T10:00:{i % 60:02d}.000Z"
            conn.execute(
                "INSERT INTO chunks(rowid, id, session_id, project, offset, part, turn, kind,"
                " start_time, end_time, text, tokens) VALUES (?, ?, ?, ?, 0, 0, ?, 'turn', ?, ?,"
                " ?, ?)",
                (i + 1, f"{i:024x}", f"s{i // 40:05d}", f"p{i % 7}", i, when, when, text,
                 len(text) // 4))
            conn.execute(
                "INSERT INTO chunk_vectors_meta(chunk_rowid, chunk_id, model_id, windows,"
                " embedded_at, vector) VALUES (?, ?, ?, 1, ?, ?)",
                (i + 1, f"{i:024x}", MODEL_ID, when, X[i].tobytes()))
    return db, truth


# -- 2. joining topics between rebuilds ----------------------------------------------------


def holdout(db: Path, thresholds: Sequence[float] = THRESHOLDS) -> list[dict[str, Any]]:
    """Cluster the older 80 %, let the newest 20 % join by threshold; compare (module doc)."""
    from causantic.model import MODEL_ID
    from causantic.store import open_store
    from causantic.topics.maintain import cluster, nearest, unit_means

    with open_store(db, readonly=True) as store:
        rows = store.conn.execute(
            "SELECT m.vector FROM chunk_vectors_meta m JOIN chunks c ON c.rowid = m.chunk_rowid"
            " WHERE m.model_id = ? ORDER BY c.start_time, c.rowid", (MODEL_ID,)).fetchall()
    X = np.frombuffer(b"".join(r[0] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    cut = int(len(X) * (1 - HOLDOUT))
    if cut < 2 or cut == len(X):
        return []
    full = cluster(X).labels
    train = cluster(X[:cut]).labels
    k = int(train.max()) + 1
    if k == 0:
        return []
    # each train topic -> the full-run topic most of its members are in
    match = np.array([np.bincount(full[:cut][train == j] + 1, minlength=int(full.max()) + 2)[1:]
                      .argmax() if (full[:cut][train == j] >= 0).any() else -1 for j in range(k)])
    near, dist = nearest(X[cut:], unit_means(X[:cut], train, k))
    truth = full[cut:]
    out = []
    for t in thresholds:
        joined = dist <= t
        agree = joined & (match[near] == truth) & (truth >= 0)
        out.append({
            "threshold": t, "new chunks": len(truth), "joined %": round(100 * joined.mean(), 1),
            "precision %": round(100 * agree.sum() / max(1, joined.sum()), 1),
            "recall %": round(100 * agree.sum() / max(1, (truth >= 0).sum()), 1),
            "in a topic (full run) %": round(100 * (truth >= 0).mean(), 1),
        })
    return out


# -- 3. cluster expansion ------------------------------------------------------------------


def coding_queries(db: Path, tiny: bool) -> list[dict[str, Any]]:
    """hit@1 / hit@5 / MRR per style, hybrid without and with each expansion variant."""
    from bench.search_quality import STYLES, _rank_of_hit, load_queries, summarize
    from bench.variants import search
    from causantic.store import open_store

    queries = load_queries()
    if tiny:
        queries = queries[:2] + queries[12:13] + queries[24:25]
    systems = [("hybrid (no expansion)", False, "centroid", 1.0)]
    systems += [(f"+ cluster: {label}", True, order, w) for label, order, w in
                (VARIANTS[:1] if tiny else VARIANTS)]
    rows = []
    with open_store(db, readonly=True) as store:
        for name, on, order, weight in systems:
            ranks, shown = [], 0
            for q in queries:
                result = search(store, q["query"], limit=10, max_tokens=10**6, mode="hybrid",
                                cluster_expansion=on, order=order, weight=weight)
                shown += sum("cluster" in h.sources for h in result.results)
                ranks.append((q["style"], _rank_of_hit([h.session_id for h in result.results],
                                                       q["sessions"])))
            for style in (*STYLES, "all"):
                s = summarize([r for st, r in ranks if style in ("all", st)])
                rows.append({"system": name, "style": style, "queries": s["n"],
                             "hit@1": s["hit@1"], "hit@5": s["hit@5"], "MRR": s["mrr"],
                             "cluster results": shown if style == "all" else ""})
    return rows


def locomo_expansion(work: Path) -> dict[str, Any] | None:
    """LoCoMo, hybrid with and without expansion (topics rebuilt on a copy of its database)."""
    from dataclasses import replace

    from bench import locomo
    from causantic.retrieval.search import search
    from causantic.store import open_store
    from causantic.topics.maintain import rebuild

    if not locomo.DATA_ZIP.exists():
        return None
    convs, questions, _ = locomo.load(locomo.DATA_ZIP)
    turns = {f"{t.conv}/{t.dia_id}": t for c in convs for _, ts in c.sessions for t in ts}
    db = locomo.build_db(convs)
    if db.vectors == 0:
        return None
    copy = work / "locomo.db"
    shutil.copy2(db.path, copy)
    with open_store(copy) as store:
        report = rebuild(store)
    db = replace(db, path=copy)
    out: dict[str, Any] = {"rebuild": report.as_dict()}
    with open_store(copy, readonly=True) as store:
        for name, on in (("hybrid", False), ("hybrid + cluster expansion", True)):
            def answer(q: Any, on: bool = on) -> Any:
                ranked = search(store, q.question, project=q.conv, limit=10,
                                max_tokens=1_000_000, mode="hybrid", cluster_expansion=on)
                budget = search(store, q.question, project=q.conv, limit=60,
                                max_tokens=locomo.BUDGETS[-1], mode="hybrid",
                                cluster_expansion=on)
                return locomo.search_answer(db, ranked, budget)

            out[name] = locomo.score(questions, answer, turns, True, f"topics {name}")
    return out


# -- the benchmark -------------------------------------------------------------------------


def run(tiny: bool = False) -> dict[str, Any]:
    """Rebuild cost, joining between rebuilds, expansion on/off; print and record."""
    from bench.search_quality import build_db, cache_root

    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="causantic-topics-") as tmp:
        work = Path(tmp)
        if tiny:
            spotter = TRANSCRIPTS_DIR / "marot__spotter"
            shared = build_db(work / "shared", [spotter / "short.jsonl", spotter / "tool_heavy.jsonl"])
        else:
            shared = build_db(cache_root() / "search-quality", [TRANSCRIPTS_DIR])
        copy = work / "shared-copy.db"
        shutil.copy2(shared, copy)
        n = TINY_N if tiny else SYNTHETIC_N
        started = time.perf_counter()
        synthetic, _ = synthetic_db(work, n)
        build_s = time.perf_counter() - started
        cost = []
        for name, db in (("shared transcripts", copy), (f"synthetic {n:,} x 384", synthetic)):
            r = _rebuild_in_child(db)
            cost.append({"memory": name, **r})
        result["rebuild"] = cost
        result["synthetic_build_s"] = round(build_s, 1)
        print_table("topics rebuild (fresh process; wall time includes reading vectors, "
                    "clustering, naming, writing)",
                    [{k: v for k, v in r.items() if k != "error"} for r in cost])
        result["holdout"] = holdout(copy)
        print_table(f"New chunks joining topics between rebuilds (shared transcripts: newest "
                    f"{int(HOLDOUT * 100)} % join topics built from the rest)",
                    result["holdout"] or [{"note": "no topics in the older chunks"}])
        result["coding_queries"] = coding_queries(copy, tiny)
        print_table("Cluster expansion on bench/queries/coding.json (session found; hybrid "
                    "search, limit 10)", result["coding_queries"])
        if not tiny:
            lo = locomo_expansion(work)
            result["locomo"] = lo
            if lo:
                rows = []
                for name in ("hybrid", "hybrid + cluster expansion"):
                    for cat in ("single-hop", "multi-hop", "temporal", "open-domain", "all"):
                        s = lo[name][cat]
                        rows.append({"method": name, "category": cat, "n": s["n"],
                                     "@5 %": s["@5"], "@10 %": s["@10"], "any@10 %": s["any@10"],
                                     "2k %": s["2k"]})
                print_table(f"Cluster expansion on LoCoMo ({lo['rebuild']['topics']} topics from "
                            f"{lo['rebuild']['chunks']} chunks; evidence found)", rows)
    result["defaults"] = {"min_cluster_size": 4, "min_samples": 4, "metric": "angular",
                          "threshold": 0.10, "cluster_expansion": False}
    result["load_avg_1min"] = round(os.getloadavg()[0], 2)
    write_result("topics", result, tiny)
    return result


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.topics [--tiny]``; ``--worker SPEC`` runs one rebuild (internal)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--worker"]:
        print(json.dumps(worker(json.loads(args[1]))))
        return 0
    run(tiny="--tiny" in args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
