"""Hybrid search on real transcripts with the real model: quality ordering, sources,
near-duplicates, and degrading to keywords (with one notice line) whenever vectors cannot serve.

Embedding the whole shared corpus takes about three minutes on two cores, so the quality
tests use a subset: every napoli-matcha and spotter session plus three entireio/cli ones
(the telemetry hang, the fish completions and a session with `/exit` echoes: 15 sessions,
~415 chunks), keyword and vector sides on the same subset, and the queries of
bench/queries/coding.json whose answers live there. bench/search_quality.py reports the
full-corpus numbers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from causantic.config import load_settings
from causantic.ingest.embed import embed_pending
from causantic.ingest.run import run_embed, run_ingest
from causantic.retrieval import fusion
from causantic.retrieval.compaction import messages_only
from causantic.retrieval.search import search
from causantic.store import open_store

from .conftest import PYTHON, REPO, SAMPLES

SUBSET = ["theogbrand__napoli-matcha", "marot__spotter",
          # cde341db (shell slow to exit: posthog timeout), 61cb3ba8 (shell completions),
          # 1e0816ef (`/exit` + "Bye!" echoes): the paraphrase test's answer and rivals
          "entireio__cli/9f", "entireio__cli/60", "entireio__cli/5c"]
STYLES = ("identifier", "paraphrase", "vague")


def _subset_queries(db: Path) -> list[dict]:
    """The benchmark queries answered inside the database, limited to its sessions."""
    queries = json.loads((REPO / "bench" / "queries" / "coding.json").read_text())["queries"]
    with open_store(db, readonly=True) as store:
        present = {r[0][:8] for r in store.conn.execute("SELECT DISTINCT session_id FROM chunks")}
    out = []
    for q in queries:
        sessions = [s for s in q["sessions"] if s in present]
        if sessions:
            out.append({**q, "sessions": sessions})
    return out


@pytest.fixture(scope="session")
def subset_db(tmp_path_factory: pytest.TempPathFactory, shared_transcripts: Path) -> Path:
    """The SUBSET sessions, ingested and fully embedded (read-only use: copy to write)."""
    folder = tmp_path_factory.mktemp("hybrid-subset")
    settings = load_settings(db=folder / "memory.db", env={"HOME": str(folder)})
    run_ingest(settings, [shared_transcripts / name for name in SUBSET])
    report = run_embed(settings)
    assert report.remaining == 0
    return folder / "memory.db"


def _hit_at_5(store, query: dict, mode: str) -> bool:  # type: ignore[no-untyped-def]
    result = search(store, query["query"], limit=5, max_tokens=10**6, mode=mode)
    assert result.notice is None, result.notice
    return any(h.session_id[:8] in query["sessions"] for h in result.results)


def test_hybrid_finds_at_least_what_keywords_find_and_more_paraphrases(subset_db: Path):
    queries = _subset_queries(subset_db)
    counts = {style: sum(q["style"] == style for q in queries) for style in STYLES}
    assert min(counts.values()) >= 5, counts
    found: dict[tuple[str, str], int] = {}
    with open_store(subset_db, readonly=True) as store:
        for q in queries:
            for mode in ("keyword", "hybrid"):
                key = (mode, q["style"])
                found[key] = found.get(key, 0) + _hit_at_5(store, q, mode)
    for style in STYLES:
        assert found[("hybrid", style)] >= found[("keyword", style)], (style, found)
    assert found[("hybrid", "paraphrase")] > found[("keyword", "paraphrase")], found


def test_hybrid_results_name_their_sources(subset_db: Path):
    seen: set[tuple[str, ...]] = set()
    with open_store(subset_db, readonly=True) as store:
        for q in _subset_queries(subset_db):
            result = search(store, q["query"], limit=10, max_tokens=10**6)
            assert result.mode == "hybrid" and result.notice is None
            for hit in result.results:
                assert hit.sources in {("keyword",), ("vector",), ("keyword", "vector")}
                seen.add(hit.sources)
            scores = [h.score for h in result.results]
            assert all(s > 0 for s in scores)
        vector_only = search(store, "the program would not start", mode="vector", limit=5)
    assert seen == {("keyword",), ("vector",), ("keyword", "vector")}
    assert vector_only.results and all(h.sources == ("vector",) for h in vector_only.results)
    assert vector_only.as_dict()["results"][0]["sources"] == ["vector"]


def test_copies_of_a_chunk_do_not_crowd_the_results(subset_db: Path, tmp_path: Path):
    db = tmp_path / "memory.db"
    shutil.copy2(subset_db, db)
    query = "save the sandbox output files for debugging instead of ephemeral tmp"
    with open_store(db) as store:
        first = search(store, query, limit=5)
        top = first.results[0]
        row = store.conn.execute(
            "SELECT session_id, project, start_time, end_time, text, tokens FROM chunks WHERE id = ?",
            (top.chunk_id,),
        ).fetchone()
        copies = {"d" * 24: row[4], "e" * 24: row[4] + "\n\n[Assistant]\nDone."}
        with store.conn:
            for cid, text in copies.items():
                store.conn.execute(
                    "INSERT INTO chunks(id, session_id, project, offset, part, turn, kind,"
                    " start_time, end_time, text, tokens) VALUES (?, ?, ?, 999999, 0, 0,"
                    " 'turn', ?, ?, ?, ?)", (cid, f"copy-{cid[:4]}", row[1], row[2], row[3], text, row[5]))
        assert embed_pending(store).embedded == 2
        for mode in ("hybrid", "vector", "keyword"):
            result = search(store, query, limit=5, mode=mode)
            ids = [h.chunk_id for h in result.results]
            assert len(set(ids) & {top.chunk_id, *copies}) == 1, (mode, ids)
            assert len(result.results) == 5  # the room went to other chunks
        stored = store.conn.execute("SELECT count(*) FROM chunks WHERE id IN (?, ?, ?)",
                                    (top.chunk_id, *copies)).fetchone()[0]
    assert stored == 3  # nothing was deleted


def test_no_vectors_yet_answers_from_keywords_with_one_notice(shared_db: Path):
    with open_store(shared_db, readonly=True) as store:
        for mode in ("hybrid", "vector"):
            result = search(store, "posthog telemetry delay", mode=mode, limit=5)
            assert result.results and all(h.sources == ("keyword",) for h in result.results)
            assert result.notice and "\n" not in result.notice and "causantic embed" in result.notice
            assert result.text.startswith(result.notice + "\n")
            assert result.as_dict()["notice"] == result.notice


def test_missing_model_answers_from_keywords_with_one_notice(
    subset_db: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    monkeypatch.setenv("CAUSANTIC_MODEL_DIR", str(tmp_path / "no-model"))
    with open_store(subset_db, readonly=True) as store:
        result = search(store, "Daytona log streaming over PTY", limit=5)
    assert result.results and all(h.sources == ("keyword",) for h in result.results)
    assert result.notice and "\n" not in result.notice and "model" in result.notice


def test_cli_ingest_without_the_model_succeeds_and_says_vectors_are_pending(tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "CAUSANTIC_MODEL_DIR": str(tmp_path / "none")}
    db = str(tmp_path / "m.db")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([PYTHON, "-m", "causantic", "--db", db, *args], env=env,
                              capture_output=True, text=True, timeout=120)

    out = cli("ingest", str(SAMPLES))
    assert out.returncode == 0 and "Ingested 4 transcript files" in out.stdout
    lines = [line for line in out.stderr.strip().splitlines()
             if not line.startswith("ingest: ")]  # progress, a line every 5 s off a terminal
    assert len(lines) == 1 and "vectors are pending" in lines[0]
    out = cli("search", "idempotency key", "--json")
    doc = json.loads(out.stdout)
    assert out.returncode == 0 and doc["mode"] == "hybrid" and doc["results"]
    assert "no vectors yet" in doc["notice"]
    out = cli("embed")
    assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1
    assert "model" in out.stderr
    out = cli("ingest", "--no-embed", "--json", str(SAMPLES))
    assert out.returncode == 0 and out.stderr == ""
    assert json.loads(out.stdout)["embed"] == {"skipped": "--no-embed"}


def test_keyword_paths_never_import_numpy(shared_db: Path):
    code = (
        "import sys; from pathlib import Path\n"
        "from causantic.store import open_store\n"
        "from causantic.retrieval.search import search\n"
        f"with open_store(Path({str(shared_db)!r}), readonly=True) as s:\n"
        "    assert search(s, 'posthog', mode='keyword').results\n"
        "    r = search(s, 'posthog')  # hybrid, but this database has no vectors\n"
        "    assert r.notice and r.results\n"
        "bad = [m for m in ('numpy', 'onnxruntime', 'tokenizers') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    out = subprocess.run([PYTHON, "-c", code], env={**os.environ, "PYTHONPATH": str(REPO)},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_hybrid_finds_every_chunk_its_rarest_words_find_by_keyword(subset_db: Path):
    # `causantic benchmark`'s self-retrieval: sampled chunks searched for by their 5 rarest
    # words (top 5) and by mid-frequency words (top 10). Rank fusion lost 7 of 40 (and 4
    # of 40) that keyword search alone found: a keyword-only first hit scored below chunks
    # that both lists ranked ~10th.
    from causantic.scorecard import SEED, self_retrieval

    with open_store(subset_db, readonly=True) as store:
        summary, _, _ = self_retrieval(store, 40, SEED, quick=True)
    assert summary["mode"] == "hybrid" and not summary["notice"]
    for kind in ("distinctive", "paraphrase"):
        found = summary[kind]
        assert found["queries"] >= 30, found
        assert found["found"] == found["queries"], (kind, found)


def test_paraphrase_found_by_vectors_alone_beats_common_word_matches(subset_db: Path):
    # The README's example: the answer (a posthog timeout kept the shell from exiting)
    # shares no word with the question; `/exit` echoes and shell-completion chunks share
    # "shell" and "exit". Rank fusion put it 10th here (9th on the whole corpus).
    with open_store(subset_db, readonly=True) as store:
        result = search(store, "the shell hung on exit", limit=10)
    sessions = [h.session_id[:8] for h in result.results]
    assert "cde341db" in sessions[:3], sessions
    assert not any(fusion.is_thin(h.text) for h in result.results[:3])


def test_fuse_keeps_a_strong_keyword_hit_first_and_a_strong_vector_hit_ahead_of_weak_words():
    keyword = [("exact", 30.0), ("both", 9.0), ("kw2", 8.0)]
    vector = [("sem", 0.62), ("both", 0.60), ("v3", 0.40), ("exact", 0.30)]
    strong = fusion.fuse(keyword, vector, weight=fusion.keyword_weight(30.0, 25.0))
    assert strong[0][0] == "exact" and strong[0][2] == ("keyword", "vector")
    # The same lists when the keyword side matched only common words: the vector side leads.
    weak = fusion.fuse(keyword, vector, weight=fusion.keyword_weight(30.0, 60.0))
    assert [c for c, _, _ in weak] == ["both", "sem", "exact", "v3", "kw2"]
    scores = {c: (s, src) for c, s, src in weak}
    assert scores["sem"] == (pytest.approx(0.6), ("vector",))
    assert scores["kw2"][1] == ("keyword",) and scores["v3"][1] == ("vector",)
    assert all(0.0 <= s <= 1.0 for s, _ in scores.values())


def test_thin_chunks_neither_set_the_scale_nor_lead():
    keyword = [("bye", 8.0), ("real", 6.0)]
    vector = [("bye", 0.55), ("real", 0.46), ("other", 0.30)]
    fused = fusion.fuse(keyword, vector, thin={"bye"}, weight=0.5)
    scores = {c: s for c, s, _ in fused}
    assert fused[0][0] == "real" and scores["real"] == pytest.approx(1.0)
    assert scores["bye"] == pytest.approx(fusion.THIN_FACTOR)


def test_a_short_chat_exchange_is_an_answer_not_a_thin_echo():
    # LoCoMo: "What is Jon working on opening?" is answered by a 14-word exchange that keyword
    # search ranked first; scaled as thin it fell to 28th, out of the answer.
    said = "[User]\nGina: What are you up to?\n\n[Assistant]\nJon: Still working on opening a dance studio."
    assert messages_only(said) and not fusion.is_thin(said)
    # The same words beside a tool call, a bare command and its echo, a one-line thank-you:
    # thin as before.
    tooled = "[User]\nGina: What are you up to?\n\n[Tool: Bash] ls\n\n[Assistant]\nJon: Still opening a studio."
    assert not messages_only(tooled) and fusion.is_thin(tooled)
    assert fusion.is_thin("[Command: /exit]\n\n[Assistant]\nBye!")
    assert fusion.is_thin("[User]\nthanks, that works\n\n[Assistant]\nYou're welcome!")
    assert not fusion.is_thin("[User]\n" + " ".join(["word"] * 30))


def test_keyword_weight_grows_with_how_much_of_the_query_the_best_hit_holds():
    low, high = fusion.KEYWORD_WEIGHT_LOW, fusion.KEYWORD_WEIGHT_HIGH
    assert fusion.keyword_weight(5.0, 12.0) == low  # "shell" + "exit" of "the shell hung on exit"
    assert fusion.keyword_weight(9.0, 5.0) == high  # an identifier found verbatim
    assert low < fusion.keyword_weight(8.0, 10.0) < high
    assert fusion.keyword_weight(0.0, 10.0) == fusion.keyword_weight(3.0, 0.0) == low


def test_mmr_prefers_a_novel_candidate_over_a_near_copy():
    import numpy as np

    x, y = np.eye(2, 4, dtype=np.float32)
    near_x = (x + 0.05 * y) / np.linalg.norm(x + 0.05 * y)
    cands = [("a", 1.0), ("a2", 0.99), ("b", 0.9)]
    vecs = {"a": x, "a2": near_x, "b": y}
    assert fusion.mmr(cands, vecs, 2) == ["a", "b"]
    assert fusion.mmr(cands, vecs, 3, lam=1.0) == ["a", "a2", "b"]  # λ = 1: plain ranking
    assert fusion.mmr(cands, {}, 3) == ["a", "a2", "b"]  # no vectors: nothing to diversify


def test_near_duplicate_text_is_one_sided():
    base = " ".join(f"word{i}" for i in range(60))
    longer = base + " " + " ".join(f"extra{i}" for i in range(200))
    a, b = fusion.shingles(base), fusion.shingles(longer)
    assert fusion.similar_text(a, b)  # the short one repeats the long one
    assert not fusion.similar_text(b, a)  # the long one adds much more: keep it
    assert not fusion.similar_text(fusion.shingles("too short to judge"), fusion.shingles("too short"))


def test_rank_fusion_is_kept_for_comparison(subset_db: Path):
    """`bench.variants.search(fusion="rrf")` runs the Reciprocal Rank Fusion hybrid used
    before (k = 60), through the seam `search.search_with`; the product has no such option."""
    from bench import variants
    from causantic.errors import UsageError

    fused = variants.rrf([("keyword", ["a", "b", "c"]), ("vector", ["c", "d"])])
    assert [c for c, _, _ in fused] == ["c", "a", "b", "d"]
    assert fused[0][1] == pytest.approx(1 / 63 + 1 / 61)
    assert fused[0][2] == ("keyword", "vector")
    with open_store(subset_db, readonly=True) as store:
        query = _subset_queries(subset_db)[0]["query"]
        rrf = variants.search(store, query, limit=5, fusion="rrf")
        score = search(store, query, limit=5)
        assert rrf.notice is None and rrf.results
        assert {s for h in rrf.results for s in h.sources} <= {"keyword", "vector"}
        assert [h.score for h in rrf.results] != [h.score for h in score.results]
        with pytest.raises(UsageError, match="unknown fusion"):
            variants.search(store, query, fusion="borda")


def test_the_product_surface_holds_no_experiment_knob(subset_db: Path):
    """Fusion variants and recall/predict seedings are reached only through the seams
    `search.search_with` / `chains.walk_seeded` (bench/variants.py): the functions the CLI,
    MCP tools and hooks call take no such argument, and `search` is `search_with(PRODUCT)`."""
    import inspect

    from causantic.retrieval import chains
    from causantic.retrieval.search import PRODUCT, search_with

    knobs = {"fusion", "search_mode", "seed_mode", "seeds", "scorer", "steps", "order", "weight"}
    for fn in (search, chains.recall, chains.predict, chains.walk):
        assert not knobs & set(inspect.signature(fn).parameters), fn.__name__
    with open_store(subset_db, readonly=True) as store:
        query = _subset_queries(subset_db)[0]["query"]
        product = search(store, query, limit=5)
        seam = search_with(PRODUCT, store, query, limit=5)
        assert [(h.chunk_id, h.score) for h in product.results] == [
            (h.chunk_id, h.score) for h in seam.results]
