"""Search quality on the shared transcripts: hit@1, hit@5 and MRR per mode and query style.

The queries (`bench/queries/coding.json`) were written by reading the shared transcripts, in
three styles: exact identifiers, paraphrases sharing no rare word with the answer, and vague
"that time when..." recollections. Each names the session(s) that answer it. A result list
scores a hit@k when one of its first k results comes from such a session; MRR uses the rank
of the first such result (0 past rank 10).

Systems compared, all on the same database:
* causantic `search` in `keyword`, `vector` and `hybrid` mode (limit 10, no token cap);
* `bm25-turns` and `minilm-turns`: plain Okapi BM25 and plain MiniLM (first window) over one
  document per conversation turn (`bench/baselines.py`).

Self-retrieval, per mode: 120 chunks (40 per seed, 3 seeds, at least 40 tokens) are each
searched for by their 5 rarest words (letters only, by FTS document frequency), as
`causantic benchmark` does; found@1 / found@5 count the chunk itself at rank 1 / in the top 5,
or a chunk that search treats as its repeat (same text, or stored vectors at cosine >= 0.97:
search shows one of them). Exact-word queries: hybrid should find whatever keyword finds.

The database (ingest with redaction, then every chunk embedded) is built once into
``$CAUSANTIC_BENCH_CACHE`` (default ``~/.cache/causantic-bench``) and reused while the
transcripts, the model and the ingest/embedding code are unchanged.
``python -m bench.search_quality [--tiny]``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, TRANSCRIPTS_DIR, cli_main, print_table, write_result

QUERIES_FILE = REPO_ROOT / "bench" / "queries" / "coding.json"
#: What each causantic row runs: (row name, search mode, `bench.variants.search` options).
#: "hybrid-rrf" is the Reciprocal Rank Fusion hybrid search used before, "hybrid-no-rerank"
#: hybrid without its token rerank, for comparison.
SYSTEMS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("keyword", "keyword", {}), ("vector", "vector", {}), ("hybrid", "hybrid", {}),
    ("hybrid-no-rerank", "hybrid", {"rerank": False}), ("hybrid-rrf", "hybrid", {"fusion": "rrf"}))
BASELINES = ("bm25-turns", "minilm-turns")
STYLES = ("identifier", "paraphrase", "vague")
DEPTH = 10


def cache_root() -> Path:
    """Where benchmark databases are kept between runs (outside the repository)."""
    root = os.environ.get("CAUSANTIC_BENCH_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "causantic-bench"


def load_queries(path: Path = QUERIES_FILE) -> list[dict[str, Any]]:
    """The query set: dicts with id, style, query, sessions (8-hex session id prefixes)."""
    return json.loads(path.read_text())["queries"]


def _fingerprint(transcripts: Sequence[Path]) -> str:
    """Changes when the transcripts, the model or the code that fills the database change."""
    from causantic.model import MODEL_ID

    h = hashlib.sha256(MODEL_ID.encode())
    for path in sorted(transcripts):
        st = path.stat()
        h.update(f"{path}:{st.st_size}:{st.st_mtime_ns}".encode())
    package = REPO_ROOT / "causantic"
    sources = [*package.glob("transcripts/*.py"), *package.glob("store/*.py"),
               *package.glob("ingest/*.py"), *package.glob("model/*.py")] + [
        package / name for name in ("redact.py", "chunk.py", "blocks.py", "derive_state.py")
    ]
    for src in sorted(sources):
        if src.exists():
            h.update(src.read_bytes())
    return h.hexdigest()[:16]


def build_db(folder: Path, sources: Sequence[Path]) -> Path:
    """Ingest the transcripts under `sources` into folder/memory.db and embed every chunk.

    Reuses the database if a previous build with the same fingerprint completed.
    """
    from causantic.config import load_settings
    from causantic.ingest.run import run_embed, run_ingest
    from causantic.transcripts.discover import discover

    files = [tf.path for tf in discover(list(sources))]
    key = _fingerprint(files)
    # One folder per fingerprint, built aside and renamed into place: runs from several
    # checkouts (different code, so different keys) never delete a database another reads.
    done = folder.with_name(f"{folder.name}-{key}")
    db = done / "memory.db"
    if (done / "complete").exists() and db.exists():
        return db
    building = folder.with_name(f".{folder.name}-{key}.{os.getpid()}")
    if building.exists():
        shutil.rmtree(building)
    building.mkdir(parents=True, mode=0o700)
    settings = load_settings(db=building / "memory.db", env={"HOME": str(building)})
    started = time.perf_counter()
    run_ingest(settings, list(sources))
    report = run_embed(settings)
    (building / "complete").write_text(key)
    try:
        building.rename(done)
    except OSError:  # another run finished the same build first: use theirs
        shutil.rmtree(building, ignore_errors=True)
    print(f"built {db}: {report.embedded} chunks embedded ({report.windows} windows) "
          f"in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    _drop_stale(folder, keep=done)
    return db


def _drop_stale(folder: Path, keep: Path, days: float = 7.0) -> None:
    """Delete this build's folders for other fingerprints untouched for `days` (old code)."""
    cutoff = time.time() - days * 86400
    for other in folder.parent.glob(f"{folder.name}-*"):
        if other != keep and other.is_dir() and other.stat().st_mtime < cutoff:
            shutil.rmtree(other, ignore_errors=True)


def _rank_of_hit(sessions: Sequence[str], wanted: Sequence[str]) -> int | None:
    """1-based rank of the first result whose session starts with a wanted prefix."""
    for rank, sid in enumerate(sessions[:DEPTH], start=1):
        if any(sid.startswith(w) for w in wanted):
            return rank
    return None


def summarize(ranks: Sequence[int | None]) -> dict[str, float]:
    """hit@1, hit@5 and MRR of a list of first-hit ranks (None = no hit in the top 10)."""
    n = max(1, len(ranks))
    return {
        "hit@1": round(sum(1 for r in ranks if r == 1) / n, 3),
        "hit@5": round(sum(1 for r in ranks if r is not None and r <= 5) / n, 3),
        "mrr": round(sum(1.0 / r for r in ranks if r is not None) / n, 3),
        "n": len(ranks),
    }


def evaluate(db: Path, queries: Sequence[dict[str, Any]], *, baselines: bool = True,
             cache_dir: Path | None = None) -> dict[str, Any]:
    """Run every query through every system; per-query ranks plus per system/style summaries."""
    from bench.variants import search
    from causantic.store import open_store

    systems: dict[str, Callable[[str], list[str]]] = {}
    latencies: dict[str, list[float]] = {}
    notices: dict[str, set[str]] = {}
    with open_store(db, readonly=True) as store:
        for name, mode, options in SYSTEMS:
            def run_mode(q: str, name: str = name, mode: str = mode,
                         options: dict[str, Any] = options) -> list[str]:
                result = search(store, q, limit=DEPTH, max_tokens=10**6, mode=mode, **options)
                latencies.setdefault(name, []).append(result.duration_ms)
                if result.notice:
                    notices.setdefault(name, set()).add(result.notice)
                return [h.session_id for h in result.results]

            systems[name] = run_mode
        if baselines:
            from bench.baselines import BM25Index, DenseIndex, single_turn_docs

            docs = single_turn_docs(store.conn)
            session_of = {d.doc_id: d.session_id for d in docs}
            pairs = [(d.doc_id, d.text) for d in docs]
            bm25 = BM25Index(pairs)
            dense = DenseIndex(pairs, cache_dir=cache_dir)
            systems["bm25-turns"] = lambda q: [session_of[i] for i, _ in bm25.search(q, DEPTH)]
            systems["minilm-turns"] = lambda q: [session_of[i] for i, _ in dense.search(q, DEPTH)]
        per_query = []
        for q in queries:
            row: dict[str, Any] = {"id": q["id"], "style": q["style"], "query": q["query"],
                                   "sessions": q["sessions"]}
            for name, fn in systems.items():
                row[name] = _rank_of_hit(fn(q["query"]), q["sessions"])
            per_query.append(row)
    summary: dict[str, dict[str, dict[str, float]]] = {}
    for name in systems:
        summary[name] = {
            style: summarize([r[name] for r in per_query if r["style"] == style])
            for style in STYLES
        }
        summary[name]["all"] = summarize([r[name] for r in per_query])
    return {
        "per_query": per_query,
        "summary": summary,
        "latency_ms": {m: round(statistics.median(v), 2) for m, v in latencies.items()},
        "notices": {m: sorted(v) for m, v in notices.items()},
        "chunks_and_sessions": _corpus_size(db),
    }


SELF_SEEDS = (20260122, 1, 2)
SELF_SAMPLES = 40
SELF_TERMS = 5


def self_retrieval(db: Path, seeds: Sequence[int] = SELF_SEEDS,
                   samples: int = SELF_SAMPLES) -> dict[str, dict[str, float]]:
    """Sampled chunks searched for by their rarest words, per mode (module docstring)."""
    import random
    import re

    import apsw

    from bench.variants import search
    from causantic.retrieval.fts import STOP_WORDS
    from causantic.retrieval.fusion import NEAR_DUP_COSINE
    from causantic.retrieval.vector import chunk_vectors
    from causantic.store import open_store

    word_ok = re.compile(r"^[^\W\d_]{3,30}$")
    with open_store(db, readonly=True) as store:
        conn = store.conn
        rowids = [r for (r,) in conn.execute(
            "SELECT rowid FROM chunks WHERE tokens >= 40 ORDER BY rowid")]
        picked = [r for seed in seeds
                  for r in random.Random(seed).sample(rowids, min(samples, len(rowids)))]
        text_of = {r: (cid, text) for r, cid, text in conn.execute(
            "SELECT rowid, id, text FROM chunks WHERE tokens >= 40")}
        df = {t: d for t, d in conn.execute("SELECT term, doc FROM chunks_fts_vocab")}
        tokenize = conn.fts5_tokenizer("porter", ["unicode61"])
        targets = []
        for rowid in picked:
            cid, text = text_of[rowid]
            data = text.encode("utf-8")
            stems: dict[str, str] = {}
            for start, end, stem, *_ in tokenize(data, apsw.FTS5_TOKENIZE_DOCUMENT, None):
                word = data[start:end].decode("utf-8", "replace")
                if word_ok.match(word) and word.lower() not in STOP_WORDS and df.get(stem):
                    stems.setdefault(stem, word)
            rare = sorted(stems, key=lambda st: (df[st], st))[:SELF_TERMS]
            if len(rare) >= 2:
                targets.append((cid, text, " ".join(stems[st] for st in rare)))
        out: dict[str, dict[str, float]] = {}
        for name, mode, options in SYSTEMS:
            ranks = []
            for cid, text, query in targets:
                hits = search(store, query, limit=5, max_tokens=10**6, mode=mode,
                              **options).results
                vecs = chunk_vectors(conn, [cid, *(h.chunk_id for h in hits)])
                own = vecs.get(cid)

                def repeats(hit: Any, cid: str = cid, text: str = text, own: Any = own,
                            vecs: Any = vecs) -> bool:
                    if cid in hit.chunk_ids or hit.text == text:
                        return True
                    other = vecs.get(hit.chunk_id)
                    return (own is not None and other is not None
                            and float(own @ other) >= NEAR_DUP_COSINE)

                ranks.append(next((i for i, h in enumerate(hits, start=1) if repeats(h)), None))
            n = max(1, len(ranks))
            out[name] = {"queries": len(ranks),
                         "found@1": round(sum(r == 1 for r in ranks) / n, 3),
                         "found@5": round(sum(r is not None for r in ranks) / n, 3)}
    return out


def _corpus_size(db: Path) -> dict[str, int]:
    from causantic.store import open_store

    with open_store(db, readonly=True) as store:
        one = lambda sql: int(store.conn.execute(sql).fetchone()[0])  # noqa: E731
        return {"chunks": one("SELECT count(*) FROM chunks"),
                "sessions": one("SELECT count(DISTINCT session_id) FROM chunks"),
                "embedded": one("SELECT count(*) FROM chunk_vectors_meta")}


def print_summary(result: dict[str, Any]) -> None:
    """The Markdown tables: one row per system and style."""
    rows = []
    for name, by_style in result["summary"].items():
        for style in (*STYLES, "all"):
            s = by_style[style]
            rows.append({"system": name, "style": style, "queries": s["n"], "hit@1": s["hit@1"],
                         "hit@5": s["hit@5"], "MRR": s["mrr"]})
    print_table("Search quality on the shared transcripts (session found)", rows)
    misses = [
        {"query": r["id"], **{name: r[name] or "-" for name in result["summary"]}}
        for r in result["per_query"]
    ]
    print_table("First-hit rank per query (- = not in the top 10)", misses)
    if result.get("self_retrieval"):
        print_table("Self-retrieval: sampled chunks searched for by their 5 rarest words",
                    [{"mode": mode, **row} for mode, row in result["self_retrieval"].items()])


def run(tiny: bool = False) -> dict[str, Any]:
    """Build (or reuse) the embedded database, evaluate every query, print and record."""
    queries = load_queries()
    if tiny:
        with tempfile.TemporaryDirectory(prefix="causantic-sq-") as tmp:
            small = [TRANSCRIPTS_DIR / "marot__spotter" / "short.jsonl"]
            db = build_db(Path(tmp) / "db", small)
            result = evaluate(db, queries[:2] + queries[12:13] + queries[24:25], baselines=True)
    else:
        db = build_db(cache_root() / "search-quality", [TRANSCRIPTS_DIR])
        result = evaluate(db, queries, cache_dir=cache_root() / "search-quality-baselines")
        result["self_retrieval"] = self_retrieval(db)
    print_summary(result)
    write_result("search_quality", result, tiny)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    return cli_main(run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
