"""Finding memories for a query, listing them, and showing them beside search/recall results.

Candidates are the memories (of the project, plus global ones) that match the query's words
in FTS5 or whose vector is close to the query's (cosine >= `MIN_COSINE`); near duplicates
are collapsed into their original (which reports how many it stands for). They are ranked by
`rank.rank` with weights from `[memory]` in the config. `search` and `recall` answers get the
best few whose raw relevance reaches `MIN_SHOWN` in a "Memories" block before the chunks,
each marked `memory`; in `--json` they are results with `sources: ["memory"]` and a
`memory` object.

numpy is imported only when stored memory vectors exist and the query is embedded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

import apsw

from causantic.config import MemorySettings
from causantic.errors import UsageError
from causantic.memory import TYPES
from causantic.memory.observe import memory_dict
from causantic.memory.rank import DEFAULT, Candidate, Weights, rank, recency, relevance
from causantic.memory.scope import memory_project
from causantic.model import MODEL_ID
from causantic.retrieval.fts import fts_query, query_terms
from causantic.retrieval.render import SEPARATOR, Answer, Hit, block, short_time, shorten
from causantic.store import memories as sql
from causantic.store.db import Store
from causantic.tokens import approx_tokens, chars_for_tokens

_WORD_RE = re.compile(r"[^\W_]+")  # agent_logs is two words, not one that starts like "agents"
MIN_COSINE = 0.30  # below this a vector neighbour is not a candidate
#: Candidates less relevant than this share of the best one are dropped before ranking: only
#: memories about the query compete on importance and recency (min-max scaling would
#: otherwise let an important but barely related memory win).
RELATIVE_FLOOR = 0.6
MIN_SHOWN = 0.45  # raw relevance a memory needs to appear beside search results
SHOWN = 3  # most memories shown beside search results
MEMORY_SHARE = 4  # memories take at most 1/MEMORY_SHARE of an answer's budget


def weights_from(memory: MemorySettings) -> Weights:
    """Ranking weights from `[memory]` (relevance_weight, importance_weight, recency_weight,
    recency = "logical" | "wall"; checked when settings load)."""
    return Weights(memory.relevance_weight, memory.importance_weight, memory.recency_weight,
                   memory.recency)


def candidates(
    store: Store,
    query: str,
    *,
    project: str | None = None,
    types: Sequence[str] = (),
    weights: Weights = DEFAULT,
    use_vectors: bool = True,
    model_dir: str | None = None,
    now: datetime | None = None,
) -> list[Candidate]:
    """Memories relevant to the query with their raw factors (not yet ranked); ``now`` is the
    wall-clock time recency is measured from (default: the current time)."""
    conn = store.conn
    if not has_memories(conn):
        return []
    keyword: dict[int, float] = {}
    match = fts_query(query)
    if match:
        keyword = dict(sql.fts_match(conn, match, project, limit=100))
    terms = query_terms(query)
    cos = cosines(conn, query, project, model_dir) if use_vectors else {}
    rowids = set(keyword) | {r for r, c in cos.items() if c >= MIN_COSINE}
    rows = sql.select(conn, project=project, types=types, rowids=sorted(rowids))
    starts = sql.session_starts(conn, project)
    out = []
    for m in rows:
        kw = coverage(terms, m.text) if m.rowid in keyword else 0.0
        out.append(Candidate(m, relevance(cos.get(m.rowid) if cos else None, kw),
                             m.effective_importance, recency(m, weights, starts, now)))
    return out


def coverage(terms: Sequence[str], text: str) -> float:
    """Share of the query's terms found in the text, a word matching a term by a common stem
    (its first max(4, len - 2) letters): a memory matching one word of five is not a full
    keyword match, whatever its BM25 rank among the candidates."""
    if not terms:
        return 0.0
    words = set(_WORD_RE.findall(text.lower()))
    found = 0
    for term in terms:
        parts = _WORD_RE.findall(term)
        if parts and all(any(w.startswith(p[: max(4, len(p) - 2)]) for w in words) for p in parts):
            found += 1
    return found / len(terms)


def retrieve(
    store: Store,
    query: str,
    *,
    project: str | None = None,
    types: Sequence[str] = (),
    limit: int = 10,
    weights: Weights = DEFAULT,
    use_vectors: bool = True,
    model_dir: str | None = None,
    now: datetime | None = None,
) -> list[Candidate]:
    """The best memories for a query by three-factor ranking."""
    found = candidates(store, query, project=project, types=types, weights=weights,
                       use_vectors=use_vectors, model_dir=model_dir, now=now)
    best = max((c.relevance for c in found), default=0.0)
    found = [c for c in found if c.relevance >= RELATIVE_FLOOR * best]
    return rank(found, weights)[:limit]


def has_memories(conn: apsw.Connection) -> bool:
    """Whether any memory is stored (False for a file from before the memories migration)."""
    return sql.has_any(conn)


def cosines(conn: apsw.Connection, query: str, project: str | None,
            model_dir: str | None) -> dict[int, float]:
    """Memory rowid -> cosine with the query; {} when there are no vectors or no model."""

    if not sql.has_vectors(conn, MODEL_ID):
        return {}
    # deferred: heavy: pulls numpy, only needed here
    from causantic.retrieval.vector import VectorsUnavailable, query_vector

    try:
        q = query_vector(query, model_dir)
    except VectorsUnavailable:
        return {}
    # deferred: heavy: numpy, only needed here
    import numpy as np

    stored = sql.vectors(conn, MODEL_ID, project=project)
    if not stored:
        return {}
    rowids = list(stored)
    matrix = np.frombuffer(b"".join(stored[r] for r in rowids), dtype=np.float32)
    sims = matrix.reshape(len(rowids), -1) @ q
    return {r: float(s) for r, s in zip(rowids, sims)}


# -- beside search and recall --------------------------------------------------------------


class MemoryHit(Hit):
    """A memory among search results: a `Hit` whose `sources` is ('memory',) and whose
    `chunk_id` holds the memory id; `as_dict` adds the memory itself."""

    __slots__ = ("memory", "duplicates")
    memory: sql.MemoryRow
    duplicates: int

    def __init__(self, chunk_id: str, session_id: str, project: str, agent_id: str,
                 start_time: str, end_time: str, score: float, sources: tuple[str, ...],
                 text: str, kind: str, seed: bool, memory: sql.MemoryRow,
                 duplicates: int = 0) -> None:
        self._init(chunk_id=chunk_id, session_id=session_id, project=project,
                   agent_id=agent_id, start_time=start_time, end_time=end_time, score=score,
                   sources=sources, text=text, kind=kind, seed=seed, also=(), changed=(),
                   memory=memory,
                   duplicates=duplicates)

    @classmethod
    def of(cls, c: Candidate, duplicates: int) -> MemoryHit:
        m = c.memory
        return cls(m.id, m.session_id or "", m.project, "", m.created_at, m.last_seen_at,
                   c.score, ("memory",), m.text, "memory", False, m, duplicates)

    def as_dict(self) -> dict[str, object]:
        return super().as_dict() | {
            "memory": memory_dict(self.memory) | {"near_duplicates": self.duplicates}}


def memory_hits(store: Store, query: str, *, project: str | None,
                memory: MemorySettings | None = None, use_vectors: bool = True,
                model_dir: str | None = None) -> list[MemoryHit]:
    """The few memories worth showing beside a search/recall answer (may be empty); `memory`
    is `[memory]` of the config (default: the defaults)."""
    memory = memory or MemorySettings()
    if not memory.in_search or not has_memories(store.conn):
        return []
    project = memory_project(store.conn, project)
    ranked = retrieve(store, query, project=project, limit=SHOWN * 3,
                      weights=weights_from(memory), use_vectors=use_vectors, model_dir=model_dir)
    ranked = [c for c in ranked if c.relevance >= MIN_SHOWN][:SHOWN]
    dups = sql.duplicates_of(store.conn, [c.memory.id for c in ranked])
    return [MemoryHit.of(c, len(dups.get(c.memory.id, []))) for c in ranked]


def render_memory(m: sql.MemoryRow, index: str = "", duplicates: int = 0) -> str:
    """One memory: a header line (id, type, importance, project, time, count) and its text."""
    parts = [f"{index}memory {m.id}", m.type, f"importance {m.effective_importance:g}",
             m.project or "all projects", short_time(m.last_seen_at)]
    if m.count > 1 or duplicates:
        parts.append(f"seen {m.count + duplicates}×")
    if m.origin != "explicit":
        parts.append(m.origin)
    return block(" · ".join(parts), m.text)


def with_memories(result: Answer, hits: Sequence[MemoryHit], max_tokens: int) -> Answer:
    """A search/recall `Answer` with the memory hits before its chunks (text and results)."""
    if not hits:
        return result

    room = chars_for_tokens(max(200, max_tokens // MEMORY_SHARE))
    blocks: list[str] = []
    used = 0
    shown: list[MemoryHit] = []
    for i, h in enumerate(hits, 1):
        block = render_memory(h.memory, f"[M{i}] ", h.duplicates)
        if used + len(block) > room:
            block = shorten(block, room - used)
            if not block:
                break
        blocks.append(block)
        shown.append(h)
        used += len(block)
    head = f"Memories ({len(shown)}, from `remember`/observe; check them against the code):"
    text = head + "\n" + "\n\n".join(blocks) + SEPARATOR + result.text
    return result.replace(results=[*shown, *result.results], text=text, tokens=approx_tokens(text))


# -- listing -------------------------------------------------------------------------------


def list_memories(store: Store, *, project: str | None = None, types: Sequence[str] = (),
                  limit: int = 50, sort: str = "importance",
                  new_ok: bool = False) -> dict[str, object]:
    """Memories for `causantic memories`: newest or most important first, duplicates collapsed.
    ``new_ok``: a project nothing holds yet lists the memories for every project (the MCP
    tool under `[memory] scope = "project"`, whose refusal must not name other projects)."""
    conn = store.conn
    project = memory_project(conn, project, new_ok=new_ok)
    if not has_memories(conn):
        return {"memories": [], "text": "No memories yet: `causantic remember TEXT` adds one."}
    for t in types:
        if t not in TYPES:
            raise UsageError(f"unknown memory type {t!r}; use one of {', '.join(TYPES)}")
    rows = sql.select(conn, project=project, types=types, order=sort, limit=limit)
    dups = sql.duplicates_of(conn, [r.id for r in rows])
    cites = sql.citations(conn, [r.id for r in rows])
    items = [memory_dict(r) | {"near_duplicates": dups.get(r.id, []), "cites": cites[r.id]}
             for r in rows]
    if not rows:
        where = f" for {project}" if project else ""
        return {"memories": [], "text": f"No memories{where}."}
    blocks = [render_memory(r, duplicates=len(dups.get(r.id, []))) for r in rows]
    text = f"{len(rows)} memor{'y' if len(rows) == 1 else 'ies'}:\n\n" + "\n\n".join(blocks)
    return {"memories": items, "text": text}
