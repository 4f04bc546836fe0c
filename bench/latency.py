"""Query latency at 1,000 / 10,000 / 100,000 chunks: search per mode, recall, predict, and
reconstruct about a question (in the project of the query's best match, as a user in that
project asks it).

Corpora come from ``bench.corpus`` (the shared transcripts grown by copying sessions; cached).
Queries: a fixed list written from the transcripts (identifiers, phrases, questions) plus user
prompts sampled from the corpus with a fixed seed (cut to their first 12 words), the kind of
text the prompt hook searches with. Each query runs ``REPEATS`` times after one warm-up, in
this process (warm page cache, model already loaded: the MCP server's situation; hook
processes are measured by ``bench.hooks``).

Modes that do not exist yet (vector/hybrid before vectors are stored, recall/predict before
the episodic module lands) print n/a. Targets: keyword p95 < 20 ms, hybrid p95 < 60 ms,
recall/predict/reconstruct p95 < 100 ms, all at 100,000 chunks.
"""

from __future__ import annotations

import importlib
import os
import random
import sys
from collections.abc import Callable
from typing import Any

from bench.common import cli_main, print_table, summarize_ms, time_calls, write_result
from bench.corpus import SEED, corpus
from causantic.retrieval.vector import clear_query_cache

SIZES = (1_000, 10_000, 100_000)
TINY_SIZE = 300
REPEATS = 3  # per query; the first call of each operation is an untimed warm-up
TARGETS_MS = {"keyword": 20.0, "hybrid": 60.0, "recall": 100.0, "predict": 100.0,
              "reconstruct": 100.0}
FIXED_QUERIES = [
    "daytona pty log streaming",
    "SQLITE_BUSY database is locked",
    "mix phx.server doesnt seem to start",
    "why did the shell hang on exit",
    "attribution calculation silently fails",
    "git worktree",
    "redact secrets in transcripts",
    "how are checkpoints condensed into the shadow branch",
    "requests_queue tickets spec agent",
    "PR review comment from bugbot",
    "executeClaudeCommand SandboxQueueProcessor",
    "session-end hook",
    "user edits between checkpoints",
    "ENT-96 linear issue",
    "phoenix liveview test failing",
    "TypeError undefined is not a function",
]
#: Where the episodic functions may live (issue 4 picks the name); first match wins.
EPISODIC_MODULES = ("causantic.retrieval.chains", "causantic.retrieval.episodic",
                    "causantic.retrieval.recall", "causantic.retrieval")


def find_episodic(name: str) -> Callable[..., Any] | None:
    """``recall`` or ``predict`` from the retrieval package, or None if not there yet."""
    for module in EPISODIC_MODULES:
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        fn = getattr(mod, name, None)
        if callable(fn):
            return fn
    return None


def queries(conn, n_sampled: int = 16) -> list[str]:  # type: ignore[no-untyped-def]
    """The fixed queries plus prompts sampled from the corpus (seeded)."""
    prompts = [
        p for (p,) in conn.execute(
            "SELECT json_extract(meta, '$.prompt') FROM chunks"
            " WHERE json_extract(meta, '$.prompt') IS NOT NULL ORDER BY rowid LIMIT 5000")
        if p and not p.startswith("/") and len(p.split()) >= 4
    ]
    prompts = sorted(set(prompts))
    rng = random.Random(SEED)
    sampled = rng.sample(prompts, min(n_sampled, len(prompts)))
    return FIXED_QUERIES + [" ".join(p.split()[:12]) for p in sampled]


def mode_works(store, mode: str) -> bool:  # type: ignore[no-untyped-def]
    """Whether a search mode really runs here: no degrade notice (and, for `vector`, its own
    source shows up: the query is the start of a stored chunk, so it must return hits).
    """
    from causantic.retrieval.search import search

    if mode == "keyword":
        return True
    row = store.conn.execute("SELECT text FROM chunks ORDER BY rowid LIMIT 1").fetchone()
    if row is None:
        return False
    probe = " ".join(row[0].split()[:12])
    try:
        result = search(store, probe, limit=5, mode=mode)
    except Exception:  # noqa: BLE001 - a mode not implemented yet is "n/a", never a crash
        return False
    if result.notice or not result.results:
        return False
    # Hybrid may rank only keyword hits first for this probe (the corpus's vectors are random
    # and the probe is a chunk's own words); no notice already says its vector side ran.
    return mode == "hybrid" or any("vector" in h.sources for h in result.results)


def modes_available(store) -> list[str]:  # type: ignore[no-untyped-def]
    """Search modes that really run here (a mode that degrades with a notice does not)."""
    return [m for m in ("keyword", "vector", "hybrid") if mode_works(store, m)]


def measure(store, qs: list[str], repeats: int) -> dict[str, dict[str, float] | None]:  # type: ignore[no-untyped-def]
    """p50/p95 per operation over all queries (None for what is not available).

    The query-vector cache is emptied before every timed call, so each call embeds its
    query as a new question would (the model itself stays loaded).
    """
    from causantic.retrieval.search import search

    out: dict[str, dict[str, float] | None] = {}
    available = modes_available(store)
    ops: list[tuple[str, Callable[[str], Any] | None]] = []
    for mode in ("keyword", "vector", "hybrid"):
        ops.append((mode, (lambda q, mode=mode: search(store, q, mode=mode))
                    if mode in available else None))
    for name in ("recall", "predict"):
        fn = find_episodic(name)
        ops.append((name, (lambda q, fn=fn: fn(store, q)) if fn is not None else None))
    ops.append(("reconstruct", _reconstruct_about(store, qs) if "hybrid" in available else None))
    for name, call in ops:
        if call is None:
            out[name] = None
            continue
        call("warm up: open tables, load the model")
        samples: list[float] = []
        for q in qs:
            for _ in range(repeats):
                clear_query_cache()
                samples += time_calls(lambda q=q, call=call: call(q), 1, warmup=0)
        out[name] = summarize_ms(samples, "p50_ms")
    return out



def _reconstruct_about(store, qs: list[str]) -> Callable[[str], Any]:  # type: ignore[no-untyped-def]
    """``reconstruct(query=q)`` in the project of q's best match (found once, untimed)."""
    from causantic.retrieval.reconstruct import reconstruct
    from causantic.retrieval.search import search

    project = {}
    for q in qs:
        best = search(store, q, limit=1, max_tokens=10**6, answers=False).results
        project[q] = best[0].project if best else ""
    default = next(iter(project.values()), "")  # (the warm-up's made-up query)
    return lambda q: reconstruct(store, project.get(q, default), query=q)


def run(tiny: bool = False) -> dict[str, Any]:
    """Measure every size, print one table, write bench/results/latency.json."""
    from causantic.store import open_store

    sizes = (TINY_SIZE,) if tiny else SIZES
    repeats = 1 if tiny else REPEATS
    load_before = os.getloadavg()[0]
    per_size: dict[str, Any] = {}
    rows = []
    for n in sizes:
        info = corpus(n, vectors=True)
        with open_store(info.path, readonly=True) as store:
            qs = queries(store.conn, 4 if tiny else 16)
            if tiny:
                qs = qs[:3] + qs[-2:]
            result = measure(store, qs, repeats)
        per_size[str(n)] = {"corpus": {k: v for k, v in info.as_dict().items() if k != "path"},
                            "queries": len(qs), "results": result}
        for op, stats in result.items():
            target = TARGETS_MS.get(op)
            rows.append({
                "chunks": info.chunks, "operation": op,
                "p50 ms": stats["p50_ms"] if stats else "n/a",
                "p95 ms": stats["p95_ms"] if stats else "n/a",
                "max ms": stats["max_ms"] if stats else "n/a",
                "target p95 (100k)": f"< {target:g} ms" if target else "",
                "met": ("yes" if stats["p95_ms"] < target else "NO")
                if stats and target and n == SIZES[-1] else "",
            })
    load = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    print_table("Query latency (warm, in process, every query embedded afresh; p50/p95 over "
                f"queries x repeats; load average {load[0]} -> {load[1]})", rows)
    payload = {"sizes": per_size, "targets_ms": TARGETS_MS, "repeats": repeats,
               "load_avg_1min": load}
    write_result("latency", payload, tiny)
    return payload


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.latency [--tiny]``."""
    return cli_main(run, argv)


if __name__ == "__main__":
    sys.exit(main())
