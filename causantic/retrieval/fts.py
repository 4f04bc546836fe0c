"""Keyword search over FTS5 with BM25, built from tokens so user text never breaks MATCH.

User text reaches FTS5 only through `fts_query`: every word (or identifier-like run such as
`build_zipapp.py`, `SQLITE_BUSY`, `daytona-pty`) becomes a double-quoted phrase, and phrases
are OR-ed so long natural-language questions still match; BM25 ranks chunks that contain
more (and rarer) terms first. Quotes, parentheses, `NEAR`, `*`, `-`, `column:` prefixes and
any unicode are therefore plain text. English stop words are dropped unless nothing else is
left.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import apsw

from causantic.store import fts as fts_store
from causantic.store.counts import max_rowid
from causantic.store.hits import chunk_ids
from causantic.store.sql import data_version

_TOKEN_RE = re.compile(r"\w+(?:[-./:@]\w+)*")
_WORD_RE = re.compile(r"\w+")
STOP_WORDS = frozenset(
    """a an and are as at be but by can could did do does for from had has have how i if in
    into is it its just me my no not of on or our so that the their them then there these they
    this to us was we were what when where which while who why will with would you your yours
    about again also any been being both each few more most other same some such than too very
    should now ok okay please thanks hey let lets let's get got make made time way""".split()
)


@dataclass(frozen=True)
class KeywordHit:
    chunk_id: str
    rowid: int
    score: float  # higher is better (negated bm25)


def query_terms(text: str) -> list[str]:
    """The phrases a query searches for, lower-cased, stop words dropped when possible."""
    phrases: list[str] = []
    for m in _TOKEN_RE.finditer(text.lower()):
        words = _WORD_RE.findall(m.group(0))
        phrase = " ".join(words)
        if phrase and phrase not in phrases:
            phrases.append(phrase)
    kept = [p for p in phrases if " " in p or (p not in STOP_WORDS and len(p) > 1)]
    return kept or phrases


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression over the `text` column, or None if nothing is searchable."""
    return _match(query_terms(text))


def _match(phrases: list[str], project: str | None = None) -> str | None:
    if not phrases:
        return None
    body = " OR ".join('"' + p.replace('"', "") + '"' for p in phrases[:32])
    expr = f"text : ({body})"
    if project:
        expr += " AND " + _in_project(project)
    return expr


def _in_project(project: str) -> str:
    """The FTS5 expression for a project's chunks. A NUL ends an FTS5 string early
    ("unterminated string"): it is dropped with the quotes."""
    return 'project : "' + project.replace('"', "").replace("\x00", "") + '"'


def keyword_search(
    conn: apsw.Connection, query: str, *, project: str | None = None, limit: int = 50
) -> list[KeywordHit]:
    """Chunks matching the query by BM25, best first; [] when nothing matches.

    Phrases are looked up in the FTS vocabulary first: phrases that occur nowhere are
    dropped, and the most common ones are dropped while rarer ones remain (their BM25
    weight is near zero anyway, and scoring every chunk that contains them is what makes a
    large store slow). When even the rarest phrase is that common (a one-word query like
    "git" in a big store), only the newest chunks are ranked, about ``RANK_BUDGET`` matches:
    such words cannot tell old chunks apart, and recent work is the better guess. The
    project filter is part of the FTS5 query, so it costs a posting-list intersection
    rather than a row read per match.
    """
    phrases, postings = _informative(conn, query_terms(query))
    match = _match(phrases, project)
    if match is None:
        return []
    rows = fts_store.bm25_ranked(conn, match, floor=_newest_floor(conn, postings),
                                 limit=limit * 2 if project else limit)
    if not rows:
        return []
    ranks = {rowid: rank for rowid, rank in rows}
    found = chunk_ids(conn, list(ranks))
    hits = [
        KeywordHit(cid, rowid, -ranks[rowid])
        for rowid, cid, proj in found
        if project is None or proj == project  # the FTS filter matches tokens; be exact
    ]
    hits.sort(key=lambda h: (-h.score, h.rowid))
    return hits[:limit]


def query_idf(conn: apsw.Connection, query: str) -> float:
    """The summed IDF of the query's search terms, as FTS5's bm25() weighs them.

    A term found nowhere counts with the highest IDF: a query about something the store never
    mentions is not well answered by chunks matching its other words.
    """
    total = _max_rowid(conn)
    return sum(idf(n, total, fts5=True) for n in doc_counts(conn, term_stems(conn, query_terms(query))))


def idf(df: int, total: int, *, fts5: bool = False) -> float:
    """The inverse document frequency of a term that `df` of `total` chunks hold.

    BM25's (Lucene's) form, ``log(1 + (N - n + 0.5) / (n + 0.5))``, never negative, so a
    term most chunks hold still weighs a little: the term weights of chains' keyword scores
    and of the prompt hook's term coverage. ``fts5``: the form FTS5's bm25() weighs terms
    with, ``log((N - n + 0.5) / (n + 0.5))`` floored at 1e-6, to compare with bm25() scores.
    """
    if fts5:
        return max(1e-6, math.log((total - df + 0.5) / (df + 0.5)))
    return math.log(1 + max(0.0, total - df + 0.5) / (df + 0.5))


def term_stems(conn: apsw.Connection, phrases: Sequence[str]) -> list[list[str]]:
    """Per phrase, the index's stems of its words (the FTS table's tokenizer)."""
    tokenize = _tokenizer(conn)
    return [[t[2] for t in tokenize(phrase.encode(), apsw.FTS5_TOKENIZE_QUERY, None)]
            for phrase in phrases]


def doc_counts(conn: apsw.Connection, stems: Sequence[Sequence[str]]) -> list[int]:
    """Per phrase (given as its stems), how many chunks hold it: its rarest word's count in
    the FTS vocabulary (0 for a phrase without words)."""
    counts = _stem_counts(conn, [s for words in stems for s in words])
    return [min((counts[s] for s in words), default=0) for words in stems]


# Scoring stops growing when the phrases kept match this many chunk postings in all.
POSTINGS_BUDGET = 10_000
# Matches ranked at most (about): ranking costs ~1 microsecond a match, mostly for reading
# each chunk's length, so ~6k matches keep that part of a query under ~7 ms.
RANK_BUDGET = 6_000


def _informative(conn: apsw.Connection, phrases: list[str]) -> tuple[list[str], int]:
    """The phrases worth matching, rarest first, within a postings budget (see above),
    and how many chunk postings they have in all (an upper bound on the matches)."""
    df = dict(zip(phrases, doc_counts(conn, term_stems(conn, phrases))))
    present = sorted((p for p in phrases if df[p] > 0), key=lambda p: (df[p], phrases.index(p)))
    if not present:
        return [], 0
    total = _max_rowid(conn)
    budget = max(POSTINGS_BUDGET, total // 10)
    kept: list[str] = []
    used = 0
    for p in present:
        if kept and (used + df[p] > budget or df[p] > total // 2):
            break
        kept.append(p)
        used += df[p]
    return kept, used


def _newest_floor(conn: apsw.Connection, postings: int) -> int | None:
    """The lowest chunk rowid to rank so that about RANK_BUDGET of ``postings`` remain,
    assuming the matches spread evenly over rowids (which grow with ingest time)."""
    if postings <= RANK_BUDGET:
        return None
    top = _max_rowid(conn)
    return max(1, int(top - top * RANK_BUDGET / postings))


def _max_rowid(conn: apsw.Connection) -> int:
    return max_rowid(conn) or 1


_df_memo: dict[str, tuple[tuple[object, ...], int]] = {}


def _state(conn: apsw.Connection) -> tuple[object, ...]:
    """What a remembered count is valid for: this connection's database as it is now (its
    own writes and other connections' commits both change it)."""
    return (id(conn), conn.filename, conn.total_changes(), data_version(conn))


def _doc_count(conn: apsw.Connection, stem: str) -> int:
    """How many chunks hold one stem (see `_stem_counts`)."""
    return _stem_counts(conn, [stem])[stem]


def _stem_counts(conn: apsw.Connection, stems: Sequence[str]) -> dict[str, int]:
    """stem -> how many chunks hold it (fts5vocab walks the term's whole posting list, ~3 ms
    for a word in 90,000 chunks, so counts are remembered until the database changes)."""
    if not stems:
        return {}
    state = _state(conn)
    out: dict[str, int] = {}
    missing: list[str] = []
    for stem in dict.fromkeys(stems):
        memo = _df_memo.get(stem)
        if memo is not None and memo[0] == state:
            out[stem] = memo[1]
        else:
            missing.append(stem)
    if missing:
        found = (fts_store.vocab_doc_counts(conn, missing) if len(missing) > 1
                 else {missing[0]: fts_store.vocab_doc_count(conn, missing[0])})
        if len(_df_memo) + len(missing) > 4096:
            _df_memo.clear()
        for stem in missing:
            out[stem] = found.get(stem, 0)
            _df_memo[stem] = (state, out[stem])
    return out


#: A search term held by at least this share of the searched project's chunks tells none of
#: them apart; the vector query of a project-scoped search leaves it out (`vector_text`).
PROJECT_WIDE_SHARE = 0.9
#: Words of the block labels (`causantic.blocks`: ``[User]``, ``[Tool:Bash]``, ``[Result:Read]``
#: ...): nearly every chunk holds some of them as structure, which says nothing about the
#: same word in a question ("which tools ...", "the user's ...").
_LABEL_WORDS = "user assistant summary command expansion tool result"

_project_memo: dict[str, tuple[tuple[object, ...], int]] = {}


def project_wide_terms(conn: apsw.Connection, query: str, project: str) -> list[str]:
    """The query's search terms held by at least `PROJECT_WIDE_SHARE` of the project's chunks.

    In a conversation these are the speakers' names ("What does Melanie do to destress?"
    in Melanie's chats), in a code base perhaps its own name; never a block label's word. A
    term the whole store holds in fewer chunks is rejected on its (remembered) vocabulary
    count; only the others cost a count of the project's chunks that lack it.
    """
    phrases = query_terms(query)
    if not phrases:
        return []
    scope = _in_project(project)
    state = _state(conn)
    memo = _project_memo.get(project)
    if memo is None or memo[0] != state:
        if len(_project_memo) > 256:
            _project_memo.clear()
        memo = _project_memo[project] = (state, fts_store.match_count(conn, scope, 10**9))
    need = math.ceil(PROJECT_WIDE_SHARE * memo[1])
    if need == 0:
        return []
    # Counting the project's chunks *without* the term stops after the few it may lack,
    # where counting those with it would walk every match of a common word.
    spare = memo[1] - need
    stems = term_stems(conn, phrases)
    labels = set(term_stems(conn, [_LABEL_WORDS])[0])
    return [p for p, words, df in zip(phrases, stems, doc_counts(conn, stems), strict=True)
            if df >= need and not labels.issuperset(words) and fts_store.match_count(
                conn, f'{scope} NOT text : "{p.replace(chr(34), "")}"', spare + 1) <= spare]


def vector_text(conn: apsw.Connection, query: str, project: str | None) -> str:
    """The query the vector side embeds: in a project, without its project-wide terms.

    Such a term draws the query's vector towards the chunks that repeat it most (in LoCoMo
    the turns that name the other speaker) rather than those about the rest of the question.
    The query is kept whole when nothing searchable would be left, and outside a project.
    """
    if not project:
        return query
    drop = project_wide_terms(conn, query, project)
    if not drop:
        return query
    out = query
    for p in drop:
        words = r"\W+".join(re.escape(w) for w in p.split())
        out = re.sub(rf"\b{words}(?:'s)?\b", " ", out, flags=re.IGNORECASE)
    out = re.sub(r"\s+", " ", out).strip()
    return out if query_terms(out) and out != query else query


def _tokenizer(conn: apsw.Connection):
    """The same tokenizer as the FTS table (porter over unicode61), to find its stems."""
    return conn.fts5_tokenizer("porter", ["unicode61"])
