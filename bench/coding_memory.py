"""Coding-memory evaluation on the shared transcripts: the team's query sets, scored like LoCoMo.

Query sets (written by reading the transcripts):
- ``bench/queries/coding.json`` (semantic search): each query names the session(s) that
  answer it; the evidence is any chunk of such a session.
- ``bench/queries/episodic.json`` (recall/predict): each query names the chunk holding a fix
  (found by its ``fix_text``, or its id) and chunks that led to it; the evidence is the fix
  chunk. Its own ``command`` (recall or predict) is also run, and a *chain* passes when the
  answer holds the fix and, earlier in narrative order, one of the chunks before it.

Metrics, as in ``bench/locomo.py``: ``@5`` / ``@10`` = evidence among the first 5 / 10
results (ranked search modes only); ``1k`` / ``2k`` = evidence among the results shown in an
answer of 1,000 / 2,000 tokens, and (for a fix chunk) its fix text inside that answer.

The database is the one ``bench/search_quality.py`` builds (ingest with redaction, every chunk
embedded; cached). Hit@1 and MRR per query style are in that benchmark; this one adds the
budget view, recall/predict, and the episodic set.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, TRANSCRIPTS_DIR, cli_main, print_table, write_result

CODING = REPO_ROOT / "bench" / "queries" / "coding.json"
EPISODIC = REPO_ROOT / "bench" / "queries" / "episodic.json"
BUDGETS = (1_000, 2_000)
MODES = ("keyword", "vector", "hybrid")


def _load(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return list(json.loads(path.read_text()).get("queries", []))


class Evidence:
    """Decides whether a hit is a query's evidence."""

    def __init__(self, q: dict[str, Any]) -> None:
        self.sessions = tuple(q.get("sessions") or ())
        self.fix_id = q.get("fix_chunk")
        self.fix_text = q.get("fix_text")
        self.before_ids = set(q.get("before_chunks") or ())
        self.before_texts = tuple(q.get("before_text") or ())

    def is_fix(self, hit) -> bool:  # type: ignore[no-untyped-def]
        if self.sessions:
            return any(hit.session_id.startswith(s) for s in self.sessions)
        return self.fix_id in hit.chunk_ids or bool(self.fix_text and self.fix_text in hit.text)

    def is_before(self, hit) -> bool:  # type: ignore[no-untyped-def]
        return (any(c in self.before_ids for c in hit.chunk_ids)
                or any(t in hit.text for t in self.before_texts))

    def in_text(self, text: str) -> bool:
        return not self.fix_text or self.fix_text in text


def _methods(store) -> dict[str, Callable[..., Any]]:  # type: ignore[no-untyped-def]
    from bench.latency import find_episodic, mode_works
    from causantic.retrieval.search import search

    out: dict[str, Callable[..., Any]] = {}
    for mode in MODES:
        if mode_works(store, mode):
            out[mode] = (lambda q, mode=mode, **kw: search(store, q, mode=mode, **kw))
    for name in ("recall", "predict"):
        fn = find_episodic(name)
        if fn is not None:
            out[name] = (lambda q, fn=fn, **kw: fn(store, q, **kw))
    return out


def evaluate(db: Path, sets: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Score every query set with every available method."""
    from causantic.store import open_store

    out: dict[str, Any] = {}
    with open_store(db, readonly=True) as store:
        methods = _methods(store)
        for set_name, queries in sets.items():
            per_method: dict[str, Any] = {}
            for name, fn in methods.items():
                ranked = name in MODES  # recall/predict: narrative order, budget view only
                rows = [_score_one(fn, q, ranked, name) for q in queries
                        if set_name == "coding" or ranked or q.get("command", name) == name]
                if rows:
                    per_method[name] = _tally(rows)
            out[set_name] = per_method
    return out


def _score_one(fn, q: dict[str, Any], ranked: bool, name: str) -> dict[str, bool]:  # type: ignore[no-untyped-def]
    ev = Evidence(q)
    found: dict[str, bool] = {}
    if ranked:
        top = fn(q["query"], limit=10, max_tokens=10**6).results
        for k in (5, 10):
            found[f"@{k}"] = any(ev.is_fix(h) for h in top[:k])
    for budget in BUDGETS:
        res = fn(q["query"], max_tokens=budget)
        found[f"{budget // 1000}k"] = any(ev.is_fix(h) for h in res.results) and ev.in_text(res.text)
        if not ranked and budget == BUDGETS[-1] and "fix_text" in q:
            hits = res.results
            fix_at = next((i for i, h in enumerate(hits) if ev.is_fix(h)), None)
            found["chain"] = bool(getattr(res, "mode", "") == "chain" and fix_at is not None and any(
                ev.is_before(h) for h in hits[:fix_at]))
    return found


def _tally(rows: Sequence[dict[str, bool]]) -> dict[str, Any]:
    keys = sorted({k for r in rows for k in r})
    return {"n": len(rows), **{k: round(100.0 * sum(r.get(k, False) for r in rows) / len(rows), 1)
                               for k in keys}}


def print_tables(result: dict[str, Any]) -> None:
    for set_name, per_method in result.items():
        rows = []
        for name, t in per_method.items():
            rows.append({
                "method": name, "queries": t["n"],
                "@5": t.get("@5", "n/a"), "@10": t.get("@10", "n/a"),
                "within 1k tokens": t["1k"], "within 2k tokens": t["2k"],
                "chain passes": t.get("chain", ""),
            })
        what = ("session found" if set_name == "coding" else "fix chunk found")
        print_table(f"Coding memory, {set_name} queries ({what}), % of queries", rows)


def run(tiny: bool = False) -> dict[str, Any]:
    """Build (or reuse) the embedded shared-transcripts database, score both query sets."""
    import tempfile

    from bench.search_quality import build_db, cache_root

    sets = {"coding": _load(CODING), "episodic": _load(EPISODIC)}
    if tiny:
        sets = {k: v[:2] for k, v in sets.items()}
        with tempfile.TemporaryDirectory(prefix="causantic-cm-") as tmp:
            db = build_db(Path(tmp) / "db", [TRANSCRIPTS_DIR / "marot__spotter" / "short.jsonl"])
            result = evaluate(db, sets)
    else:
        db = build_db(cache_root() / "search-quality", [TRANSCRIPTS_DIR])
        result = evaluate(db, sets)
    print_tables(result)
    payload = {"query_sets": {k: len(v) for k, v in sets.items()}, "results": result,
               "budgets": list(BUDGETS)}
    write_result("coding_memory", payload, tiny)
    return payload


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.coding_memory [--tiny]``."""
    return cli_main(run, argv)


if __name__ == "__main__":
    sys.exit(main())
