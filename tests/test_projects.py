"""Projects by any name a user sees: the stored name, a linked worktree's folder name, or a
path inside the project; an unknown name is a usage error naming the closest names.

Real git repositories (a main checkout and a linked worktree in an unrelated folder, removed
after ingest), transcripts whose `cwd` points into them, a real store, and the real command
line, MCP server (stdio) and session-start hook.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from causantic.config import load_settings
from causantic.errors import UsageError
from causantic.ingest.run import run_ingest
from causantic.retrieval.projects import project_at, resolve_project
from causantic.store import open_store

from .conftest import PYTHON, REPO
from .helpers import mcp_client


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                   check=True, capture_output=True, timeout=60)


def _session(folder: Path, sid: str, cwd: Path, prompt: str, answer: str, hour: int) -> None:
    rows = [
        {"type": "user", "sessionId": sid, "cwd": str(cwd), "uuid": f"{sid}-u",
         "timestamp": f"2026-03-0{hour}T10:00:00.000Z",
         "message": {"role": "user", "content": prompt}},
        {"type": "assistant", "sessionId": sid, "cwd": str(cwd), "uuid": f"{sid}-a",
         "timestamp": f"2026-03-0{hour}T10:01:00.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]}},
    ]
    enc = "".join(c if c.isalnum() else "-" for c in str(cwd))
    path = folder / enc / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _shopfront(tmp_path: Path) -> tuple[Path, Path]:
    """A git repository `src/shopfront` with one commit and its linked worktree
    `trees/feature-login`."""
    repo = tmp_path / "src" / "shopfront"
    repo.mkdir(parents=True)
    _git("init", "-q", cwd=repo)
    (repo / "README").write_text("x\n")
    _git("add", "README", cwd=repo)
    _git("commit", "-qm", "init", cwd=repo)
    worktree = tmp_path / "trees" / "feature-login"
    _git("worktree", "add", "-q", str(worktree), cwd=repo)
    return repo, worktree


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """Repo `shopfront` with a linked worktree `feature-login` elsewhere (gone after ingest),
    a plain folder `notes`, and a project `shopfront-admin` that shares a prefix."""
    src = tmp_path / "src"
    repo, worktree = _shopfront(tmp_path)
    (worktree / "web").mkdir()
    admin = src / "shopfront-admin"
    admin.mkdir()
    _git("init", "-q", cwd=admin)
    notes = tmp_path / "notes"
    notes.mkdir()
    claude = tmp_path / "claude"
    _session(claude, "a0000000-0000-4000-8000-000000000001", repo,
             "the checkout total rounds wrong", "Fixed the rounding in cart.py.", 1)
    _session(claude, "a0000000-0000-4000-8000-000000000002", worktree / "web",
             "login form loses the redirect parameter", "The next= parameter is kept now.", 2)
    _session(claude, "a0000000-0000-4000-8000-000000000003", admin,
             "admin table pagination", "Added keyset pagination.", 3)
    _session(claude, "a0000000-0000-4000-8000-000000000004", notes,
             "draft the release notes", "Release notes drafted.", 4)
    db = tmp_path / "memory.db"
    run_ingest(load_settings(db=db, env={"HOME": str(tmp_path)}), [claude])
    _git("worktree", "remove", "--force", str(worktree), cwd=repo)
    assert not worktree.exists()
    return {"db": db, "repo": repo, "worktree": worktree, "notes": notes, "admin": admin}


def cli(db: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-m", "causantic", "--db", str(db), *args],
                          capture_output=True, text=True, cwd=cwd, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_worktree_sessions_fold_into_the_repository_and_keep_their_folder(world: dict) -> None:
    """Ingest names the worktree's session after its repository and records the worktree's
    own folder (the name a user sees in their shell prompt)."""
    with open_store(world["db"], readonly=True) as store:
        rows = dict(store.conn.execute("SELECT id, project || ' ' || coalesce(checkout, '')"
                                       " FROM sessions").fetchall())
    assert rows["a0000000-0000-4000-8000-000000000002"] == f"shopfront {world['worktree']}"
    assert rows["a0000000-0000-4000-8000-000000000001"] == f"shopfront {world['repo']}"


def test_every_name_a_user_sees_resolves_to_the_stored_project(world: dict) -> None:
    """Stored name, worktree folder (even after the worktree is removed), absolute and
    relative paths inside a project, a path below a plain (non-git) project folder."""
    repo, notes = world["repo"], world["notes"]
    with open_store(world["db"], readonly=True) as store:
        conn = store.conn
        assert resolve_project(conn, None) is None
        for name, cwd, expected in [
            ("shopfront", None, "shopfront"),
            ("feature-login", None, "shopfront"),
            (str(world["worktree"] / "web"), None, "shopfront"),
            (".", repo, "shopfront"),
            ("./README", repo, "shopfront"),
            ("../shopfront-admin", repo, "shopfront-admin"),
            (str(repo.parent / "shopfront"), None, "shopfront"),
            (".", notes, "notes"),
            (str(notes / "2026" / "march"), None, "notes"),
        ]:
            assert resolve_project(conn, name, cwd=str(cwd) if cwd else None) == expected, name
        assert project_at(conn, str(notes / "drafts")) == "notes"


def test_an_unknown_project_is_a_usage_error_naming_the_closest(world: dict) -> None:
    with open_store(world["db"], readonly=True) as store:
        with pytest.raises(UsageError) as err:
            resolve_project(store.conn, "shopfrnt")
        assert str(err.value) == "no project 'shopfrnt'; closest: shopfront, shopfront-admin"
        with pytest.raises(UsageError) as err:
            resolve_project(store.conn, "zzz")
        assert "projects in memory: notes, shopfront, shopfront-admin" in str(err.value)


def test_every_cli_command_with_project_accepts_the_names_and_rejects_typos(world: dict) -> None:
    """Exit 0 with a worktree folder name or `.`; exit 2 with one line naming the closest
    for a typo, and no advice to run `embed` (the old notice)."""
    db, repo = world["db"], world["repo"]
    commands = [["search", "rounding"], ["recall", "rounding"], ["predict", "rounding"],
                ["reconstruct"], ["list-sessions"], ["topics"], ["forget"], ["lessons"],
                ["memories"], ["export", str(db.parent / "out.jsonl")]]
    for command in commands:
        for name, cwd in (("feature-login", repo.parent), (".", repo)):
            out = cli(db, *command, "--project", name, cwd=cwd)
            assert out.returncode == 0, (command, name, out.stderr)
        bad = cli(db, *command, "--project", "shopfrnt", cwd=repo.parent)
        assert bad.returncode == 2, (command, bad.stdout)
        assert bad.stderr == "causantic: no project 'shopfrnt'; closest: shopfront, shopfront-admin\n"
    found = cli(db, "search", "rounding", "--project", ".", "--json", "--mode", "keyword", cwd=repo)
    assert {r["project"] for r in json.loads(found.stdout)["results"]} == {"shopfront"}
    listed = cli(db, "list-sessions", "--project", "feature-login", cwd=repo)
    assert listed.stdout.startswith('Sessions of "shopfront"') and "a0000000" in listed.stdout
    # What is remembered under `.` or the worktree's name is the project's, and shows wherever
    # the project is asked for by any of its names (not under "." or a folder name). A name
    # nothing holds yet may be a project whose sessions come later: kept as given.
    for name, cwd in (("feature-login", repo.parent), (".", repo), ("checkout-v2", repo)):
        out = cli(db, "remember", "--no-embed", "--project", name,
                  "cart totals are rounded half-even", cwd=cwd)
        assert out.returncode == 0, out.stderr
    with open_store(db, readonly=True) as store:
        assert {p for (p,) in store.conn.execute("SELECT project FROM memories")} == {
            "shopfront", "checkout-v2"}
    remembered = cli(db, "search", "cart totals rounding", "--project", "feature-login", cwd=repo)
    assert "cart totals are rounded half-even" in remembered.stdout
    assert cli(db, "reflect", "--project", ".", "--peek", cwd=repo).returncode == 0


@pytest.mark.anyio
async def test_mcp_tools_accept_the_same_names(world: dict) -> None:
    """The MCP `project` argument goes through the same resolution (the server's working
    directory is the session's, so `.` means the project Claude Code runs in)."""
    async with mcp_client(["-m", "causantic", "--db", str(world["db"]), "serve-mcp"],
                          world["db"].parent / "server.log", cwd=world["repo"],
                          env={**os.environ, "PYTHONPATH": str(REPO)}) as session:
        await session.initialize()
        ok = await session.call_tool("search", {"query": "redirect parameter",
                                                "project": ".", "mode": "keyword"})
        assert not ok.is_error and "next= parameter" in ok.content[0].text
        listed = await session.call_tool("list-sessions", {"project": "feature-login"})
        assert not listed.is_error and "a0000000-0000-4000-8000-000000000002" in \
            listed.content[0].text
        kept = await session.call_tool("observe", {"content": "checkout uses banker's rounding",
                                                   "project": "."})
        assert not kept.is_error and "· shopfront" in kept.content[0].text
        bad = await session.call_tool("recall", {"query": "x", "project": "shopfrnt"})
        assert bad.is_error
        assert bad.content[0].text.endswith(
            "no project 'shopfrnt'; closest: shopfront, shopfront-admin")


def test_session_start_hook_briefs_a_subfolder_of_a_plain_project(world: dict, tmp_path: Path) -> None:
    """A session started below a non-git project folder gets that project's briefing (the
    folder's own basename names no project)."""
    deeper = world["notes"] / "drafts"
    deeper.mkdir()
    shutil.copy(world["db"], tmp_path / "hook.db")
    out = subprocess.run([PYTHON, "-m", "causantic", "--db", str(tmp_path / "hook.db"), "hook",
                          "session-start"], input=json.dumps({"session_id": "new", "cwd": str(deeper),
                                                              "source": "startup"}),
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0
    context = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "draft the release notes" in context


def test_worktree_folders_of_copied_transcripts_resolve_by_their_layout(shared_db: Path) -> None:
    """Transcripts from another machine (the folders do not exist here): the entire/cli
    sessions ran in `/Users/alex/workspace/cli/.worktrees/3`, so `3` and that path name `cli`."""
    with open_store(shared_db, readonly=True) as store:
        checkouts = {r[0] for r in store.conn.execute(
            "SELECT checkout FROM sessions WHERE project = 'cli'")}
        assert "/Users/alex/workspace/cli/.worktrees/3" in checkouts
        assert resolve_project(store.conn, "3") == "cli"
        assert resolve_project(store.conn, "/Users/alex/workspace/cli/.worktrees/3/cmd") == "cli"
        with pytest.raises(UsageError, match="no project 'napoli'; closest: napoli-matcha"):
            resolve_project(store.conn, "napoli")


@pytest.fixture
def parallel(tmp_path: Path) -> dict[str, Path]:
    """Repo `shopfront` and its linked worktree `feature-login` (kept), worked in turn: the
    worktree's session first, then a newer one in the main checkout."""
    repo, worktree = _shopfront(tmp_path)
    claude = tmp_path / "claude"
    _session(claude, "b1000000-0000-4000-8000-000000000001", worktree,
             "login form loses the redirect parameter", "The next= parameter is kept now.", 1)
    _session(claude, "b2000000-0000-4000-8000-000000000002", repo,
             "the checkout total rounds wrong", "Fixed the rounding in cart.py.", 2)
    db = tmp_path / "memory.db"
    run_ingest(load_settings(db=db, env={"HOME": str(tmp_path)}), [claude])
    return {"db": db, "repo": repo, "worktree": worktree}


def test_a_briefing_resumes_the_worktree_it_is_asked_from(parallel: dict) -> None:
    """`reconstruct --mode briefing` in the worktree resumes the worktree's session and names
    the main checkout's newer one; in the main checkout, the newest; `list-sessions` names the
    linked worktree."""
    db, repo, worktree = parallel["db"], parallel["repo"], parallel["worktree"]
    text = cli(db, "reconstruct", "--mode", "briefing", cwd=worktree).stdout
    assert "last session b1000000 " in text and "redirect parameter" in text
    assert ("Newer work in another checkout: session b2000000 in the main checkout "
            "(2026-03-02 10:01 UTC") in text and "the checkout total rounds wrong" in text
    main = cli(db, "reconstruct", "--mode", "briefing", cwd=repo).stdout
    assert "last session b2000000 " in main and "Newer work" not in main
    listed = cli(db, "list-sessions", cwd=worktree).stdout
    assert "worktree feature-login)" in listed and listed.count("worktree ") == 1


@pytest.mark.anyio
async def test_the_mcp_briefing_resumes_the_worktree_claude_code_runs_in(parallel: dict) -> None:
    async with mcp_client(["-m", "causantic", "--db", str(parallel["db"]), "serve-mcp"],
                          parallel["db"].parent / "server.log", cwd=parallel["worktree"],
                          env={**os.environ, "PYTHONPATH": str(REPO)}) as session:
        await session.initialize()
        got = await session.call_tool("reconstruct", {"mode": "briefing"})
        text = got.content[0].text
        assert not got.is_error and "last session b1000000 " in text
        assert "Newer work in another checkout: session b2000000 in the main checkout" in text
