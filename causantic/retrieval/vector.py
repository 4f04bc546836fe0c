"""Vector KNN over chunk windows, and helpers for anything that scores chunks by meaning.

Importing this module is cheap (numpy is imported by the functions that need it), so search
can ask `vectors_state` before paying for numpy. The model is loaded on the first query
embedding, once per process.

A chunk's vector score is its best window's cosine similarity to the query. Two ways find
the best chunks:

* the compact index (`causantic.store.vector_index`) for every search without a project
  filter, and for a project with more than `EXACT_PROJECT_MAX` chunks: the Hamming distance
  between the sign bits of the query and of each chunk's mean vector picks a pool of
  candidates (`INDEX_CANDIDATES`), and their int8 windows rescore them (~15 ms at 100,000
  chunks where vec0 takes ~400 ms);
* vec0's exact KNN over window vectors for one project's partition (a few ms), and whenever
  the index does not cover every chunk yet (a store embedded before it existed, until the
  next `embed`). It asks for ``k`` windows (4 per wanted chunk, growing up to vec0's limit
  of 4096) until it holds enough distinct chunks.

A hit counts only if the chunk's bookkeeping row says its vectors come from the current model,
which also hides vec0 rows and index entries orphaned by a delete. Whenever the vector side
cannot answer, `VectorsUnavailable` says why in one line.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import apsw

from causantic.errors import CausanticError
from causantic.model import MODEL_ID
from causantic.store import vector_index
from causantic.store import vectors as vec_store
from causantic.store.counts import any_chunks
from causantic.store.db import Store

if TYPE_CHECKING:
    import numpy as np

#: Windows asked of vec0 per wanted chunk on the first try (chunks average ~4 windows).
WINDOWS_PER_CHUNK = 4
#: Chunks the compact index rescores: at least this many, and CANDIDATES_PER_RESULT per
#: wanted chunk (600 for a 10-result search, whose lists are 60 deep; 1,200 found the same
#: answers on the blind tune set). On the shared transcripts a pool of 5 % of the chunks
#: found the answering session as often (hit@1, hit@5) as an exact scan. Rescoring reads
#: each candidate's row: ~10 us each when cached, far more when the page cache has dropped
#: them, so the pool is kept modest.
INDEX_CANDIDATES = 500
CANDIDATES_PER_RESULT = 10
#: A project with more embedded chunks than this is searched through the compact index:
#: vec0 costs ~1 microsecond a window (~4 a chunk), rescoring the index's pool ~7 ms.
EXACT_PROJECT_MAX = 2_000


class VectorsUnavailable(CausanticError):
    """The vector side cannot answer; ``str(exc)`` is the one-line reason."""


@dataclass(frozen=True)
class VectorHits:
    """Chunks nearest the query: (chunk id, cosine of the best window), best first."""

    hits: list[tuple[str, float]]
    query: np.ndarray
    model_id: str


def vectors_state(conn: apsw.Connection) -> str | None:
    """Why stored vectors cannot serve this model now, or None if some can (no imports).

    Checks only the bookkeeping table (index lookups), so keyword fallbacks stay cheap.
    """
    if not vec_store.table_exists(conn, vec_store.META_TABLE) or not vec_store.table_exists(conn):
        return _no_vectors(conn)
    if vec_store.has_model(conn, MODEL_ID):
        return None
    other = vec_store.other_model(conn, MODEL_ID)
    if other is not None:
        return f"stored vectors come from model {other}, not {MODEL_ID} (run `causantic reindex`)"
    return _no_vectors(conn)


def _no_vectors(conn: apsw.Connection) -> str:
    """Why there are no vectors: nothing to embed yet, or embedding has not run."""
    if not any_chunks(conn):
        return "memory is empty (run `causantic ingest`)"
    return "no vectors yet (run `causantic embed`)"


_cache_lock = threading.Lock()
#: (model directory, text) -> (query vector, word pieces, piece vectors) of recent queries.
_query_cache: OrderedDict[tuple[str, str], tuple[np.ndarray, list[str], np.ndarray]] = OrderedDict()


def query_vector(text: str, model_dir: str | None = None) -> np.ndarray:
    """The unit query vector of ``text`` (the first window; cached for recent queries).

    Raises
    ------
    VectorsUnavailable
        The embedding model cannot be loaded.
    """
    return _embedded_query(text, model_dir)[0]


def query_pieces(text: str, model_dir: str | None = None) -> tuple[list[str], np.ndarray]:
    """The word pieces of ``text``'s first window and their unit vectors (cached with its
    query vector: one model run gives both).

    Raises
    ------
    VectorsUnavailable
        The embedding model cannot be loaded.
    """
    _, pieces, vectors = _embedded_query(text, model_dir)
    return pieces, vectors


def _embedded_query(text: str, model_dir: str | None) -> tuple[np.ndarray, list[str], np.ndarray]:
    # deferred: hook fast path: loaded only when this runs
    from causantic import model as _model

    key = (str(_model.model_dir(model_dir)), text)  # the directory, not the argument: env-aware
    with _cache_lock:
        hit = _query_cache.get(key)
        if hit is not None:
            _query_cache.move_to_end(key)
            return hit
    # deferred: hook fast path: loaded only when this runs
    from causantic.errors import ModelUnavailable
    from causantic.model.embedder import get_embedder

    try:
        embedded = get_embedder(model_dir).embed_query_pieces(text)
    except ModelUnavailable as exc:
        raise VectorsUnavailable(f"the embedding model is unavailable: {exc}") from None
    for array in (embedded[0], embedded[2]):
        array.setflags(write=False)
    with _cache_lock:
        _query_cache[key] = embedded
        while len(_query_cache) > 32:
            _query_cache.popitem(last=False)
    return embedded


def clear_query_cache() -> None:
    """Forget the cached query vectors (benchmarks time every query's embedding)."""
    with _cache_lock:
        _query_cache.clear()


def vector_search(
    store: Store,
    query: str | np.ndarray,
    *,
    project: str | None = None,
    limit: int = 50,
    model_dir: str | None = None,
) -> VectorHits:
    """The ``limit`` chunks whose best window is nearest the query (cosine, best first).

    Raises
    ------
    VectorsUnavailable
        No vectors (for this model, or for this project), or the model or sqlite-vec cannot
        load. The message is one line, fit for a notice.
    """
    # deferred: heavy: numpy, only needed here
    import numpy as np

    conn = store.conn
    reason = vectors_state(conn)
    if reason:
        raise VectorsUnavailable(reason)
    qvec = query if isinstance(query, np.ndarray) else query_vector(query, model_dir)
    if _use_index(store, project):
        hits = _index_search(conn, qvec, project, limit)
    elif store.load_vec():
        hits = _vec0_search(conn, qvec, project, limit)
    else:
        raise VectorsUnavailable("the sqlite-vec extension cannot be loaded")
    if not hits and project is not None and not _project_has_vectors(conn, project):
        raise VectorsUnavailable(f"no vectors for project {project} yet (run `causantic embed`)")
    return VectorHits(hits[:limit], qvec, MODEL_ID)


def _use_index(store: Store, project: str | None) -> bool:
    """The compact index for searches over many chunks; vec0 (exact) for one small project.

    vec0 scans one project's partition in a few ms, so a project filter uses the index only
    when that project alone is large, or when sqlite-vec cannot load here (the index needs
    none). The index must cover every chunk of the model.
    """
    conn = store.conn
    if not vector_index.ready(conn, MODEL_ID):
        return False
    return (project is None or vector_index.entries(conn, MODEL_ID, project) > EXACT_PROJECT_MAX
            or not store.load_vec())


def _index_search(
    conn: apsw.Connection, qvec: np.ndarray, project: str | None, limit: int,
    pool: int | None = None,
) -> list[tuple[str, float]]:
    """Hamming distance of mean-vector sign bits picks candidates; int8 windows rescore them.

    Exact (up to int8 rounding) whenever the scope holds no more chunks than the candidate
    pool; otherwise a chunk is missed only if its mean vector's signs are far from the query's
    while one of its windows is near it.
    """
    # deferred: heavy: numpy, only needed here
    import numpy as np

    rowids, bits = vector_index.load(conn, MODEL_ID, project)
    if not len(rowids):
        return []
    if pool is None:
        pool = max(INDEX_CANDIDATES, limit * CANDIDATES_PER_RESULT)
    if len(rowids) > pool:
        distance = vector_index.hamming(bits, vector_index.sign_bits(qvec))
        rowids = rowids[np.argpartition(distance, pool - 1)[:pool]]
    rows = vector_index.quantized(conn, np.unique(rowids).tolist(), MODEL_ID)
    if not rows:
        return []
    counts = [r[2] for r in rows]
    scales, values = vector_index.unpack([r[3] for r in rows], counts, len(qvec))
    cos = (values @ np.asarray(qvec, dtype=np.float32)) * scales
    best = np.maximum.reduceat(cos, np.cumsum([0] + counts[:-1]))
    order = np.argsort(-best, kind="stable")[:limit]
    return [(rows[i][1], min(1.0, float(best[i]))) for i in order]


def _vec0_search(
    conn: apsw.Connection, qvec: np.ndarray, project: str | None, limit: int
) -> list[tuple[str, float]]:
    """Exact KNN over vec0's window vectors (sqlite-vec loaded)."""
    # deferred: heavy: numpy, only needed here
    import numpy as np

    qbytes = np.ascontiguousarray(qvec, dtype=np.float32).tobytes()
    k = min(vec_store.MAX_K, max(64, limit * WINDOWS_PER_CHUNK))
    while True:
        rows = vec_store.knn(conn, qbytes, k, project)
        best: dict[int, float] = {}
        for rowid, _window, dist in rows:
            if rowid not in best:
                best[rowid] = dist
        current = vec_store.current_chunks(conn, list(best), MODEL_ID)
        hits = [(current[r], 1.0 - d * d / 2.0) for r, d in best.items() if r in current]
        if len(hits) >= limit or len(rows) < k or k >= vec_store.MAX_K:
            return hits
        k = min(vec_store.MAX_K, k * 4)


def _project_has_vectors(conn: apsw.Connection, project: str) -> bool:
    return vec_store.project_has_vectors(conn, project, MODEL_ID)


def chunk_vectors(conn: apsw.Connection, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
    """chunk id -> unit vector (the normalised mean of its windows), current model only.

    Chunks without current vectors are absent. Needs no sqlite-vec (plain table).
    """
    # deferred: heavy: numpy, only needed here
    import numpy as np

    return {
        cid: np.frombuffer(blob, dtype=np.float32)
        for cid, blob in vec_store.mean_vectors(conn, list(chunk_ids), MODEL_ID).items()
    }


def similarities(
    conn: apsw.Connection, chunk_ids: Sequence[str], query: np.ndarray
) -> dict[str, float]:
    """chunk id -> cosine between the query vector and the chunk's mean vector."""
    # deferred: heavy: numpy, only needed here
    import numpy as np

    vecs = chunk_vectors(conn, chunk_ids)
    if not vecs:
        return {}
    ids = list(vecs)
    sims = np.stack([vecs[i] for i in ids]) @ np.asarray(query, dtype=np.float32)
    return {cid: float(s) for cid, s in zip(ids, sims)}
