"""Folders kept out of memory: `[ingest] exclude` and `.nocausantic` marker files.

A session kept out is never read into memory (not even a checkpoint, so it is read in full
once it is let in again), and no hook briefs, recalls or ingests for it; doctor names a
kept-out project that still holds chunks from before.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from causantic.config import load_settings
from causantic.errors import UsageError
from causantic.ingest.exclude import MARKER, Exclusions
from causantic.store import open_store

from .conftest import PYTHON, SAMPLES
from .helpers import run_cli

SAMPLES_CWD = "/home/dev/acme-api"


def _git_checkout(folder: Path) -> Path:
    (folder / ".git").mkdir(parents=True)
    return folder


def test_a_marker_keeps_out_its_folder_and_everything_under_it(tmp_path: Path):
    clients = tmp_path / "clients"
    deep = _git_checkout(clients / "acme") / "src" / "api"
    deep.mkdir(parents=True)
    other = _git_checkout(tmp_path / "mine")
    assert Exclusions().reason(str(deep)) is None
    (clients / MARKER).touch()
    assert Exclusions().reason(str(deep)) == f"{clients / MARKER} exists"
    assert Exclusions().reason(str(clients)) is not None
    assert Exclusions().reason(str(other)) is None
    assert Exclusions().reason("") is None and Exclusions().reason(None) is None


def test_a_marker_in_the_main_checkout_keeps_out_its_linked_worktrees(tmp_path: Path):
    main = _git_checkout(tmp_path / "secret")
    (main / ".git" / "worktrees" / "feature").mkdir(parents=True)
    worktree = tmp_path / "elsewhere" / "secret-feature"
    worktree.mkdir(parents=True)
    (worktree / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'feature'}\n")
    assert Exclusions().reason(str(worktree)) is None
    (main / MARKER).touch()
    assert Exclusions().reason(str(worktree)) == f"{main / MARKER} exists"


@pytest.mark.parametrize(("pattern", "cwd", "kept_out"), [
    ("/home/u/clients", "/home/u/clients/acme/src", True),   # a folder: all under it
    ("/home/u/clients/*", "/home/u/clients/acme/src", True),  # any folder directly under it
    ("/home/u/clients/*", "/home/u/clients", False),
    ("/home/*/scratch", "/home/u/scratch/x", True),
    ("/home/*/scratch", "/home/u/v/scratch", False),  # * stays within one folder name
    ("/home/**/scratch", "/home/u/v/scratch", True),  # ** spans several
    ("/home/u/cli", "/home/u/client", False),  # whole folder names only
    ("acme-*", "/home/u/acme-api", True),  # no /: the project's name
    ("acme", "/home/u/acme-api", False),
])
def test_patterns_match_folders_and_project_names(pattern: str, cwd: str, kept_out: bool):
    assert (Exclusions([pattern]).reason(cwd) is not None) is kept_out
    if kept_out:
        assert Exclusions([pattern]).reason(cwd) == f"[ingest] exclude {pattern!r}"


def test_config_expands_home_and_rejects_relative_paths(tmp_path: Path):
    home = tmp_path / "home"
    (home / ".causantic").mkdir(parents=True)
    config = home / ".causantic" / "config.toml"
    env = {"HOME": str(home)}
    config.write_text('[ingest]\nexclude = ["~/clients", "scratch", "/tmp/x/**"]\n')
    assert load_settings(env=env).ingest.exclude == (f"{home}/clients", "scratch", "/tmp/x/**")
    config.write_text('[ingest]\nexclude = ["work/secret"]\n')
    with pytest.raises(UsageError, match="absolute path"):
        load_settings(env=env)
    config.write_text('[ingest]\nexclude = "scratch"\n')
    with pytest.raises(UsageError, match="list of strings"):
        load_settings(env=env)


def _session(folder: Path, cwd: str, session_id: str, words: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    base = {"sessionId": session_id, "cwd": cwd, "version": "2.1.197", "userType": "external",
            "isSidechain": False, "gitBranch": "main"}
    recs = [
        {**base, "type": "user", "uuid": f"{session_id}-u", "parentUuid": None,
         "timestamp": "2026-03-01T10:00:00.000Z",
         "message": {"role": "user", "content": f"please look at the {words}"}},
        {**base, "type": "assistant", "uuid": f"{session_id}-a", "parentUuid": f"{session_id}-u",
         "timestamp": "2026-03-01T10:00:05.000Z",
         "message": {"id": f"m-{session_id}", "role": "assistant", "model": "claude-opus-4-6",
                     "content": [{"type": "text", "text": f"The {words} is fixed now."}]}},
    ]
    (folder / f"{session_id}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))


def _stored_projects(db: Path) -> set[str]:
    with open_store(db, readonly=True) as store:
        return {p for (p,) in store.conn.execute("SELECT DISTINCT project FROM chunks")}


def test_ingest_keeps_out_marked_folders_and_reads_them_whole_once_let_in(
        tmp_path: Path, private_home: Path):
    secret = _git_checkout(tmp_path / "work" / "secret")
    public = _git_checkout(tmp_path / "work" / "public")
    projects = private_home / ".claude" / "projects"
    _session(projects / "-work-secret", str(secret), "s-secret", "quillfeather gateway")
    _session(projects / "-work-public", str(public), "s-public", "nginx config")
    (secret / MARKER).touch()
    out = run_cli("ingest", "--no-embed", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["files_excluded"] == 1 and report["files_read"] == 1
    db = private_home / ".causantic" / "memory.db"
    assert _stored_projects(db) == {"public"}
    assert b"quillfeather" not in db.read_bytes()
    assert report["kept_out"] == {f"{secret / MARKER} exists": 1}
    again = run_cli("ingest", "--no-embed")
    assert f"1 kept out: {secret / MARKER} exists)" in again.stdout, again.stdout
    # doctor does not take a file kept out on purpose for one not read yet
    doctor = run_cli("doctor").stdout
    assert "ok       transcripts: 1 of 2 transcript files ingested (1 kept out of memory)" in doctor

    (secret / MARKER).unlink()  # let in: read from the start, not from a checkpoint
    out = run_cli("ingest", "--no-embed", "--json")
    assert json.loads(out.stdout)["files_excluded"] == 0
    assert _stored_projects(db) == {"public", "secret"}
    search = run_cli("search", "quillfeather", "--mode", "keyword")
    assert "quillfeather gateway" in search.stdout


def test_config_keeps_a_project_out_by_name_and_doctor_names_what_was_stored_before(
        private_home: Path):
    target = private_home / ".claude" / "projects" / "-home-dev-acme-api"
    shutil.copytree(SAMPLES / "-home-dev-acme-api", target)
    assert run_cli("ingest", "--no-embed").returncode == 0
    config = private_home / ".causantic" / "config.toml"
    config.write_text('[ingest]\nexclude = ["acme-*"]\n')
    doctor = run_cli("doctor")
    assert ("kept out: kept out of memory but holding chunks stored before: acme-api "
            "([ingest] exclude 'acme-*')") in doctor.stdout
    assert "causantic forget --project acme-api --yes" in doctor.stdout
    assert run_cli("forget", "--project", "acme-api", "--yes").returncode == 0
    (target / "new-session.jsonl").write_text((target / next(
        p.name for p in target.glob("*.jsonl"))).read_text().replace(
        "11111111-aaaa-4bbb-8ccc-000000000001", "22222222-aaaa-4bbb-8ccc-000000000009"))
    out = run_cli("ingest", "--no-embed", "--json")
    assert json.loads(out.stdout)["files_excluded"] >= 1
    assert _stored_projects(private_home / ".causantic" / "memory.db") == set()
    assert "holding chunks stored before" not in run_cli("doctor").stdout


def _hook(event: str, payload: dict) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([PYTHON, "-m", "causantic", "hook", event],
                          input=json.dumps(payload).encode(), capture_output=True, timeout=60)


@pytest.mark.parametrize(("event", "payload"), [
    ("session-start", {"hook_event_name": "SessionStart", "source": "startup"}),
    ("session-end", {"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}),
    ("post-tool-use", {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                       "tool_input": {"command": "mix test"}, "error": "** (Mix) boom"}),
])
def test_no_hook_acts_for_a_session_kept_out(event: str, payload: dict, private_home: Path):
    target = private_home / ".claude" / "projects" / "-home-dev-acme-api"
    shutil.copytree(SAMPLES / "-home-dev-acme-api", target)
    assert run_cli("ingest", "--no-embed").returncode == 0
    (private_home / ".causantic" / "config.toml").write_text(
        f'[ingest]\nexclude = ["{SAMPLES_CWD}"]\n')
    transcript = target / "11111111-aaaa-4bbb-8ccc-000000000001.jsonl"
    proc = _hook(event, {**payload, "session_id": "s-new", "cwd": SAMPLES_CWD,
                         "transcript_path": str(transcript)})
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    status = json.loads((private_home / ".causantic" / "hook-status.json").read_text())
    assert status[event]["success"]
    assert status[event]["details"] == {
        "skipped": f"kept out of memory: [ingest] exclude '{SAMPLES_CWD}'"}


def test_a_file_whose_start_names_no_folder_is_judged_after_parsing(
        tmp_path: Path, private_home: Path):
    """The first 64 KB usually name the session's folder; when they do not (a huge first
    record), the folder parsing finds decides."""
    secret = _git_checkout(tmp_path / "secret")
    (secret / MARKER).touch()
    folder = private_home / ".claude" / "projects" / "-secret"
    _session(folder, str(secret), "s-late", "quillfeather gateway")
    path = folder / "s-late.jsonl"
    path.write_text(json.dumps({"type": "summary", "summary": "x " * 40_000, "leafUuid": "z"})
                    + "\n" + path.read_text())
    out = run_cli("ingest", "--no-embed", "--json")
    assert json.loads(out.stdout)["files_excluded"] == 1
    assert b"quillfeather" not in (private_home / ".causantic" / "memory.db").read_bytes()
