"""Episodic memory latency: recall and predict at 100,000 chunks with the model loaded.

Corpus: ``bench.corpus`` grows the shared transcripts to the wanted size by copying whole
sessions (new ids, times and project names, edges mapped), with random unit vectors (seeded)
so the hybrid seeds and the vector half of chain scoring do real work; cached in
``~/.cache/causantic-bench/``. ``tiny=True`` uses about 1,000 chunks and writes nothing.

Queries: the episodic benchmark queries (``bench/queries/episodic.json``), the fixed latency
queries and user prompts sampled from the corpus (seeded). Every query runs once per
operation, in this process, after warm-up calls on other text (model loaded, warm page
cache: the MCP server's situation). The query-embedding cache is cleared before each timed
call so every call embeds its query, as a fresh question would.

Reported per operation, over the whole corpus and within its largest project (the usual
case for the MCP tools, where Claude names the project): p50/p95/max of the whole call, the
part spent finding seeds (the same `search` call the walk makes, timed on its own) and the
share of answers that are chains. Wall time is the target's measure; the CPU time of this
process (all its threads) is reported beside it because the machine may be shared: under
load the wall time grows, the CPU time does not. Also the session-start briefing (`reconstruct.briefing`, SQL only) per project, and
a budget-capped timeline. Target: recall and predict p95 < 100 ms at 100,000 chunks.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from typing import Any

from bench.common import REPO_ROOT, cli_main, percentile, print_table, summarize_ms, write_result
from bench.corpus import SEED, corpus
from bench.latency import FIXED_QUERIES
from causantic.retrieval.vector import clear_query_cache

SIZE = 100_000
TINY_SIZE = 1_000
TARGET_P95_MS = 100.0
QUERIES_FILE = REPO_ROOT / "bench" / "queries" / "episodic.json"


def episodic_queries() -> list[str]:
    """The written episodic queries (recall and predict alike)."""
    doc = json.loads(QUERIES_FILE.read_text())
    return [q["query"] for q in doc["queries"]]


def sampled_prompts(conn, n: int) -> list[str]:  # type: ignore[no-untyped-def]
    """User prompts from the corpus, cut to their first 12 words (seeded sample)."""
    prompts = sorted({
        " ".join(p.split()[:12]) for (p,) in conn.execute(
            "SELECT json_extract(meta, '$.prompt') FROM chunks"
            " WHERE json_extract(meta, '$.prompt') IS NOT NULL ORDER BY rowid LIMIT 5000")
        if p and not p.startswith("/") and len(p.split()) >= 4
    })
    return random.Random(SEED).sample(prompts, min(n, len(prompts)))



def measure_chains(store, queries: list[str], project: str | None = None) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Time recall and predict (and the seed search inside them) over the queries."""
    from causantic.retrieval.chains import DEFAULT_LIMIT, DEFAULT_SEEDS, walk
    from causantic.retrieval.search import search

    out: dict[str, Any] = {}
    for name, direction in (("recall", "backward"), ("predict", "forward")):
        for warm in ("warm up the model and caches", "another warm-up question"):
            walk(store, warm, direction, project=project)
        totals, cpu, seeds, chains = [], [], [], 0
        for q in queries:
            clear_query_cache()
            c0, t0 = time.process_time(), time.perf_counter()
            result = walk(store, q, direction, project=project)
            totals.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
            chains += result.mode == "chain"
            clear_query_cache()
            t0 = time.perf_counter()
            search(store, q, project=project, limit=max(DEFAULT_SEEDS, DEFAULT_LIMIT),
                   max_tokens=1_000_000, mode="hybrid")
            seeds.append((time.perf_counter() - t0) * 1000)
        out[name] = {**summarize_ms(totals, "p50_ms"), "cpu": summarize_ms(cpu, "p50_ms"),
                     "seeds": summarize_ms(seeds, "p50_ms"),
                     "walk_p50_ms": round(percentile(totals, 50) - percentile(seeds, 50), 2),
                     "chains": chains}
    return out


def measure_reconstruct(conn) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """The session-start briefing (6,000 characters) for every project, and a timeline."""
    from causantic.retrieval.reconstruct import briefing, reconstruct

    projects = [p for (p,) in conn.execute("SELECT DISTINCT project FROM chunks ORDER BY project")]
    briefing(conn, projects[0], max_chars=6000)
    brief, timeline, sizes = [], [], []
    for p in projects:
        t0 = time.perf_counter()
        text = briefing(conn, p, max_chars=6000)
        brief.append((time.perf_counter() - t0) * 1000)
        sizes.append(len(text))
        t0 = time.perf_counter()
        reconstruct(conn, p, max_tokens=4000)
        timeline.append((time.perf_counter() - t0) * 1000)
    return {"briefing": {**summarize_ms(brief, "p50_ms"), "max_chars_seen": max(sizes)},
            "timeline": summarize_ms(timeline, "p50_ms"), "projects": len(projects)}


def run(tiny: bool = False) -> dict[str, Any]:
    """Build or reuse the corpus, load the model, measure, print, write the result."""
    from causantic.store import open_store

    info = corpus(TINY_SIZE if tiny else SIZE, vectors=True)
    load_before = round(os.getloadavg()[0], 2)
    model = "unavailable"
    try:
        from causantic.model.embedder import get_embedder

        model = get_embedder().model_id
    except Exception as exc:  # noqa: BLE001 - the bench reports keyword-only instead
        model = f"unavailable ({type(exc).__name__})"
    with open_store(info.path, readonly=True) as store:
        vectors_note = "keyword only"
        try:
            from causantic.retrieval.vector import vectors_state

            vectors_note = vectors_state(store.conn) or "hybrid (vectors stored)"
        except ImportError:
            pass
        qs = episodic_queries() + FIXED_QUERIES + sampled_prompts(store.conn, 8 if tiny else 24)
        if tiny:
            qs = qs[:6]
        chains = measure_chains(store, qs)
        # The usual case for the MCP tools: Claude names the project (here the largest one).
        project = store.conn.execute(
            "SELECT project FROM chunks GROUP BY project ORDER BY count(*) DESC, project LIMIT 1"
        ).fetchone()[0]
        in_project = measure_chains(store, qs, project)
        recon = measure_reconstruct(store.conn)
    rows = []
    for label, s in [(n, chains[n]) for n in ("recall", "predict")] + [
            (f"{n} --project {project}", in_project[n]) for n in ("recall", "predict")]:
        rows.append({"operation": label, "chunks": info.chunks, "queries": s["n"],
                     "p50 ms": s["p50_ms"], "p95 ms": s["p95_ms"], "max ms": s["max_ms"],
                     "cpu p50 ms": s["cpu"]["p50_ms"], "cpu p95 ms": s["cpu"]["p95_ms"],
                     "seeds p50 ms": s["seeds"]["p50_ms"], "walk p50 ms": s["walk_p50_ms"],
                     "chains": f"{s['chains']}/{s['n']}",
                     "target": f"p95 < {TARGET_P95_MS:g} ms",
                     "met": "" if tiny else ("yes" if s["p95_ms"] < TARGET_P95_MS else "NO")})
    for name in ("briefing", "timeline"):
        s = recon[name]
        rows.append({"operation": f"reconstruct {name}", "chunks": info.chunks,
                     "queries": s["n"], "p50 ms": s["p50_ms"], "p95 ms": s["p95_ms"],
                     "max ms": s["max_ms"], "cpu p50 ms": "", "cpu p95 ms": "",
                     "seeds p50 ms": "", "walk p50 ms": "", "chains": "",
                     "target": "", "met": ""})
    print_table(f"Episodic memory latency (in process, model {model}; {vectors_note})", rows)
    payload = {"corpus": {k: v for k, v in info.as_dict().items() if k != "path"},
               "model": model, "vectors": vectors_note, "target_p95_ms": TARGET_P95_MS,
               "queries": len(qs), "chains": chains,
               "chains_in_project": {"project": project, **in_project}, "reconstruct": recon,
               # Other processes share this machine; say how busy it was.
               "load_average_1m": {"before": load_before, "after": round(os.getloadavg()[0], 2)}}
    write_result("episodic", payload, tiny)
    return payload


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.episodic [--tiny]``."""
    return cli_main(run, argv)


if __name__ == "__main__":
    sys.exit(main())

