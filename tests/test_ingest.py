"""Ingesting real transcripts: nothing lost, idempotent, incremental, crash- and race-safe."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import apsw
import pytest

from causantic.config import load_settings
from causantic.ingest.run import run_embed
from causantic.store import open_store
from causantic.transcripts.discover import discover

from .conftest import PYTHON, REPO, SAMPLES
from .helpers import ingest, run_cli


def snapshot(db: Path) -> dict[str, list]:
    """Everything that matters in a store, in a comparable form (no file ids or times)."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {
            "chunks": conn.execute(
                "SELECT id, session_id, project, agent_id, offset, part, turn, kind, start_time,"
                " end_time, text, tokens, redactions, meta FROM chunks ORDER BY id"
            ).fetchall(),
            "edges": conn.execute("SELECT src, dst, kind, weight FROM edges ORDER BY 1, 2, 3").fetchall(),
            "sessions": conn.execute(
                "SELECT id, project, cwd, title, start_time, end_time, continued FROM sessions ORDER BY id"
            ).fetchall(),
            "fts": conn.execute(
                "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'the OR a OR error'"
            ).fetchall(),
        }
    finally:
        conn.close()


def session_ids_in(folder: Path) -> set[str]:
    """Every sessionId named by a user/assistant record of a main transcript under folder."""
    ids: set[str] = set()
    for tf in discover([folder]):
        if tf.kind != "session":
            continue
        for line in tf.path.read_bytes().splitlines():
            if b'"sessionId"' not in line or b'"type":"progress"' in line[:1024]:
                continue
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("type") in ("user", "assistant") and not r.get("isSidechain"):
                ids.add(r["sessionId"])
    return ids


def test_every_shared_session_is_stored_with_its_sub_agents(shared_db: Path, shared_transcripts: Path):
    conn = apsw.Connection(str(shared_db), flags=apsw.SQLITE_OPEN_READONLY)
    stored = {r[0] for r in conn.execute("SELECT DISTINCT session_id FROM chunks")}
    expected = session_ids_in(shared_transcripts)
    assert len(expected) == 26  # 25 files, one of which holds two sessions
    assert expected <= stored, f"sessions lost: {expected - stored}"
    # Every sub-agent file contributes chunks, attached to its parent session.
    agent_files = [tf for tf in discover([shared_transcripts]) if tf.kind == "subagent"]
    assert len(agent_files) == 4
    for tf in agent_files:
        n = conn.execute(
            "SELECT count(*) FROM chunks WHERE agent_id = ? AND session_id = ?",
            (tf.agent_id, tf.session_hint),
        ).fetchone()[0]
        assert n > 0, tf.path
    # Entire checkpoints have no sub-agent files: their agents come from agent_progress.
    agents = conn.execute("SELECT count(DISTINCT agent_id) FROM chunks WHERE agent_id != ''").fetchone()[0]
    assert agents == 15
    kinds = dict(conn.execute("SELECT kind, count(*) FROM edges GROUP BY kind").fetchall())
    assert kinds["brief"] == 15 and kinds["debrief"] == 15 and kinds["next"] > 700
    projects = {r[0] for r in conn.execute("SELECT DISTINCT project FROM sessions")}
    assert projects == {"cli", "napoli-matcha", "spotter"}  # worktrees folded into their repo
    # No duplicate edges, no self-loops, no dangling endpoints.
    assert conn.execute("SELECT count(*) FROM edges WHERE src = dst").fetchone()[0] == 0
    dangling = conn.execute(
        "SELECT count(*) FROM edges WHERE src NOT IN (SELECT id FROM chunks)"
        " OR dst NOT IN (SELECT id FROM chunks)"
    ).fetchone()[0]
    assert dangling == 0
    conn.close()


def test_second_ingest_changes_nothing(shared_db_copy: Path, shared_transcripts: Path):
    before = snapshot(shared_db_copy)
    report = ingest(shared_db_copy, shared_transcripts)
    assert report.files_read == 0 and report.chunks_added == 0 and report.edges_added == 0
    assert snapshot(shared_db_copy) == before


def test_appended_transcript_ingests_only_new_lines_and_links_to_the_tail(tmp_path: Path):
    src = SAMPLES / "-home-dev-acme-api" / "33333333-aaaa-4bbb-8ccc-000000000003.jsonl"
    lines = src.read_bytes().splitlines(keepends=True)
    live = tmp_path / "proj" / src.name
    live.parent.mkdir()
    live.write_bytes(b"".join(lines[:4]) + lines[4][:30])  # a half-written fifth line
    db = tmp_path / "m.db"
    first = ingest(db, live.parent)
    assert first.chunks_added >= 1
    with open(live, "ab") as f:
        f.write(lines[4][30:] + b"".join(lines[5:]))
    second = ingest(db, live.parent)
    assert second.files_read == 1
    clean = tmp_path / "clean.db"
    ingest(clean, src)
    assert snapshot(db) == snapshot(clean)


def test_rewritten_file_is_read_again_idempotently(tmp_path: Path):
    proj = tmp_path / "p"
    shutil.copytree(SAMPLES, proj)
    db = tmp_path / "m.db"
    ingest(db, proj)
    target = next(proj.rglob("33333333-*.jsonl"))
    original = target.read_bytes()
    target.write_bytes(b"garbage that replaced the file\n")
    ingest(db, proj)
    target.write_bytes(original)
    ingest(db, proj)
    clean = tmp_path / "clean.db"
    ingest(clean, proj)
    assert snapshot(db) == snapshot(clean)


def test_samples_chain_through_sub_agent_and_continued_session(tmp_path: Path):
    db = tmp_path / "m.db"
    report = ingest(db, SAMPLES)
    assert report.redactions >= 3  # the .env printed in session two
    conn = apsw.Connection(str(db))
    kinds = dict(conn.execute("SELECT kind, count(*) FROM edges GROUP BY kind").fetchall())
    assert kinds.get("brief") == 1 and kinds.get("debrief") == 1 and kinds.get("continues") == 1
    text = " ".join(r[0] for r in conn.execute("SELECT text FROM chunks"))
    assert "sk_live_51AbCdEf" not in text and "hunter2-very-secret" not in text
    assert "AKIAQ3EXAMPLE7SAMPLE" not in text
    assert "[REDACTED:" in text
    # "Moving on: unrelated question" cuts the chain.
    cut = conn.execute(
        "SELECT count(*) FROM edges e JOIN chunks c ON c.id = e.dst"
        " WHERE c.text LIKE '%Moving on: unrelated question%'"
    ).fetchone()[0]
    assert cut == 0
    conn.close()


def test_a_sub_agent_read_before_its_parent_is_filed_under_the_parents_project(tmp_path: Path):
    """A sub-agent's file can be read before its session's own (given alone, or a copied
    layout): its chunks must not stay in project 'unknown' (invisible to every --project
    query) once the parent is read."""
    parent = SAMPLES / "-home-dev-acme-api" / "11111111-aaaa-4bbb-8ccc-000000000001.jsonl"
    agent = next((parent.parent / parent.stem).rglob("agent-*.jsonl"))

    def projects(db: Path) -> set[tuple[str, str]]:
        conn = apsw.Connection(str(db))
        try:
            return set(conn.execute("SELECT project, agent_id FROM chunks").fetchall()) | set(
                conn.execute("SELECT project, 'session row' FROM sessions").fetchall())
        finally:
            conn.close()

    # Its own records name the folder: the project is known at once.
    ingest(tmp_path / "a.db", agent)
    assert {p for p, _ in projects(tmp_path / "a.db")} == {"acme-api"}

    # Records that name no folder: 'unknown' until the parent says, then the parent's.
    bare = tmp_path / "t" / parent.stem / "subagents" / agent.name
    bare.parent.mkdir(parents=True)
    lines = [json.loads(line) for line in agent.read_text().splitlines()]
    bare.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "cwd"}) + "\n"
                            for r in lines))
    db = tmp_path / "b.db"
    settings = load_settings(db=db)
    ingest(db, bare)
    run_embed(settings)
    assert {p for p, _ in projects(db)} == {"unknown"}
    shutil.copy(parent, bare.parent.parent.parent / parent.name)
    ingest(db, bare.parent.parent.parent)
    assert {p for p, _ in projects(db)} == {"acme-api"}
    run_embed(settings)  # the moved chunks' vectors were dropped: embedded again, filed anew
    with open_store(db, readonly=True) as store:
        assert store.load_vec()
        partitions = store.conn.execute("SELECT DISTINCT project FROM chunk_vectors").fetchall()
        assert partitions == [("acme-api",)]
    for mode in ("keyword", "vector"):
        found = json.loads(run_cli("--db", str(db), "search", "retries POST or PATCH", "--mode",
                                   mode, "--project", "acme-api", "--json").stdout)
        assert any(r["session_id"] == parent.stem and "PATCH" in r["text"]
                   for r in found["results"]), mode


def test_batch_size_does_not_change_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """One transaction per session (and its sub-agents) or one for everything: same rows,
    links and session states."""
    import causantic.ingest.pipeline as ingest_module

    def states(db: Path) -> list:
        conn = apsw.Connection(str(db))
        try:
            return conn.execute(
                "SELECT session_id, project, start_time, end_time, chunks, state"
                " FROM session_state ORDER BY 1"
            ).fetchall()
        finally:
            conn.close()

    monkeypatch.setattr(ingest_module, "_BATCH_BYTES", 0)
    small = ingest(tmp_path / "small.db", SAMPLES)
    monkeypatch.setattr(ingest_module, "_BATCH_BYTES", 1 << 40)
    big = ingest(tmp_path / "big.db", SAMPLES)
    assert small.files_read == big.files_read == 4
    assert snapshot(tmp_path / "small.db") == snapshot(tmp_path / "big.db")
    assert states(tmp_path / "small.db") == states(tmp_path / "big.db") != []


def test_forgotten_chunks_are_not_restored_by_reingest(tmp_path: Path):
    db = tmp_path / "m.db"
    ingest(db, SAMPLES)
    conn = apsw.Connection(str(db))
    victim = conn.execute("SELECT id FROM chunks WHERE text LIKE '%Dockerfile%' LIMIT 1").fetchone()[0]
    with conn:
        conn.execute("INSERT INTO forgotten(scope, key) VALUES ('chunk', ?)", (victim,))
        conn.execute("DELETE FROM chunks WHERE id = ?", (victim,))
        conn.execute("DELETE FROM files")  # force a full re-read
    conn.close()
    ingest(db, SAMPLES)
    conn = apsw.Connection(str(db))
    assert conn.execute("SELECT count(*) FROM chunks WHERE id = ?", (victim,)).fetchone()[0] == 0
    conn.close()


_KILL_SCRIPT = """
import os, sys, signal
from pathlib import Path
from causantic.config import load_settings
from causantic.ingest.run import make_redact
from causantic.store import open_store
from causantic.ingest.pipeline import ingest_paths
import causantic.ingest.pipeline as ingest
settings = load_settings(db=sys.argv[1])
kill_after = int(sys.argv[3])
mid = len(sys.argv) > 4  # inside the write transaction, half way through a batch
def on_file(tf, report):
    if not mid and report.files_read >= kill_after:
        print("killing after", report.files_read, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
write_file, written = ingest._write_file, [0]
def killing_write_file(conn, item):
    written[0] += 1
    if mid and written[0] > kill_after:
        print("killing after", kill_after, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    return write_file(conn, item)
ingest._write_file = killing_write_file
with open_store(settings.db_path) as store:
    ingest_paths(store, [Path(sys.argv[2])], make_redact(settings), on_file=on_file)
"""


@pytest.mark.parametrize("where", ["between batches", "inside a write transaction"])
def test_ingest_killed_half_way_then_rerun_equals_one_clean_run(
    tmp_path: Path, shared_db: Path, shared_transcripts: Path, where: str
):
    db = tmp_path / "m.db"
    mid = ["mid"] if where == "inside a write transaction" else []
    proc = subprocess.run(
        [PYTHON, "-c", _KILL_SCRIPT, str(db), str(shared_transcripts), "12", *mid],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert "killing after 12" in proc.stdout
    conn = apsw.Connection(str(db))
    partial = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    conn.close()
    assert 0 < partial < len(snapshot(shared_db)["chunks"])
    ingest(db, shared_transcripts)
    assert snapshot(db) == snapshot(shared_db)


def test_three_processes_ingesting_the_same_tree_at_once(
    tmp_path: Path, shared_db: Path, shared_transcripts: Path
):
    db = tmp_path / "m.db"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [PYTHON, "-m", "causantic", "--db", str(db), "ingest", "--no-embed", "--json",
           str(shared_transcripts)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(3)]
    try:
        outs = [p.communicate(timeout=180) for p in procs]
    finally:
        for p in procs:
            p.kill()
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert json.loads(out)["files"] == 29
    reports = [json.loads(out) for out, _ in outs]
    assert sum(r["files_read"] for r in reports) >= 29  # all work was done by one or the other
    assert snapshot(db) == snapshot(shared_db)


def test_unreadable_file_is_reported_and_the_rest_ingested(tmp_path: Path):
    if os.geteuid() == 0:
        pytest.skip("root can read files whatever their mode")
    proj = tmp_path / "p"
    shutil.copytree(SAMPLES, proj)
    bad = next(proj.rglob("33333333-*.jsonl"))
    bad.chmod(0)
    report = ingest(tmp_path / "m.db", proj)
    assert any("33333333" in p for p in report.problems)
    assert report.chunks_added > 0


def test_database_files_are_private(tmp_path: Path):
    db = tmp_path / "fresh" / "deeper" / "memory.db"
    ingest(db, SAMPLES)
    # every folder it had to make, not only the last one (mkdir -p gives the others 0755)
    assert (db.parent.stat().st_mode & 0o777) == 0o700
    assert (db.parent.parent.stat().st_mode & 0o777) == 0o700
    for name in ("memory.db", "memory.db-wal", "memory.db-shm"):
        p = db.parent / name
        if p.exists():
            assert (p.stat().st_mode & 0o777) == 0o600, name


def test_a_database_kept_elsewhere_still_leaves_the_causantic_home_private(tmp_path: Path):
    """Ingest records its integrity check under <home>/state: the home it makes on the way,
    not only `state`, is the user's alone."""
    from causantic.config import load_settings
    from causantic.ingest.run import run_ingest

    (tmp_path / "user").mkdir()
    settings = load_settings(db=tmp_path / "elsewhere" / "m.db", env={"HOME": str(tmp_path / "user")})
    run_ingest(settings, [SAMPLES])
    home = tmp_path / "user" / ".causantic"
    assert (home / "state").is_dir() and not (home / "memory.db").exists()
    assert all(f.stat().st_mode & 0o777 == 0o700 for f in (home, home / "state"))


def test_secrets_are_redacted_before_metadata_is_clipped(tmp_path: Path):
    """A clip that cut a token in half would stop it matching its shape and leak half of it."""
    token = "ghp_" + "EXAMPLE0123456789abcdefEXAMPLE0123456"
    # The token straddles the 200-character clip of stored commands.
    command = "echo " + "x" * 150 + " https://x-access-token:" + token + "@github.com/o/r.git"
    session = "cccccccc-1111-4222-8333-444444444444"
    records = [
        {"type": "user", "uuid": "u1", "sessionId": session, "cwd": "/p", "timestamp": "2026-01-01T10:00:00.000Z",
         "message": {"role": "user", "content": "set the remote"}},
        {"type": "assistant", "uuid": "a1", "sessionId": session, "timestamp": "2026-01-01T10:00:01.000Z",
         "message": {"id": "m1", "role": "assistant", "content": [
             {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": command}}]}},
    ]
    path = tmp_path / "p" / f"{session}.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    db = tmp_path / "m.db"
    ingest(db, path.parent)
    conn = apsw.Connection(str(db))
    stored = " ".join(r[0] + r[1] for r in conn.execute("SELECT text, meta FROM chunks"))
    conn.close()
    assert "EXAMPLE0123" not in stored
    assert "[REDACTED:github-token]" in stored
