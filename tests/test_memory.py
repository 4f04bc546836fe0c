"""Explicit memory (issue 15): observe, repeats and near duplicates, feedback, ranking,
automatic observations, forgetting, pruning, reflection, and where memories show up."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from causantic.cli import main
from causantic.errors import UsageError
from causantic.memory import auto, rank
from causantic.memory.compact import prune
from causantic.memory.feedback import feedback
from causantic.memory.observe import forget_memories, identifiers, observe
from causantic.memory.recall import list_memories, retrieve
from causantic.memory.reflect import reflect
from causantic.memory.triggers import due
from causantic.store import memories as sql
from causantic.store import open_store

from .conftest import PYTHON, REPO, SAMPLES
from .helpers import run_cli as run


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def test_remember_lists_and_counts_an_exact_repeat_once(tmp_path: Path, capsys):
    """Case, spacing and a trailing full stop do not make a new memory; the repeat is counted."""
    db = str(tmp_path / "m.db")
    code, out = cli(capsys, "--db", db, "remember", "we use pnpm, never npm", "--type",
                    "instruction", "--project", "web", "--no-embed")
    assert code == 0 and out.startswith("Remembered: mem_") and "importance 10" in out
    code, out = cli(capsys, "--db", db, "remember", "We use  pnpm, never npm.", "--type",
                    "instruction", "--project", "web", "--no-embed")
    assert "Already remembered (seen 2×)" in out
    code, out = cli(capsys, "--db", db, "memories", "--project", "web", "--json")
    listed = json.loads(out)["memories"]
    assert len(listed) == 1 and listed[0]["count"] == 2 and listed[0]["type"] == "instruction"
    assert listed[0]["project"] == "web" and listed[0]["origin"] == "explicit"


def test_remember_redacts_secrets_before_storing_and_indexing(tmp_path: Path, capsys):
    db = tmp_path / "m.db"
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    code, out = cli(capsys, "--db", str(db), "remember", f"the deploy token is {secret}",
                    "--no-embed", "--json")
    assert code == 0 and secret not in out
    with open_store(db, readonly=True) as store:
        text = store.conn.execute("SELECT text FROM memories").fetchone()[0]
        assert secret not in text and "[REDACTED" in text
        assert store.conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH"
                                  " 'ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'").fetchone()[0] == 0


def test_bad_memory_input_is_one_line_and_exit_two(tmp_path: Path):
    db = str(tmp_path / "m.db")
    out = run("--db", db, "remember", "   ", "--no-embed")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "empty" in out.stderr
    out = run("--db", db, "remember", "x y z", "--importance", "11", "--no-embed")
    assert out.returncode == 2 and "1 to 10" in out.stderr
    out = run("--db", db, "remember", "x", "--cite", "deadbeefdeadbeef", "--no-embed")
    assert out.returncode == 2 and "no such chunk" in out.stderr
    out = run("--db", db, "feedback", "mem_nope", "--helpful")
    assert out.returncode == 2 and "no memory" in out.stderr


def test_different_numbers_or_identifiers_are_never_near_duplicates(tmp_path: Path):
    """With the real model, 'port 8080' and 'port 8081' are nearly identical vectors, yet they
    stay two memories; a reworded repeat of the same fact is linked to the original."""
    with open_store(tmp_path / "m.db") as store:
        a = observe(store, "The staging server listens on port 8080", project="web")
        b = observe(store, "The staging server listens on port 8081", project="web")
        c = observe(store, "the staging server listens on port 8080 now", project="web")
        d = observe(store, "Run the linter with --fix before committing", project="web")
        e = observe(store, "Run the linter with --strict before committing", project="web")
        assert a.embedded and b.embedded and c.embedded
        vecs = sql.vectors(store.conn, rank_model(), [a.memory.rowid, b.memory.rowid])
        import numpy as np

        cos = float(np.frombuffer(vecs[a.memory.rowid], np.float32)
                    @ np.frombuffer(vecs[b.memory.rowid], np.float32))
        assert cos >= 0.90  # so only the identifier rule keeps them apart
        assert b.duplicate_of is None and e.duplicate_of is None
        assert c.duplicate_of == a.id and d.duplicate_of is None
        listed = list_memories(store, project="web")
        ids = [m["id"] for m in listed["memories"]]  # type: ignore[index]
        assert c.id not in ids and a.id in ids and b.id in ids  # collapsed at read time
        assert sql.get(store.conn, c.id) is not None  # nothing deleted
    assert identifiers("port 8080") != identifiers("port 8081")
    assert identifiers("use pnpm") == identifiers("Use pnpm!")


def rank_model() -> str:
    from causantic.model import MODEL_ID

    return MODEL_ID


def test_near_duplicates_only_within_the_same_project(tmp_path: Path):
    with open_store(tmp_path / "m.db") as store:
        a = observe(store, "Use pnpm instead of npm for installs", project="web")
        b = observe(store, "use pnpm instead of npm for installs please", project="api")
        assert b.duplicate_of is None and a.id != b.id


def test_feedback_changes_effective_importance_but_never_recency(tmp_path: Path):
    with open_store(tmp_path / "m.db") as store:
        m = observe(store, "the CI cache key includes the lockfile hash", embed=False).memory
        feedback(store, m.id, True, "saved a rebuild")
        feedback(store, m.id, True)
        done = feedback(store, m.id[:10], False, "half wrong")
        after = sql.get(store.conn, m.id)
        assert after is not None
        assert done["effective_importance"] == 5 + 0.5 * (2 - 1)
        assert after.last_seen_at == m.last_seen_at and after.created_at == m.created_at
        assert [r[1] for r in sql.feedback_reasons(store.conn, m.id)] == ["saved a rebuild", "",
                                                                          "half wrong"]


def test_forgetting_a_memory_leaves_a_tombstone_that_auto_observation_honours(
        shared_db_copy: Path):
    """Forget an automatic observation; a full re-scan (as after re-ingest) does not bring it
    back, while the others are found again with the same ids and no new counts."""
    with open_store(shared_db_copy) as store:
        before = {m.id: m.count for m in sql.select(store.conn, origins=("auto",),
                                                   include_duplicates=True)}
        assert len(before) >= 20
        victim = next(m for m in sql.select(store.conn, types=("decision",)))
        out = forget_memories(store, [victim.id], dry_run=True)
        assert "Dry run" in str(out["text"]) and sql.get(store.conn, victim.id) is not None
        forget_memories(store, [victim.id], dry_run=False)
        with store.conn:
            sql.set_mark(store.conn, auto.SCAN_MARK, "0")
        auto.scan(store.conn)
        after = {m.id: m.count for m in sql.select(store.conn, origins=("auto",),
                                                  include_duplicates=True)}
    assert victim.id not in after
    assert after == {k: v for k, v in before.items() if k != victim.id}


def test_reingest_finds_the_same_automatic_observations(shared_transcripts: Path,
                                                        tmp_path: Path):
    """A clean ingest and a second ingest of a rewritten copy give the same memories."""
    from causantic.config import load_settings
    from causantic.ingest.run import run_ingest

    copy = tmp_path / "t"
    shutil.copytree(shared_transcripts / "marot__spotter", copy)
    settings = load_settings(db=tmp_path / "m.db", env={"HOME": str(tmp_path)})
    run_ingest(settings, [copy])
    with open_store(settings.db_path, readonly=True) as store:
        first = {(m.id, m.count) for m in sql.select(store.conn, include_duplicates=True)}
    for f in copy.rglob("*.jsonl"):  # rewritten files are read again from the start
        os.utime(f, ns=(1, 1))
        f.write_bytes(f.read_bytes())
    run_ingest(settings, [copy])
    with open_store(settings.db_path, readonly=True) as store:
        second = {(m.id, m.count) for m in sql.select(store.conn, include_duplicates=True)}
    assert first and first == second


def test_automatic_heuristics_keep_instructions_decisions_tests_and_fixes():
    text = (
        "[User]\nFrom now on, always run the e2e tests with -count=1. Why does it hang?\n\n"
        "[Assistant]\nSure."
    )
    chunk = auto._Chunk("c1", "2026-01-01T00:00:00.000Z", text)
    found = list(auto.observations([chunk], "s"))
    assert [f.type for f in found] == ["instruction"]
    assert found[0].text == "From now on, always run the e2e tests with -count=1."
    chunks = [
        auto._Chunk("c1", "t1", "[Assistant]\nOptions:\nA) keep SQLite\nB) move to Postgres\n"
                    "Which one should I implement?"),
        auto._Chunk("c2", "t2", "[User]\nyes, let's go with A\n\n[Tool:Bash] pytest -q  # run\n\n"
                    "[Result:Bash error]\nE   AssertionError: boom\n"
                    "==== 1 failed, 3 passed in 0.20s ====\n\n[Tool:Edit] src/app.py\n\n"
                    "[Result:Edit]\nok\n\n[Tool:Bash] pytest -q\n\n[Result:Bash]\n"
                    "==== 4 passed in 0.10s ===="),
    ]
    found = list(auto.observations(chunks, "s"))
    kinds = [f.type for f in found]
    assert kinds == ["decision", "test_result", "test_result", "error"]
    assert "A) keep SQLite" in found[0].text and "Which one" in found[0].text
    assert found[1].text == "`pytest -q` → 1 failed, 3 passed"
    assert "AssertionError: boom" in found[3].text and "src/app.py" in found[3].text
    assert found[3].cites == ("c2", "c2")
    # Not instructions: questions, statements about the past, plans pasted in.
    for prompt in ("Should we always retry?", "It never worked on CI.",
                   "Implement the following plan:\n\nAlways do X."):
        chunk = auto._Chunk("c", "t", f"[User]\n{prompt}")
        assert list(auto.observations([chunk], "s")) == []


def test_a_silent_call_does_not_hide_the_next_test_run_and_parallel_runs_stay_unpaired():
    """A call with no output has no stored result (the chunk meta names it, `silent`): the
    test run after it still gets its command. Two runs waiting at once (parallel calls may
    report out of order) pair with neither."""
    text = ("[Tool:Bash] git add -A\n\n[Tool:Bash] pytest -q\n\n[Result:Bash]\n"
            "==== 4 passed in 0.10s ====")
    silent = auto._Chunk("c1", "t1", text, silent=[0])  # `git add -A` printed nothing
    assert [f.text for f in auto.observations([silent], "s")] == ["`pytest -q` → 4 passed"]
    # Without the meta (chunks stored before it), the two calls are one round: ambiguous.
    assert list(auto.observations([auto._Chunk("c1", "t1", text)], "s")) == []
    # The rule for older chunks: the assistant spoke, so the silent call's round was over.
    spoke = text.replace("[Tool:Bash] pytest", "[Assistant]\nNow the tests.\n\n[Tool:Bash] pytest")
    assert [f.text for f in auto.observations([auto._Chunk("c1", "t1", spoke)], "s")] == [
        "`pytest -q` → 4 passed"]


def test_search_and_recall_show_matching_memories_marked_memory(shared_db_copy: Path, capsys):
    db = str(shared_db_copy)
    cli(capsys, "--db", db, "remember", "Daytona log streaming only works through the PTY API",
        "--type", "decision", "--project", "napoli-matcha", "--no-embed")
    code, out = cli(capsys, "--db", db, "search", "daytona pty log streaming", "--project",
                    "napoli-matcha", "--mode", "keyword", "--json")
    answer = json.loads(out)
    first = answer["results"][0]
    assert first["sources"] == ["memory"] and first["memory"]["type"] == "decision"
    assert answer["text"].startswith("Memories (")
    assert any(r["sources"] != ["memory"] for r in answer["results"])  # chunks still follow
    code, out = cli(capsys, "--db", db, "recall", "daytona pty log streaming", "--project",
                    "napoli-matcha", "--json")
    assert "memory" in json.loads(out)["results"][0]["sources"]
    code, out = cli(capsys, "--db", db, "search", "dialyzer PLT", "--mode", "keyword", "--json")
    assert all(r["sources"] != ["memory"] for r in json.loads(out)["results"])  # unrelated


def test_three_factor_ranking_prefers_important_recent_memories(tmp_path: Path):
    """Relevance-only ties go to the higher-importance, more recent memory with the defaults;
    each factor is min-max normalised, so equal factors change nothing."""
    from bench.variants import RELEVANCE_ONLY

    old = "2026-01-01T00:00:00.000Z"
    new = "2026-03-01T00:00:00.000Z"

    def row(i: int, importance: float, seen: str) -> sql.MemoryRow:
        return sql.MemoryRow(f"mem_{i}", "p", "general", "t", importance, "explicit", 1, 0, 0,
                             None, None, seen, seen, "{}", i)

    starts = ["2026-01-02T00:00:00.000Z", "2026-02-01T00:00:00.000Z", "2026-03-02T00:00:00.000Z"]
    weights = rank.Weights()
    cands = [rank.Candidate(row(1, 5, old), 0.8, 5, rank.recency(row(1, 5, old), weights, starts)),
             rank.Candidate(row(2, 9, new), 0.8, 9, rank.recency(row(2, 9, new), weights, starts))]
    assert [c.memory.id for c in rank.rank(cands)] == ["mem_2", "mem_1"]
    assert cands[0].recency < cands[1].recency == 0.5 ** (1 / 10)
    only = rank.rank(cands, RELEVANCE_ONLY)
    assert only[0].score == only[1].score == 0.0
    wall = rank.Weights(clock="wall")
    assert rank.recency(row(1, 5, new), wall, [],
                        now=datetime(2026, 3, 8, tzinfo=UTC)) == pytest.approx(0.5)


def test_retrieve_uses_vectors_for_paraphrases(tmp_path: Path):
    with open_store(tmp_path / "m.db") as store:
        observe(store, "Never use npm in this repository; pnpm is the package manager",
                project="web", type="instruction")
        observe(store, "The staging database is read-only", project="web")
        found = retrieve(store, "which package manager do we use", project="web")
        assert found and "pnpm" in found[0].memory.text
        found = retrieve(store, "can I write to the staging db", project="web")
        assert found and "read-only" in found[0].memory.text


def test_session_start_briefing_lists_instructions_without_heavy_imports(shared_db_copy: Path):
    db = str(shared_db_copy)
    assert run("--db", db, "remember", "always run mix format before committing", "--type",
               "instruction", "--project", "spotter", "--no-embed").returncode == 0
    code = (
        "import sys\n"
        "from causantic.cli import main\n"
        f"rc = main(['--db', {db!r}, 'hook', 'session-start'])\n"
        "sys.stdout.flush()\n"
        "heavy = [m for m in ('mcp', 'numpy', 'onnxruntime') if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy), file=sys.stderr)\n"
    )
    cwd = "/home/marco/projects/spotter"
    proc = subprocess.run([PYTHON, "-c", code], input=json.dumps({"cwd": cwd}), text=True,
                          capture_output=True, timeout=60, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "[instruction] always run mix format before committing" in context
    assert context.index("# Briefing") < context.index("Standing instructions")
    assert "Reflection due" in context
    assert proc.stderr.strip().splitlines()[-1] == "HEAVY="


def test_reflect_groups_evidence_and_resets_the_trigger(shared_db_copy: Path):
    with open_store(shared_db_copy) as store:
        assert due(store.conn, "cli") is not None
        out = reflect(store, "cli")
        assert out["questions"] and out["groups"]
        titles = [g["title"] for g in out["groups"]]  # type: ignore[index]
        assert "recent errors and their fixes" in titles
        assert "observe" in str(out["text"]) and "cites:" in str(out["text"])
        assert due(store.conn, "cli") is None
        with pytest.raises(UsageError):
            reflect(store, "no-such-project")


def test_prune_removes_only_old_low_importance_automatic_observations(tmp_path: Path):
    with open_store(tmp_path / "m.db") as store:
        keep = observe(store, "raw tool output we chose to keep", type="tool_output", embed=False)
        old = (datetime.now(UTC) - timedelta(days=200)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        with store.conn:
            for i, (kind, importance) in enumerate((("tool_output", 3), ("test_result", 6))):
                sql.upsert(store.conn, sql.NewMemory(f"mem_auto{i}", "", kind, f"auto {i}",
                                                     importance, "auto", None, old))
            store.conn.execute("UPDATE memories SET created_at = ?, last_seen_at = ? WHERE id = ?",
                               (old, old, keep.id))
        preview = prune(store, ttl_days=90)
        assert preview["ids"] == ["mem_auto0"] and sql.get(store.conn, "mem_auto0") is not None
        done = prune(store, ttl_days=90, dry_run=False)
        assert done["count"] == 1 and sql.get(store.conn, "mem_auto0") is None
        assert sql.forgotten(store.conn, ["mem_auto0"]) == {"mem_auto0"}
        assert sql.get(store.conn, keep.id) is not None and sql.get(store.conn, "mem_auto1")


def test_forgetting_chunks_takes_the_automatic_observations_drawn_from_them(shared_db_copy: Path):
    from causantic.forget import forget

    with open_store(shared_db_copy) as store:
        spotter = [m.id for m in sql.select(store.conn, project="spotter", origins=("auto",),
                                            include_global=False, include_duplicates=True)]
        assert spotter
        forget(store, project="spotter", after="2000-01-01", dry_run=False)
        assert not [m for m in sql.select(store.conn, project="spotter", include_global=False,
                                          include_duplicates=True)]
        assert sql.forgotten(store.conn, spotter) == set(spotter)


def test_concurrent_remembers_count_every_repeat(tmp_path: Path):
    """Four processes remembering the same text five times each: one memory, count 20."""
    db = tmp_path / "m.db"
    code = (
        "import sys\nfrom causantic.cli import main\n"
        "for _ in range(5):\n"
        f"    assert main(['--db', {str(db)!r}, 'remember', 'same fact', '--no-embed']) == 0\n"
    )
    procs = [subprocess.Popen([PYTHON, "-c", code], cwd=REPO, stdout=subprocess.DEVNULL,
                              env={**os.environ, "PYTHONPATH": str(REPO)}) for _ in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    with open_store(db, readonly=True) as store:
        rows = sql.select(store.conn)
        assert len(rows) == 1 and rows[0].count == 20


def test_memories_of_an_empty_database_say_how_to_add_one(tmp_path: Path, private_home: Path):
    """With automatic observations switched off, ingest adds none."""
    (private_home / ".causantic").mkdir(mode=0o700)
    (private_home / ".causantic" / "config.toml").write_text("[memory]\nauto = false\n")
    out = run("--db", str(tmp_path / "m.db"), "ingest", "--no-embed", str(SAMPLES))
    assert out.returncode == 0
    out = run("--db", str(tmp_path / "m.db"), "memories")
    assert out.returncode == 0 and "causantic remember" in out.stdout


@pytest.mark.anyio
async def test_memory_tools_over_stdio_with_the_real_client(shared_db_copy: Path):
    """observe -> memories -> search shows it -> feedback -> reflect -> forget, as Claude Code
    would call them; the CLI sees the same memory."""
    from .test_mcp import call, server

    db = shared_db_copy
    async with server(db) as session:
        await session.initialize()
        err, text = await call(session, "observe", content="Always pass -count=1 to go test here",
                               observation_type="instruction", project="cli")
        assert not err and text.startswith("Remembered: mem_"), text
        memory_id = text.split()[1]
        err, text = await call(session, "observe", content="always pass -count=1 to go test here.",
                               observation_type="instruction", project="cli")
        assert not err and "seen 2×" in text
        err, text = await call(session, "observe", content="x", observation_type="nonsense")
        assert err
        err, text = await call(session, "memories", project="cli", observation_type="instruction")
        assert not err and memory_id in text
        err, text = await call(session, "search", query="go test count flag", project="cli")
        assert not err and text.startswith("Memories (") and memory_id in text
        err, text = await call(session, "feedback", memory_id=memory_id, helpful=True,
                               reason="caught a cached result")
        assert not err and "effective importance 10.5" in text
        err, text = await call(session, "feedback", memory_id="mem_nothere", helpful=True)
        assert err and "no memory" in text
        err, text = await call(session, "reflect", project="cli")
        assert not err and "Q1." in text and "observe" in text
        chunk = text.split("[cites: ")[1].split(",")[0].split("]")[0]
        err, text = await call(session, "observe", content="Run mise run lint before pushing",
                               observation_type="procedure", project="cli", cites=[chunk])
        assert not err and "procedure" in text
        err, text = await call(session, "forget", memory_id=memory_id)
        assert not err and text.startswith("Dry run: 1 memory")
        err, text = await call(session, "forget", memory_id=memory_id, dry_run=False)
        assert not err and text.startswith("Forgot 1 memory")
    listed = json.loads(run("--db", str(db), "memories", "--project", "cli", "--type",
                            "procedure", "--json").stdout)["memories"]
    assert listed[0]["origin"] == "reflection" and listed[0]["cites"] == [chunk]
    assert memory_id not in run("--db", str(db), "memories", "--project", "cli").stdout


def test_two_concurrent_ingests_observe_what_one_ingest_does(shared_transcripts: Path,
                                                             tmp_path: Path):
    """Automatic observations are idempotent under concurrent writers: same ids, same counts."""
    source = str(shared_transcripts / "marot__spotter")
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    assert run("--db", str(one), "ingest", "--no-embed", source).returncode == 0
    procs = [subprocess.Popen([PYTHON, "-m", "causantic", "--db", str(two), "ingest",
                               "--no-embed", source], cwd=REPO, stdout=subprocess.DEVNULL,
                              env={**os.environ, "PYTHONPATH": str(REPO)}) for _ in range(2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]

    def observed(db: Path) -> set[tuple[str, int, tuple[str, ...]]]:
        with open_store(db, readonly=True) as store:
            rows = sql.select(store.conn, include_duplicates=True)
            cites = sql.citations(store.conn, [r.id for r in rows])
            return {(r.id, r.count, tuple(cites[r.id])) for r in rows}

    assert observed(one) and observed(one) == observed(two)


def test_forget_by_project_or_query_covers_remembered_statements(shared_db_copy: Path):
    """Forgetting by criteria takes the explicit memories that match them too, tombstoned."""
    from causantic.forget import forget

    with open_store(shared_db_copy) as store:
        port = observe(store, "The e2e tests need ENTIRE_E2E_PORT=8080", project="cli",
                       embed=False)
        other = observe(store, "The e2e tests need ENTIRE_E2E_PORT=8080", project="spotter",
                        embed=False)
        everywhere = observe(store, "Never commit .env files", embed=False)
        preview = forget(store, project="cli", query="ENTIRE_E2E_PORT", threshold=0.9)
        assert "Would also forget 1 memory" in preview.text and port.id in preview.text
        assert sql.get(store.conn, port.id) is not None
        done = forget(store, project="cli", query="ENTIRE_E2E_PORT", threshold=0.9,
                      dry_run=False)
        assert "Also forgot 1 memory" in done.text
        assert sql.get(store.conn, port.id) is None and sql.forgotten(store.conn, [port.id])
        forget(store, project="cli", dry_run=False)
        assert sql.get(store.conn, other.id) is not None  # another project
        assert sql.get(store.conn, everywhere.id) is not None  # global: never by project
        assert not sql.select(store.conn, project="cli", include_global=False,
                              include_duplicates=True)
