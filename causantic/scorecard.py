"""The scorecard `causantic benchmark` prints: how well does memory work on *this* store? A
score out of 100. (The benchmarks of causantic itself, on fixed data, are in `bench/`.)

Everything is measured on the user's own database, read-only (its queries: `store.health`):

- **health**: counts, orphan chunks (no edge in or out), chunks without a current vector,
  schema version, and SQLite's integrity check (``PRAGMA integrity_check``, which also checks
  the FTS5 index; ``--quick`` checks only the small tables, because a full check reads the
  whole file);
- **self-retrieval**: chunks sampled with a fixed seed are searched for (default search mode,
  as a user would) by their *distinctive* words (the rarest by FTS document frequency) and
  by a *paraphrase-like* subset that drops the rare words and keeps mid-frequency ones; a
  chunk counts as found when it (or a chunk with identical text, which search collapses)
  comes back in the top 5 / top 10;
- **chains**: the share of chunks linked to at least one other chunk, and the mean length of
  the chains of consecutive chunks in each session stream;
- **latency**: p50/p95 of the searches above, and of recall/predict when they exist.

Each component earns points (weights in ``WEIGHTS``); a low component comes with one line of
advice naming the command that fixes it. An empty store gets no score and says so.
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass, field
from typing import Any

import apsw

from causantic.retrieval.chains import predict, recall
from causantic.retrieval.fts import STOP_WORDS
from causantic.retrieval.search import search
from causantic.store import health as sql
from causantic.store.counts import count_chunks
from causantic.store.db import Store
from causantic.store.schema import MIGRATIONS, schema_version
from causantic.store.sql import table_exists

SEED = 20260122
SAMPLES = 40
QUICK_SAMPLES = 6
CHAIN_QUERIES = 8
QUICK_CHAIN_QUERIES = 2
DISTINCT_TERMS = 5
PARAPHRASE_TERMS = 6
EXACT_K = 5
PARAPHRASE_K = 10
MIN_CHUNK_TOKENS = 40
LATENCY_FULL_MS = 100.0  # search p95 at or under this earns every latency point
LATENCY_ZERO_MS = 1000.0  # ... and at or over this, none
WEIGHTS = {
    "integrity": 15,
    "schema": 5,
    "vectors": 15,
    "self-retrieval (distinctive words)": 20,
    "self-retrieval (paraphrase-like)": 15,
    "chains": 15,
    "latency": 15,
}
_WORD_OK = re.compile(r"^[^\W\d_]{3,30}$")  # letters only: no ids, hashes or numbers
_SMALL_TABLES = ("sessions", "edges", "files", "forgotten")


@dataclass(frozen=True)
class Component:
    """One part of the score."""

    name: str
    points: float
    weight: int
    detail: str
    advice: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "points": round(self.points, 1), "weight": self.weight,
                "detail": self.detail, "advice": self.advice}


@dataclass
class BenchmarkReport:
    """Everything `causantic benchmark` measured; `score` is None for an empty store."""

    db_path: str
    quick: bool
    health: dict[str, Any]
    self_retrieval: dict[str, Any] = field(default_factory=dict)
    chains: dict[str, Any] = field(default_factory=dict)
    latency: dict[str, Any] = field(default_factory=dict)
    components: list[Component] = field(default_factory=list)
    score: int | None = None
    seconds: float = 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "db": self.db_path, "quick": self.quick, "score": self.score,
            "components": [c.as_dict() for c in self.components],
            "health": self.health, "self_retrieval": self.self_retrieval,
            "chains": self.chains, "latency": self.latency, "seconds": round(self.seconds, 2),
        }

    def render(self) -> str:
        """The text report: score, components, advice."""
        h = self.health
        lines = [f"Memory benchmark of {self.db_path}" + (" (quick)" if self.quick else "")]
        if self.score is None:
            lines.append(f"Memory is empty ({h['chunks']} chunks): nothing to measure. "
                         "Run `causantic ingest` first.")
            lines.append(f"Integrity: {h['integrity']}; schema version {h['schema_version']}.")
            return "\n".join(lines)
        lines.append(f"Score: {self.score}/100")
        lines.append("")
        width = max(len(c.name) for c in self.components)
        for c in self.components:
            lines.append(f"  {c.name.ljust(width)}  {c.points:5.1f}/{c.weight:<3d} {c.detail}")
        advice = [c.advice for c in self.components if c.advice]
        if advice:
            lines.append("")
            lines.append("Advice:")
            lines += [f"- {a}" for a in advice]
        lines.append("")
        lines.append(
            f"{h['chunks']} chunks in {h['sessions']} sessions of {h['projects']} projects, "
            f"{h['edges']} edges; measured in {self.seconds:.1f} s.")
        return "\n".join(lines)


def run_benchmark(store: Store, *, quick: bool = False, samples: int | None = None
                  ) -> BenchmarkReport:
    """Measure the store (read-only use is enough) and score it; see the module docstring."""
    started = time.perf_counter()
    conn = store.conn
    report = BenchmarkReport(str(store.path), quick, health(conn, quick))
    phases = {"health": time.perf_counter() - started}
    if report.health["chunks"] == 0:
        report.seconds = time.perf_counter() - started
        return report
    mark = time.perf_counter()
    report.chains = chain_coverage(conn)
    phases["chains"] = time.perf_counter() - mark
    mark = time.perf_counter()
    n = samples or (QUICK_SAMPLES if quick else SAMPLES)
    report.self_retrieval, search_ms, chain_queries = self_retrieval(store, n, SEED, quick)
    phases["self_retrieval"] = time.perf_counter() - mark
    mark = time.perf_counter()
    report.latency = latency(store, search_ms, chain_queries[: QUICK_CHAIN_QUERIES if quick
                                                             else CHAIN_QUERIES])
    phases["recall_predict"] = time.perf_counter() - mark
    report.latency["phase_seconds"] = {k: round(v, 3) for k, v in phases.items()}
    report.components = score_components(report)
    report.score = round(sum(c.points for c in report.components))
    report.seconds = time.perf_counter() - started
    return report


# -- health ----------------------------------------------------------------------------------


def health(conn: apsw.Connection, quick: bool) -> dict[str, Any]:
    """Counts, orphans, vector coverage, schema version and the integrity check."""

    out: dict[str, Any] = sql.counts(conn)._asdict()
    out["schema_version"] = schema_version(conn)
    out["schema_latest"] = len(MIGRATIONS)
    out.update(_vector_counts(conn, out["chunks"]))
    if quick:
        tables = [t for t in _SMALL_TABLES if table_exists(conn, t)]
        problems = sql.integrity_problems(conn, tables)
        out["integrity_scope"] = "quick: " + ", ".join(tables)
    else:
        problems = sql.integrity_problems(conn)
        out["integrity_scope"] = "full"
    out["integrity"] = "ok" if not problems else "; ".join(problems[:3])
    return out


def _vector_counts(conn: apsw.Connection, chunks: int) -> dict[str, Any]:
    try:
        # deferred: heavy: pulls numpy, only needed here
        from causantic.model import MODEL_ID
        from causantic.store import vectors as vec_store
    except ImportError:  # a build without the vector side
        return {"vector_table": False, "embedded": 0, "unembedded": 0, "stale_vectors": 0}
    if not table_exists(conn, vec_store.META_TABLE):
        return {"vector_table": False, "embedded": 0, "unembedded": 0, "stale_vectors": 0}
    counts = vec_store.counts(conn)
    current = counts.by_model.get(MODEL_ID, 0)
    return {"vector_table": True, "embedded": current, "unembedded": chunks - counts.embedded,
            "stale_vectors": counts.stale(MODEL_ID), "model_id": MODEL_ID}


# -- chains ----------------------------------------------------------------------------------


def chain_coverage(conn: apsw.Connection) -> dict[str, Any]:
    """Share of chunks on a chain (any edge), and mean chain length per session stream.

    A stream's chunks joined by its `next` edges form chains (a topic-shift cut starts a new
    one), so chains = chunks - next edges within streams, and mean length = chunks / chains.
    """
    c = sql.chain_counts(conn)
    chains = max(1, c.chunks - c.next_within_streams)
    return {
        "on_chain": c.chunks - c.orphans,
        "on_chain_share": round((c.chunks - c.orphans) / c.chunks, 4) if c.chunks else 0.0,
        "streams": c.streams,
        "chains": chains,
        "mean_chain_length": round(c.chunks / chains, 2),
        "edge_kinds": c.edge_kinds,
    }


# -- self-retrieval --------------------------------------------------------------------------


def self_retrieval(store: Store, n: int, seed: int, quick: bool
                   ) -> tuple[dict[str, Any], list[float], list[str]]:
    """Search for sampled chunks by their own words; returns (summary, search ms, queries)."""

    conn = store.conn
    rowids = sql.chunk_rowids(conn, MIN_CHUNK_TOKENS)
    picked = random.Random(seed).sample(rowids, min(n, len(rowids)))
    rows = sql.chunk_texts(conn, picked)
    rows.sort(key=lambda r: picked.index(r[0]))
    tokenizer = conn.fts5_tokenizer("porter", ["unicode61"])
    words: list[dict[str, str]] = []
    for _, _, text in rows:
        data = text.encode("utf-8")
        stems: dict[str, str] = {}
        # with offsets a token is (start, end, stem, *colocated forms), never a bare str
        for start, end, stem, *_ in tokenizer(  # type: ignore[str-unpack, misc]
                data, apsw.FTS5_TOKENIZE_DOCUMENT, None):
            word = data[int(start):int(end)].decode("utf-8", "replace")
            if _WORD_OK.match(word) and word.lower() not in STOP_WORDS:
                stems.setdefault(stem, word)
        words.append(stems)
    df = sql.doc_frequencies(conn, {s for w in words for s in w}, scan=not quick)
    total = max(1, count_chunks(conn))

    # One untimed search first: the model loads on the first vector query, once per process.
    warm = search(store, "warm up", limit=1)
    found = {"distinctive": 0, "paraphrase": 0}
    keyword_found = {"distinctive": 0, "paraphrase": 0}
    tried = {"distinctive": 0, "paraphrase": 0}
    misses: dict[str, list[str]] = {"distinctive": [], "paraphrase": []}
    durations: list[float] = []
    # A hybrid search without usable vectors answers from keywords, with a notice.
    mode, notice = ("keyword" if warm.notice else warm.mode), warm.notice
    queries: list[str] = []
    for (_, cid, text), stems in zip(rows, words):
        ranked = sorted(stems, key=lambda s: (df.get(s, 0) or total, s))
        ranked = [s for s in ranked if df.get(s, 0) > 0]
        distinct = [stems[s] for s in ranked[:DISTINCT_TERMS]]
        # Paraphrase-like: without the rare words a distinctive query uses, the next ones
        # that still say something (words in more than 10 % of chunks say little).
        common_cap = max(2, total // 10)
        middle = [s for s in ranked[DISTINCT_TERMS:] if df[s] <= common_cap]
        paraphrase = [stems[s] for s in middle[:PARAPHRASE_TERMS]]
        for kind, terms, k in (("distinctive", distinct, EXACT_K),
                               ("paraphrase", paraphrase, PARAPHRASE_K)):
            if len(terms) < (2 if kind == "distinctive" else 3):
                continue
            query = " ".join(terms)
            result = search(store, query, limit=k, max_tokens=10**6)
            durations.append(result.duration_ms)
            tried[kind] += 1
            if kind == "distinctive":
                queries.append(query)
            if any(cid in h.chunk_ids or h.text == text for h in result.results):
                found[kind] += 1
                keyword_found[kind] += 1
                continue
            if len(misses[kind]) < 5:
                misses[kind].append(cid)
            if mode != "keyword":  # would keyword search alone have found it?
                alone = search(store, query, limit=k, max_tokens=10**6, mode="keyword")
                keyword_found[kind] += any(cid in h.chunk_ids or h.text == text
                                           for h in alone.results)
    summary: dict[str, Any] = {
        "samples": len(rows), "seed": seed, "mode": mode, "notice": notice,
    }
    for kind, k in (("distinctive", EXACT_K), ("paraphrase", PARAPHRASE_K)):
        summary[kind] = {
            "queries": tried[kind], "found": found[kind], "k": k,
            "rate": _rate(found[kind], tried[kind]),
            "keyword_rate": _rate(keyword_found[kind], tried[kind]),
            "missed_chunks": misses[kind],
        }
    return summary, durations, queries


def _rate(found: int, tried: int) -> float | None:
    return round(found / tried, 4) if tried else None


# -- latency ---------------------------------------------------------------------------------


def latency(store: Store, search_ms: list[float], queries: list[str]) -> dict[str, Any]:
    """Percentiles of the self-retrieval searches, and of recall/predict seeded by their queries."""

    out: dict[str, Any] = {"search": _percentiles(search_ms)}
    for name, fn in (("recall", recall), ("predict", predict)):
        if not queries:
            out[name] = None
            continue
        samples = []
        for q in queries:
            t0 = time.perf_counter()
            fn(store, q)
            samples.append((time.perf_counter() - t0) * 1000.0)
        out[name] = _percentiles(samples)
    return out


def _percentiles(samples: list[float]) -> dict[str, float] | None:
    if not samples:
        return None
    ordered = sorted(samples)

    def pct(q: float) -> float:
        pos = (len(ordered) - 1) * q
        lo = int(pos)
        hi = min(lo + 1, len(ordered) - 1)
        return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)

    return {"p50_ms": round(pct(0.5), 1), "p95_ms": round(pct(0.95), 1), "n": len(ordered)}


# -- the score -------------------------------------------------------------------------------


def score_components(r: BenchmarkReport) -> list[Component]:
    """Points per component, with advice where a component is low."""
    h, s, c, lat = r.health, r.self_retrieval, r.chains, r.latency
    out = []
    w = WEIGHTS["integrity"]
    ok = h["integrity"] == "ok"
    out.append(Component("integrity", w if ok else 0.0, w, f"{h['integrity']} ({h['integrity_scope']})",
                         None if ok else "the database is damaged: move it aside and run "
                         "`causantic ingest` to rebuild it from your transcripts"))
    w = WEIGHTS["schema"]
    current = h["schema_version"] == h["schema_latest"]
    out.append(Component("schema", w if current else 0.0, w,
                         f"version {h['schema_version']} of {h['schema_latest']}",
                         None if current else "the schema is older than this causantic: run "
                         "`causantic ingest` once to migrate it (a backup is kept)"))

    w = WEIGHTS["vectors"]
    share = h["embedded"] / h["chunks"]
    advice = None
    if h.get("stale_vectors"):
        advice = (f"{h['stale_vectors']} chunks have vectors from another model: "
                  "run `causantic reindex`")
    elif share < 0.95:
        advice = (f"{100 * (1 - share):.0f} % of chunks have no vector: run `causantic embed` "
                  "(semantic and hybrid search only see embedded chunks)")
    out.append(Component("vectors", w * share, w,
                         f"{h['embedded']} of {h['chunks']} chunks embedded", advice))

    for key, kind in (("self-retrieval (distinctive words)", "distinctive"),
                      ("self-retrieval (paraphrase-like)", "paraphrase")):
        w = WEIGHTS[key]
        part = s[kind]
        # No query of this kind could be formed (tiny chunks): neutral, and said so.
        rate = part["rate"] if part["rate"] is not None else 1.0
        advice = None
        keyword_rate = part.get("keyword_rate")
        if (kind == "distinctive" and rate < 0.8 and keyword_rate is not None
                and keyword_rate >= rate + 0.1):
            advice = (f"{s['mode']} search missed {100 * (1 - rate):.0f} % of sampled chunks by "
                      f"their rarest words, keyword search alone {100 * (1 - keyword_rate):.0f} %:"
                      " for exact identifiers and rare words use `causantic search --mode keyword`")
        elif kind == "distinctive" and rate < 0.8:
            advice = (f"search missed {100 * (1 - rate):.0f} % of sampled chunks by their rarest "
                      "words: if the integrity check is ok, many chunks repeat each other (the "
                      "same transcripts ingested from two paths? see `causantic list-sessions`)")
        if kind == "paraphrase" and rate < 0.5:
            advice = ("paraphrase-like queries rarely find their chunk: "
                      + ("run `causantic embed` so hybrid search can match by meaning"
                         if share < 0.95 or s.get("notice") else
                         "hybrid search is on; this store has many near-identical chunks"))
        detail = (f"{part['found']}/{part['queries']} found in the top {part['k']} ({s['mode']} "
                  "search" + (f"; keyword alone {part['keyword_rate'] * 100:.0f} %"
                              if s["mode"] != "keyword" and part["keyword_rate"] is not None
                              and part["found"] < part["queries"] else "") + ")")
        if not part["queries"]:
            detail = "no sampled chunk had enough words for such a query (not scored)"
        out.append(Component(key, w * rate, w, detail, advice))

    w = WEIGHTS["chains"]
    on = c["on_chain_share"]
    out.append(Component("chains", w * min(1.0, on / 0.9), w,
                         f"{100 * on:.0f} % of chunks on a chain, mean chain length "
                         f"{c['mean_chain_length']}",
                         None if on >= 0.8 else
                         f"{100 * (1 - on):.0f} % of chunks are on no chain (one-chunk sessions "
                         "or sessions ingested before linking): run `causantic ingest` again, and "
                         "check its warnings"))

    w = WEIGHTS["latency"]
    p95 = (lat.get("search") or {}).get("p95_ms")
    if p95 is None:
        points = float(w)
    else:
        points = w * max(0.0, min(1.0, (LATENCY_ZERO_MS - p95) / (LATENCY_ZERO_MS - LATENCY_FULL_MS)))
    parts = [f"search p95 {p95} ms" if p95 is not None else "search not timed"]
    for name in ("recall", "predict"):
        if lat.get(name):
            parts.append(f"{name} p95 {lat[name]['p95_ms']} ms")
    out.append(Component("latency", points, w, ", ".join(parts),
                         None if points >= w * 0.8 else
                         f"search p95 is {p95} ms: measure again when the machine is idle; a "
                         "very large memory can be trimmed with `causantic forget`"))
    return out
