"""`search`: what do we know about X.

Candidates come from BM25 over FTS5; exact and near-exact duplicates (the same tool output
twice, a summary repeating a chunk) are collapsed at read time so they do not crowd out the
results (nothing is deleted). The answer is rendered under a token budget; `text` is exactly
what the CLI's `--json` and the MCP tool report.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

import apsw

from causantic.retrieval import render
from causantic.retrieval.fts import keyword_search
from causantic.retrieval.render import Hit
from causantic.store.db import Store

MODES = ("keyword", "vector", "hybrid")


@dataclass(frozen=True)
class SearchResult:
    """The answer to a query: ranked hits and their rendered text."""

    query: str
    mode: str
    results: list[Hit]
    text: str
    tokens: int
    duration_ms: float
    notice: str | None = None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "query": self.query,
            "mode": self.mode,
            "results": [h.as_dict() for h in self.results],
            "text": self.text,
            "tokens": self.tokens,
            "duration_ms": round(self.duration_ms, 2),
        }
        if self.notice:
            out["notice"] = self.notice
        return out


def search(
    store: Store,
    query: str,
    *,
    project: str | None = None,
    limit: int = 10,
    max_tokens: int = 4000,
    mode: str = "keyword",
    max_chars: int | None = None,
) -> SearchResult:
    """Find past work on a topic; see the module docstring."""
    started = time.perf_counter()
    ranked = [(h.chunk_id, h.score, ("keyword",)) for h in keyword_search(
        store.conn, query, project=project, limit=max(50, limit * 5)
    )]
    hits = dedupe(load_hits(store.conn, ranked))[:limit]
    return finish(query, mode, hits, max_tokens, max_chars, started)


def finish(
    query: str,
    mode: str,
    hits: list[Hit],
    max_tokens: int,
    max_chars: int | None,
    started: float,
    notice: str | None = None,
) -> SearchResult:
    """Render hits under the budget into a SearchResult (shared by all search modes)."""
    if not hits:
        text = f'No relevant memory found for "{query}".'
        if notice:
            text = f"{notice}\n{text}"
        return SearchResult(query, mode, [], text, render.tokens_of(text),
                            (time.perf_counter() - started) * 1000, notice)
    title = f'Found {{n}} results for "{query}"'
    budget = max_tokens - render.tokens_of(title) - 10
    items, used = render.fit(
        [(render.header(h, i + 1), h.text) for i, h in enumerate(hits)], budget,
        None if max_chars is None else max_chars - len(title) - 40,
    )
    shown = hits[:used]
    body = render.join(items)
    head = title.format(n=len(shown))
    if notice:
        head = f"{notice}\n{head}"
    text = f"{head} ({render.tokens_of(body)} tokens):\n\n{body}"
    return SearchResult(query, mode, shown, text, render.tokens_of(text),
                        (time.perf_counter() - started) * 1000, notice)


def load_hits(conn: apsw.Connection, ranked: Sequence[tuple[str, float, tuple[str, ...]]]) -> list[Hit]:
    """Fetch chunk rows for (chunk id, score, sources) in rank order; missing ids are dropped."""
    if not ranked:
        return []
    ids = [r[0] for r in ranked]
    rows: dict[str, tuple] = {}
    for i in range(0, len(ids), 500):
        batch = ids[i : i + 500]
        marks = ",".join("?" * len(batch))
        for row in conn.execute(
            "SELECT id, session_id, project, agent_id, start_time, end_time, text, kind"
            f" FROM chunks WHERE id IN ({marks})",
            batch,
        ):
            rows[row[0]] = row
    out = []
    for cid, score, sources in ranked:
        row = rows.get(cid)
        if row is not None:
            out.append(Hit(row[0], row[1], row[2], row[3], row[4], row[5], score, sources,
                           row[6], row[7]))
    return out


_NORMALISE_RE = re.compile(r"\W+")


def fingerprint(text: str) -> str:
    """A hash of the text without punctuation, case or whitespace differences."""
    return hashlib.sha1(_NORMALISE_RE.sub(" ", text.lower()).strip().encode()).hexdigest()


def dedupe(hits: list[Hit]) -> list[Hit]:
    """Drop hits whose text is the same as a better-ranked hit's (read time only)."""
    seen: set[str] = set()
    out = []
    for h in hits:
        body = h.text.split("\n", 1)[1] if h.text.startswith("[") and "\n" in h.text else h.text
        fp = fingerprint(body)
        if fp in seen:
            continue
        seen.add(fp)
        out.append(h)
    return out
