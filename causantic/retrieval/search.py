"""`search`: what do we know about X.

Modes: `keyword` (BM25 over FTS5), `vector` (KNN over chunk windows), `hybrid` (default: both
lists fused by a weighted sum of their scaled scores, the keyword side weighing more when its
best hit holds the query's rare terms (see `fusion`), the best fused candidates rescored by
word-piece MaxSim (`rerank`), then MMR diversification with the stored vectors). A question
naming a date ("on 3 June, 2023", "in August 2023":
`timestamps.named_period`; without its year, "on 3 June", "in June": the latest such day or
month with chunks, `question_period`; relative to today, "yesterday", "last week") is answered
from that day or month first: each list is drawn `DATED_DEPTH` deep, candidates past its usual
depth are kept only from that period, and the period's candidates rank before the others (each
group in its usual order). Scores: BM25 (keyword), the best window's cosine (vector) or the
fused score in [0, 1] (hybrid), scaled down in the vector modes for "thin" chunks such as a
bare `/exit` and its echo (`fusion.is_thin`). Exact and near duplicates (the same tool output
twice, a summary repeating a chunk) are collapsed at read time so they do not crowd out the
results (nothing is deleted). For a "what came next" question, a compaction summary among the
candidates gives its rank to the turn it retells (`answer.behind_summaries`). When the vector
side cannot answer (no vectors yet, model or sqlite-vec missing, vectors from another model),
`vector`/`hybrid` answer from keywords and say why in one line (`notice`); they never fail
because of it. Each hit is shown as its answer unit (the match compacted, with what answered it
in its turn: `causantic.retrieval.answer`), as many as the token budget holds; the answer is
rendered under that budget; `text` is exactly what the CLI's `--json` and the MCP tool report.

This module imports no numpy or onnxruntime: the vector code is imported only for the `vector`
and `hybrid` modes, and only once stored vectors are known to exist.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import apsw

from causantic.config import ANSWER_TOKENS
from causantic.errors import UsageError
from causantic.retrieval import freshness, render
from causantic.retrieval.fts import keyword_search, query_idf, vector_text
from causantic.retrieval.projects import resolve_project
from causantic.retrieval.render import Answer, Hit
from causantic.store import timeline
from causantic.store.db import Store
from causantic.store.hits import load_hits  # re-exported
from causantic.timestamps import named_period, periods_back, relative_period, yearless_date
from causantic.tokens import approx_tokens, char_limit

MODES = ("keyword", "vector", "hybrid")
#: Most results when no limit is given: as many answers as the token budget holds.
FILL = 20
#: How deep each list is drawn for a question that names a date (module docstring).
DATED_DEPTH = 60


def search(
    store: Store,
    query: str,
    *,
    project: str | None = None,
    limit: int | None = None,
    max_tokens: int = ANSWER_TOKENS,
    mode: str = "hybrid",
    max_chars: int | None = None,
    cluster_expansion: bool = False,
    answers: bool = True,
    past_summaries: bool = True,
) -> Answer:
    """Find past work on a topic; see the module docstring.

    ``cluster_expansion`` (hybrid mode only) adds the topic siblings of the best candidates
    before MMR (`causantic.retrieval.expand`).
    ``limit``: most results; None shows as many as ``max_tokens`` holds (at most FILL).
    ``answers``: show each hit as its answer unit (`causantic.retrieval.answer`; the default)
    rather than its stored chunk text.
    ``past_summaries``: for a "what came next" question, a compaction summary gives its rank
    to the turn it retells (`answer.behind_summaries`); predict, which replaces its seeds
    its own way, turns this off.

    Raises
    ------
    UsageError : ``mode`` is not one of MODES, or no project is called ``project`` (a name,
        a worktree folder or a path: `projects.resolve_project`).
    """
    return search_with(PRODUCT, store, query, project=project, limit=limit,
                       max_tokens=max_tokens, mode=mode, max_chars=max_chars,
                       cluster_expansion=cluster_expansion, answers=answers,
                       past_summaries=past_summaries)


#: Hybrid mode's fusion: (connection, query, keyword [(id, BM25)], vector [(id, cosine)],
#: thin chunk ids), each list best first -> [(id, score, sources)] best first.
Fuse = Callable[[apsw.Connection, str, list[tuple[str, float]], list[tuple[str, float]],
                 set[str]], list[tuple[str, float, tuple[str, ...]]]]
#: Cluster expansion: (connection, hits best first, project) -> hits with topic siblings.
Expand = Callable[[apsw.Connection, list[Hit], str | None], list[Hit]]
#: A second look at the fused list: (connection, query, [(id, score, sources)] best first,
#: thin chunk ids) -> the same entries rescored, best first.
Rerank = Callable[[apsw.Connection, str, list[tuple[str, float, tuple[str, ...]]], set[str]],
                  list[tuple[str, float, tuple[str, ...]]]]


def score_fusion(conn: apsw.Connection, query: str, keyword: list[tuple[str, float]],
                 vector: list[tuple[str, float]], thin: set[str]
                 ) -> list[tuple[str, float, tuple[str, ...]]]:
    """The product's fusion: `fusion.fuse` with the keyword weight `fts.query_idf` and
    `fusion.keyword_weight` give this query."""
    # deferred: heavy: pulls numpy, only needed here
    from causantic.retrieval import fusion

    weight = fusion.keyword_weight(keyword[0][1], query_idf(conn, query)) if keyword else 0.0
    return fusion.fuse(keyword, vector, thin, weight)


def sibling_expansion(conn: apsw.Connection, hits: list[Hit], project: str | None) -> list[Hit]:
    """The product's cluster expansion (`expand.expand` with its defaults)."""
    # deferred: hook fast path: loaded only when this runs
    from causantic.retrieval.expand import expand

    return expand(conn, hits, project=project)


def token_rerank(conn: apsw.Connection, query: str,
                 fused: list[tuple[str, float, tuple[str, ...]]], thin: set[str]
                 ) -> list[tuple[str, float, tuple[str, ...]]]:
    """The product's rerank: `rerank.rerank` (word-piece MaxSim over the best candidates)."""
    # deferred: heavy: pulls numpy, only needed here
    from causantic.retrieval import rerank

    return rerank.rerank(conn, query, fused, thin)


def no_rerank(conn: apsw.Connection, query: str,
              fused: list[tuple[str, float, tuple[str, ...]]], thin: set[str]
              ) -> list[tuple[str, float, tuple[str, ...]]]:
    """The fused order as it is (the comparison `bench.answers` prints)."""
    return fused


@dataclass(frozen=True)
class Steps:
    """The hybrid steps an experiment may swap; the product always uses `PRODUCT`."""

    fuse: Fuse = score_fusion
    expand: Expand = sibling_expansion
    rerank: Rerank = token_rerank


PRODUCT = Steps()


def search_with(
    steps: Steps,
    store: Store,
    query: str,
    *,
    project: str | None = None,
    limit: int | None = None,
    max_tokens: int = 4000,
    mode: str = "hybrid",
    max_chars: int | None = None,
    cluster_expansion: bool = False,
    answers: bool = True,
    past_summaries: bool = True,
) -> Answer:
    """`search` with other hybrid ``steps`` (a fusion, a sibling expansion): the seam
    `bench/variants.py` uses to compare variants. The CLI, MCP and hooks call `search`."""
    started = time.perf_counter()
    # Without a limit the budget decides how many results are shown; candidate pools are
    # sized as for 10 results (a 4,000-token answer shows 5-8 answer units), which keeps
    # fusion and MMR as cheap as before while up to FILL results can still be taken.
    reach = min(limit, 10) if limit else 10
    limit = limit or FILL
    render_as = (store.conn, query) if answers else None
    if mode not in MODES:
        raise UsageError(f"unknown search mode {mode!r}; use one of {', '.join(MODES)}")
    project = resolve_project(store.conn, project)
    period = question_period(store.conn, query, project)
    pool = max(50, reach * 5, DATED_DEPTH if period else 0)
    # Keyword-only answers need just enough spare candidates to replace duplicates;
    # fetching (and reading the text of) 50 rows was a third of its time at 100k chunks.
    keyword: list[tuple[str, float, tuple[str, ...]]] = [
        (h.chunk_id, h.score, ("keyword",))
        for h in keyword_search(
            store.conn, query, project=project,
            limit=pool if period or mode != "keyword" else max(reach * 3, 15),
        )
    ] if mode != "vector" else []
    if mode == "keyword":
        hits = dedupe(_situations(store.conn, _period_first(load_hits(store.conn, keyword), period),
                                  query, past_summaries), keep=limit)
        return finish(query, mode, hits, max_tokens, max_chars, started, units=render_as)
    # deferred: heavy: pulls numpy, only needed here
    from causantic.retrieval.vector import VectorsUnavailable, vectors_state

    notice = vectors_state(store.conn)
    if notice is None:
        try:
            return _with_vectors(store, query, keyword, project, limit, mode,
                                 max_tokens, max_chars, started, steps,
                                 cluster_expansion, answers, reach, period, past_summaries)
        except VectorsUnavailable as exc:
            notice = str(exc)
    if mode == "vector":
        keyword = [
            (h.chunk_id, h.score, ("keyword",))
            for h in keyword_search(store.conn, query, project=project, limit=pool)
        ]
    hits = dedupe(_situations(store.conn, _period_first(load_hits(store.conn, keyword), period),
                              query, past_summaries), keep=limit)
    return finish(query, mode, hits, max_tokens, max_chars, started,
                  notice=f"Keyword results only: {notice}.", units=render_as)


def _with_vectors(
    store: Store,
    query: str,
    keyword: list[tuple[str, float, tuple[str, ...]]],
    project: str | None,
    limit: int,
    mode: str,
    max_tokens: int,
    max_chars: int | None,
    started: float,
    steps: Steps,
    cluster_expansion: bool,
    answers: bool,
    reach: int,
    period: tuple[str, str] | None = None,
    past_summaries: bool = True,
) -> Answer:
    """The vector and hybrid modes (numpy imported here); raises VectorsUnavailable.

    Each list offers its best ``fusion.depth(limit)`` chunks (deeper tails only add chunks
    that both lists rank poorly), and down to `DATED_DEPTH` those of a named ``period``;
    ``steps.fuse`` combines them (the product: `score_fusion`).
    """
    # deferred: heavy: pulls numpy, only needed here
    from causantic.retrieval import fusion
    from causantic.retrieval.vector import chunk_vectors, vector_search

    depth = fusion.depth(reach)
    deep = max(depth, DATED_DEPTH) if period else depth
    found = vector_search(store, vector_text(store.conn, query, project), project=project,
                          limit=deep)
    kw = [(r[0], r[1]) for r in keyword[:deep]]
    pool = load_hits(store.conn, [(cid, 0.0, ()) for cid in
                                  dict.fromkeys([c for c, _ in kw] + [c for c, _ in found.hits])])
    by_id = {h.chunk_id: h for h in pool}
    near = list(found.hits)
    if period:  # past the usual depth, only the named period's candidates
        kw, near = ([(cid, score) for i, (cid, score) in enumerate(ranked)
                     if i < depth or _within(by_id[cid], period)] for ranked in (kw, near))
    if mode == "vector":
        hits = [by_id[cid].replace(score=score * fusion.THIN_FACTOR if fusion.is_thin(by_id[cid].text)
                                   else score, sources=("vector",)) for cid, score in near]
    else:
        thin = {h.chunk_id for h in pool if fusion.is_thin(h.text)}
        fused = steps.rerank(store.conn, query, steps.fuse(store.conn, query, kw, near, thin),
                             thin)
        hits = [by_id[cid].replace(score=score, sources=sources)
                for cid, score, sources in fused if cid in by_id]
    hits.sort(key=lambda h: -h.score)  # stable: ties keep the fused order
    hits = _situations(store.conn, hits, query, past_summaries)
    if cluster_expansion and mode == "hybrid":
        hits = steps.expand(store.conn, hits, project)
    vectors = chunk_vectors(store.conn, [h.chunk_id for h in hits])
    chosen: list[Hit] = []
    # A named period's candidates are chosen first, then the others (each group by MMR).
    for group in _by_period(hits, period):
        chosen += fusion.select(group, limit - len(chosen), id_of=lambda h: h.chunk_id,
                                score_of=lambda h: h.score, text_of=_body, vectors=vectors,
                                time_of=_time)
    return finish(query, mode, chosen, max_tokens, max_chars, started,
                  units=(store.conn, query) if answers else None)


def finish(
    query: str,
    mode: str,
    hits: list[Hit],
    max_tokens: int,
    max_chars: int | None,
    started: float,
    notice: str | None = None,
    units: tuple[apsw.Connection, str] | None = None,
) -> Answer:
    """Render hits under the budget into an Answer (shared by all search modes).

    With ``units`` (the connection and the query), each hit is shown as its answer unit
    (`causantic.retrieval.answer`): compacted, with what followed it in its turn, one per
    turn; as many as the budget holds. Without, each hit's stored text."""
    if not hits:
        text = f'No relevant memory found for "{render.quote_query(query)}".'
        if notice:
            text = f"{notice}\n{text}"
        return Answer(query, mode, [], text, approx_tokens(text),
                      (time.perf_counter() - started) * 1000, notice)
    title = f'Found {{n}} results for "{render.quote_query(query)}"'
    budget = max_tokens - approx_tokens(title) - 10
    hits = freshness.mark(hits)  # from the stored texts, before units replace them
    if units is not None:
        hits = _as_units(units[0], hits, units[1], char_limit(budget, max_chars))
    bodies = [h.text for h in hits]
    items, used = render.fit(
        [(render.header(h, i + 1), body) for i, (h, body) in enumerate(zip(hits, bodies))],
        budget, None if max_chars is None else max_chars - len(title) - 40,
    )
    shown = hits[:used]
    body = render.join(items)
    # not str.format: the query may hold braces
    head = f'Found {len(shown)} result{"" if len(shown) == 1 else "s"} for "{render.quote_query(query)}"'
    if notice:
        head = f"{notice}\n{head}"
    text = f"{head} ({approx_tokens(body)} tokens):\n\n{body}"
    return Answer(query, mode, shown, text, approx_tokens(text),
                  (time.perf_counter() - started) * 1000, notice)


def _as_units(conn: apsw.Connection, hits: list[Hit], query: str, room: int) -> list[Hit]:
    """Hits as answer units, one per turn, until `room` characters are filled (`answer.fill`)."""
    # deferred: hook fast path: loaded only when this runs
    from causantic.retrieval.answer import fill

    return fill(conn, hits, query, room)


def _situations(conn: apsw.Connection, hits: list[Hit], query: str, past_summaries: bool
                ) -> list[Hit]:
    """For a "what came next" ``query``, compaction summaries replaced by the turns they
    retell (`answer.behind_summaries`) unless ``past_summaries`` is off: the first unit
    then shows what followed the situation itself."""
    if not past_summaries or not any(h.kind == "summary" for h in hits):
        return hits
    # deferred: hook fast path: loaded only when a summary is among the candidates
    from causantic.retrieval.answer import behind_summaries

    return behind_summaries(conn, hits, query)


def question_period(conn: apsw.Connection, query: str, project: str | None
                    ) -> tuple[str, str] | None:
    """The day or month a question names (``[start, end)`` stored times), or None. With its
    year, `named_period`'s; without ("on 3 June", "in June": `yearless_date`), the latest
    such day or month, no later than the newest stored chunk, in which the searched project
    has chunks (None when no year has any); relative to now ("yesterday", "last week"),
    `relative_period`'s."""
    period = named_period(query)
    named = None if period else yearless_date(query)
    if named is None:
        return period or relative_period(query)
    span = timeline.start_range(conn, project)
    if span is None:
        return None
    return timeline.first_holding(conn, periods_back(*named, newest=span[1], oldest=span[0]),
                                  project)


def _within(hit: Hit, period: tuple[str, str] | None) -> bool:
    """Whether a hit began inside ``period`` (stored times compare as strings)."""
    return period is not None and period[0] <= (hit.start_time or "") < period[1]


def _by_period(hits: list[Hit], period: tuple[str, str] | None) -> list[list[Hit]]:
    """The hits from ``period``, then the others, each in their order (one group without)."""
    if period is None:
        return [hits]
    return [[h for h in hits if _within(h, period)], [h for h in hits if not _within(h, period)]]


def _period_first(hits: list[Hit], period: tuple[str, str] | None) -> list[Hit]:
    """The hits from ``period`` first, then the others, each in their order."""
    return [h for group in _by_period(hits, period) for h in group]


def dedupe(hits: list[Hit], *, keep: int | None = None) -> list[Hit]:
    """Drop hits that repeat a better-ranked hit (read time only; nothing is deleted).

    Exact text (first block label aside) and near-identical text (word-shingle overlap) count
    as repeats; the oldest of a repeat keeps the better rank (see
    `fusion.drop_near_duplicates`). Stops once ``keep`` hits are kept.
    """
    # deferred: heavy: pulls numpy, only needed here
    from causantic.retrieval.fusion import drop_near_duplicates

    return drop_near_duplicates(hits, _body, lambda h: h.chunk_id, None, keep, time_of=_time)


def _time(hit: Hit) -> str:
    """The order in which repeats were written: the oldest is the original."""
    return hit.start_time or ""


def _body(hit: Hit) -> str:
    text = hit.text
    return text.split("\n", 1)[1] if text.startswith("[") and "\n" in text else text
