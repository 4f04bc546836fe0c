"""A compact index that makes vector search fast on large stores without a project filter.

sqlite-vec's `vec0` scans every float window vector of the table: ~400 ms for the 416,000
windows of 100,000 chunks, and its top-k merge grows with k. A project filter scans one
partition (a few ms), but a search across all projects needs something smaller to scan.

Two plain tables hold it (migration `add_vector_index`):

* `chunk_vector_blocks`: the sign bits of every embedded chunk's unit mean vector (48 bytes
  at 384 dimensions), packed with their chunk rowids into blocks of up to `BLOCK_SIZE`
  chunks of one project and model. A search reads a few dozen blobs and ranks every chunk by
  Hamming distance to the query's sign bits with numpy (~8 ms at 100,000 chunks).
* `chunk_vectors_meta.windows_q`: each chunk's window vectors quantised to int8 with one
  float32 scale per window (388 bytes a window instead of 1,536). The best `candidates`
  chunks of the Hamming pass are rescored with these: their best window's cosine, within
  ~0.002 of the float value.

vec0 keeps the full-precision windows and stays the source of truth (and the exact search
for one project, and for stores this index does not cover yet). Blocks are append-only:
deleting a chunk leaves its entry behind, and rescoring drops entries whose chunk has no
current meta row; `refresh` rebuilds the blocks when stale entries pile up, and fills
`windows_q` for chunks embedded before this index existed (from vec0).
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import apsw

from causantic.store.sql import select_in
from causantic.store.vec0 import VEC_TABLE, WINDOW_SLOTS, ensure_vec, table_exists

if TYPE_CHECKING:
    import numpy as np

BLOCKS_TABLE = "chunk_vector_blocks"
#: Chunks per block: big enough that a search reads few rows, small enough that appending to
#: the last block rewrites little (~200 KB).
BLOCK_SIZE = 4096
#: Rebuild the blocks once they hold this many stale entries per live one.
STALE_RATIO = 0.25


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """Rows of packed sign bits (uint8, dim / 8 per row) of a (n, dim) float array."""
    # deferred: heavy: numpy, only needed here
    import numpy as np

    return np.packbits(np.asarray(vectors) > 0, axis=-1)


def quantize(windows: np.ndarray) -> bytes:
    """Window vectors (w, dim) float32 -> float32 scales (w) followed by int8 values (w, dim)."""
    # deferred: heavy: numpy, only needed here
    import numpy as np

    windows = np.asarray(windows, dtype=np.float32)
    scales = np.abs(windows).max(axis=1) / 127.0
    scales[scales == 0] = 1.0
    values = np.rint(windows / scales[:, None]).astype(np.int8)
    return scales.astype(np.float32).tobytes() + values.tobytes()


def unpack(blobs: Sequence[bytes], windows: Sequence[int], dim: int) -> tuple[np.ndarray, np.ndarray]:
    """(scales float32 (W), values float32 (W, dim)) of many chunks' `quantize` blobs,
    their windows stacked in order (W = sum of ``windows``): one numpy pass for all."""
    # deferred: heavy: numpy, only needed here
    import numpy as np

    scales = b"".join(blob[: 4 * w] for blob, w in zip(blobs, windows))
    values = b"".join(blob[4 * w :] for blob, w in zip(blobs, windows))
    return (np.frombuffer(scales, dtype=np.float32),
            np.frombuffer(values, dtype=np.int8).reshape(-1, dim).astype(np.float32))


def hamming(bits: np.ndarray, query_bits: np.ndarray) -> np.ndarray:
    """Hamming distance (uint16) between each row of packed ``bits`` and ``query_bits``."""
    # deferred: heavy: numpy, only needed here
    import numpy as np

    width = bits.shape[1]
    if width % 8:  # dimensions not a multiple of 64: count bytes
        return np.bitwise_count(bits ^ query_bits).sum(axis=1, dtype=np.uint16)
    counts = np.bitwise_count(bits.view(np.uint64) ^ query_bits.view(np.uint64))
    # Adding the few columns beats a row-wise sum over a short axis by ~2.5x.
    distance = counts[:, 0].astype(np.uint16)
    for j in range(1, counts.shape[1]):
        distance += counts[:, j]
    return distance


def dequantize(blob: bytes, windows: int, dim: int) -> np.ndarray:
    """The (windows, dim) float32 approximation of what `quantize` stored."""
    # deferred: heavy: numpy, only needed here
    import numpy as np

    scales = np.frombuffer(blob, dtype=np.float32, count=windows)
    values = np.frombuffer(blob, dtype=np.int8, offset=4 * windows).reshape(windows, dim)
    return values.astype(np.float32) * scales[:, None]


def append(
    conn: apsw.Connection, model_id: str, entries: Iterable[tuple[int, str, bytes]]
) -> None:
    """Add (chunk rowid, project, sign bits) entries to the blocks (call inside a transaction).

    Each project's entries fill its newest block first, then new blocks.
    """
    by_project: dict[str, list[tuple[int, bytes]]] = defaultdict(list)
    for rowid, project, bits in entries:
        by_project[project].append((rowid, bits))
    for project, items in by_project.items():
        last = conn.execute(
            f"SELECT id, size, rowids, bits FROM {BLOCKS_TABLE}"
            " WHERE model_id = ? AND project = ? ORDER BY id DESC LIMIT 1",
            (model_id, project),
        ).fetchone()
        at = 0
        if last is not None and last[1] < BLOCK_SIZE:
            block_id, size, rowids, bits = last
            take = items[: BLOCK_SIZE - size]
            conn.execute(
                f"UPDATE {BLOCKS_TABLE} SET size = ?, rowids = ?, bits = ? WHERE id = ?",
                (size + len(take), rowids + _rowid_bytes(r for r, _ in take),
                 bits + b"".join(b for _, b in take), block_id),
            )
            at = len(take)
        for i in range(at, len(items), BLOCK_SIZE):
            take = items[i : i + BLOCK_SIZE]
            conn.execute(
                f"INSERT INTO {BLOCKS_TABLE}(model_id, project, size, rowids, bits)"
                " VALUES (?, ?, ?, ?, ?)",
                (model_id, project, len(take), _rowid_bytes(r for r, _ in take),
                 b"".join(b for _, b in take)),
            )


def remove(conn: apsw.Connection, projects: Iterable[str], rowids: Iterable[int]) -> int:
    """Take the entries of these chunk rowids out of the projects' blocks (call inside the
    transaction that deletes the chunks); return how many were taken out.

    Stale entries are harmless to search, but `forget` must leave nothing of a chunk behind,
    not even its sign bits. Pure bytes: no numpy.
    """
    # deferred: hook fast path: loaded only when this runs
    from array import array

    gone = set(rowids)
    if not gone or not _exists(conn):
        return 0
    removed = 0
    for project in set(projects):
        blocks: list[tuple[int, int, bytes, bytes]] = conn.execute(  # type: ignore[assignment]
            f"SELECT id, size, rowids, bits FROM {BLOCKS_TABLE} WHERE project = ?", (project,)
        ).fetchall()
        for block_id, size, rowid_blob, bits in blocks:
            ids = array("q")
            ids.frombytes(rowid_blob)
            keep = [i for i, r in enumerate(ids) if r not in gone]
            if len(keep) == size:
                continue
            removed += size - len(keep)
            if not keep:
                conn.execute(f"DELETE FROM {BLOCKS_TABLE} WHERE id = ?", (block_id,))
                continue
            width = len(bits) // size
            conn.execute(
                f"UPDATE {BLOCKS_TABLE} SET size = ?, rowids = ?, bits = ? WHERE id = ?",
                (len(keep), _rowid_bytes(ids[i] for i in keep),
                 b"".join(bits[i * width:(i + 1) * width] for i in keep), block_id))
    return removed


def _rowid_bytes(rowids: Iterable[int]) -> bytes:
    # deferred: hook fast path: loaded only when this runs
    from array import array

    out = array("q", rowids)
    return out.tobytes()


_cache_lock = threading.Lock()
_cache: OrderedDict[tuple[str, str, str | None], tuple[tuple, np.ndarray, np.ndarray]] = (
    OrderedDict()
)


def load(
    conn: apsw.Connection, model_id: str, project: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(chunk rowids int64 (n), sign bits uint8 (n, dim / 8)) of every entry in scope.

    Kept in memory for the next call while the blocks in scope are unchanged (their count,
    newest id and total size, read from the block index first), which saves a long-lived
    process such as `serve-mcp` reading ~5 MB per 100,000 chunks on every search.
    """
    # deferred: heavy: numpy, only needed here
    import numpy as np

    where = "model_id = ?" + (" AND project = ?" if project is not None else "")
    args = (model_id,) if project is None else (model_id, project)
    signature = tuple(conn.execute(
        f"SELECT count(*), max(id), sum(size) FROM {BLOCKS_TABLE} WHERE {where}", args
    ).get)
    key = (conn.filename, model_id, project)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] == signature:
            _cache.move_to_end(key)
            return hit[1], hit[2]
    rows: list[tuple] = conn.execute(
        f"SELECT rowids, bits FROM {BLOCKS_TABLE} WHERE {where}", args).fetchall()
    rowids = np.frombuffer(b"".join(r[0] for r in rows), dtype=np.int64)
    bits = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.uint8)
    bits = bits.reshape(len(rowids), -1) if len(rowids) else bits.reshape(0, 0)
    with _cache_lock:
        _cache[key] = (signature, rowids, bits)
        while len(_cache) > 8:
            _cache.popitem(last=False)
    return rowids, bits


def entries(conn: apsw.Connection, model_id: str, project: str | None = None) -> int:
    """How many entries (live or stale) the blocks in scope hold (an index range read)."""
    sql = f"SELECT coalesce(sum(size), 0) FROM {BLOCKS_TABLE} WHERE model_id = ?"
    args: list[object] = [model_id]
    if project is not None:
        sql += " AND project = ?"
        args.append(project)
    return int(conn.execute(sql, args).get)


def ready(conn: apsw.Connection, model_id: str) -> bool:
    """Whether the index covers every chunk embedded by this model (two index lookups).

    Vectors written since the index exists are indexed in the same transaction; older ones
    have no `windows_q` until `refresh` fills it.
    """
    if not _exists(conn):
        return False
    missing = conn.execute(
        "SELECT 1 FROM chunk_vectors_meta WHERE model_id = ? AND windows_q IS NULL LIMIT 1",
        (model_id,),
    ).fetchone()
    return missing is None


def quantized(
    conn: apsw.Connection, rowids: Sequence[int], model_id: str
) -> list[tuple[int, str, int, bytes]]:
    """(chunk rowid, chunk id, windows, windows_q) of those rowids embedded by this model."""
    # `+model_id`: look rows up by rowid, not by walking the model index (all rows).
    return list(select_in(
        conn, "SELECT chunk_rowid, chunk_id, windows, windows_q FROM chunk_vectors_meta"
        " WHERE chunk_rowid IN ({marks}) AND +model_id = ? AND windows_q IS NOT NULL",
        [int(r) for r in rowids], after=(model_id,),
    ))


def refresh(conn: apsw.Connection, model_id: str) -> int:
    """Bring the index up to date for this model; return how many chunks were (re)indexed.

    Fills `windows_q` for chunks embedded before the index existed (reading their windows
    from vec0; sqlite-vec must be loaded), then rebuilds the blocks if any chunk was filled
    or stale entries exceed `STALE_RATIO`. Cheap when nothing is to do.
    """
    if not _exists(conn):
        return 0
    gone = "model_id NOT IN (SELECT DISTINCT model_id FROM chunk_vectors_meta)"
    if conn.execute(f"SELECT 1 FROM {BLOCKS_TABLE} WHERE {gone} LIMIT 1").fetchone():
        with conn:  # blocks of models no vector comes from any more (after a reindex)
            conn.execute(f"DELETE FROM {BLOCKS_TABLE} WHERE {gone}")
    filled = _fill_quantized(conn, model_id)
    live = conn.execute(
        "SELECT count(*) FROM chunk_vectors_meta WHERE model_id = ?", (model_id,)
    ).get
    held = entries(conn, model_id)
    if not filled and held >= live and held - live <= STALE_RATIO * live:
        return 0
    return rebuild(conn, model_id)


def rebuild(conn: apsw.Connection, model_id: str) -> int:
    """Rewrite this model's blocks from the meta table's mean vectors (one transaction)."""
    # deferred: heavy: numpy, only needed here
    import numpy as np

    with conn:
        conn.execute(f"DELETE FROM {BLOCKS_TABLE} WHERE model_id = ?", (model_id,))
        rows: list[tuple] = conn.execute(
            "SELECT m.chunk_rowid, c.project, m.vector FROM chunk_vectors_meta m"
            " JOIN chunks c ON c.rowid = m.chunk_rowid"
            " WHERE m.model_id = ? AND m.windows_q IS NOT NULL ORDER BY c.project, m.chunk_rowid",
            (model_id,),
        ).fetchall()
        if not rows:
            return 0
        means = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32)
        bits = sign_bits(means.reshape(len(rows), -1))
        append(conn, model_id, ((r[0], r[1], bits[i].tobytes()) for i, r in enumerate(rows)))
    return len(rows)


def _fill_quantized(conn: apsw.Connection, model_id: str) -> int:
    """Quantise the vec0 windows of chunks that have no `windows_q` yet."""
    # deferred: heavy: numpy, only needed here
    import numpy as np

    todo = dict(conn.execute(
        "SELECT chunk_rowid, windows FROM chunk_vectors_meta"
        " WHERE model_id = ? AND windows_q IS NULL",
        (model_id,),
    ))
    if not todo or not table_exists(conn) or not ensure_vec(conn):
        return 0
    found: dict[int, dict[int, bytes]] = defaultdict(dict)
    # One pass over vec0 (~0.3 s per 100,000 windows) beats point lookups (~0.15 ms each)
    # once more than a couple of thousand windows are wanted.
    if sum(todo.values()) > 2000:
        for rowid, blob in conn.execute(f"SELECT rowid, embedding FROM {VEC_TABLE}"):
            chunk, window = divmod(rowid, WINDOW_SLOTS)
            if chunk in todo and window < todo[chunk]:
                found[chunk][window] = blob
    else:
        for chunk, windows in todo.items():
            for window in range(windows):
                row = conn.execute(f"SELECT embedding FROM {VEC_TABLE} WHERE rowid = ?",
                                   (chunk * WINDOW_SLOTS + window,)).fetchone()
                if row is not None:
                    found[chunk][window] = row[0]
    filled = 0
    with conn:
        for chunk, windows in todo.items():
            got = found.get(chunk, {})
            if len(got) != windows:  # vec0 lost rows: make the chunk pending again
                conn.execute("DELETE FROM chunk_vectors_meta WHERE chunk_rowid = ?", (chunk,))
                continue
            vecs = np.frombuffer(b"".join(got[w] for w in range(windows)), dtype=np.float32)
            conn.execute(
                "UPDATE chunk_vectors_meta SET windows_q = ? WHERE chunk_rowid = ?"
                " AND model_id = ? AND windows_q IS NULL",
                (quantize(vecs.reshape(windows, -1)), chunk, model_id),
            )
            filled += 1
    return filled


def _exists(conn: apsw.Connection) -> bool:
    return table_exists(conn, BLOCKS_TABLE)
