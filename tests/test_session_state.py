"""Session state, computed at ingest from stored chunks without any LLM, and kept honest."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import apsw
import pytest

from causantic.derive_state import (
    STATE_VERSION,
    compute_state,
    load_state,
    refresh,
    same_command,
)
from causantic.store import open_store

from .conftest import SAMPLES
from .data.make_samples import Writer
from .helpers import ingest

S1 = "11111111-aaaa-4bbb-8ccc-000000000001"
S2 = "22222222-aaaa-4bbb-8ccc-000000000002"
S3 = "33333333-aaaa-4bbb-8ccc-000000000003"


def _ingest(db: Path, *paths: Path) -> None:
    ingest(db, *paths, home=db.parent)


def _stored(db: Path, session_id: str) -> dict | None:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        row = conn.execute(
            "SELECT state FROM session_state WHERE session_id = ?", (session_id,)
        ).fetchone()
    finally:
        conn.close()
    return {k: v for k, v in json.loads(row[0]).items() if k != "version"} if row else None


def test_ingest_stores_the_state_of_every_session(samples_db: Path):
    with open_store(samples_db, readonly=True) as store:
        n = store.conn.execute("SELECT count(*) FROM session_state").fetchone()[0]
        for sid in (S1, S2, S3):
            assert _stored(samples_db, sid) == compute_state(store.conn, sid).as_dict()
    assert n == 3


def test_session_one_state_names_the_fix_its_error_and_the_open_todos(samples_db: Path):
    """The flaky test failed, was fixed by an edit, and the rerun passed: resolved."""
    with open_store(samples_db, readonly=True) as store:
        state = load_state(store.conn, S1)
    assert state is not None
    assert state.project == "acme-api" and state.branch == "main"
    assert state.title == "Fix flaky retry backoff test"
    assert state.edited == ["/home/dev/acme-api/internal/retry/backoff.go"]
    assert "/home/dev/acme-api/internal/retry/backoff.go" in state.files
    assert state.commands == ["go test ./internal/retry -run TestRetryBackoff -count=50",
                              "go test ./internal/retry -count=200"]
    [error] = state.errors
    assert error.tool == "Bash" and error.message == "--- FAIL: TestRetryBackoff (0.21s)"
    assert error.subject == "go test ./internal/retry -run TestRetryBackoff -count=50"
    assert error.resolved and "go test ./internal/retry -count=200" in error.how
    assert [t["content"] for t in state.open_todos] == [
        "Add idempotency keys to CreateInvoice", "Stop retrying UpdateCustomer on timeout"]
    assert state.last_request.startswith("Great. Now audit the HTTP client")
    assert state.outcome.startswith("Two risky retries found")
    assert state.agents == ["a1b2c3d"]
    assert state.start_time < state.end_time


def test_session_two_state_sees_the_commit(samples_db: Path):
    with open_store(samples_db, readonly=True) as store:
        state = load_state(store.conn, S2)
    assert state.commits == ["4f1c2ab Add idempotency key to CreateInvoice"]
    assert state.actions == ["committed"] and state.last_turn_actions == ["committed"]
    assert "Idempotency-Key" in state.outcome
    assert state.last_request.startswith("Add the idempotency key header")
    assert state.errors == [] and state.todos == []
    assert "sk_live" not in json.dumps(state.as_dict())  # states hold redacted text only


def test_session_three_last_request_is_the_topic_shift(samples_db: Path):
    with open_store(samples_db, readonly=True) as store:
        state = load_state(store.conn, S3)
    assert state.last_request == (
        "Moving on: unrelated question, which Go version does the Dockerfile use?")
    assert "golang:1.23-alpine" in state.outcome
    assert state.edited == ["/home/dev/acme-api/cmd/server/main.go"]


def _heuristics_transcript(root: Path) -> str:
    sid = "44444444-aaaa-4bbb-8ccc-000000000004"
    cwd = "/home/dev/acme-api"
    w = Writer(sid, datetime(2026, 3, 9, 9, 0, tzinfo=UTC))
    w.user("Build it and fix whatever breaks.")
    w.tool("Bash", {"command": "make build"}, "Exit code 2\nmain.go:12:3: undefined: foo\nmake: *** [build] Error 1",
           is_error=True)
    w.tool("Edit", {"file_path": f"{cwd}/main.go", "old_string": "foo()", "new_string": "bar()"},
           "The file main.go has been updated successfully.")
    w.tool("Bash", {"command": "make build"}, "ok")
    w.tool("Bash", {"command": "npm test -- --grep auth"},
           "FAIL src/auth.ts:40 expected 200, got 401", is_error=True)
    w.tool("Edit", {"file_path": f"{cwd}/src/auth.ts", "old_string": "a", "new_string": "b"},
           "The file src/auth.ts has been updated successfully.")
    w.tool("Bash", {"command": "curl -sf http://localhost:8080/health"},
           "curl: (7) Failed to connect to localhost port 8080", is_error=True)
    w.say("Fixed: the server now starts before the health check runs.")
    w.tool("Edit", {"file_path": f"{cwd}/README.md", "old_string": "x", "new_string": "y"},
           "The user doesn't want to proceed with this tool use. The tool use was rejected.",
           is_error=True)
    w.tool("TaskCreate", {"subject": "Write the migration", "description": "Add the column"},
           "Task #1 created successfully: Write the migration")
    w.tool("TaskCreate", {"subject": "Backfill old rows", "description": "Backfill"},
           "Task #2 created successfully: Backfill old rows")
    w.tool("TaskUpdate", {"taskId": "1", "status": "completed"}, "Updated task #1 status")
    w.user("Deploy to staging.")
    w.tool("Bash", {"command": "terraform apply -auto-approve"},
           "Error: permission denied for role deployer", is_error=True)
    w.say("Staging deploy is blocked: the deployer role lacks permission.")
    w.user("Then just push and open the PR.")
    w.tool("Bash", {"command": "git push -u origin feature/migration"}, "branch set up to track")
    w.tool("Bash", {"command": "gh pr create --fill"}, "https://github.com/acme/api/pull/42")
    w.say("Pushed and opened https://github.com/acme/api/pull/42.")
    w.write(root / "-home-dev-acme-api" / f"{sid}.jsonl")
    return sid


def test_error_resolution_heuristics_and_task_todos(tmp_path: Path):
    """Rerun, edit of the file named in the error, the assistant saying so; else unresolved."""
    sid = _heuristics_transcript(tmp_path / "projects")
    db = tmp_path / "m.db"
    _ingest(db, tmp_path / "projects")
    with open_store(db, readonly=True) as store:
        state = load_state(store.conn, sid)
    by_subject = {e.subject: e for e in state.errors}
    assert set(by_subject) == {"make build", "npm test -- --grep auth",
                               "curl -sf http://localhost:8080/health",
                               "terraform apply -auto-approve"}  # the rejected edit is no error
    assert by_subject["make build"].message == "main.go:12:3: undefined: foo"
    assert by_subject["make build"].resolved and "`make build` later succeeded" in by_subject["make build"].how
    assert by_subject["npm test -- --grep auth"].resolved
    assert "auth.ts was edited afterwards" in by_subject["npm test -- --grep auth"].how
    assert by_subject["curl -sf http://localhost:8080/health"].resolved
    assert "the assistant said" in by_subject["curl -sf http://localhost:8080/health"].how
    terraform = by_subject["terraform apply -auto-approve"]
    assert not terraform.resolved and terraform.message == "Error: permission denied for role deployer"
    assert [e.subject for e in state.unresolved] == ["terraform apply -auto-approve"]
    assert state.todos == [{"content": "Write the migration", "status": "completed"},
                           {"content": "Backfill old rows", "status": "pending"}]
    assert [t["content"] for t in state.open_todos] == ["Backfill old rows"]
    assert state.actions == ["pushed", "opened a PR"] == state.last_turn_actions
    assert state.pull_requests == ["https://github.com/acme/api/pull/42"]
    assert state.last_request == "Then just push and open the PR."
    assert state.outcome == "Pushed and opened https://github.com/acme/api/pull/42."


def _silent_calls_transcript(root: Path) -> str:
    """Commands with no output (stored with no result at all) before and after failures."""
    sid = "55555555-aaaa-4bbb-8ccc-000000000005"
    w = Writer(sid, datetime(2026, 3, 10, 9, 0, tzinfo=UTC))
    w.user("Commit and push it.")
    w.tool("Bash", {"command": "git add -A"}, "")
    w.say("Staged; committing.")
    w.tool("Bash", {"command": "git commit -m 'Add retries'"},
           "Pre-commit validation failed:\n\n[FORMAT] Code is not formatted.", is_error=True)
    w.say("The formatter check failed; formatting.")
    w.tool("Bash", {"command": "mix format --check-formatted"},
           "** (Mix) mix format failed due to --check-formatted.", is_error=True)
    w.tool("Bash", {"command": "mix format"}, "")
    w.tool("Bash", {"command": "mix format --check-formatted"}, "")
    w.tool("Bash", {"command": "git push"},
           "fatal: The current branch main has no upstream branch.", is_error=True)
    w.tool("Bash", {"command": "git push --set-upstream origin main"},
           "branch 'main' set up to track 'origin/main'.")
    w.write(root / "-home-dev-acme-api" / f"{sid}.jsonl")
    return sid


def test_an_error_is_told_of_its_own_command_after_calls_with_no_output(tmp_path: Path):
    """A call whose output was empty has no stored result. Pairing results with calls first
    in, first out then told each later error of the command before its own (a commit's
    pre-commit failure of `git add -A`); a call that got no result before the next round
    of calls succeeded silently, and counts as such (a later silent check resolves)."""
    from causantic.lessons.episodes import compute_lessons

    sid = _silent_calls_transcript(tmp_path / "projects")
    db = tmp_path / "m.db"
    _ingest(db, tmp_path / "projects")
    with open_store(db, readonly=True) as store:
        stored = "\n".join(t for (t,) in store.conn.execute("SELECT text FROM chunks"))
        store_meta = store.conn.execute("SELECT meta FROM chunks").fetchall()
        state = compute_state(store.conn, sid)
        lessons = compute_lessons(store.conn, sid)
    assert stored.count("[Tool:Bash]") == 7 and stored.count("[Result:Bash") == 4
    assert '"silent"' in "".join(m for (m,) in store_meta)
    assert state is not None
    by_subject = {e.subject: e for e in state.errors}
    assert set(by_subject) == {"git commit -m 'Add retries'", "mix format --check-formatted",
                               "git push"}
    assert by_subject["git commit -m 'Add retries'"].message.startswith("Pre-commit validation")
    assert "no upstream branch" in by_subject["git push"].message
    assert "`git push --set-upstream origin main` later succeeded" in by_subject["git push"].how
    check = by_subject["mix format --check-formatted"]  # `mix format`, silent, fixed it
    assert check.resolved and check.how == "`mix format` later succeeded"
    assert {lesson.subject: lesson.resolved for lesson in lessons} == {
        "git commit -m 'Add retries'": 0, "mix format --check-formatted": 1, "git push": 1}
    # Chunks stored before ingest named silent calls: a call still waiting when a new round
    # of calls begins had no output (here `git add -A`, the assistant spoke in between).
    with apsw.Connection(str(db)) as conn:
        conn.execute("UPDATE chunks SET meta = json_remove(meta, '$.silent')")
        old = compute_state(conn, sid)
    assert old is not None
    assert "git add -A" not in {e.subject for e in old.errors}
    assert any(e.subject == "git commit -m 'Add retries'" and "Pre-commit" in e.message
               for e in old.errors)


@pytest.mark.parametrize("failed,later,same", [
    ("go test ./internal/retry -run TestX -count=50", "go test ./internal/retry -count=200", True),
    ("mise run fmt && mise run lint 2>&1", "mise run lint 2>&1", True),
    ("cd api && npm test", "npm test", True),
    ("FOO=1 pytest tests/test_a.py", "pytest tests/test_a.py -x", True),
    ("git add -A && git commit -m \"$(cat <<'EOF'", "git add a.ex && git commit -m \"$(cat <<'EOF'",
     True),  # chained: the failed command's last step, re-run as one of the later's steps
    ("cd api && npm ci && npm test", "npm test -- --ci", True),
    ("git add -A && git commit", "git add -A", False),
    ("go test ./a", "go test ./b", False),
    ("go test ./a", "go build ./a", False),
    ("npm run lint", "npm run build", False),
])
def test_same_command(failed: str, later: str, same: bool):
    assert same_command(failed, later) is same


def test_deleting_chunks_drops_the_state_and_readers_never_see_a_stale_one(tmp_path: Path):
    """forget deletes chunks: the trigger removes the state; a partial delete is recomputed."""
    db = tmp_path / "m.db"
    _ingest(db, SAMPLES)
    with open_store(db) as store:
        conn = store.conn
        with conn:
            conn.execute("DELETE FROM chunks WHERE session_id = ? AND part = 0 AND turn = 1", (S1,))
        assert _stored(db, S1) is None and _stored(db, S2) is not None
        state = load_state(conn, S1)  # computed from what is left
        assert state.chunks == 2 and "Great. Now audit" not in state.last_request
        with conn:
            refresh(conn, [S1])
        assert _stored(db, S1)["chunks"] == 2
        with conn:
            conn.execute("DELETE FROM chunks WHERE session_id = ?", (S1,))
        assert load_state(conn, S1) is None and _stored(db, S1) is None


def test_stale_row_is_recomputed_at_read_time(tmp_path: Path):
    db = tmp_path / "m.db"
    _ingest(db, SAMPLES)
    with open_store(db) as store:
        conn = store.conn
        with conn:
            conn.execute("UPDATE session_state SET chunks = 99, state = '{\"bogus\": 1}'"
                         " WHERE session_id = ?", (S2,))
        assert load_state(conn, S2).commits == ["4f1c2ab Add idempotency key to CreateInvoice"]


def test_a_state_stored_by_an_older_version_is_recomputed_at_read_time(tmp_path: Path):
    """States computed before results were paired with their own calls named the wrong
    commands; they are computed again when read, not trusted."""
    db = tmp_path / "m.db"
    _ingest(db, SAMPLES)
    with open_store(db) as store:
        conn = store.conn
        stored = json.loads(conn.execute("SELECT state FROM session_state WHERE session_id = ?",
                                         (S2,)).fetchone()[0])
        assert stored["version"] == STATE_VERSION
        old = {k: v for k, v in stored.items() if k != "version"} | {"commits": ["0000000 old"]}
        with conn:
            conn.execute("UPDATE session_state SET state = ? WHERE session_id = ?",
                         (json.dumps(old), S2))
        assert load_state(conn, S2).commits == ["4f1c2ab Add idempotency key to CreateInvoice"]


def test_reingest_and_incremental_append_keep_the_state_current(tmp_path: Path):
    """A session file that grows: the next ingest refreshes its state (last request moves)."""
    projects = tmp_path / "projects"
    sid = _heuristics_transcript(projects)
    path = projects / "-home-dev-acme-api" / f"{sid}.jsonl"
    full = path.read_text().splitlines(keepends=True)
    path.write_text("".join(full[:-6]))
    db = tmp_path / "m.db"
    _ingest(db, projects)
    with open_store(db, readonly=True) as store:
        before = load_state(store.conn, sid)
    assert before.last_request == "Deploy to staging."
    path.write_text("".join(full))
    _ingest(db, projects)
    stored = _stored(db, sid)
    assert stored["last_request"] == "Then just push and open the PR."
    assert stored["pull_requests"] == ["https://github.com/acme/api/pull/42"]


def test_every_shared_session_has_a_state_with_resolved_errors_somewhere(shared_db: Path):
    with open_store(shared_db, readonly=True) as store:
        conn = store.conn
        sessions = [r[0] for r in conn.execute("SELECT DISTINCT session_id FROM chunks")]
        stored = {r[0] for r in conn.execute("SELECT session_id FROM session_state")}
        states = [load_state(conn, s) for s in sessions]
    assert stored == set(sessions)
    errors = [e for s in states for e in s.errors]
    assert any(e.resolved and "later succeeded" in e.how for e in errors)
    assert any(not e.resolved for e in errors)
    assert all(len(e.message) <= 200 for e in errors)
    assert any(s.commits for s in states) and any(s.todos for s in states)
    assert all(s.last_request for s in states if s.chunks > 1)


def test_an_error_told_in_escaped_lines_is_summed_up_by_its_own_line(shared_db: Path):
    """spotter's pre-commit hook printed its report JSON-quoted (literal \\n): the message is
    the heading and the check that failed, not the escaped report, so the two failures stay
    two errors."""
    with open_store(shared_db, readonly=True) as store:
        state = load_state(store.conn, store.conn.execute(
            "SELECT id FROM sessions WHERE id LIKE '4d5611e5%'").fetchone()[0])
    messages = {e.message for e in state.errors}
    assert {"Pre-commit validation failed: [CREDO]",
            "Pre-commit validation failed: [DIALYZER]"} <= messages
    assert not any("\\n" in m for m in messages)


def test_a_state_round_trips_through_its_stored_form_and_is_read_only(samples_db: Path):
    import copy
    import pickle

    with open_store(samples_db, readonly=True) as store:
        state = compute_state(store.conn, S1)
    assert state is not None and state.errors
    again = type(state).from_dict(json.loads(json.dumps(state.as_dict())))
    assert again == state and repr(again) == repr(state)
    assert copy.deepcopy(state) == state == pickle.loads(pickle.dumps(state))
    assert state != type(state).from_dict({**state.as_dict(), "chunks": state.chunks + 1})
    with pytest.raises(AttributeError):
        state.chunks = 0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        state.errors[0].resolved = False  # type: ignore[misc]
