"""`causantic benchmark`: a score out of 100 for the user's own memory, with advice."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import apsw
import pytest

from causantic.cli import main
from causantic.scorecard import QUICK_CHAIN_QUERIES, QUICK_SAMPLES, WEIGHTS

from .conftest import SAMPLES


def bench_json(capsys: pytest.CaptureFixture[str], db: Path, *extra: str) -> dict:
    capsys.readouterr()
    code = main(["--db", str(db), "benchmark", "--json", *extra])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def advice(doc: dict) -> str:
    return "\n".join(c["advice"] or "" for c in doc["components"])


def test_shared_memory_scores_every_component_and_asks_for_vectors(
        shared_db: Path, capsys: pytest.CaptureFixture[str]):
    """On the real keyword-only store: rare words find their chunk; missing vectors cost points."""
    doc = bench_json(capsys, shared_db, "--quick")
    assert [c["name"] for c in doc["components"]] == list(WEIGHTS)
    assert sum(c["weight"] for c in doc["components"]) == 100
    assert doc["score"] == round(sum(c["points"] for c in doc["components"]))
    health = doc["health"]
    assert health["chunks"] > 500 and health["integrity"] == "ok"
    assert health["embedded"] == 0 and health["unembedded"] == health["chunks"]
    assert "run `causantic embed`" in advice(doc)
    vectors = next(c for c in doc["components"] if c["name"] == "vectors")
    assert vectors["points"] == 0
    sr = doc["self_retrieval"]
    assert sr["mode"] == "keyword" and "causantic embed" in (sr["notice"] or "")
    assert sr["samples"] == QUICK_SAMPLES
    assert sr["distinctive"]["queries"] >= QUICK_SAMPLES - 1 and sr["distinctive"]["rate"] >= 0.8
    assert doc["chains"]["on_chain_share"] > 0.9 and doc["chains"]["mean_chain_length"] > 5
    assert doc["latency"]["search"]["n"] >= sr["distinctive"]["queries"]
    assert doc["latency"]["recall"]["n"] == QUICK_CHAIN_QUERIES


def test_same_seed_gives_the_same_answers(shared_db: Path, capsys: pytest.CaptureFixture[str]):
    """Sampling is seeded, so two runs agree on everything but the timings."""
    a = bench_json(capsys, shared_db, "--quick", "--samples", "6")
    b = bench_json(capsys, shared_db, "--quick", "--samples", "6")
    assert a["self_retrieval"] == b["self_retrieval"]
    assert a["health"] == b["health"] and a["chains"] == b["chains"]


def test_text_report_shows_score_components_and_advice(
        shared_db: Path, capsys: pytest.CaptureFixture[str]):
    capsys.readouterr()
    assert main(["--db", str(shared_db), "benchmark", "--quick", "--samples", "4"]) == 0
    text = capsys.readouterr().out
    assert "/100" in text and "Advice:" in text and "causantic embed" in text
    for name in WEIGHTS:
        assert name in text


def test_chunks_cut_from_their_chains_lower_the_chain_score(
        shared_db_copy: Path, capsys: pytest.CaptureFixture[str]):
    """Deleting every edge leaves no chunk on a chain: 0 points and advice, not a crash."""
    conn = apsw.Connection(str(shared_db_copy))
    conn.execute("DELETE FROM edges")
    conn.close()
    doc = bench_json(capsys, shared_db_copy, "--quick", "--samples", "4")
    chains = next(c for c in doc["components"] if c["name"] == "chains")
    assert chains["points"] == 0 and "on no chain" in chains["advice"]
    assert doc["health"]["orphan_chunks"] == doc["health"]["chunks"]
    assert doc["chains"]["mean_chain_length"] == 1.0


def test_full_run_checks_integrity_of_the_whole_file(
        shared_db: Path, capsys: pytest.CaptureFixture[str]):
    doc = bench_json(capsys, shared_db, "--samples", "5")
    assert doc["health"]["integrity_scope"] == "full" and doc["health"]["integrity"] == "ok"
    assert not doc["quick"] and doc["self_retrieval"]["samples"] == 5


def test_embedded_memory_uses_hybrid_search_and_needs_no_embed_advice(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """The real model: after `ingest` (which embeds), vectors earn full points."""
    db = tmp_path / "m.db"
    assert main(["--db", str(db), "ingest", "--json", str(SAMPLES)]) == 0
    doc = bench_json(capsys, db, "--quick")
    assert doc["health"]["unembedded"] == 0 and doc["health"]["embedded"] > 0
    assert doc["self_retrieval"]["mode"] == "hybrid" and not doc["self_retrieval"]["notice"]
    assert "causantic embed" not in advice(doc)
    vectors = next(c for c in doc["components"] if c["name"] == "vectors")
    assert vectors["points"] == vectors["weight"]


def test_empty_memory_says_so_without_a_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from causantic.store import open_store

    db = tmp_path / "empty.db"
    with open_store(db):
        pass
    doc = bench_json(capsys, db)
    assert doc["score"] is None and doc["health"]["chunks"] == 0 and doc["components"] == []
    assert main(["--db", str(db), "benchmark"]) == 0
    text = capsys.readouterr().out
    assert "Memory is empty" in text and "causantic ingest" in text


def test_missing_database_is_one_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    code = main(["--db", str(tmp_path / "nope.db"), "benchmark", "--quick"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "causantic ingest" in err


def test_benchmark_never_writes_to_the_database(shared_db: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]):
    """It opens read-only: the file is byte-identical afterwards."""
    copy = tmp_path / "ro.db"
    shutil.copy2(shared_db, copy)
    before = copy.read_bytes()
    bench_json(capsys, copy, "--quick", "--samples", "3")
    assert copy.read_bytes() == before
