"""The benchmark suite cannot rot: every area runs once on a tiny size; the harnesses score right.

Speed is never asserted here (that is what `python -m bench` is for); these tests check that
each benchmark runs end to end, prints a table, writes nothing under bench/results on a tiny
run, and that the pieces with logic (the synthetic corpus, LoCoMo's conversion and scoring,
the runner) do what they claim.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import tempfile
from pathlib import Path

import apsw
import pytest

from bench.__main__ import areas
from bench.__main__ import main as bench_main
from causantic.store import open_store

from .conftest import REPO
from .helpers import ingest

RESULTS = REPO / "bench" / "results"


def _results_state() -> dict[str, float]:
    return {p.name: p.stat().st_mtime_ns for p in RESULTS.glob("*")} if RESULTS.exists() else {}


def test_every_expected_area_is_found():
    """The runner finds the areas by their `run` function; helpers are not areas."""
    found = areas()
    assert {"ingest", "embed", "latency", "locomo", "coding_memory"} <= set(found)
    assert "common" not in found and "corpus" not in found


@pytest.mark.usefixtures("shared_dir")  # the areas read the shared transcripts or LoCoMo
@pytest.mark.parametrize("area", areas())
def test_area_runs_tiny_prints_a_table_and_writes_nothing(
        area: str, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch):
    """...and leaves no temporary folder behind (a leak here was one per run, every CI run)."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("TMPDIR", str(scratch))  # the areas' worker processes
    before = _results_state()
    result = importlib.import_module(f"bench.{area}").run(tiny=True)
    out = capsys.readouterr().out
    assert isinstance(result, dict) and result
    assert "###" in out and "|" in out, out[-2000:]
    assert _results_state() == before
    assert sorted(p.name for p in scratch.iterdir()) == []


@pytest.mark.usefixtures("shared_dir")
def test_runner_runs_an_area_in_a_fresh_process_and_echoes_its_tables(
        capsys: pytest.CaptureFixture[str]):
    before = _results_state()
    assert bench_main(["locomo", "--tiny"]) == 0
    out = capsys.readouterr().out
    assert "LoCoMo (tiny)" in out and "| locomo |" in out
    assert _results_state() == before


def test_runner_usage_and_unknown_area(capsys: pytest.CaptureFixture[str]):
    assert bench_main([]) == 2
    assert bench_main(["no-such-area", "--tiny"]) == 2
    assert "unknown area" in capsys.readouterr().err
    assert bench_main(["list"]) == 0
    assert "locomo" in capsys.readouterr().out.split()


def test_runner_reports_a_failing_area_and_keeps_going(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]):
    """One broken area gives exit 1 and its traceback; the others still run."""
    import bench.__main__ as runner

    calls = []

    def fake_run(name: str, tiny: bool):
        calls.append(name)
        return (None if name == "ingest" else {"ok": True}), "", 0.0, 1.0

    monkeypatch.setattr(runner, "run_area", fake_run)
    assert runner.main(["ingest", "latency", "--tiny"]) == 1
    assert calls == ["ingest", "latency"]
    out = capsys.readouterr().out
    assert "| ingest  |" in out and "FAILED" in out


# -- the synthetic corpus ---------------------------------------------------------------------


def _digest(path: Path) -> str:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    h = hashlib.sha256()
    for row in conn.execute("SELECT id, session_id, project, start_time, text FROM chunks ORDER BY id"):
        h.update(repr(row).encode())
    for row in conn.execute("SELECT src, dst, kind, weight FROM edges ORDER BY src, dst, kind"):
        h.update(repr(row).encode())
    conn.close()
    return h.hexdigest()


@pytest.mark.usefixtures("shared_dir")
def test_corpus_is_reproducible_and_keeps_chains_across_copies(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch):
    from bench import corpus

    monkeypatch.setenv("CAUSANTIC_BENCH_CACHE", str(tmp_path / "a"))
    first = corpus.corpus(1_200)
    monkeypatch.setenv("CAUSANTIC_BENCH_CACHE", str(tmp_path / "b"))
    second = corpus.corpus(1_200)
    assert first.path != second.path and _digest(first.path) == _digest(second.path)
    assert first.chunks >= 1_200 and first.chunks < 1_200 + 500
    assert corpus.corpus(1_200).path == second.path  # cached

    conn = apsw.Connection(str(first.path), flags=apsw.SQLITE_OPEN_READONLY)
    projects = {p for (p,) in conn.execute("SELECT DISTINCT project FROM chunks")}
    assert {"cli", "spotter", "napoli-matcha"} & projects and any(p.endswith("-01") for p in projects)
    # Copies are whole sessions with new ids, earlier times and their own edges.
    copied = conn.execute("SELECT id, session_id, start_time FROM chunks WHERE project LIKE '%-01'"
                          " ORDER BY start_time DESC LIMIT 1").fetchone()
    latest_real = conn.execute("SELECT max(start_time) FROM chunks WHERE project NOT LIKE '%-0%'"
                               ).fetchone()[0]
    assert copied[2] < latest_real
    linked = conn.execute("SELECT count(*) FROM edges e JOIN chunks a ON a.id = e.src"
                          " WHERE a.project LIKE '%-01'").fetchone()[0]
    in_copy = conn.execute("SELECT count(*) FROM chunks WHERE project LIKE '%-01'").fetchone()[0]
    assert linked >= in_copy * 0.9
    # Copies rename their rare words, so they are not duplicates of the real sessions.
    distinct, total = conn.execute("SELECT count(DISTINCT text), count(*) FROM chunks").fetchone()
    assert distinct > 0.9 * total
    assert conn.execute("SELECT count(*) FROM chunks WHERE project LIKE '%-01'"
                        " AND text LIKE '%[User]%'").fetchone()[0] > 0  # labels kept
    dangling = conn.execute("SELECT count(*) FROM edges WHERE src NOT IN (SELECT id FROM chunks)"
                            " OR dst NOT IN (SELECT id FROM chunks)").fetchone()[0]
    assert dangling == 0
    conn.close()


# -- LoCoMo ---------------------------------------------------------------------------------


def test_locomo_evidence_ids_are_repaired():
    from bench.locomo import _evidence_ids

    assert _evidence_ids(["D8:6; D9:17", "D:11:26", "D", "D1:3 D2:4"]) == [
        "D8:6", "D9:17", "D11:26", "D1:3", "D2:4"]


@pytest.fixture(scope="module")
def locomo_tiny(tmp_path_factory: pytest.TempPathFactory, shared_dir: Path):
    import os

    from bench import locomo

    cache = tmp_path_factory.mktemp("locomo-cache")
    old = os.environ.get("CAUSANTIC_BENCH_CACHE")
    os.environ["CAUSANTIC_BENCH_CACHE"] = str(cache)
    try:
        convs, questions, _ = locomo.load(locomo.DATA_ZIP, [locomo.TINY_CONVERSATION],
                                          locomo.TINY_SESSIONS)
        db = locomo.build_db(convs)
    finally:
        if old is None:
            os.environ.pop("CAUSANTIC_BENCH_CACHE")
        else:
            os.environ["CAUSANTIC_BENCH_CACHE"] = old
    return convs, questions, db


def test_locomo_sessions_become_transcripts_whose_chunks_map_back_to_every_turn(locomo_tiny):
    """Each turn lands in exactly one chunk that holds its text; sessions keep their dates."""
    from causantic.store import open_store

    convs, _, db = locomo_tiny
    turns = {f"{t.conv}/{t.dia_id}": t for c in convs for _, ts in c.sessions for t in ts}
    owners: dict[str, list[str]] = {}
    for cid, dias in db.chunk_dias.items():
        for d in dias:
            owners.setdefault(d, []).append(cid)
    assert set(owners) == set(turns)
    assert all(len(v) == 1 for v in owners.values())
    with open_store(db.path, readonly=True) as store:
        texts = dict(store.conn.execute("SELECT id, text FROM chunks"))
        sessions = dict(store.conn.execute("SELECT id, start_time FROM sessions"))
        projects = {p for (p,) in store.conn.execute("SELECT DISTINCT project FROM chunks")}
    for key, (cid,) in owners.items():
        assert turns[key].text in texts[cid]
    assert projects == {c.id for c in convs}
    first = convs[0].sessions[0][1][0]
    from bench.locomo import session_uuid

    assert sessions[session_uuid(first.conv, first.session)] == first.time  # "1:56 pm on 8 May, 2023"
    assert first.time == "2023-05-08T13:56:00.000Z"


def test_locomo_scoring_counts_all_evidence_and_budgets(locomo_tiny):
    """A method returning exactly the evidence scores 100 %; one returning a wrong turn, 0 %."""
    from bench.locomo import Answer, score, session_uuid

    convs, questions, _ = locomo_tiny
    turns = {f"{t.conv}/{t.dia_id}": t for c in convs for _, ts in c.sessions for t in ts}
    multi = [q for q in questions if len(q.evidence) > 1] or questions

    def block(k):  # the turn as its own result block, under its session
        return session_uuid(turns[k].conv, turns[k].session), turns[k].text

    def perfect(q):
        keys = [f"{q.conv}/{e}" for e in q.evidence]
        return Answer([frozenset([k]) for k in keys], [block(k) for k in keys],
                      "\n\n".join(turns[k].text for k in keys))

    def half(q):  # only the first evidence turn: multi-evidence questions must fail
        k = f"{q.conv}/{q.evidence[0]}"
        return Answer([frozenset([k])], [block(k)], turns[k].text)

    good = score(questions, perfect, turns, ranked=True)["all"]
    assert good["@5"] == good["@10"] == good["1k"] == good["2k"] == 100.0
    partial = score(multi, half, turns, ranked=True)["all"]
    expected = 100.0 * sum(len(q.evidence) == 1 for q in multi) / len(multi)
    assert partial["@5"] == round(expected, 1) and partial["2k"] == round(expected, 1)

    def cut(q):  # the right chunk, but its text is beyond the first 1,000 tokens
        keys = [f"{q.conv}/{e}" for e in q.evidence]
        text = "x" * 4000 + "\n" + "\n".join(turns[k].text for k in keys)
        return Answer([frozenset(keys)], [block(k) for k in keys], text)

    late = score(questions, cut, turns, ranked=False)["all"]
    assert late["1k"] == 0.0 and late["2k"] == 100.0 and "@5" not in late

    # The evidence inside one result block of its session counts, whichever chunk matched (an
    # answer unit shows the messages around its match); the same words under another session
    # do not.
    def unit(q, session=None):
        keys = [f"{q.conv}/{e}" for e in q.evidence]
        texts = "\n\n".join(turns[k].text for k in keys)
        sessions = {block(k)[0] for k in keys}
        return Answer([], [(session or s, "[User]\nhi\n\n" + texts) for s in sessions],
                      "[User]\nhi\n\n" + texts)

    same = [q for q in questions if len({turns[f"{q.conv}/{e}"].session for e in q.evidence}) == 1]
    assert score(same, unit, turns, ranked=False)["all"]["2k"] == 100.0
    other = score(same, lambda q: unit(q, "9f8e7d6c-0000-4000-8000-000000000000"), turns,
                  ranked=False)["all"]
    assert other["2k"] == 0.0


def test_answers_oracle_row_takes_each_questions_better_list():
    """The oracle row is the per-question best of keyword and vector, and only when both ran."""
    from bench.answers import LISTS, best_of

    kw = [{"id": "q1", "strict@5": 1.0, "ev@2k": 0.0}, {"id": "q2", "strict@5": 0.0, "ev@2k": 0.0}]
    vec = [{"id": "q1", "strict@5": 0.0, "ev@2k": 1.0}, {"id": "q2", "strict@5": 0.0, "ev@2k": 0.0}]
    rows = best_of(dict(zip(LISTS, (kw, vec), strict=True)), LISTS)
    assert rows == [{"id": "q1", "strict@5": 1.0, "ev@2k": 1.0},
                    {"id": "q2", "strict@5": 0.0, "ev@2k": 0.0}]
    assert best_of({LISTS[0]: kw}, LISTS) == []


def test_answers_blind_set_is_about_its_own_sessions_only(shared_dir: Path, tmp_path: Path):
    """Every blind question's evidence is in the stored text of its session, that session is
    one of bench/transcripts, and none of those sessions is in the shared transcripts (the
    tuned-on ones)."""
    from bench.answers import (
        BLIND_FILE,
        BLIND_HALVES,
        BLIND_TRANSCRIPTS,
        check_evidence,
        load_questions,
    )
    from bench.common import TRANSCRIPTS_DIR

    def sessions(folder: Path) -> set[str]:
        found = set()
        for path in folder.rglob("*.jsonl"):
            for line in path.read_text(errors="replace").splitlines():
                with contextlib.suppress(ValueError, AttributeError):
                    found.add(json.loads(line).get("sessionId"))
        return found - {None}

    questions = load_questions(BLIND_FILE)
    assert len(questions) >= 60 and {q.half for q in questions} == set(BLIND_HALVES)
    assert len({q.id for q in questions}) == len(questions)
    blind, shared = sessions(BLIND_TRANSCRIPTS), sessions(TRANSCRIPTS_DIR)
    assert {q.session for q in questions} <= blind and not blind & shared
    db = tmp_path / "blind.db"
    ingest(db, BLIND_TRANSCRIPTS)
    with open_store(db, readonly=True) as store:
        assert check_evidence(store.conn, questions) == []


def test_answers_locomo_slice_counts_a_turn_shown_in_a_block_of_its_session():
    """The slice's rule is ev@2k's: the turn's text inside a result block of its session,
    whichever chunk that block's match was (an answer unit shows the messages around it)."""
    from bench.answers import blocks, norm
    from bench.locomo import turn_shown

    turn, session = "Caroline: A visit to the community center.", "1a2b3c4d-0000-4000-8000-000000000000"
    text = ("Found 2 results for \"q\" (90 tokens):\n\n"
            "[1] conv-1 · session 1a2b3c4d · 2023-05-08 13:56 · keyword\n[User]\nMelanie: What "
            "inspired it?\n\n[User]\nCaroline: A visit to the community center.\n\n---\n\n"
            "[2] conv-1 · session 9f8e7d6c · 2023-06-01 10:00 · vector\n[User]\nJon: hi")
    shown = blocks(text)
    assert turn_shown(turn, session, norm(text), shown)
    # Another session's block holding the same words does not count, nor text past the budget.
    assert not turn_shown(turn, "9f8e7d6c-0000-4000-8000-000000000000", norm(text), shown)
    assert not turn_shown(turn, session, norm(text[:120]), shown)


def test_answers_locomo_heldout_conversations_are_the_ones_never_tuned_on(shared_dir: Path):
    """The held-out table scores every LoCoMo conversation outside the tuned slice, and only those."""
    from bench import locomo
    from bench.answers import LOCOMO_CONVERSATIONS, heldout_conversations

    convs, _, _ = locomo.load(locomo.DATA_ZIP)
    heldout = heldout_conversations()
    assert heldout and not set(heldout) & set(LOCOMO_CONVERSATIONS)
    assert set(heldout) | set(LOCOMO_CONVERSATIONS) == {c.id for c in convs}


def test_locomo_top_k_counts_the_turns_merged_into_a_result(tmp_path: Path):
    """A chat turn next to a shown one joins that result (`Hit.also`): the result shows it,
    so the top-k count credits it, not only the result's own chunk."""
    from types import SimpleNamespace

    from bench.locomo import LocomoDB, search_answer
    from causantic.store.hits import Hit

    db = LocomoDB(tmp_path, {"c1": frozenset({"D1:1"}), "c2": frozenset({"D1:2"})}, 0.0, 2, 0)
    hit = Hit("c1", "s", "conv-1", "", "", "", 1.0, ("keyword",), "[User]\nhi", also=("c2",))
    got = search_answer(db, SimpleNamespace(results=[hit]), SimpleNamespace(results=[], text=""))
    assert got.ranked == [frozenset({"D1:1", "D1:2"})]
