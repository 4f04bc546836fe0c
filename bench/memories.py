"""Explicit memory (issue 15): precision of automatic observations, and three-factor ranking
beside relevance only.

1. **Automatic observations**: the shared transcripts are ingested (redaction on) and scanned
   by `causantic.memory.auto`; the observations are compared with hand labels in
   `bench/queries/memory_auto_labels.json` (every instruction, decision and error observation,
   and 25 sampled test results; what "correct" and "useful" mean is written there). Printed:
   how many of each type were found, how many are labelled, precision (correct / labelled)
   and the stricter useful share. Observations that are not labelled (their text changed since
   labelling, so their content-hash id did) are counted, never guessed.
2. **Ranking**: the hand-built memories and queries of `bench/queries/memory_ranking.json`
   (dated inside each project's sessions, some with feedback) are stored beside the same
   chunks, embedded with the real model, and every query is answered by `recall.retrieve`
   (limit 10) under several weightings: relevance only, Engram's equal thirds with its
   wall-clock recency (half-life 5.8 days), equal thirds with logical recency (sessions since),
   a grid of weights with both clocks, and the default. Hit@1 and MRR, overall and by kind of
   query ("superseded": an older or stale memory competes with the current one; "noise": a
   low-importance observation competes with a rule; "lookup": plain retrieval).
3. **Speed**: the scan of the whole corpus (wall and CPU), `retrieve` p50 with the model loaded.

`python -m bench.memories [--tiny]`; writes bench/results/memories.json.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, TRANSCRIPTS_DIR, cli_main, print_table, write_result

LABELS_FILE = REPO_ROOT / "bench" / "queries" / "memory_auto_labels.json"
RANKING_FILE = REPO_ROOT / "bench" / "queries" / "memory_ranking.json"
#: Wall-clock "now" for the ranking set: the end of the shared transcripts.
NOW = datetime(2026, 2, 16, tzinfo=UTC)
TINY_PROJECT = "spotter"


def _ingest(folder: Path, tiny: bool) -> Path:
    """A keyword-only store of the shared transcripts (redacted), without automatic memories."""
    from causantic.config import load_settings
    from causantic.ingest.pipeline import ingest_paths
    from causantic.ingest.run import make_redact
    from causantic.store import open_store

    db = folder / "memory.db"
    settings = load_settings(db=db, env={"HOME": str(folder)})
    paths = [TRANSCRIPTS_DIR / "marot__spotter"] if tiny else [TRANSCRIPTS_DIR]
    with open_store(db) as store:
        ingest_paths(store, paths, make_redact(settings))
    return db


def auto_precision(db: Path) -> dict[str, Any]:
    """Scan the store for automatic observations and score them against the hand labels."""
    from causantic.memory import auto
    from causantic.store import memories as sql
    from causantic.store import open_store

    labels = json.loads(LABELS_FILE.read_text())["labels"]
    with open_store(db) as store:
        cpu, wall = time.process_time(), time.perf_counter()
        auto.scan(store.conn)
        seconds, cpu_s = time.perf_counter() - wall, time.process_time() - cpu
        rows = sql.select(store.conn, origins=("auto",), include_duplicates=True)
        chunks = store.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    table = []
    totals = {"found": 0, "labelled": 0, "correct": 0, "useful": 0}
    for kind in ("instruction", "decision", "error", "test_result"):
        found = [r for r in rows if r.type == kind]
        labelled = [labels[r.id] for r in found if r.id in labels]
        correct = sum(1 for lab in labelled if lab["correct"])
        useful = sum(1 for lab in labelled if lab["useful"])
        table.append({"type": kind, "found": len(found), "labelled": len(labelled),
                      "correct": correct,
                      "precision": correct / len(labelled) if labelled else float("nan"),
                      "useful share": useful / len(labelled) if labelled else float("nan")})
        for key, value in (("found", len(found)), ("labelled", len(labelled)),
                           ("correct", correct), ("useful", useful)):
            totals[key] += value
    lab = totals["labelled"]
    table.append({"type": "all", "found": totals["found"], "labelled": lab,
                  "correct": totals["correct"],
                  "precision": totals["correct"] / lab if lab else float("nan"),
                  "useful share": totals["useful"] / lab if lab else float("nan")})
    missing = sorted(set(labels) - {r.id for r in rows})
    return {"table": table, "chunks": chunks, "scan_seconds": round(seconds, 3),
            "scan_cpu_seconds": round(cpu_s, 3), "labels_not_found": missing}


def _load_ranking_set(db: Path, tiny: bool) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Store the hand-built memories (dated, with feedback) and embed them; key -> memory id."""
    from causantic.memory.observe import embed_memories, prepare
    from causantic.store import memories as sql
    from causantic.store import open_store

    data = json.loads(RANKING_FILE.read_text())
    memories = [m for m in data["memories"] if not tiny or m["project"] in (TINY_PROJECT, "")]
    queries = [q for q in data["queries"] if not tiny or q["project"] == TINY_PROJECT]
    ids: dict[str, str] = {}
    with open_store(db) as store:
        with store.conn:
            for m in memories:
                new = prepare(store.conn, m["text"], type=m["type"], project=m["project"],
                              created_at=m["at"])
                sql.upsert(store.conn, new)
                ids[m["key"]] = new.id
        for m in memories:
            for _ in range(m.get("helpful", 0)):
                sql.add_feedback(store.conn, ids[m["key"]], True, "bench")
            for _ in range(m.get("harmful", 0)):
                sql.add_feedback(store.conn, ids[m["key"]], False, "bench")
        embed_memories(store, near_days=0)  # the set holds no duplicates to link
    return ids, queries


def _evaluate(store: Any, queries: list[dict[str, Any]], ids: dict[str, str], weights: Any,
              use_vectors: bool = True) -> dict[str, float]:
    from causantic.memory.recall import retrieve

    ranks: dict[str, list[int]] = {}
    for q in queries:
        found = retrieve(store, q["query"], project=q["project"], limit=10, weights=weights,
                         use_vectors=use_vectors, now=NOW)
        wanted = {ids[k] for k in q["relevant"]} | set(q.get("also_auto", []))
        rank = next((i for i, c in enumerate(found, 1) if c.memory.id in wanted), 0)
        ranks.setdefault(q["kind"], []).append(rank)
        ranks.setdefault("all", []).append(rank)
    out: dict[str, float] = {}
    for kind, values in ranks.items():
        out[f"{kind} hit@1"] = sum(1 for r in values if r == 1) / len(values)
        out[f"{kind} MRR"] = sum(1 / r for r in values if r) / len(values)
    return out


def ranking(db: Path, tiny: bool) -> dict[str, Any]:
    from bench.variants import RELEVANCE_ONLY
    from causantic.memory.rank import DEFAULT, Weights
    from causantic.store import open_store

    ids, queries = _load_ranking_set(db, tiny)
    systems: list[tuple[str, Any, bool]] = [
        ("relevance only, keywords (no vectors)", RELEVANCE_ONLY, False),
        ("relevance only", RELEVANCE_ONLY, True),
        ("equal thirds, wall clock (Engram: half-life 5.8 d)",
         Weights(1, 1, 1, clock="wall", half_life_days=5.8), True),
        ("equal thirds, logical (sessions since)", Weights(1, 1, 1), True),
        (f"default: {DEFAULT.relevance:g} / {DEFAULT.importance:g} / {DEFAULT.recency:g}, "
         f"{DEFAULT.clock}", DEFAULT, True),
    ]
    grid = []
    rows = []
    with open_store(db, readonly=True) as store:
        for name, weights, vectors in systems:
            rows.append({"system": name, **_evaluate(store, queries, ids, weights, vectors)})
        if not tiny:
            for clock in ("logical", "wall"):
                for rel in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
                    for share in (0.0, 0.25, 0.5, 0.75, 1.0):
                        w = Weights(rel, (1 - rel) * share, (1 - rel) * (1 - share), clock=clock)
                        score = _evaluate(store, queries, ids, w)
                        grid.append({"relevance": rel, "importance": round((1 - rel) * share, 3),
                                     "recency": round((1 - rel) * (1 - share), 3),
                                     "clock": clock, **score})
        latencies = []
        from causantic.memory.recall import retrieve
        from causantic.retrieval.vector import clear_query_cache

        for q in queries:
            clear_query_cache()  # time the query's embedding too
            started = time.perf_counter()
            retrieve(store, q["query"], project=q["project"], now=NOW)
            latencies.append((time.perf_counter() - started) * 1000)
    return {"rows": rows, "grid_top": grid[:12], "grid": grid, "grid_size": len(grid),
            "queries": len(queries), "memories": len(ids),
            "retrieve_p50_ms": round(statistics.median(latencies), 2), "ids": ids}


def with_distractors(db: Path, ids: dict[str, str], grid: list[dict[str, Any]],
                     tiny: bool) -> list[dict[str, Any]]:
    """The same queries once the automatic observations of the transcripts are stored too
    (a realistic crowd; `also_auto` names the automatic ones that answer as well). Adds the
    with-automatic MRR to every grid row and sorts the grid by the mean of both MRRs."""
    from bench.variants import RELEVANCE_ONLY
    from causantic.memory.rank import DEFAULT, Weights
    from causantic.store import open_store

    queries = [q for q in json.loads(RANKING_FILE.read_text())["queries"]
               if not tiny or q["project"] == TINY_PROJECT]
    with open_store(db, readonly=True) as store:
        rows = [{"system": f"{name}, with the automatic observations",
                 **_evaluate(store, queries, ids, weights)}
                for name, weights in (("relevance only", RELEVANCE_ONLY), ("default", DEFAULT))]
        for g in grid:
            w = Weights(g["relevance"], g["importance"], g["recency"], clock=g["clock"])
            noisy = _evaluate(store, queries, ids, w)
            g["with auto MRR"] = noisy["all MRR"]
            g["with auto hit@1"] = noisy["all hit@1"]
            g["mean MRR"] = (g["all MRR"] + noisy["all MRR"]) / 2
    grid.sort(key=lambda g: (-g["mean MRR"], -g["relevance"]))
    return rows


def run(tiny: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        base = _ingest(folder / "a", tiny)
        ranked = ranking(base, tiny)  # before the scan: only the labelled memories compete
        precision = auto_precision(base)
        ranked["rows"] += with_distractors(base, ranked.pop("ids"), ranked["grid"], tiny)
        ranked["grid_top"] = ranked["grid"][:12]
    print_table("Automatic observations on the shared transcripts (hand-labelled sample)",
                precision["table"])
    print(f"{precision['chunks']} chunks scanned in {precision['scan_seconds']:.2f} s "
          f"({precision['scan_cpu_seconds']:.2f} s CPU); labels whose observation was not "
          f"produced: {len(precision['labels_not_found'])}\n")
    columns = ["system", "all hit@1", "all MRR", "superseded hit@1", "superseded MRR",
               "lookup hit@1", "lookup MRR", "noise hit@1"]
    print_table(f"Memory ranking: {ranked['queries']} labelled queries over {ranked['memories']} "
                "memories (bench/queries/memory_ranking.json)", ranked["rows"], columns)
    if ranked["grid_top"]:
        print_table(f"Best of {ranked['grid_size']} weightings (mean MRR without and with the "
                    "automatic observations)", ranked["grid_top"],
                    ["relevance", "importance", "recency", "clock", "all hit@1", "all MRR",
                     "superseded MRR", "lookup MRR", "with auto hit@1", "with auto MRR",
                     "mean MRR"])
    print(f"retrieve p50 {ranked['retrieve_p50_ms']:.1f} ms (model loaded, query embedded)")
    payload = {"auto": precision, "ranking": ranked}
    write_result("memories", payload, tiny)
    return payload


if __name__ == "__main__":
    raise SystemExit(cli_main(run))
