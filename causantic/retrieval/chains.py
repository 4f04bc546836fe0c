"""`recall` and `predict`: walk causal chains from search seeds into ordered narratives.

How an answer is built:

1. **Seeds**: the top `DEFAULT_SEEDS` (5) chunks `search` finds for the query (hybrid; it
   degrades to keywords with a notice when vectors are unavailable). A predict whose query
   asks what followed something (`answer.follows`: "after X, what came next", "once X was
   done") treats each match as the situation: its walk starts at the next turn of the
   seed's stream, and the seed is shown with the rest of its own turn (`answer.extract`,
   its conclusion first) and, as search's first unit, its turn's later matches folded in
   (`answer.fold_in`), with room in the chain for it whole and the next turn. A seed that
   is a compaction summary, which retells the turns before it, is first replaced by the
   best-matching chunk of the `answer.SUMMARY_TURNS` turns it follows (not when the
   question is about the compaction itself).
2. **Explore**: from every seed, follow edges backward (recall: what led here) or forward
   (predict: what came next): `next`, `brief`/`debrief` (sub-agents) and `continues`
   (resumed or compacted sessions). Adjacency, chunk sizes and step scores are fetched in
   batches and shared by all seeds, so a chunk reached from two seeds is loaded and scored
   once.
3. **Enumerate**: depth-first paths from each seed. A path never revisits a chunk (a
   sub-agent's brief/debrief pair is a cycle) nor re-enters a sub-agent it has left (which
   would tell the sub-agent's end before its start), holds at most `limit` chunks, and stops
   growing once it fills the token budget; each seed yields at most `MAX_CANDIDATES`
   complete paths from at most `MAX_EXPANSIONS` expanded chunks.
4. **Score**: each step by its similarity to the query: the share of the query's terms the
   chunk holds, each weighted by its idf in the store, blended half and half with its cosine similarity
   when the store holds vectors of the current model (numpy is imported only then), times `WEAK_STEP` for every weak edge (a gap of more than 30 minutes)
   crossed since the seed. Scores lie in [0, 1]. Each path is
   cut after its last step scoring at least `RELEVANT` (keeping at least two chunks), which
   trims tails where the subject no longer appears. A chain scores the median of its steps
   times n/(n+1): one strong chunk cannot carry a long irrelevant chain, and at an equal
   median the longer episode wins. The chain through search's best match is kept unless
   another seed's scores `CLEARLY_BETTER` times more (ties: better-ranked seed, longer chain).
   A recall also takes the best forward path from its seed: the resolution that followed.
5. **Render**: chunks are compacted (`compaction.compact`). The chain gets `CHAIN_SHARE` of the
   budget (at least `CHAIN_MIN_CHARS`), spent from the seed outward, nearest first on both
   sides, so the match itself is never the chunk that gets cut; the first chunk that does
   not fit whole is shortened at a block boundary (with a marker) and nothing beyond it is
   taken, so the narrative has no gaps. The text runs oldest first, each chunk under a
   session/time header; every seed the chain passes through is marked; a recall's match
   also shows how its turn ended. Search's other matches, as answer units, fill the rest
   of the budget (`Other matches:`, `Answer.others`), each without the paragraphs the text
   above it already shows (`answer.unseen`; a match with nothing new is left out).

When no chain of at least two chunks exists (or none fits), the answer is the search
results, as answer units, after one line saying so (mode `fallback`).
"""

from __future__ import annotations

import os
import re
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import apsw

from causantic.config import ANSWER_TOKENS
from causantic.errors import UsageError
from causantic.retrieval import answer, compaction, freshness, render
from causantic.retrieval.answer import units
from causantic.retrieval.fts import doc_counts, idf, query_terms, term_stems
from causantic.retrieval.projects import resolve_project
from causantic.retrieval.render import Answer, Hit
from causantic.retrieval.search import PRODUCT, Steps, search_with
from causantic.store import chunks as chunk_store
from causantic.store import edges as edge_store
from causantic.store.counts import max_rowid
from causantic.store.db import Store
from causantic.store.hits import load_hit
from causantic.tokens import approx_tokens, char_limit, tokens_for_chars
from causantic.wording import plural

BACKWARD = "backward"
FORWARD = "forward"
DEFAULT_SEEDS = 5
DEFAULT_LIMIT = 20  # most chunks in one chain (and most fallback results)
#: Another seed's chain replaces the best match's only when it scores this many times more.
CLEARLY_BETTER = 1.5
#: Rendered chunks are compacted (`compaction.compact`): about this share of their stored size.
COMPACT_SHARE = 0.35
#: The chain's share of the budget; search's other matches may fill the rest.
CHAIN_SHARE = 0.5
CHAIN_MIN_CHARS = 2800
MAX_CANDIDATES = 10  # complete paths per seed
MAX_EXPANSIONS = 200  # chunks expanded per seed
WEAK_STEP = 0.75  # score factor per weak edge (weight < 1) crossed since the seed
RELEVANT = 0.2  # a step scoring at least this is still on the query's subject
COS_FULL = 0.6  # MiniLM cosine at which a chunk counts as entirely on the query's subject
_MIN_SHORTENED_CHARS = 210  # do not bother showing less than ~60 tokens of a chunk

Scorer = Callable[[apsw.Connection, str, dict[str, str]], dict[str, float]]


@dataclass
class _Node:
    tokens: int
    stream: str  # session id + agent id: one line of conversation
    sub_agent: bool
    text: str


@dataclass
class _Graph:
    """The part of the edge graph reachable from the seeds, loaded in batches."""

    conn: apsw.Connection
    backward: bool
    nodes: dict[str, _Node] = field(default_factory=dict)
    adj: dict[str, list[tuple[str, float]]] = field(default_factory=dict)

    def expand(self, ids: Sequence[str]) -> None:
        """Load the neighbours (in walk direction) of chunks not expanded yet."""
        todo = [i for i in dict.fromkeys(ids) if i not in self.adj]
        for cid in todo:
            self.adj[cid] = []
        for a, b, weight in edge_store.neighbours(self.conn, todo, self.backward):
            self.adj[a].append((b, weight))

    def load(self, ids: Iterable[str]) -> None:
        """Load the rows of chunks not loaded yet."""
        todo = [i for i in dict.fromkeys(ids) if i not in self.nodes]
        for cid, tokens, session, agent, text in chunk_store.chain_nodes(self.conn, todo):
            self.nodes[cid] = _Node(tokens, f"{session}\x1f{agent}", bool(agent), text)


@dataclass(frozen=True)
class _Candidate:
    ids: tuple[str, ...]  # walk order: the seed first
    steps: tuple[float, ...]
    score: float
    seed_rank: int


def recall(
    store: Store,
    query: str,
    *,
    project: str | None = None,
    limit: int | None = None,
    max_tokens: int = ANSWER_TOKENS,
    max_chars: int | None = None,
) -> Answer:
    """How did we get here: the chain of chunks that led to what the query finds, oldest first.

    Parameters
    ----------
    store : an open store (read-only is enough).
    query : what to look for, e.g. "how did we fix the flaky PTY streaming".
    project : only chunks of this project (seeds and chain alike: edges never leave a project
        except `continues`, which links sessions of the same project).
    limit : most chunks in the chain (and most search results in a fallback); default
        DEFAULT_LIMIT, which the budget usually cuts first.
    max_tokens : answer budget in approximate tokens, headers included.
    max_chars : an optional hard cap on the answer's characters (for hooks).

    Raises
    ------
    UsageError : no project is called `project` (`projects.resolve_project`).
    """
    return walk(store, query, BACKWARD, project=project, limit=limit, max_tokens=max_tokens,
                max_chars=max_chars)


def predict(
    store: Store,
    query: str,
    *,
    project: str | None = None,
    limit: int | None = None,
    max_tokens: int = ANSWER_TOKENS,
    max_chars: int | None = None,
) -> Answer:
    """What came next: the chain of chunks that followed what the query finds, oldest first.

    Parameters are those of `recall`.
    """
    return walk(store, query, FORWARD, project=project, limit=limit, max_tokens=max_tokens,
                max_chars=max_chars)


def walk(
    store: Store,
    query: str,
    direction: str,
    *,
    project: str | None = None,
    limit: int | None = None,
    max_tokens: int = ANSWER_TOKENS,
    max_chars: int | None = None,
) -> Answer:
    """Seeds from hybrid search, then the best chain in `direction` (see the module docstring)."""
    return walk_seeded(store, query, direction, "hybrid", project=project, limit=limit,
                       max_tokens=max_tokens, max_chars=max_chars)


def walk_seeded(
    store: Store,
    query: str,
    direction: str,
    seed_mode: str,
    *,
    project: str | None = None,
    limit: int | None = None,
    max_tokens: int = 4000,
    max_chars: int | None = None,
    search_steps: Steps = PRODUCT,
) -> Answer:
    """`walk` with its seeds from search in ``seed_mode`` (keyword, vector or hybrid), whose
    hybrid mode runs ``search_steps``.

    The seam `bench/variants.py` uses to compare seedings; the product seeds from hybrid
    search (which degrades to keywords by itself) with `search.PRODUCT`.
    """

    if direction not in (BACKWARD, FORWARD):
        raise UsageError(f"direction must be {BACKWARD!r} or {FORWARD!r}")
    started = time.perf_counter()
    limit = limit or DEFAULT_LIMIT
    project = resolve_project(store.conn, project)
    # A "what came next" question (`answer.follows`): the match is the situation and the
    # answer came after it, so each seed's walk starts at the next turn of its stream.
    cued = direction == FORWARD and answer.follows(query)
    found = search_with(search_steps, store, query, project=project,
                        limit=max(DEFAULT_SEEDS, limit), max_tokens=1_000_000, mode=seed_mode,
                        answers=False, past_summaries=not cued)
    notice = found.notice
    if not found.results:
        text = f'No relevant memory found for "{render.quote_query(query)}".'
        if notice:
            text = f"{notice}\n{text}"
        return _result(query, "fallback", direction, [], text, started, notice,
                       cap=char_limit(max_tokens, max_chars))
    seed_hits = found.results[:DEFAULT_SEEDS]
    budget = max_tokens if max_chars is None else min(max_tokens, tokens_for_chars(max_chars))
    if cued and answer.asks_past_summaries(query):
        seed_hits = _behind_summaries(store, query, seed_hits)
    starts = _next_turns(store.conn, [h.chunk_id for h in seed_hits]) if cued else {}
    graph = _Graph(store.conn, backward=direction == BACKWARD)
    _explore(graph, [h.chunk_id for h in seed_hits] + list(starts.values()), depth=limit)
    scores = default_scorer(store)(
        store.conn, query, {cid: n.text for cid, n in graph.nodes.items()}
    )
    best: dict[tuple[str, ...], _Candidate] = {}
    for rank, hit in enumerate(seed_hits):
        seed = hit.chunk_id
        if seed in starts:  # the seed, then a path from the next turn's first chunk
            start, own = starts[seed], scores.get(seed, 0.0)
            cands = [_Candidate((seed, *c.ids), (own, *c.steps),
                                chain_score((own, *c.steps)), rank)
                     for c in _candidates(graph, scores, start, rank, limit,
                                          int(budget / COMPACT_SHARE))]
            if not cands:
                steps = (own, scores.get(start, 0.0))
                cands = [_Candidate((seed, start), steps, chain_score(steps), rank)]
        else:
            cands = _candidates(graph, scores, seed, rank, limit, int(budget / COMPACT_SHARE))
        for cand in cands:
            old = best.get(cand.ids)
            if old is None or cand.score > old.score:
                best[cand.ids] = cand
    after: tuple[str, ...] = ()
    scores_after: dict[str, float] = {}
    if direction == BACKWARD:
        # A recall also tells the resolution that followed the match: the forward path from
        # its seed (the best match's, when it has no chain behind it) while it stays on topic.
        if not any(c.seed_rank == 0 for c in best.values()):
            first = seed_hits[0].chunk_id
            alone = _Candidate((first,), (scores.get(first, 0.0),), 0.0, 0)
            best[alone.ids] = alone
        chosen = _through_best_match(list(best.values()))
        after, scores_after = _resolution(store, query, chosen.ids[0], limit, budget)
        if len(chosen.ids) + len(after) < 2:
            del best[chosen.ids]
    if not best:
        linked = any(graph.adj.get(h.chunk_id) for h in seed_hits)
        return _fallback(store, query, direction, found.results[:limit], max_tokens, max_chars,
                         notice, started, too_small=linked)
    chosen = _through_best_match(list(best.values()))
    if direction == BACKWARD and not after:
        after, scores_after = _resolution(store, query, chosen.ids[0], limit, budget)
    seed_ids = {h.chunk_id for h in seed_hits}
    sources = {h.chunk_id: h.sources for h in seed_hits}

    def hit_of(cid: str, step: float) -> Hit | None:
        hit = load_hit(store.conn, cid)
        if hit is None:  # read moments ago; a concurrent `forget` dropped it: leave it out
            return None
        if cid in seed_ids:
            return hit.replace(score=step, sources=sources[cid], seed=True)
        return hit.replace(score=step, sources=("chain",))

    hits = [h for cid, step in zip(chosen.ids, chosen.steps) if (h := hit_of(cid, step))]
    following: list[Hit] = []
    for cid in after:  # up to the first chunk the chain already tells: no gaps, no repeats
        if cid in chosen.ids:
            break
        if (later := hit_of(cid, scores_after.get(cid, 0.0))) is not None:
            following.append(later)
    skipped = len(chosen.ids) > 1 and starts.get(chosen.ids[0]) == chosen.ids[1] and \
        bool(hits) and hits[0].chunk_id == chosen.ids[0]
    # a seed shown with the rest of its turn takes in search's later matches of that turn
    rest = [h for h in found.results if h.chunk_id not in chosen.ids] if skipped else []
    text, shown = _render_chain(store.conn, query, direction, hits, max_tokens, max_chars,
                                notice, following, skipped, rest)
    if not shown:
        return _fallback(store, query, direction, found.results[:limit], max_tokens, max_chars,
                         notice, started, too_small=True)
    text, others = _other_matches(store.conn, query, text, shown, found.results,
                                  char_limit(max_tokens, max_chars))
    return _result(query, "chain", direction, shown, text, started, notice, chosen.score,
                   cap=char_limit(max_tokens, max_chars), others=others)


def _behind_summaries(store: Store, query: str, seeds: list[Hit]) -> list[Hit]:
    """Seeds that are compaction summaries replaced by what they summarise.

    A summary (``[Summary]``, written when a session was compacted) retells the turns before
    it, so a question about what followed something it mentions matches the retelling
    rather than the turn where it happened. Such a seed is replaced by the chunk of the
    `answer.SUMMARY_TURNS` turns before it that best matches the query (when any matches).
    """
    conn = store.conn
    where = answer.positions(conn, [h.chunk_id for h in seeds if h.text.startswith("[Summary]")])
    if not where:
        return seeds
    keys = {cid: [(p[0], p[1], t) for t in range(max(0, p[2] - answer.SUMMARY_TURNS), p[2])]
            for cid, p in where.items()}
    by_turn = answer.turns(conn, [k for ks in keys.values() for k in ks])
    texts = {cid: text for chunks in by_turn.values() for cid, text in chunks
             if not text.startswith("[Summary]")}
    scores = default_scorer(store)(conn, query, texts)
    out: list[Hit] = []
    taken = {h.chunk_id for h in seeds}
    for h in seeds:
        earlier = [cid for k in keys.get(h.chunk_id, ()) for cid, _ in by_turn.get(k, ())
                   if cid in texts and cid not in taken]
        best = max(earlier, key=lambda c: scores.get(c, 0.0), default=None)
        if best is not None and scores.get(best, 0.0) > 0 and (hit := load_hit(conn, best)):
            taken.add(best)
            out.append(hit.replace(score=h.score, sources=h.sources))
        else:
            out.append(h)
    return out


def _next_turns(conn: apsw.Connection, seeds: Sequence[str]) -> dict[str, str]:
    """seed -> the first chunk of the next turn of its stream (absent: none follows)."""
    where = answer.positions(conn, seeds)
    nxt = {cid: (p[0], p[1], p[2] + 1) for cid, p in where.items()}
    firsts = {key: chunks[0][0] for key, chunks in answer.turns(conn, list(nxt.values())).items()
              if chunks}
    return {cid: firsts[key] for cid, key in nxt.items() if key in firsts}


def _resolution(store: Store, query: str, seed: str, limit: int, budget: int
                ) -> tuple[tuple[str, ...], dict[str, float]]:
    """What followed a recall's match: its best forward path without the seed, and the
    step scores."""
    graph = _Graph(store.conn, backward=False)
    _explore(graph, [seed], depth=limit)
    scores = default_scorer(store)(
        store.conn, query, {cid: n.text for cid, n in graph.nodes.items()}
    )
    cands = _candidates(graph, scores, seed, 0, limit, int(budget / COMPACT_SHARE))
    if not cands:
        return (), {}
    return max(cands, key=lambda c: (c.score, len(c.ids))).ids[1:], scores


def _through_best_match(cands: list[_Candidate]) -> _Candidate:
    """The chain through search's best match, unless another seed's is clearly better.

    Search ranks the seeds with the whole query; the chain score only sees each step's
    share of the query's words and similarity, so a long chain of loosely related chunks
    could outscore the episode of the best match (bench.answers: recall on recall questions
    0.65 -> see README). Another seed wins only with CLEARLY_BETTER times the score.
    """
    def key(c: _Candidate) -> tuple[float, int, int]:
        return (c.score, -c.seed_rank, len(c.ids))

    overall = max(cands, key=key)
    first = [c for c in cands if c.seed_rank == 0]
    if not first:
        return overall
    own = max(first, key=key)
    return overall if overall.score >= CLEARLY_BETTER * own.score else own


def _explore(graph: _Graph, seeds: list[str], depth: int) -> None:
    """Load every chunk within `depth - 1` edges of a seed (at most MAX_EXPANSIONS per seed)."""
    graph.load(seeds)
    # Each seed keeps its own visited set (a chunk near one seed may be at another's depth
    # limit); adjacency and chunk rows are shared, so every level is one batch for all seeds.
    reached = {s: {s} for s in seeds}
    frontiers = {s: [s] for s in seeds}
    expanded = dict.fromkeys(seeds, 0)
    for _ in range(depth - 1):
        todo = [n for f in frontiers.values() for n in f]
        if not todo:
            break
        graph.expand(todo)
        for seed, frontier in frontiers.items():
            nxt: list[str] = []
            for node in frontier:
                if expanded[seed] >= MAX_EXPANSIONS:
                    break
                expanded[seed] += 1
                for b, _ in graph.adj.get(node, ()):
                    if b not in reached[seed]:
                        reached[seed].add(b)
                        nxt.append(b)
            frontiers[seed] = nxt
        graph.load(n for f in frontiers.values() for n in f)


def _candidates(
    graph: _Graph, scores: dict[str, float], seed: str, rank: int, limit: int, budget: int
) -> list[_Candidate]:
    """Every complete depth-first path from one seed, cut after its last relevant step."""
    if seed not in graph.nodes:
        return []
    paths: list[tuple[tuple[str, ...], tuple[float, ...]]] = []
    path, steps, on_path = [seed], [scores.get(seed, 0.0)], {seed}
    left: set[str] = set()  # sub-agent streams the path has left: never re-entered
    expansions = 0

    def allowed(here: str, there: str) -> bool:
        if there in on_path or there not in graph.nodes:
            return False
        a, b = graph.nodes[here], graph.nodes[there]
        return a.stream == b.stream or not (b.sub_agent and b.stream in left)

    def dfs(node: str, tokens: int, factor: float) -> None:
        nonlocal expansions
        expansions += 1
        nbrs = [(b, w) for b, w in graph.adj.get(node, ()) if allowed(node, b)]
        if not nbrs or len(path) >= limit or tokens >= budget or expansions > MAX_EXPANSIONS:
            paths.append((tuple(path), tuple(steps)))
            return
        nbrs.sort(key=lambda bw: (-bw[1] * scores.get(bw[0], 0.0), -bw[1], bw[0]))
        for b, weight in nbrs:
            if len(paths) >= MAX_CANDIDATES:
                return
            f = factor * (WEAK_STEP if weight < 1.0 else 1.0)
            here = graph.nodes[node]
            leaving = here.sub_agent and here.stream != graph.nodes[b].stream and \
                here.stream not in left
            if leaving:
                left.add(here.stream)
            path.append(b)
            steps.append(scores.get(b, 0.0) * f)
            on_path.add(b)
            dfs(b, tokens + graph.nodes[b].tokens, f)
            path.pop()
            steps.pop()
            on_path.discard(b)
            if leaving:
                left.discard(here.stream)

    dfs(seed, graph.nodes[seed].tokens, 1.0)
    out = []
    for ids, s in paths:
        # The chain ends at its last relevant step: the chunks that led to (or followed) the
        # match up to where the query's subject stops appearing. Always at least two chunks.
        # It is judged on the whole path, so that every candidate is compared over about the
        # same budget rather than a short, dense fragment beating a long, relevant episode.
        if len(ids) >= 2:
            last = max((i for i in range(1, len(s)) if s[i] >= RELEVANT), default=1)
            out.append(_Candidate(ids[: last + 1], s[: last + 1], chain_score(s), rank))
    return out


def chain_score(steps: Sequence[float]) -> float:
    """Median step score times n/(n+1): robust to one outlier, mildly favouring longer chains."""
    n = len(steps)
    return statistics.median(steps) * n / (n + 1) if n else 0.0


# -- step scoring -------------------------------------------------------------------------


def default_scorer(store: Store) -> Scorer:
    """Keyword coverage, blended with vector similarity when the store holds current vectors."""
    # deferred: heavy: pulls numpy, only needed here
    from causantic.retrieval.vector import vectors_state

    return keyword_scores if vectors_state(store.conn) is not None else blended_scores


def blended_scores(conn: apsw.Connection, query: str, texts: dict[str, str]) -> dict[str, float]:
    """Half keyword coverage, half cosine similarity (``COS_FULL`` or more counts as 1).

    Chunks without a current vector, or any failure to embed the query, leave the keyword
    coverage alone: the vector side never breaks a chain.
    """
    # deferred: heavy: pulls numpy, only needed here
    from causantic.retrieval.vector import VectorsUnavailable, query_vector, similarities

    keyword = keyword_scores(conn, query, texts)
    try:
        cosines = similarities(conn, list(texts), query_vector(query))
    except VectorsUnavailable:
        return keyword
    out = dict(keyword)
    for cid, cos in cosines.items():
        out[cid] = 0.5 * keyword.get(cid, 0.0) + 0.5 * min(1.0, max(0.0, cos) / COS_FULL)
    return out


def keyword_scores(conn: apsw.Connection, query: str, texts: dict[str, str]) -> dict[str, float]:
    """The share of the query's terms each chunk holds, each term weighted by its rarity.

    A term's weight is BM25's idf, ``log(1 + (N - n + 0.5) / (n + 0.5))`` for n of N stored
    chunks holding it (from the FTS vocabulary: about a millisecond at 100,000 chunks), kept
    positive so that small stores still rank. Terms match the loaded texts at word starts,
    also by their stem (`keys` finds `key`); matching in Python costs far less than an FTS5
    query restricted to these chunks, which scans every term's whole doclist. Chunks holding
    no term are absent (score 0).
    """
    terms = query_terms(query)[:32]
    if not terms or not texts:
        return {}
    stems = term_stems(conn, terms)
    n = max_rowid(conn)
    weights = [idf(c, n) for c in doc_counts(conn, stems)]
    total = sum(weights)
    forms = _term_forms(terms, stems)
    out: dict[str, float] = {}
    if total <= 0:
        return out
    for cid, text in texts.items():
        low = text.lower()
        score = sum(w for w, f in zip(weights, forms) if _holds(low, f))
        if score > 0:
            out[cid] = score / total
    return out


def _term_forms(terms: list[str], stems: list[list[str]]) -> list[list[str] | re.Pattern[str]]:
    """Per term: the prefixes that find it at a word start, or a regex for a phrase."""
    out: list[list[str] | re.Pattern[str]] = []
    for term, stem in zip(terms, stems):
        words = term.split()
        if len(words) > 1:  # an identifier like build_zipapp.py, split into words
            out.append(re.compile(r"(?<!\w)" + r"\W+".join(re.escape(w) for w in words)))
            continue
        forms = {term}
        if len(stem) == 1:
            common = os.path.commonprefix([term, stem[0]])
            if len(common) >= 3:
                forms.add(common)
        for suffix in ("ing", "ed", "es", "s"):  # where porter's stem is no prefix (keys/kei)
            if term.endswith(suffix) and len(term) - len(suffix) >= 3:
                forms.add(term[: -len(suffix)])
        # A form that extends another adds nothing to a prefix search.
        out.append(sorted(f for f in forms if not any(g != f and f.startswith(g) for g in forms)))
    return out


def _holds(text: str, form: list[str] | re.Pattern[str]) -> bool:
    """Whether lower-cased text holds a term at a word start (str.find is far faster than re)."""
    if isinstance(form, re.Pattern):
        return form.search(text) is not None
    for prefix in form:
        i = text.find(prefix)
        while i >= 0:
            if i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"):
                return True
            i = text.find(prefix, i + 1)
    return False


# -- rendering ----------------------------------------------------------------------------


def _title(query: str, direction: str, hits: Sequence[Hit]) -> str:
    sessions = len({h.session_id for h in hits})
    what = "what led to it" if direction == BACKWARD else "what came next"
    return (
        f'Chain for "{render.quote_query(query)}" ({what}): {plural(len(hits), "chunk")} from '
        f'{plural(sessions, "session")}, oldest first.'
    )


def _render_chain(
    conn: apsw.Connection,
    query: str,
    direction: str,
    walk_order: list[Hit],
    max_tokens: int,
    max_chars: int | None,
    notice: str | None,
    following: Sequence[Hit] = (),
    skipped: bool = False,
    matches: Sequence[Hit] = (),
) -> tuple[str, list[Hit]]:
    """Spend the budget from the seed outward; return the text and the shown hits, oldest first.

    ``walk_order`` starts at the seed; ``following`` (a recall's resolution) continues
    forward from it, and the budget goes to the two sides in turn, nearest first. Chunks are
    shown compacted (`compaction.compact`: tool calls and output cut hard); a recall's match
    without a resolution path is shown with the rest of its turn (`answer.extract`), and so
    is a predict's match whose path ``skipped`` to the next turn. That seed is shown as
    search's first unit is: the later ``matches`` (search's, in rank order) of its turn fold
    into it (`answer.fold_in`, named in its `Hit.also`), and the chain's room holds it whole
    and `answer.FOLLOW_CHARS` more for the next turn.
    """

    limit = char_limit(max_tokens, max_chars)
    # search marked its own results (the seed, other matches); the chain's other chunks are new
    walk_order, following = freshness.mark(walk_order), freshness.mark(following)
    lead = (f"{notice}\n" if notice else "") + _title(query, direction, walk_order) + "\n\n"
    # The title's counts may grow by a few digits; a small budget goes to the chain whole.
    room = max(int(limit * CHAIN_SHARE), min(limit, CHAIN_MIN_CHARS)) - len(lead) - 12
    terms = compaction.terms_of(query)
    n = len(walk_order) + len(following)
    texts = [compaction.compact(h.text, terms) for h in walk_order]
    if (direction == BACKWARD or skipped) and walk_order:
        seed = walk_order[0].chunk_id
        turn = _turn_of(conn, seed)
        path = {h.chunk_id for h in following}
        if skipped or not following:
            # a recall's match without a resolution path, or a predict's match whose path
            # starts at the next turn: the seed shows how its own turn went on
            texts[0] = answer.extract(turn, seed, terms, before=False) or texts[0]
        elif turn and turn[-1][0] not in path | {seed}:
            # a recall's match with how its turn ended, unless the path shows it
            texts[0] = answer.with_conclusion(texts[0], turn[-1][1], terms)
        if skipped:  # as search's first unit: later matches folded, room for the next turn
            texts[0], first = _folded(texts[0], walk_order[0], turn, matches, terms)
            walk_order = [first, *walk_order[1:]]
            whole = len(render.header(first, n)) + 1 + len(texts[0])
            room = max(room, min(limit - len(lead) - 12, whole + answer.FOLLOW_CHARS))
    # Budget order: the seed, then the two sides alternately, nearest first.
    sides = [(0, walk_order[0], texts[0])] if walk_order else []
    back = [(-1, h, t) for h, t in zip(walk_order[1:], texts[1:])]
    fwd = [(1, h, compaction.compact(h.text, terms)) for h in following]
    for i in range(max(len(back), len(fwd))):
        sides += ([fwd[i]] if i < len(fwd) else []) + ([back[i]] if i < len(back) else [])
    taken: list[tuple[int, Hit, str]] = []
    used = 0
    for side, hit, text in sides:
        head = render.header(hit, n)  # the widest index this chain can have
        sep = len(render.SEPARATOR) if taken else 0
        whole = len(head) + 1 + len(text)
        if used + sep + whole <= room:
            taken.append((side, hit, text))
            used += sep + whole
            continue
        left = room - used - sep - len(head) - 1
        if left >= _MIN_SHORTENED_CHARS:
            taken.append((side, hit, render.shorten(text, left)))
        break
    before = [(h, t) for side, h, t in taken if side <= 0]
    after = [(h, t) for side, h, t in taken if side > 0]
    if direction == BACKWARD:
        before = before[::-1]
    ordered = before + after
    shown = [h for h, _ in ordered]
    bodies = [t for _, t in ordered]
    items = [render.block(render.header(h, i + 1), b) for i, (h, b) in enumerate(zip(shown, bodies))]
    head = (f"{notice}\n" if notice else "") + _title(query, direction, shown)
    return f"{head}\n\n{render.join(items)}", shown


def _folded(text: str, seed: Hit, turn: Sequence[tuple[str, str]], matches: Sequence[Hit],
            terms: Sequence[str]) -> tuple[str, Hit]:
    """A seed's text with its turn's later ``matches`` folded in, as search's first unit
    holds them (`answer.fill`), and the seed naming them (`Hit.also`)."""
    mine = {cid for cid, _ in turn} - {seed.chunk_id}
    also = list(seed.also)
    for m in matches:
        if m.chunk_id in mine:
            grown = answer.fold_in(text, compaction.compact(m.text, terms))
            if grown != text:
                text = grown
                also.append(m.chunk_id)
    return text, seed.replace(also=tuple(also)) if also else seed


def _turn_of(conn: apsw.Connection, chunk_id: str) -> list[tuple[str, str]]:
    """[(chunk id, text)] of the turn holding a chunk, in stream order ([] if it is gone)."""
    where = answer.positions(conn, [chunk_id])
    if chunk_id not in where:
        return []
    key = where[chunk_id][:3]
    return answer.turns(conn, [key]).get(key, [])


OTHER_MATCHES = "Other matches:"
#: Budget left after the chain below this many characters is not worth another match.
_MIN_OTHER_CHARS = 600


def _other_matches(conn: apsw.Connection, query: str, text: str, shown: list[Hit],
                   found: Sequence[Hit], limit: int) -> tuple[str, list[Hit]]:
    """Fill the budget the chain left with search's other matches, as answer units.

    Returns the text and the matches it shows (JSON ``other_matches``; ``results`` stays
    the chain alone).

    A chain tells one episode; when it is short, the rest of the budget shows what search
    found elsewhere (never a chunk the chain holds), so a recall or predict answer holds at
    least what a search would have shown after its best match.
    """

    room = limit - len(text) - len(render.SEPARATOR) - len(OTHER_MATCHES) - 2
    if room < _MIN_OTHER_CHARS:
        return text, []
    inside = {cid for h in shown for cid in h.chunk_ids}
    rest = [h for h in found if h.chunk_id not in inside]
    if not rest:
        return text, []
    # A unit shows its turn's other messages, so it may repeat what the chain (or an earlier
    # match) shows: those paragraphs are left out, and a match with nothing new is skipped.
    # Units past the room are never shown: stop once it is filled.
    seen_text = text
    kept: list[Hit] = []
    for h, unit in units(conn, rest, query):
        if len(seen_text) - len(text) > room:
            break
        new = answer.unseen(unit, seen_text)
        if new:
            kept.append(h.replace(text=new))
            seen_text += "\n\n" + new
    rest = kept
    items, used = render.fit([(render.header(h, len(shown) + i + 1), h.text)
                              for i, h in enumerate(rest)], tokens_for_chars(room), room)
    if not items:
        return text, []
    return f"{text}{render.SEPARATOR}{OTHER_MATCHES}\n\n{render.join(items)}", rest[:used]


def _fallback(
    store: Store,
    query: str,
    direction: str,
    hits: list[Hit],
    max_tokens: int,
    max_chars: int | None,
    notice: str | None,
    started: float,
    too_small: bool = False,
) -> Answer:
    what = "before" if direction == BACKWARD else "after"
    if too_small:
        line = ("No chain fits the budget (the matches alone fill it); "
                "showing search results instead.")
    else:
        line = (f'No chain found: nothing is linked {what} the matches for "{render.quote_query(query)}"; '
                "showing search results instead.")
    lead = (f"{notice}\n" if notice else "") + line
    limit = char_limit(max_tokens, max_chars)

    hits = [h.replace(text=text) for h, text in units(store.conn, hits, query)]
    items, used = render.fit(
        [(render.header(h, i + 1), h.text) for i, h in enumerate(hits)],
        max_tokens,
        max_chars=max(0, limit - len(lead) - 2),
    )
    text = f"{lead}\n\n{render.join(items)}" if items else lead
    return _result(query, "fallback", direction, hits[:used], text, started, notice, cap=limit)


def _result(
    query: str,
    mode: str,
    direction: str,
    hits: list[Hit],
    text: str,
    started: float,
    notice: str | None,
    score: float = 0.0,
    cap: int | None = None,
    others: list[Hit] | None = None,
) -> Answer:
    if cap is not None:  # only tiny budgets are cut here: lead lines alone
        text = render.cap(text, cap)
    return Answer(query, mode, hits, text, approx_tokens(text),
                  (time.perf_counter() - started) * 1000, notice, direction, score, others)


