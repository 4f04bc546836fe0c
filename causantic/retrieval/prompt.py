"""Prompt recall for the UserPromptSubmit hook: keyword only, and only for strong matches.

Injecting context into every prompt costs the user tokens and attention, so a match must be
strong, not merely the best of a weak lot. BM25 scores are not comparable across queries, so
strength is measured as **IDF-weighted term coverage**: the share of the prompt's
information (the sum of the inverse document frequencies of its search terms) that a chunk
contains. Rare terms (an error code, a file name) weigh much more than common ones, and a
term found nowhere in memory still counts in the denominator, so a prompt about something
new does not recall anything. A chunk qualifies when its coverage is at least
`min_coverage` (default 0.5), it contains at least two of the terms (one when the prompt has
only one), and the terms it contains carry at least `MIN_INFORMATION` nats of IDF (about two
rare terms or three uncommon ones), so a short prompt of everyday words ("fix the flaky
test") does not qualify by covering itself. Presence is decided by FTS5 itself, so stemming
matches the index.

Chunks of the current session are skipped: Claude already has them in its context.

What is injected is each match's answer unit, as search shows it (`causantic.retrieval.
answer`): the matching chunk compacted, with what answered it in its turn. A match is often
the prompt or tool output of an earlier turn while the explanation or fix follows it; shown
as stored chunks, the injection held the text that answers the prompt for 0.09 of the 207
report-half questions, as units for 0.14, at the same gate and size (`python -m bench
prompt_recall`).
"""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from causantic.config import PROMPT_CHARS
from causantic.retrieval.fts import idf, keyword_search, query_terms
from causantic.store import fts as fts_store
from causantic.store.counts import count_chunks

MAX_TERMS = 24
DF_CAP = 2000  # document frequency is counted up to here: beyond it a term is common anyway
CANDIDATES = 20
MAX_SHOWN = 3
MIN_INFORMATION = 8.0


@dataclass(frozen=True)
class PromptRecall:
    """The text to inject ('' when nothing is strong enough) and how many chunks qualified."""

    text: str
    matches: int


def prompt_recall(
    conn: apsw.Connection,
    prompt: str,
    *,
    project: str | None,
    exclude_session: str | None = None,
    max_chars: int = PROMPT_CHARS,
    min_coverage: float = 0.5,
    units: bool = True,
) -> PromptRecall:
    """Chunks that cover most of the prompt's information, rendered under `max_chars` as
    their answer units (`units`, the default; else as stored: the bench's comparison)."""
    # deferred: hook fast path: loaded only when this runs
    from causantic.retrieval import freshness, render
    from causantic.retrieval.search import dedupe
    from causantic.store.hits import load_hits

    hits = keyword_search(conn, prompt, project=project, limit=CANDIDATES * 2)
    coverage = term_coverage(conn, prompt, [h.rowid for h in hits])
    need = 1 if len(query_terms(prompt)[:MAX_TERMS]) == 1 else 2
    scored = [
        (h.chunk_id, share, ("keyword",))
        for h in hits
        for share, found, information in [coverage[h.rowid]]
        if share >= min_coverage and found >= need and information >= MIN_INFORMATION
    ]
    loaded = [h for h in load_hits(conn, scored) if h.session_id != exclude_session]
    loaded.sort(key=lambda h: -h.score)
    chosen = dedupe(loaded, keep=MAX_SHOWN)
    if not chosen:
        return PromptRecall("", 0)
    chosen = freshness.mark(chosen)  # a header names the files its edits wrote that changed since
    if units:  # the match with what answered it in its turn, compacted
        # deferred: ~12 ms of imports, paid only when there is something to show
        from causantic.retrieval.answer import fill

        chosen = fill(conn, chosen, prompt, max_chars)
    # a statement, not an instruction: see `causantic.memory.triggers.reflection_line`
    title = "Possibly relevant memory from earlier sessions (keyword match; as it was then):"
    items, used = render.fit(
        [(render.header(h) + f" · {h.score:.0%} of the prompt's terms", h.text) for h in chosen],
        max_tokens=max_chars,  # the character cap below is the binding one
        max_chars=max_chars - len(title) - 2,
        min_tokens=30,
    )
    if not items:
        return PromptRecall("", 0)
    return PromptRecall(f"{title}\n\n{render.join(items)}", used)


def term_coverage(
    conn: apsw.Connection, query: str, rowids: list[int]
) -> dict[int, tuple[float, int, float]]:
    """chunk rowid -> (IDF-weighted share of the query's terms it contains, how many terms it
    contains, their summed IDF in nats).

    See the module docstring; a query without searchable terms covers nothing.
    """
    terms = query_terms(query)[:MAX_TERMS]
    if not terms or not rowids:
        return {r: (0.0, 0, 0.0) for r in rowids}
    total = max(1, count_chunks(conn))
    # A phrase's own count (capped), not its rarest word's as in `fts.doc_counts`: coverage
    # asks whether a chunk holds the phrase.
    weights = {t: idf(fts_store.match_count(conn, _phrase(t), DF_CAP), total) for t in terms}
    denominator = sum(weights.values()) or 1.0
    found: dict[int, list[str]] = {r: [] for r in rowids}
    for t in terms:
        for r in fts_store.matching_rowids(conn, _phrase(t), rowids):
            found[r].append(t)
    out = {}
    for r, ts in found.items():
        information = sum(weights[t] for t in ts)
        out[r] = (information / denominator, len(ts), information)
    return out


def _phrase(term: str) -> str:
    return 'text : "' + term.replace('"', "") + '"'
