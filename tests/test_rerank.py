"""The token rerank (`causantic.retrieval.rerank`): stored token bits, MaxSim, and when it
steps aside. Real model, real SQLite files (the bundled samples, embedded once per run)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from causantic.ingest.embed import embed_pending, summary
from causantic.model import DIM, MODEL_ID
from causantic.model.embedder import get_embedder
from causantic.retrieval import rerank, search
from causantic.retrieval.browse import render_stats, stats
from causantic.store import open_store, vector_index
from causantic.store import vectors as vec_store

FLAKY = "604cd1a77d2888093c286a72"  # "The TestRetryBackoff test in internal/retry is flaky on CI"
SHUTDOWN = "f19e8298cc699d40ffc05600"  # "Why does the server take ten seconds to shut down"
DOCKER = "4c22c2b35be61833af6c57b6"  # "which Go version does the Dockerfile use?"


@pytest.fixture
def samples_copy(samples_embedded: Path, tmp_path: Path) -> Path:
    target = tmp_path / "memory.db"
    shutil.copy2(samples_embedded, target)
    return target


def _all_bits(db: Path) -> dict[str, bytes]:
    with open_store(db, readonly=True) as store:
        ids = [r[0] for r in store.conn.execute("SELECT id FROM chunks")]
        return vec_store.token_bits(store.conn, ids, MODEL_ID)


def test_embed_stores_each_chunks_token_sign_bits(samples_embedded: Path):
    embedder = get_embedder()
    with open_store(samples_embedded, readonly=True) as store:
        texts = dict(store.conn.execute("SELECT id, text FROM chunks").fetchall())
    bits = _all_bits(samples_embedded)
    assert set(bits) == set(texts)
    for cid, text in texts.items():
        tokens = embedder.embed_windows_and_tokens(text)[1]
        assert bits[cid] == vector_index.sign_bits(tokens).tobytes()


def test_embed_gives_token_bits_to_chunks_embedded_without_them(samples_copy: Path):
    """A store embedded before token bits existed (or imported without them) gets them at the
    next embed, from the first windows only, and says so."""
    before = _all_bits(samples_copy)
    with open_store(samples_copy) as store:
        with store.conn:
            store.conn.execute(f"DELETE FROM {vec_store.TOKENS_TABLE}")
        assert len(vec_store.untokened(store.conn, MODEL_ID)) == len(before)
        counts = stats(store.conn)
        assert (counts["vectors"], counts["token_bits"]) == (len(before), 0)
        assert "8 without the token rerank's bits: `causantic embed`" in render_stats(counts, "x")
        report = embed_pending(store)
        assert (report.todo, report.tokened) == (0, len(before))
        assert "Gave 8 chunks token vectors" in summary(report)
        assert vec_store.untokened(store.conn, MODEL_ID) == []
        assert embed_pending(store).tokened == 0  # nothing left: the model is not even loaded
        assert "token rerank" not in render_stats(stats(store.conn), "x")
    assert _all_bits(samples_copy) == before


def test_maxsim_equals_the_float_computation_over_sign_vectors():
    rng = np.random.default_rng(7)
    query = rng.standard_normal((5, DIM)).astype(np.float32)
    chunks = [rng.standard_normal((n, DIM)).astype(np.float32) for n in (3, 0, 1, 12)]
    got = rerank.maxsim(query, [vector_index.sign_bits(c).tobytes() for c in chunks])
    for score, tokens in zip(got, chunks):
        if not len(tokens):
            assert score == 0.0
            continue
        signs = np.where(tokens > 0, 1.0, -1.0) / np.sqrt(DIM)
        assert score == pytest.approx(float((query @ signs.T).max(axis=1).mean()), abs=1e-5)


def test_a_chunk_that_answers_each_part_of_the_question_reads_closer():
    embedder = get_embedder()
    question = "how did we fix the SQLITE_BUSY errors in the ingest worker"
    texts = ["The ingest worker kept failing with SQLITE_BUSY; we fixed it with a busy timeout"
             " and retries with backoff.",
             "Release notes: the dashboard renders topic charts and the CLI gained --json."]
    _, pieces, states = embedder.embed_query_pieces(question)
    query = rerank.query_matrix(pieces, states)
    assert len(query) < len(pieces)  # "how", "did", "we", "the", "in" say nothing
    bits = [vector_index.sign_bits(embedder.embed_windows_and_tokens(t)[1]).tobytes()
            for t in texts]
    answer, other = rerank.maxsim(query, bits)
    assert answer > other + 0.05


def test_rerank_lifts_the_chunk_the_question_reads_and_scales_a_thin_ones_gain(samples_embedded: Path):
    question = "why does the server take ten seconds to shut down after ctrl-c"
    with open_store(samples_embedded, readonly=True) as store:
        fused = [(FLAKY, 0.1, ("keyword",)), (SHUTDOWN, 0.0, ("vector",))]
        assert [c for c, _, _ in rerank.rerank(store.conn, question, fused, set())] == [SHUTDOWN, FLAKY]
        assert [c for c, _, _ in rerank.rerank(store.conn, question, fused, {SHUTDOWN})] == [FLAKY, SHUTDOWN]


def test_rerank_steps_aside_while_a_candidate_has_no_token_bits(samples_copy: Path):
    question = "why does the server take ten seconds to shut down after ctrl-c"
    fused = [(FLAKY, 0.1, ("keyword",)), (DOCKER, 0.05, ()), (SHUTDOWN, 0.0, ("vector",))]
    with open_store(samples_copy) as store:
        with store.conn:
            store.conn.execute(f"DELETE FROM {vec_store.TOKENS_TABLE} WHERE chunk_rowid ="
                               " (SELECT rowid FROM chunks WHERE id = ?)", (DOCKER,))
        assert rerank.rerank(store.conn, question, fused, set()) == fused
        with store.conn:  # a damaged blob (not whole tokens) counts as missing: no crash
            store.conn.execute(f"INSERT INTO {vec_store.TOKENS_TABLE}(chunk_rowid, model_id, bits)"
                               " SELECT rowid, ?, x'0102' FROM chunks WHERE id = ?",
                               (MODEL_ID, DOCKER))
        assert rerank.rerank(store.conn, question, fused, set()) == fused
        # ... and search then ranks exactly as without the rerank
        product = search.search_with(search.PRODUCT, store, question, limit=5)
        plain = search.search_with(search.Steps(rerank=search.no_rerank), store, question, limit=5)
        assert [h.chunk_id for h in product.results] == [h.chunk_id for h in plain.results]
    assert search.PRODUCT.rerank is search.token_rerank


def test_token_bits_another_process_wrote_meanwhile_are_kept(samples_copy: Path):
    """Backfills are idempotent: a chunk given bits since it was listed is not written again."""
    with open_store(samples_copy) as store:
        with store.conn:
            store.conn.execute(f"DELETE FROM {vec_store.TOKENS_TABLE}")
        listed = vec_store.untokened(store.conn, MODEL_ID)
        theirs = b"\xff" * (DIM // 8)
        assert vec_store.write_token_bits(store.conn, [(listed[0], theirs)], MODEL_ID) == 1
        ours = [(chunk, b"\x00" * (DIM // 8)) for chunk in listed]
        assert vec_store.write_token_bits(store.conn, ours, MODEL_ID) == len(listed) - 1
        bits = vec_store.token_bits(store.conn, [listed[0].chunk_id], MODEL_ID)
        assert bits == {listed[0].chunk_id: theirs}
