"""Chunk vectors: a sqlite-vec `vec0` table of window vectors plus a plain bookkeeping table.

Layout
------
* `chunk_vectors` (vec0, created on first embed, never by a migration, so the schema opens
  where sqlite-vec cannot load): one row per embedding *window* of a chunk, rowid
  ``chunk_rowid * WINDOW_SLOTS + window``, ``project`` as the partition key (a project filter
  scans one partition: ~3 ms at 100k vectors instead of ~50 ms), ``float[384]`` with the
  default L2 distance. The vectors are unit length, so L2 ranks exactly as cosine does and
  ``cos = 1 - L2**2 / 2``; L2 is the cheaper of the two in vec0.
* `chunk_vectors_meta` (plain, migration `create_vector_meta`): one row per embedded chunk with
  the model id, window count, time, and the unit mean of its windows. It is the source of truth
  for "is this chunk embedded, by which model": pending chunks are ``chunks LEFT JOIN
  chunk_vectors_meta``; a KNN hit counts only if its meta row exists with the current model.
  The mean vector serves MMR, near-duplicate checks and chain scoring, because point lookups
  in vec0 are slow (~0.15 ms each). Its `windows_q` column and the `chunk_vector_blocks`
  table form the compact index of `store.vector_index`, written in the same transaction.
* `chunk_token_bits` (plain, migration `add_token_bits`): the sign bits of each embedded
  chunk's token vectors (48 bytes each at 384 dimensions, `Embedder.embed_windows_and_tokens`)
  for search's token rerank, written with its vectors. A chunk embedded before it existed or
  imported without it has none until `write_token_bits`; a trigger deletes a chunk's row
  with its meta row.

Deletion: a trigger on `chunks` deletes the meta row in the same statement, always (it needs no
extension). The vec0 rows are deleted in the same transaction by `drop_chunk_vectors`
(called by `chunks.delete_from`); a connection that deleted chunks without sqlite-vec leaves
vec0 rows without a meta row, which are never returned (the meta check) and are swept by
`sweep_orphans` at the next embed. Because a deleted chunk's rowid can be reused by a new
chunk, `write_vectors` always clears the rowid's window slots before inserting.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import apsw

from causantic.store import vector_index
from causantic.store.sql import execute_in, select_in
from causantic.store.vec0 import VEC_TABLE, WINDOW_SLOTS, ensure_vec, table_exists  # re-exported

if TYPE_CHECKING:
    import numpy as np

META_TABLE = "chunk_vectors_meta"
TOKENS_TABLE = "chunk_token_bits"
#: vec0 rejects larger k ("k value in knn query too large").
MAX_K = 4096


@dataclass(frozen=True)
class PendingChunk:
    """A chunk that needs (re-)embedding."""

    rowid: int
    chunk_id: str
    project: str


@dataclass(frozen=True)
class EmbeddedChunk:
    """What `write_vectors` stores for one chunk: its window vectors (rows, unit length) and,
    if known, the packed sign bits of its token vectors (`vector_index.sign_bits`)."""

    rowid: int
    chunk_id: str
    project: str
    windows: np.ndarray  # (w, dim) float32
    token_bits: bytes | None = None  # uint8[t, dim / 8]


def ensure_table(conn: apsw.Connection, dim: int) -> None:
    """Create the vec0 table if missing (sqlite-vec must be loaded; takes a write lock)."""
    if table_exists(conn):
        return
    with conn:
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {VEC_TABLE} USING vec0("
            f"project text partition key, embedding float[{int(dim)}])"
        )


def pending(conn: apsw.Connection, model_id: str, *, stale: bool = False) -> list[PendingChunk]:
    """Chunks to embed, grouped by project (vec0 inserts are ~10x faster in runs of one partition).

    ``stale=False``: chunks with no vectors. ``stale=True``: chunks whose vectors came from
    another model (what `reindex` redoes).
    """
    if stale:
        sql = (
            f"SELECT c.rowid, c.id, c.project FROM chunks c JOIN {META_TABLE} m"
            " ON m.chunk_rowid = c.rowid WHERE m.model_id != ? ORDER BY c.project, c.rowid"
        )
        args: tuple[object, ...] = (model_id,)
    else:
        sql = (
            f"SELECT c.rowid, c.id, c.project FROM chunks c LEFT JOIN {META_TABLE} m"
            " ON m.chunk_rowid = c.rowid WHERE m.chunk_rowid IS NULL ORDER BY c.project, c.rowid"
        )
        args = ()
    return [PendingChunk(*row) for row in conn.execute(sql, args)]


def chunk_texts(conn: apsw.Connection, rowids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """rowid -> (chunk id, text) for the chunks that still exist."""
    return {
        rowid: (cid, text)
        for rowid, cid, text in select_in(conn, "SELECT rowid, id, text FROM chunks WHERE rowid IN ({marks})", rowids)
    }


def write_vectors(conn: apsw.Connection, items: Sequence[EmbeddedChunk], model_id: str) -> int:
    """Store the vectors of embedded chunks in one transaction; return how many were stored.

    A chunk is skipped if it was deleted or rewritten since it was read (its rowid no longer
    holds the same chunk id or project) or if another process embedded it meanwhile with this
    model. Call with sqlite-vec loaded and the vec0 table created.
    """
    # deferred: heavy: numpy, only needed here
    import numpy as np

    stored = 0
    indexed: list[tuple[int, str, bytes]] = []
    now = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z"
    with conn:
        for item in items:
            row = conn.execute(
                f"SELECT c.id, c.project, m.model_id FROM chunks c LEFT JOIN {META_TABLE} m"
                " ON m.chunk_rowid = c.rowid WHERE c.rowid = ?",
                (item.rowid,),
            ).fetchone()
            if row is None or row[0] != item.chunk_id or row[1] != item.project:
                continue
            if row[2] == model_id:
                continue
            windows = np.ascontiguousarray(item.windows, dtype=np.float32)
            if windows.ndim != 2 or not 1 <= len(windows) <= WINDOW_SLOTS:
                raise ValueError(f"{len(windows)} windows for chunk {item.chunk_id}")
            mean = windows.mean(axis=0)
            mean /= max(float(np.linalg.norm(mean)), 1e-12)
            _clear_slots(conn, item.rowid)
            base = item.rowid * WINDOW_SLOTS
            conn.executemany(
                f"INSERT INTO {VEC_TABLE}(rowid, project, embedding) VALUES (?, ?, ?)",
                [(base + w, item.project, windows[w].tobytes()) for w in range(len(windows))],
            )
            conn.execute(
                f"INSERT OR REPLACE INTO {META_TABLE}(chunk_rowid, chunk_id, model_id, windows,"
                " embedded_at, vector, windows_q) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (item.rowid, item.chunk_id, model_id, len(windows), now,
                 mean.astype(np.float32).tobytes(), vector_index.quantize(windows)),
            )
            # REPLACE fires no delete trigger: the old bits of this rowid go here
            conn.execute(f"DELETE FROM {TOKENS_TABLE} WHERE chunk_rowid = ?", (item.rowid,))
            if item.token_bits is not None:
                conn.execute(f"INSERT INTO {TOKENS_TABLE}(chunk_rowid, model_id, bits)"
                             " VALUES (?, ?, ?)", (item.rowid, model_id, item.token_bits))
            indexed.append((item.rowid, item.project, vector_index.sign_bits(mean).tobytes()))
            stored += 1
        vector_index.append(conn, model_id, indexed)
    return stored


def untokened(conn: apsw.Connection, model_id: str) -> list[PendingChunk]:
    """Chunks with vectors of this model but no token bits (embedded before they existed, or
    imported without them), grouped by project."""
    return [PendingChunk(*row) for row in conn.execute(
        f"SELECT c.rowid, c.id, c.project FROM {META_TABLE} m JOIN chunks c"
        f" ON c.rowid = m.chunk_rowid LEFT JOIN {TOKENS_TABLE} t ON t.chunk_rowid = m.chunk_rowid"
        " WHERE m.model_id = ? AND t.chunk_rowid IS NULL ORDER BY c.project, c.rowid",
        (model_id,))]


def write_token_bits(conn: apsw.Connection, items: Sequence[tuple[PendingChunk, bytes]],
                     model_id: str) -> int:
    """Store token sign bits for chunks that have vectors of this model but none yet, in one
    transaction; return how many were stored. A chunk deleted, rewritten or re-embedded by
    another model since it was listed is skipped."""
    stored = 0
    with conn:
        for chunk, bits in items:
            conn.execute(
                f"INSERT OR IGNORE INTO {TOKENS_TABLE}(chunk_rowid, model_id, bits)"
                f" SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM {META_TABLE} WHERE chunk_rowid = ?"
                " AND chunk_id = ? AND model_id = ?)",
                (chunk.rowid, model_id, bits, chunk.rowid, chunk.chunk_id, model_id),
            )
            stored += conn.changes()
    return stored


def token_bits(conn: apsw.Connection, chunk_ids: Sequence[str], model_id: str) -> dict[str, bytes]:
    """chunk id -> packed token sign bits, for the chunks of this model that have them."""
    return dict(select_in(
        conn, f"SELECT c.id, t.bits FROM chunks c CROSS JOIN {TOKENS_TABLE} t"
        " ON t.chunk_rowid = c.rowid WHERE c.id IN ({marks}) AND +t.model_id = ?",
        chunk_ids, after=(model_id,),
    ))


def drop_chunk_vectors(conn: apsw.Connection, rowids: Iterable[int]) -> None:
    """Delete the vectors of these chunk rowids (call inside the transaction that deletes them).

    The meta rows go too (the chunks trigger would delete them anyway). The vec0 rows are
    deleted only if sqlite-vec can load here; otherwise `sweep_orphans` removes them later and
    they are never returned meanwhile.
    """
    ids = list(rowids)
    if not ids or not table_exists(conn, META_TABLE):
        return
    execute_in(conn, f"DELETE FROM {META_TABLE} WHERE chunk_rowid IN ({{marks}})", ids)
    if not table_exists(conn) or not ensure_vec(conn):
        return
    for rowid in ids:
        _clear_slots(conn, rowid)


def _clear_slots(conn: apsw.Connection, chunk_rowid: int) -> None:
    """Delete the vec0 rows of one chunk rowid's window slots.

    A rowid range in vec0's WHERE is a full scan (~25 ms at 100k rows); the shadow table
    `<table>_rowids` is a plain table, so find the rows there and delete them one by one.
    """
    base = chunk_rowid * WINDOW_SLOTS
    for (rowid,) in conn.execute(
        f"SELECT rowid FROM {VEC_TABLE}_rowids WHERE rowid >= ? AND rowid < ?",
        (base, base + WINDOW_SLOTS),
    ).fetchall():
        conn.execute(f"DELETE FROM {VEC_TABLE} WHERE rowid = ?", (rowid,))


def sweep_orphans(conn: apsw.Connection) -> int:
    """Delete vec0 rows whose chunk has no meta row (left by deletes without sqlite-vec).

    Cheap when there is nothing to do: it compares the vec0 row count with the meta window
    total first. Needs sqlite-vec loaded. Reads vec0's `<table>_rowids` shadow table.
    """
    if not table_exists(conn):
        return 0
    have = conn.execute(f"SELECT count(*) FROM {VEC_TABLE}_rowids").get
    want = conn.execute(f"SELECT coalesce(sum(windows), 0) FROM {META_TABLE}").get
    if have == want:
        return 0
    with conn:
        orphans = [
            r[0]
            for r in conn.execute(
                f"SELECT v.rowid FROM {VEC_TABLE}_rowids v LEFT JOIN {META_TABLE} m"
                f" ON m.chunk_rowid = v.rowid / {WINDOW_SLOTS}"
                " WHERE m.chunk_rowid IS NULL OR v.rowid % ? >= m.windows",
                (WINDOW_SLOTS,),
            )
        ]
        for rowid in orphans:
            conn.execute(f"DELETE FROM {VEC_TABLE} WHERE rowid = ?", (rowid,))
    return len(orphans)


@dataclass(frozen=True)
class VectorCounts:
    """How many chunks are embedded, by which models, and how many wait."""

    chunks: int
    embedded: int
    windows: int
    by_model: dict[str, int]

    @property
    def pending(self) -> int:
        return self.chunks - self.embedded

    def stale(self, model_id: str) -> int:
        return sum(n for m, n in self.by_model.items() if m != model_id)


def counts(conn: apsw.Connection) -> VectorCounts:
    """Counts for `stats`, `embed` and `reindex` (a full scan of the meta table)."""
    chunks = conn.execute("SELECT count(*) FROM chunks").get
    if not table_exists(conn, META_TABLE):
        return VectorCounts(chunks, 0, 0, {})
    by_model: dict[str, int] = {}
    windows = 0
    for model, n, w in conn.execute(
        f"SELECT model_id, count(*), sum(windows) FROM {META_TABLE} GROUP BY model_id"
    ):
        by_model[model] = n
        windows += w
    return VectorCounts(chunks, sum(by_model.values()), windows, by_model)


def has_model(conn: apsw.Connection, model_id: str) -> bool:
    """Whether any chunk has vectors from this model (an index lookup)."""
    return conn.execute(
        f"SELECT 1 FROM {META_TABLE} WHERE model_id = ? LIMIT 1", (model_id,)
    ).fetchone() is not None


def other_model(conn: apsw.Connection, model_id: str) -> str | None:
    """Some model id other than this one that stored vectors still use, if any."""
    row = conn.execute(
        f"SELECT model_id FROM {META_TABLE} WHERE model_id != ? LIMIT 1", (model_id,)
    ).fetchone()
    return None if row is None else str(row[0])


def knn(
    conn: apsw.Connection, query: bytes, k: int, project: str | None = None
) -> list[tuple[int, int, float]]:
    """Nearest windows: (chunk rowid, window, L2 distance), nearest first (sqlite-vec loaded)."""
    k = max(1, min(int(k), MAX_K))
    sql = f"SELECT rowid, distance FROM {VEC_TABLE} WHERE embedding MATCH ? AND k = ?"
    args: list[object] = [query, k]
    if project is not None:
        sql += " AND project = ?"
        args.append(project)
    return [
        (rowid // WINDOW_SLOTS, rowid % WINDOW_SLOTS, float(dist))
        for rowid, dist in conn.execute(sql, args)
    ]


def current_chunks(
    conn: apsw.Connection, rowids: Sequence[int], model_id: str
) -> dict[int, str]:
    """rowid -> chunk id for the rowids whose vectors are current (meta row with this model)."""
    # `+model_id`: with a long IN list the planner would otherwise walk the model index,
    # i.e. every row (all rows share one model), instead of looking rows up by rowid.
    return dict(select_in(
        conn, f"SELECT chunk_rowid, chunk_id FROM {META_TABLE}"
        " WHERE chunk_rowid IN ({marks}) AND +model_id = ?", rowids, after=(model_id,),
    ))


def mean_vectors(
    conn: apsw.Connection, chunk_ids: Sequence[str], model_id: str | None = None
) -> dict[str, bytes]:
    """chunk id -> stored unit mean vector (float32 bytes), optionally only for one model."""
    sql = (  # CROSS JOIN keeps chunks (looked up by id) outermost; see current_chunks
        f"SELECT c.id, m.vector FROM chunks c CROSS JOIN {META_TABLE} m"
        " ON m.chunk_rowid = c.rowid WHERE c.id IN ({marks})"
    )
    after: tuple[object, ...] = ()
    if model_id is not None:
        sql += " AND +m.model_id = ?"
        after = (model_id,)
    return dict(select_in(conn, sql, chunk_ids, after=after))


def project_has_vectors(conn: apsw.Connection, project: str, model_id: str) -> bool:
    """Whether any chunk of `project` has a vector of this model."""
    return conn.execute(
        f"SELECT 1 FROM {META_TABLE} m JOIN chunks c ON c.rowid = m.chunk_rowid"
        " WHERE c.project = ? AND m.model_id = ? LIMIT 1",
        (project, model_id),
    ).fetchone() is not None


def twin_vectors(conn: apsw.Connection, rowid: int, model_id: str
                 ) -> tuple[list[bytes], bytes | None] | None:
    """The window vectors and token bits of an embedded chunk with this chunk's exact text,
    project and start time, or None (sqlite-vec loaded).

    A session forked from another (`/branch`, `--fork-session`) holds a copy of its parent's
    history, times included: its copied chunks are such twins, and the model, which gives the
    same text the same vectors, need not run again (`ingest.embed`)."""
    row = conn.execute(
        f"SELECT m.chunk_rowid, m.windows, t.bits FROM chunks c JOIN chunks o"
        " ON o.project = c.project AND o.start_time = c.start_time AND o.rowid != c.rowid"
        f" AND o.text = c.text JOIN {META_TABLE} m ON m.chunk_rowid = o.rowid"
        f" AND m.model_id = ? LEFT JOIN {TOKENS_TABLE} t ON t.chunk_rowid = o.rowid"
        " AND t.model_id = m.model_id WHERE c.rowid = ? LIMIT 1",
        (model_id, rowid),
    ).fetchone()
    if row is None:
        return None
    windows = _windows(conn, row[0], row[1])
    return (windows, row[2]) if len(windows) == row[1] else None


def window_vectors(conn: apsw.Connection, chunk_id: str) -> list[bytes]:
    """The stored window vectors (float32 bytes) of one chunk, in order (sqlite-vec loaded).

    vec0 point lookups are slow (~0.15 ms each): for tests and tools, not for ranking.
    """
    row = conn.execute(
        f"SELECT m.chunk_rowid, m.windows FROM chunks c JOIN {META_TABLE} m"
        " ON m.chunk_rowid = c.rowid WHERE c.id = ?",
        (chunk_id,),
    ).fetchone()
    return [] if row is None else _windows(conn, row[0], row[1])


def _windows(conn: apsw.Connection, chunk_rowid: int, count: int) -> list[bytes]:
    """The first `count` window vectors of a chunk, in order, those that exist (every one of
    a stored chunk: they are written in one transaction). Point lookups: vec0 answers a rowid
    range by scanning the whole table."""
    base = chunk_rowid * WINDOW_SLOTS
    found = (conn.execute(f"SELECT embedding FROM {VEC_TABLE} WHERE rowid = ?", (base + w,))
             .fetchone() for w in range(count))
    return [row[0] for row in found if row is not None]
