"""Keyword search over FTS5 with BM25, built from tokens so user text never breaks MATCH.

User text reaches FTS5 only through `fts_query`: every word (or identifier-like run such as
`build_zipapp.py`, `SQLITE_BUSY`, `daytona-pty`) becomes a double-quoted phrase, and phrases
are OR-ed so long natural-language questions still match; BM25 ranks chunks that contain
more (and rarer) terms first. Quotes, parentheses, `NEAR`, `*`, `-`, `column:` prefixes and
any unicode are therefore plain text. English stop words are dropped unless nothing else is
left.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import apsw

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
    """An FTS5 MATCH expression for user text, or None if it has no searchable word."""
    terms = query_terms(text)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', "") + '"' for t in terms[:32])


def keyword_search(
    conn: apsw.Connection, query: str, *, project: str | None = None, limit: int = 50
) -> list[KeywordHit]:
    """Chunks matching the query by BM25, best first; [] when nothing matches."""
    match = fts_query(query)
    if match is None:
        return []
    sql = (
        "SELECT c.id, c.rowid, bm25(chunks_fts) AS s FROM chunks_fts"
        " JOIN chunks c ON c.rowid = chunks_fts.rowid WHERE chunks_fts MATCH ?"
    )
    args: list[object] = [match]
    if project:
        sql += " AND c.project = ?"
        args.append(project)
    sql += " ORDER BY s LIMIT ?"
    args.append(limit)
    return [KeywordHit(cid, rowid, -score) for cid, rowid, score in conn.execute(sql, args)]
