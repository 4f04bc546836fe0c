"""The compact vector index: same answers as vec0's exact KNN, kept current through deletes,
reindexing and stores embedded before it existed. Real SQLite files, vectors written through
`store.vectors.write_vectors` (random unit windows: no model needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from causantic.ingest.embed import embed_pending
from causantic.model import MODEL_ID
from causantic.retrieval import vector as vector_mod
from causantic.store import open_store, vector_index
from causantic.store import vectors as vec_store

DIM = 384


def _store_with_vectors(path: Path, n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """n chunks in 3 projects with 1-4 random unit windows each; returns id -> windows."""
    rng = np.random.default_rng(seed)
    windows: dict[str, np.ndarray] = {}
    with open_store(path) as store:
        assert store.load_vec()
        conn = store.conn
        vec_store.ensure_table(conn, DIM)
        with conn:
            for i in range(n):
                conn.execute(
                    "INSERT INTO chunks(id, session_id, project, offset, part, turn, kind,"
                    " start_time, end_time, text, tokens) VALUES (?,?,?,?,0,0,'turn','t','t',?,9)",
                    (f"c{i:05}", f"s{i % 7}", f"p{i % 3}", i, f"chunk number {i}"),
                )
        rows = conn.execute("SELECT rowid, id, project FROM chunks ORDER BY rowid").fetchall()
        items = []
        for rowid, cid, project in rows:
            w = rng.standard_normal((int(rng.integers(1, 5)), DIM)).astype(np.float32)
            w /= np.linalg.norm(w, axis=1, keepdims=True)
            windows[cid] = w
            items.append(vec_store.EmbeddedChunk(rowid, cid, project, w))
        for i in range(0, len(items), 500):
            vec_store.write_vectors(conn, items[i : i + 500], MODEL_ID)
    return windows


def _exact(windows: dict[str, np.ndarray], q: np.ndarray, k: int, ids=None) -> list[str]:
    scores = {cid: float((w @ q).max()) for cid, w in windows.items() if ids is None or cid in ids}
    return sorted(scores, key=lambda c: -scores[c])[:k]


def _queries(windows: dict[str, np.ndarray], n: int, seed: int = 1) -> list[np.ndarray]:
    """Queries near stored windows (as real queries are near what answers them)."""
    rng = np.random.default_rng(seed)
    ids = sorted(windows)
    out = []
    for _ in range(n):
        w = windows[ids[int(rng.integers(len(ids)))]][0]
        q = w + 0.8 * rng.standard_normal(DIM).astype(np.float32) / np.sqrt(DIM)
        out.append((q / np.linalg.norm(q)).astype(np.float32))
    return out


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    path = tmp_path_factory.mktemp("vindex") / "m.db"
    return path, _store_with_vectors(path, 3000)


def test_writes_fill_the_index_in_the_same_transaction(indexed):
    path, windows = indexed
    with open_store(path, readonly=True) as store:
        assert vector_index.ready(store.conn, MODEL_ID)
        assert vector_index.entries(store.conn, MODEL_ID) == len(windows)
        assert vector_index.entries(store.conn, MODEL_ID, "p1") == 1000
        blocks = store.conn.execute("SELECT count(*) FROM chunk_vector_blocks").fetchone()[0]
        assert blocks == 3  # one block per project: 1000 chunks each, appended in batches
        cid = "c00042"
        blob = store.conn.execute(
            "SELECT windows_q FROM chunk_vectors_meta WHERE chunk_id = ?", (cid,)
        ).fetchone()[0]
    approx = vector_index.dequantize(blob, len(windows[cid]), DIM)
    assert np.abs(approx - windows[cid]).max() < 0.01


def test_index_matches_exact_knn_when_the_pool_covers_the_scope(indexed, monkeypatch):
    path, windows = indexed
    monkeypatch.setattr(vector_mod, "INDEX_CANDIDATES", 5000)
    with open_store(path, readonly=True) as store:
        assert store.load_vec()
        for q in _queries(windows, 10):
            got = vector_mod._index_search(store.conn, q, None, 10)
            exact = _exact(windows, q, 10)
            assert got[0][0] == exact[0]
            tenth = float((windows[exact[-1]] @ q).max())
            for cid, score in got:  # int8 rounding may only swap near-ties
                true = float((windows[cid] @ q).max())
                assert abs(score - true) < 0.01 and true >= tenth - 0.01
            vec0 = vector_mod._vec0_search(store.conn, q, "p2", 5)
            assert vector_mod._index_search(store.conn, q, "p2", 5)[0][0] == vec0[0][0]


def test_index_keeps_the_nearest_chunks_when_it_prunes(indexed, monkeypatch):
    """With a pool of a third of the store, the Hamming pass keeps the chunk each query was
    drawn near, and what it returns scores close to the exact top 10."""
    path, windows = indexed
    monkeypatch.setattr(vector_mod, "INDEX_CANDIDATES", 1000)
    shortfall = []
    with open_store(path, readonly=True) as store:
        for q in _queries(windows, 30):
            got = vector_mod._index_search(store.conn, q, None, 10)
            exact = _exact(windows, q, 10)
            assert got[0][0] == exact[0]
            true = [float((windows[c] @ q).max()) for c in exact]
            shortfall.append(sum(true) - sum(float((windows[c] @ q).max()) for c, _ in got))
    # Random vectors are the hard case: past the first hit all chunks are near-ties.
    assert np.mean(shortfall) / 10 < 0.01, shortfall


def test_search_uses_the_index_without_a_filter_and_vec0_for_a_small_project(
    indexed, monkeypatch
):
    path, _ = indexed
    with open_store(path, readonly=True) as store:
        assert vector_mod._use_index(store, None)
        assert not vector_mod._use_index(store, "p1")  # 1,000 chunks
        monkeypatch.setattr(vector_mod, "EXACT_PROJECT_MAX", 999)
        assert vector_mod._use_index(store, "p1")
        q = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
        hits = vector_mod.vector_search(store, q, limit=5).hits
        assert len(hits) == 5 and hits == sorted(hits, key=lambda h: -h[1])


def test_deleted_chunks_never_come_back_and_refresh_compacts(tmp_path: Path):
    path = tmp_path / "m.db"
    windows = _store_with_vectors(path, 400)
    q = windows["c00007"][0]
    with open_store(path) as store:
        conn = store.conn
        assert vector_mod._index_search(conn, q, None, 1)[0][0] == "c00007"
        with conn:
            doomed = [r[0] for r in conn.execute("SELECT rowid FROM chunks WHERE rowid % 2 = 0")]
            assert store.load_vec()
            vec_store.drop_chunk_vectors(conn, doomed)
            conn.execute("DELETE FROM chunks WHERE rowid % 2 = 0")
        left = {r[0] for r in conn.execute("SELECT id FROM chunks")}
        got = vector_mod._index_search(conn, q, None, 400)
        assert {cid for cid, _ in got} == left  # stale entries are skipped, live ones all found
        assert vector_index.entries(conn, MODEL_ID) == 400
        assert vector_index.refresh(conn, MODEL_ID) == len(left)
        assert vector_index.entries(conn, MODEL_ID) == len(left)
        assert vector_index.refresh(conn, MODEL_ID) == 0  # nothing to do the second time


def test_a_store_embedded_before_the_index_is_indexed_by_the_next_embed(tmp_path: Path):
    path = tmp_path / "m.db"
    windows = _store_with_vectors(path, 300)
    with open_store(path) as store, store.conn:  # what migration 6 leaves: no index yet
        store.conn.execute("UPDATE chunk_vectors_meta SET windows_q = NULL")
        store.conn.execute("DELETE FROM chunk_vector_blocks")
    q = windows["c00100"][1 if len(windows["c00100"]) > 1 else 0]
    with open_store(path) as store:
        assert not vector_index.ready(store.conn, MODEL_ID)
        assert not vector_mod._use_index(store, None)
        before = vector_mod.vector_search(store, q, limit=5).hits  # vec0 answers meanwhile
        assert before[0][0] == "c00100"
        report = embed_pending(store)  # nothing to embed, but the index is filled
        assert report.indexed == 300 and report.embedded == 0
        assert vector_index.ready(store.conn, MODEL_ID)
        after = vector_mod.vector_search(store, q, limit=5).hits
    assert [c for c, _ in after] == [c for c, _ in before]
    assert all(abs(a[1] - b[1]) < 0.01 for a, b in zip(after, before))


def test_a_chunk_whose_vec0_rows_are_lost_is_embedded_again(tmp_path: Path):
    path = tmp_path / "m.db"
    _store_with_vectors(path, 50)
    with open_store(path) as store:
        conn = store.conn
        assert store.load_vec()
        rowid = conn.execute("SELECT rowid FROM chunks WHERE id = 'c00003'").fetchone()[0]
        with conn:
            conn.execute("UPDATE chunk_vectors_meta SET windows_q = NULL")
            conn.execute(f"DELETE FROM {vec_store.VEC_TABLE} WHERE rowid = ?",
                         (rowid * vec_store.WINDOW_SLOTS,))
        assert vector_index.refresh(conn, MODEL_ID) == 49
        pending = [p.chunk_id for p in vec_store.pending(conn, MODEL_ID)]
    assert pending == ["c00003"]
