"""What `causantic benchmark` (`causantic.scorecard`) reads of a store, read-only: counts,
orphan chunks, chain counts, SQLite's integrity check, sampled chunks and the FTS
vocabulary's document frequencies."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import apsw

from causantic.store.fts import vocab_doc_counts
from causantic.store.sql import select_in

_ORPHANS = ("SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM edges WHERE src = c.id)"
            " AND NOT EXISTS (SELECT 1 FROM edges WHERE dst = c.id)")


class Counts(NamedTuple):
    """Sizes of a store; an orphan chunk has no edge in or out."""

    chunks: int
    sessions: int
    projects: int
    edges: int
    orphan_chunks: int


class ChainCounts(NamedTuple):
    """What chain coverage is computed from (`scorecard.chain_coverage`)."""

    chunks: int
    orphans: int
    next_within_streams: int  # `next` edges whose two chunks share session and agent
    streams: int  # distinct (session, agent) pairs
    edge_kinds: dict[str, int]


def _one(conn: apsw.Connection, sql: str) -> int:
    return int(conn.execute(sql).get)  # an aggregate or PRAGMA: one value


def counts(conn: apsw.Connection) -> Counts:
    """Chunks, sessions, projects, edges and orphan chunks."""
    return Counts(
        _one(conn, "SELECT count(*) FROM chunks"),
        _one(conn, "SELECT count(DISTINCT session_id) FROM chunks"),
        _one(conn, "SELECT count(DISTINCT project) FROM chunks"),
        _one(conn, "SELECT count(*) FROM edges"),
        _one(conn, _ORPHANS),
    )


def chain_counts(conn: apsw.Connection) -> ChainCounts:
    """Chunks, orphans, `next` edges within a stream, streams and edges per kind."""
    return ChainCounts(
        _one(conn, "SELECT count(*) FROM chunks"),
        _one(conn, _ORPHANS),
        _one(conn, "SELECT count(*) FROM edges e JOIN chunks a ON a.id = e.src"
                   " JOIN chunks b ON b.id = e.dst WHERE e.kind = 'next'"
                   " AND a.session_id = b.session_id AND a.agent_id = b.agent_id"),
        _one(conn, "SELECT count(*) FROM (SELECT DISTINCT session_id, agent_id FROM chunks)"),
        dict(conn.execute("SELECT kind, count(*) FROM edges GROUP BY kind")),
    )


def integrity_problems(conn: apsw.Connection, tables: Sequence[str] | None = None) -> list[str]:
    """What SQLite's check reports besides "ok": `PRAGMA integrity_check` of the whole file
    (FTS5 index included), or with ``tables`` the cheaper `quick_check` of each of them."""
    if tables is None:
        rows = list(conn.execute("PRAGMA integrity_check"))
    else:
        rows = [r for t in tables for r in conn.execute(f"PRAGMA quick_check({t})")]
    return [r[0] for r in rows if r[0] != "ok"]


def chunk_rowids(conn: apsw.Connection, min_tokens: int) -> list[int]:
    """Rowids of the chunks of at least ``min_tokens`` tokens, ascending."""
    return [r for (r,) in conn.execute(
        "SELECT rowid FROM chunks WHERE tokens >= ? ORDER BY rowid", (min_tokens,))]


def chunk_texts(conn: apsw.Connection, rowids: Iterable[int]) -> list[tuple[int, str, str]]:
    """(rowid, id, text) of these chunks, in no particular order."""
    return [(int(r), str(c), str(t)) for r, c, t in select_in(
        conn, "SELECT rowid, id, text FROM chunks WHERE rowid IN ({marks})", rowids)]


def doc_frequencies(conn: apsw.Connection, stems: set[str], scan: bool) -> dict[str, int]:
    """FTS document frequency of each stem found in the `chunks_fts_vocab` table.

    fts5vocab counts a term by reading its whole doclist, so a few hundred point lookups are
    cheapest for a small set, and one pass over the vocabulary (``scan``) for a larger one.
    """
    if scan:
        return {t: d for t, d in conn.execute("SELECT term, doc FROM chunks_fts_vocab")
                if t in stems}
    return vocab_doc_counts(conn, sorted(stems))
