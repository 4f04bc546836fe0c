"""Lessons (issue 16): error episodes at ingest, the PostToolUse lookup, the ledger, git."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from causantic.lessons.gitcheck import fix_status
from causantic.lessons.signature import Signature
from causantic.store import open_store
from tests.conftest import PYTHON, REPO
from tests.helpers import ingest

LESSONS = REPO / "tests" / "data" / "lessons"
SHOP = LESSONS / "-home-dev-shop-web"
L1 = "44444444-bbbb-4ccc-8ddd-000000000001"


def rows(db: Path, sql: str = "SELECT * FROM lessons ORDER BY id", args: tuple = ()) -> list[tuple]:
    with open_store(db, readonly=True) as store:
        return [tuple(r) for r in store.conn.execute(sql, args)]


def hook(db: Path, payload: dict | str) -> subprocess.CompletedProcess[bytes]:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run([PYTHON, "-m", "causantic", "--db", str(db), "hook", "post-tool-use"],
                          input=data.encode(), capture_output=True, timeout=60, check=False)


def failure(command: str, error: str, session: str = "live-session") -> dict:
    return {"session_id": session, "transcript_path": "/x.jsonl", "cwd": "/home/dev/shop-web",
            "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
            "tool_input": {"command": command}, "tool_use_id": "toolu_1", "error": error}


@pytest.fixture()
def lessons_db(tmp_path: Path) -> Path:
    db = tmp_path / "memory.db"
    ingest(db, LESSONS)
    return db


def test_a_resolved_error_becomes_a_lesson_with_its_fix_attempts_and_commit(lessons_db: Path):
    """The fix is named by what changed (the command run between) and the commit after it."""
    found = rows(lessons_db, "SELECT subject, error, resolved, fix, fix_command, fix_commit,"
                 " error_chunk, fix_chunk FROM lessons WHERE session_id = ?"
                 " AND error LIKE 'ModuleNotFound%'", (L1,))
    assert len(found) == 1
    subject, error, resolved, fix, fix_command, commit, error_chunk, fix_chunk = found[0]
    assert (subject, error, resolved) == ("pytest -q", "ModuleNotFoundError: No module named 'shop'", 1)
    assert "pip install -e" in fix and fix_command == "pytest -q" and commit == "3f9c2a1"
    assert error_chunk and fix_chunk


def test_unsolved_errors_are_kept_and_look_alikes_get_other_signatures(lessons_db: Path):
    """A missing 'boto3' is not a missing 'shop'; the busy port stays "seen, never solved"."""
    unsolved = rows(lessons_db, "SELECT program FROM lessons WHERE resolved = 0")
    assert ("docker compose",) in unsolved
    shop = Signature("Bash", "pytest -q", "ModuleNotFoundError: No module named 'shop'")
    boto = Signature("Bash", "pytest -q", "ModuleNotFoundError: No module named 'boto3'")
    again = Signature("Bash", "pytest -q tests", "ModuleNotFoundError: No module named 'shop'")
    assert shop.msg_hash != boto.msg_hash and shop.msg_hash == again.msg_hash
    assert Signature("Bash", "x", "Exit code 1").informative is False


def test_reingest_and_incremental_ingest_give_the_same_lessons(tmp_path: Path, lessons_db: Path):
    """Content-hash ids: twice, or one session first then the rest, equals one clean run."""
    before = rows(lessons_db)
    ingest(lessons_db, LESSONS)
    assert rows(lessons_db) == before
    step = tmp_path / "step.db"
    ingest(step, SHOP / f"{L1}.jsonl")
    ingest(step, LESSONS)
    assert [r[1:] for r in rows(step)] == [r[1:] for r in before]


def test_forgetting_a_session_removes_its_lessons(lessons_db: Path):
    with open_store(lessons_db) as store, store.conn:
        store.conn.execute("DELETE FROM chunks WHERE session_id = ?", (L1,))
    assert rows(lessons_db, f"SELECT id FROM lessons WHERE session_id = '{L1}'") == []


def test_hook_offers_the_past_fix_once_and_records_it_in_the_ledger(lessons_db: Path):
    """Same error, new temp path: the lesson is offered, under 800 characters, then not again."""
    payload = failure("pytest -q tests/test_api.py",
                      "Exit code 4\nImportError while loading conftest '/tmp/pytest-of-me/pytest-"
                      "77/tests/conftest.py'.\nE   ModuleNotFoundError: No module named 'shop'")
    proc = hook(lessons_db, payload)
    assert proc.returncode == 0
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PostToolUseFailure"
    context = out["additionalContext"]
    assert "Seen before in shop-web on 2026-04-" in context and "pip install -e" in context
    assert len(context) <= 860  # 800 of lesson plus the memory marker
    ledger = rows(lessons_db, "SELECT event, session_id, tokens, lesson_ids FROM injections")
    assert len(ledger) == 1 and ledger[0][:2] == ("post-tool-use", "live-session")
    assert ledger[0][2] > 0 and json.loads(ledger[0][3])
    assert hook(lessons_db, payload).stdout == b""  # already offered in this session


def test_hook_stays_silent_on_look_alikes_generic_errors_and_bad_input(lessons_db: Path):
    other = failure("pytest -q", "E   ModuleNotFoundError: No module named 'requests'")
    generic = failure("make", "Exit code 1")
    for payload in (other, generic, "not json", "", json.dumps([1, 2])):
        proc = hook(lessons_db, payload)
        assert proc.returncode == 0 and proc.stdout == b""


def test_hook_imports_no_numpy_onnxruntime_or_mcp(lessons_db: Path):
    code = ("import sys, io, json; from causantic.claude import hooks; "
            "sys.stdin = io.TextIOWrapper(io.BytesIO(b''));"
            f"hooks.run(['post-tool-use'], {str(lessons_db)!r});"
            "print(json.dumps([m for m in ('numpy', 'onnxruntime', 'mcp') if m in sys.modules]))")
    proc = subprocess.run([PYTHON, "-c", code], capture_output=True, timeout=60,
                          input=json.dumps(failure("pytest -q", "No module named 'shop'")).encode())
    assert json.loads(proc.stdout.splitlines()[-1]) == []


def test_lessons_and_ledger_commands_print_json(lessons_db: Path):
    def cli(*args: str) -> dict:
        out = subprocess.run([PYTHON, "-m", "causantic", "--db", str(lessons_db), *args],
                             capture_output=True, timeout=60, check=True)
        return json.loads(out.stdout)

    lessons = cli("lessons", "--project", "shop-web", "--json", "--no-git")["lessons"]
    assert {entry["project"] for entry in lessons} == {"shop-web"}
    assert any(not entry["resolved"] for entry in lessons)
    hook(lessons_db, failure("npm run build", "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE "
                                               "unable to resolve dependency tree"))
    ledger = cli("ledger", "--session", "live-ses", "--json")
    assert len(ledger["injections"]) == 1 and ledger["tokens"] > 0
    found = cli("search", "ERESOLVE", "--mode", "keyword", "--json")
    assert found["lessons"] and "◇ lesson" in found["text"]


def test_a_forked_session_does_not_repeat_its_parents_lessons(tmp_path: Path):
    """`--fork-session` (and `/branch`) copy the parent's records, times included, into a new
    session's file; the copy's lessons are the parent's, listed and offered once."""
    folder = tmp_path / "projects" / SHOP.name
    shutil.copytree(SHOP, folder)
    fork = "55555555-bbbb-4ccc-8ddd-00000000f0f0"
    lines = (folder / f"{L1}.jsonl").read_text().splitlines()
    copied = [json.dumps({**json.loads(line), "sessionId": fork}) for line in lines]
    (folder / f"{fork}.jsonl").write_text("\n".join(copied) + "\n")
    db = tmp_path / "memory.db"
    ingest(db, tmp_path / "projects")
    stored = rows(db, "SELECT count(*) FROM lessons WHERE session_id = ?", (fork,))[0][0]
    assert stored > 0  # the fork's own record keeps them (forget, reconstruct)
    listed = subprocess.run([PYTHON, "-m", "causantic", "--db", str(db), "lessons", "--json",
                             "--no-git"], capture_output=True, timeout=60, check=True)
    lessons = json.loads(listed.stdout)["lessons"]
    episodes = [(e["time"], e["error"], e["fix"]) for e in lessons]
    assert episodes and len(episodes) == len(set(episodes))
    listed = subprocess.run([PYTHON, "-m", "causantic", "--db", str(db), "lessons", "--json",
                             "--no-git", "--limit", "3"], capture_output=True, timeout=60,
                            check=True)  # a limit the copies would fill half of
    first = [(e["time"], e["error"], e["fix"]) for e in json.loads(listed.stdout)["lessons"]]
    assert first == episodes[:3]
    proc = hook(db, failure("pytest -q", "ModuleNotFoundError: No module named 'shop'"))
    offered = proc.stdout.decode()
    assert proc.returncode == 0 and offered.count("pip install -e") == 1, offered


def test_secrets_in_an_error_never_reach_a_lesson(tmp_path: Path):
    """Lessons are built from stored chunks, which are redacted first."""
    src = (SHOP / f"{L1}.jsonl").read_text()
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    src = src.replace("No module named 'shop'", f"No module named 'shop' (token {secret})")
    folder = tmp_path / "t" / "-home-dev-shop-web"
    folder.mkdir(parents=True)
    (folder / f"{L1}.jsonl").write_text(src)
    db = tmp_path / "s.db"
    ingest(db, folder)
    text = json.dumps(rows(db))
    assert secret not in text and "ModuleNotFoundError" in text


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_says_whether_the_fix_commit_is_still_in_head(tmp_path: Path):
    repo = tmp_path / "repo"
    repo.mkdir()
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              env=env, check=True).stdout.strip()

    git("init", "-q")
    (repo / "a.py").write_text("x = 1\n")
    git("add", "a.py")
    git("commit", "-qm", "fix")
    fix = git("rev-parse", "HEAD")
    import time

    deadline = time.monotonic() + 5
    status = fix_status(str(repo), fix[:7], [str(repo / "a.py")], "", deadline)
    assert status is not None and (status.in_head, status.changed_since) == (True, 0)
    (repo / "a.py").write_text("x = 2\n")
    git("commit", "-qam", "later change")
    status = fix_status(str(repo), fix[:7], [str(repo / "a.py")], "", time.monotonic() + 5)
    assert status is not None and status.changed_since == 1
    git("checkout", "-q", "--orphan", "other")
    git("commit", "-qm", "unrelated", "--allow-empty")
    status = fix_status(str(repo), fix[:7], [], "", time.monotonic() + 5)
    assert status is not None and status.in_head is False
    assert fix_status(str(tmp_path / "nope"), fix, [], "", time.monotonic() + 5) is None


def test_after_compaction_the_briefing_adds_back_what_the_summary_dropped(tmp_path: Path):
    """The summary names cart.py and mypy; the edit of orders.py and the busy port it forgot."""
    session = "44444444-bbbb-4ccc-8ddd-000000000002"
    folder = tmp_path / "t" / "-home-dev-shop-web"
    folder.mkdir(parents=True)
    transcript = folder / f"{session}.jsonl"
    lines = (SHOP / f"{session}.jsonl").read_text().splitlines()
    last = json.loads(lines[-1])
    summary = dict(last, type="user", uuid="compact-1", parentUuid=None, isCompactSummary=True,
                   isVisibleInTranscriptOnly=True, timestamp="2026-04-14T10:30:00.000Z",
                   message={"role": "user", "content": "This session is being continued from a "
                            "previous conversation that ran out of context. Summary: the user "
                            "asked for a discount field; shop/cart.py now returns Decimal(0) "
                            "and mypy passes."})
    transcript.write_text("\n".join(lines + [json.dumps(summary)]) + "\n")
    db = tmp_path / "memory.db"
    ingest(db, folder)
    payload = {"session_id": session, "transcript_path": str(transcript),
               "cwd": "/home/dev/shop-web", "hook_event_name": "SessionStart",
               "source": "compact"}
    proc = subprocess.run([PYTHON, "-m", "causantic", "--db", str(db), "hook", "session-start"],
                          input=json.dumps(payload).encode(), capture_output=True, timeout=60)
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    block = context.split("Not in the compaction summary", 1)[1].split("\n\n", 1)[0]
    files = next(line for line in block.splitlines() if line.startswith("- Files edited:"))
    assert "shop/orders.py" in files and "cart.py" not in files
    assert "Open error: Bash `docker compose up -d db`" in block  # never fixed, not summarised
    assert "Last request: Now add the same discount to orders." in block
    assert "Failed earlier: Bash `mypy shop`" not in block  # the summary says mypy passes


@pytest.mark.anyio
async def test_mcp_search_returns_marked_lessons_and_is_recorded_in_the_ledger(lessons_db: Path):
    """The MCP answer equals the CLI's `text` (lessons included) and lands in the ledger."""
    from tests.test_mcp import call, cli_text, server

    async with server(lessons_db) as session:
        await session.initialize()
        is_error, text = await call(session, "search", query="ERESOLVE", mode="keyword")
    assert not is_error and "◇ lesson" in text
    assert text == cli_text(lessons_db, "search", "ERESOLVE", "--mode", "keyword",
                            json_text=True)
    ledger = rows(lessons_db, "SELECT event, chunk_ids, lesson_ids FROM injections")
    assert [r[0] for r in ledger] == ["mcp:search"]
    assert json.loads(ledger[0][1]) and json.loads(ledger[0][2])


@pytest.mark.parametrize(("config", "events"), [
    ("", ["PostToolUseFailure"]),
    ("[lessons]\nbash_output = true\n", ["PostToolUse", "PostToolUseFailure"]),
    ("[lessons]\nhook = false\nbash_output = true\n", []),
])
def test_install_registers_the_lesson_hook_as_configured(private_home: Path, config: str,
                                                         events: list[str]):
    """Failed calls by default; Bash output only when asked; nothing when switched off."""
    (private_home / ".causantic").mkdir(mode=0o700)
    (private_home / ".causantic" / "config.toml").write_text(config)
    subprocess.run([PYTHON, "-m", "causantic", "install"], capture_output=True, timeout=60,
                   check=True)
    hooks = json.loads((private_home / ".claude" / "settings.json").read_text())["hooks"]
    ours = sorted(event for event, groups in hooks.items() for g in groups
                  for h in g["hooks"] if h["command"].endswith("hook post-tool-use"))
    assert ours == events
    if "PostToolUse" in events:
        assert hooks["PostToolUse"][0]["matcher"] == "Bash"
