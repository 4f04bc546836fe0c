"""Vector storage and the embed pipeline: deletes, rowid reuse, resumability, determinism.

Everything runs on real SQLite files with the real model and sqlite-vec. The corpus is the
bundled samples (8 chunks) or a few small real sessions, so the file stays fast.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from causantic.config import load_settings
from causantic.errors import ModelUnavailable
from causantic.ingest.embed import embed_pending
from causantic.ingest.run import run_embed, run_ingest
from causantic.model import MODEL_ID
from causantic.model.embedder import get_embedder
from causantic.store import open_store
from causantic.store import vectors as vec_store
from causantic.store.chunks import delete_from

from .conftest import PYTHON, REPO, SAMPLES

# Small real sessions (spotter fixtures): 16 chunks together, several batches of 2.
SMALL_REAL = ["short.jsonl", "subagent.jsonl", "tool_heavy.jsonl"]


def _build(folder: Path, sources: list[Path], embed: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    settings = load_settings(db=folder / "memory.db", env={"HOME": str(folder)})
    run_ingest(settings, sources)
    if embed:
        run_embed(settings)
    return folder / "memory.db"


@pytest.fixture
def samples_copy(samples_embedded: Path, tmp_path: Path) -> Path:
    target = tmp_path / "db" / "memory.db"
    target.parent.mkdir()
    shutil.copy2(samples_embedded, target)
    return target


@pytest.fixture(scope="session")
def small_real(tmp_path_factory: pytest.TempPathFactory, shared_transcripts: Path) -> Path:
    """A few small real spotter sessions, ingested without vectors."""
    folder = tmp_path_factory.mktemp("small-real")
    src = folder / "transcripts"
    src.mkdir()
    for name in SMALL_REAL:
        shutil.copy2(shared_transcripts / "marot__spotter" / name, src / name)
    return _build(folder / "db", [src], embed=False)


def _vec_rows(db: Path) -> dict[int, bytes]:
    """Every vec0 row: rowid -> float32 bytes (through sqlite-vec, as search sees them)."""
    with open_store(db, readonly=True) as store:
        assert store.load_vec()
        rowids = [r[0] for r in store.conn.execute(f"SELECT rowid FROM {vec_store.VEC_TABLE}_rowids")]
        return {
            r: store.conn.execute(
                f"SELECT embedding FROM {vec_store.VEC_TABLE} WHERE rowid = ?", (r,)
            ).fetchone()[0]
            for r in rowids
        }


def _meta(db: Path) -> dict[str, tuple]:
    with open_store(db, readonly=True) as store:
        return {
            row[0]: row[1:]
            for row in store.conn.execute(
                "SELECT chunk_id, chunk_rowid, model_id, windows, embedded_at, vector"
                f" FROM {vec_store.META_TABLE}"
            )
        }


def test_every_chunk_gets_its_windows_and_a_unit_mean(samples_embedded: Path):
    with open_store(samples_embedded, readonly=True) as store:
        texts = dict(store.conn.execute("SELECT id, text FROM chunks").fetchall())
    meta = _meta(samples_embedded)
    rows = _vec_rows(samples_embedded)
    assert set(meta) == set(texts)
    assert sum(m[2] for m in meta.values()) == len(rows)
    embedder = get_embedder()
    for cid, (rowid, model, windows, _at, mean) in meta.items():
        assert model == MODEL_ID
        expected = embedder.embed_windows(texts[cid])
        stored = [rows[rowid * vec_store.WINDOW_SLOTS + w] for w in range(windows)]
        assert stored == [v.tobytes() for v in expected]  # what embed computes, bit for bit
        vec = np.frombuffer(mean, dtype=np.float32)
        assert abs(float(np.linalg.norm(vec)) - 1.0) < 1e-5


def test_tail_reingest_deletes_the_replaced_chunks_vectors(samples_copy: Path, tmp_path: Path):
    with open_store(samples_copy) as store:
        conn = store.conn
        file_id, offset, rowid = conn.execute(
            "SELECT file_id, offset, rowid FROM chunks ORDER BY rowid DESC LIMIT 1"
        ).fetchone()
        gone = [r[0] for r in conn.execute(
            "SELECT rowid FROM chunks WHERE file_id = ? AND offset >= ?", (file_id, offset))]
        with conn:
            assert delete_from(conn, file_id, offset) == len(gone)
        left = {r[0] for r in conn.execute(f"SELECT chunk_rowid FROM {vec_store.META_TABLE}")}
        assert not left & set(gone)
    rows = _vec_rows(samples_copy)
    assert not {r // vec_store.WINDOW_SLOTS for r in rows} & set(gone)
    assert len(rows) == sum(m[2] for m in _meta(samples_copy).values())


def test_delete_without_sqlite_vec_hides_then_sweeps_the_orphans(samples_copy: Path):
    # A connection that never loaded sqlite-vec (e.g. a hook) deletes a chunk: the trigger
    # drops its bookkeeping row at once; its vec0 rows are never matched and the next embed
    # sweeps them. The rowid is then reused by a new chunk, which must get only its own rows.
    import apsw

    conn = apsw.Connection(str(samples_copy))
    rowid, cid, text, project = conn.execute(
        "SELECT rowid, id, text, project FROM chunks ORDER BY rowid DESC LIMIT 1").fetchone()
    conn.execute("DELETE FROM chunks WHERE rowid = ?", (rowid,))
    conn.close()
    with open_store(samples_copy) as store:
        assert store.conn.execute(
            f"SELECT count(*) FROM {vec_store.META_TABLE} WHERE chunk_rowid = ?", (rowid,)
        ).fetchone()[0] == 0
        assert store.load_vec()
        q = get_embedder().embed_query(text).tobytes()
        found = vec_store.knn(store.conn, q, 50)
        assert rowid in {r for r, _, _ in found}  # the orphan is still in vec0...
        assert rowid not in vec_store.current_chunks(store.conn, [r for r, _, _ in found], MODEL_ID)
        # ...a new chunk takes the same rowid, then embed sweeps and re-embeds.
        store.conn.execute(
            "INSERT INTO chunks(rowid, id, session_id, project, offset, part, turn, kind,"
            " start_time, end_time, text, tokens) VALUES (?, 'feedfacefeedfacefeedface', 's-new',"
            " ?, 0, 0, 0, 'turn', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z',"
            " '[User]\nsomething else entirely', 5)", (rowid, project))
        report = embed_pending(store)
        assert report.embedded == 1 and report.remaining == 0
    meta = _meta(samples_copy)
    assert cid not in meta and meta["feedfacefeedfacefeedface"][0] == rowid
    rows = _vec_rows(samples_copy)
    assert len(rows) == sum(m[2] for m in meta.values())
    mine = sorted(r for r in rows if r // vec_store.WINDOW_SLOTS == rowid)
    assert mine == [rowid * vec_store.WINDOW_SLOTS]  # one window: the new text's only
    expected = get_embedder().embed_windows("[User]\nsomething else entirely")[0].tobytes()
    assert rows[mine[0]] == expected


def test_a_chunk_changed_while_embedding_is_skipped_not_stored(samples_copy: Path):
    with open_store(samples_copy) as store:
        conn = store.conn
        assert store.load_vec()
        rowid, cid, project = conn.execute(
            "SELECT rowid, id, project FROM chunks ORDER BY rowid LIMIT 1").fetchone()
        stale = vec_store.EmbeddedChunk(rowid, "0" * 24, project, np.eye(1, 384, dtype=np.float32))
        assert vec_store.write_vectors(conn, [stale], MODEL_ID) == 0  # rowid holds another chunk
        again = vec_store.EmbeddedChunk(rowid, cid, project, np.eye(1, 384, dtype=np.float32))
        assert vec_store.write_vectors(conn, [again], MODEL_ID) == 0  # already embedded
    assert _meta(samples_copy)[cid][2] >= 1


def test_schema_opens_and_embed_fails_cleanly_without_sqlite_vec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import causantic.store.db as db_module
    import causantic.store.vec0 as vec0_module  # ensure_vec lives there

    broken = str(tmp_path / "missing" / "vec0")
    monkeypatch.setattr(db_module, "vec_extension_path", lambda: broken)
    monkeypatch.setattr(vec0_module, "vec_extension_path", lambda: broken)
    db = _build(tmp_path / "novec", [SAMPLES], embed=False)
    with open_store(db) as store:
        assert not store.load_vec()
        assert not vec_store.table_exists(store.conn)
        with pytest.raises(ModelUnavailable, match="sqlite-vec"):
            embed_pending(store)
        assert vec_store.counts(store.conn).embedded == 0


def test_search_without_sqlite_vec_uses_the_vector_index_or_keywords(
    samples_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The compact index needs no sqlite-vec; a store it does not cover yet answers from
    keywords and says why."""
    import causantic.store.db as db_module
    from causantic.retrieval.search import search

    broken = str(tmp_path / "missing" / "vec0")
    monkeypatch.setattr(db_module, "vec_extension_path", lambda: broken)
    query = "idempotency key for CreateInvoice"
    with open_store(samples_copy, readonly=True) as store:
        assert not store.load_vec()
        for project in (None, "acme-api"):
            result = search(store, query, project=project, limit=3)
            assert result.notice is None
            assert any("vector" in h.sources for h in result.results)
    with open_store(samples_copy) as store, store.conn:
        store.conn.execute("UPDATE chunk_vectors_meta SET windows_q = NULL WHERE rowid = "
                           "(SELECT min(rowid) FROM chunk_vectors_meta)")
    with open_store(samples_copy, readonly=True) as store:
        result = search(store, query, limit=3)
    assert result.results and all(h.sources == ("keyword",) for h in result.results)
    assert result.notice == "Keyword results only: the sqlite-vec extension cannot be loaded."


def test_embed_resumes_after_a_kill_without_redoing_committed_work(small_real: Path, tmp_path: Path):
    db = tmp_path / "memory.db"
    shutil.copy2(small_real, db)
    with open_store(db, readonly=True) as store:
        total = store.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert total >= 12
    script = (
        "import sys; from pathlib import Path; from causantic.store import open_store;"
        "from causantic.ingest.embed import embed_pending\n"
        "with open_store(Path(sys.argv[1])) as s: embed_pending(s, batch_size=2)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([PYTHON, "-c", script, str(db)], env=env)
    done = 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        with open_store(db, readonly=True) as store:
            if vec_store.table_exists(store.conn, vec_store.META_TABLE):
                done = store.conn.execute(f"SELECT count(*) FROM {vec_store.META_TABLE}").fetchone()[0]
        if done >= 4:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.05)
    proc.wait(timeout=30)
    before = _meta(db)
    assert 4 <= len(before) < total, "the kill should land mid-way"
    with open_store(db) as store:
        report = embed_pending(store)
    assert report.todo == total - len(before) and report.embedded == report.todo
    after = _meta(db)
    assert len(after) == total
    for cid, row in before.items():
        assert after[cid] == row  # committed work untouched (same embedded_at, same vector)
    rows = _vec_rows(db)
    assert len(rows) == sum(m[2] for m in after.values())
    with open_store(db, readonly=True) as store:
        cid, text = store.conn.execute("SELECT id, text FROM chunks ORDER BY rowid LIMIT 1").fetchone()
    rowid, windows = after[cid][0], after[cid][2]
    expected = get_embedder().embed_windows(text)
    assert [rows[rowid * vec_store.WINDOW_SLOTS + w] for w in range(windows)] == [
        v.tobytes() for v in expected]


def test_a_forked_sessions_copied_chunks_take_their_twins_vectors(tmp_path: Path):
    """`--fork-session` copies the parent's records, times included, into a new session:
    its copied chunks get the parent's vectors without running the model, in a later batch
    or the same one, and they are the vectors the model gives that text."""
    src = tmp_path / "transcripts" / "-home-dev-acme-api"
    src.mkdir(parents=True)
    parent = SAMPLES / "-home-dev-acme-api" / "22222222-aaaa-4bbb-8ccc-000000000002.jsonl"
    shutil.copy2(parent, src / parent.name)
    fork = "66666666-aaaa-4bbb-8ccc-00000000f0f0"
    copied = [json.dumps({**json.loads(line), "sessionId": fork})
              for line in parent.read_text().splitlines() if line.strip()]
    (src / f"{fork}.jsonl").write_text("\n".join(copied) + "\n")
    db = _build(tmp_path / "db", [src], embed=False)
    with open_store(db) as store:
        n = store.conn.execute("SELECT count(*) FROM chunks WHERE session_id = ?",
                               (fork,)).fetchone()[0]
        report = embed_pending(store, batch_size=n)  # the parent first, the copy after
        assert n > 1 and report.embedded == 2 * n and report.reused == n
    with open_store(db) as store:
        report = embed_pending(store, reindex=True)  # nothing is stale: nothing to do
        assert report.todo == 0
    rows, meta = _vec_rows(db), _meta(db)
    with open_store(db, readonly=True) as store:
        pairs = store.conn.execute(
            "SELECT a.id, b.id, a.text FROM chunks a JOIN chunks b ON a.text = b.text"
            " AND a.session_id != b.session_id AND b.session_id = ?", (fork,)).fetchall()
    assert len(pairs) == n
    embedder = get_embedder()
    with open_store(db, readonly=True) as store:
        bits = vec_store.token_bits(store.conn, [cid for pair in pairs for cid in pair[:2]],
                                    MODEL_ID)
    for original, copy, text in pairs:
        windows = [[rows[meta[cid][0] * vec_store.WINDOW_SLOTS + w] for w in range(meta[cid][2])]
                   for cid in (original, copy)]
        assert windows[0] == windows[1] == [v.tobytes() for v in embedder.embed_windows(text)]
        assert bits[original] == bits[copy]  # the token rerank's bits too
    with open_store(db) as store:  # both copies in one batch: the second takes the first's
        store.conn.execute(f"DELETE FROM {vec_store.META_TABLE}")
        report = embed_pending(store, batch_size=2 * n)
        assert report.embedded == 2 * n and report.reused == n


def test_two_processes_store_bit_identical_vectors(tmp_path: Path):
    dbs = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        dbs.append(folder / "memory.db")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.run([PYTHON, "-m", "causantic", "--db", str(db), "ingest", "--json", str(SAMPLES)],
                       env=env, capture_output=True, text=True, timeout=120)
        for db in dbs
    ]
    for p in procs:
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["embed"]["embedded"] == 8
    assert _vec_rows(dbs[0]) == _vec_rows(dbs[1])
    ma, mb = _meta(dbs[0]), _meta(dbs[1])
    assert {k: (v[0], v[1], v[2], v[4]) for k, v in ma.items()} == {
        k: (v[0], v[1], v[2], v[4]) for k, v in mb.items()}


def test_reindex_redoes_vectors_from_another_model_and_says_when_done(samples_copy: Path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([PYTHON, "-m", "causantic", "--db", str(samples_copy), *args],
                              env=env, capture_output=True, text=True, timeout=120)

    with open_store(samples_copy) as store, store.conn:
        store.conn.execute(f"UPDATE {vec_store.META_TABLE} SET model_id = 'old-model/1'")
    out = cli("search", "idempotency key", "--json")
    assert out.returncode == 0
    doc = json.loads(out.stdout)
    assert "reindex" in doc["notice"] and doc["results"]
    assert all(r["sources"] == ["keyword"] for r in doc["results"])
    out = cli("embed")
    assert "8 chunks have vectors from another model" in out.stdout
    out = cli("reindex", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["embedded"] == 8
    out = cli("reindex")
    assert out.stdout.startswith("Nothing to reindex")
    stats = json.loads(cli("stats", "--json").stdout)
    assert stats["vectors"] == stats["chunks"] == 8
    assert len(_vec_rows(samples_copy)) == sum(m[2] for m in _meta(samples_copy).values())
