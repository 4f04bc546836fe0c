"""Hooks driven as Claude Code drives them: a fresh process, JSON on stdin, stdout checked.

Contract: ../shared/reference/claude-code-integration.md (exit 0 always; SessionStart and
UserPromptSubmit print `hookSpecificOutput` JSON with `additionalContext` under 10,000
characters; our injected text carries the `<causantic-memory>` marker).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from causantic.fsutil import file_lock
from causantic.markers import MEMORY_CLOSE, MEMORY_OPEN
from causantic.store import open_store

from .conftest import PYTHON, SAMPLES

SPOTTER_CWD = "/home/marco/projects/spotter"
SAMPLES_CWD = "/home/dev/acme-api"  # the bundled samples' project
SPOTTER_NEWEST = "4d5611e5-241a-462a-8d15-5122611a9569"
SESSION_1 = "11111111-aaaa-4bbb-8ccc-000000000001"  # samples: has a sub-agent file
WAIT_S = 120.0


def hook(event: str, stdin: bytes | str, *db_args: str) -> subprocess.CompletedProcess[bytes]:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run([PYTHON, "-m", "causantic", *db_args, "hook", event], input=data,
                          capture_output=True, timeout=60)


def context_of(proc: subprocess.CompletedProcess[bytes], event: str) -> str:
    """Validate stdout against the hook output contract; return additionalContext."""
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {"hookSpecificOutput"}
    specific = out["hookSpecificOutput"]
    assert specific["hookEventName"] == event
    context = specific["additionalContext"]
    assert context.startswith(MEMORY_OPEN) and context.rstrip().endswith(MEMORY_CLOSE)
    assert len(context) <= 9500
    return context


def status_of(home: Path) -> dict:
    path = home / ".causantic" / "hook-status.json"
    return json.loads(path.read_text()) if path.exists() else {}


def write_config(home: Path, text: str) -> None:
    folder = home / ".causantic"
    folder.mkdir(mode=0o700, exist_ok=True)
    (folder / "config.toml").write_text(text)


# -- session-start -------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["startup", "resume", "clear", "fork"])
def test_session_start_prints_a_marked_briefing_under_the_cap(shared_db: Path, source: str,
                                                              private_home: Path):
    payload = {"session_id": "00000000-0000-4000-8000-000000000000", "cwd": SPOTTER_CWD,
               "hook_event_name": "SessionStart", "source": source,
               "transcript_path": "/nowhere.jsonl", "model": "claude-opus"}
    context = context_of(hook("session-start", json.dumps(payload), "--db", str(shared_db)),
                         "SessionStart")
    assert len(context) <= 6000  # the default cap, marker included
    assert "spotter" in context and SPOTTER_NEWEST[:8] in context
    entry = status_of(private_home)["session-start"]
    assert entry["success"] and entry["project"] == "spotter"
    assert entry["details"]["source"] == source and entry["details"]["chars"] == len(context)


def test_session_start_skips_the_session_that_is_starting(shared_db: Path):
    """On resume/compact the starting session is the newest one: brief on the one before."""
    payload = {"session_id": SPOTTER_NEWEST, "cwd": SPOTTER_CWD, "source": "resume"}
    context = context_of(hook("session-start", json.dumps(payload), "--db", str(shared_db)),
                         "SessionStart")
    title = context.splitlines()[1]
    assert "spotter" in title and SPOTTER_NEWEST[:8] not in title, title


def test_session_start_in_a_worktree_resumes_that_worktree(shared_db: Path):
    """A new session in spotter-fum's worktree is briefed on spotter-fum's last session, not
    on the project's newest (another worktree's branch), which it names in one line."""
    payload = {"session_id": "00000000-0000-4000-8000-000000000000", "source": "startup",
               "cwd": "/home/USER/projects/spotter-worktrees/spotter-fum/lib"}
    context = context_of(hook("session-start", json.dumps(payload), "--db", str(shared_db)),
                         "SessionStart")
    title, newer = context.splitlines()[1:3]
    assert "spotter" in title and "8463c716" in title and SPOTTER_NEWEST[:8] not in title
    assert newer.startswith(f"Newer work in another checkout: session {SPOTTER_NEWEST[:8]} "
                            "in worktree spotter-dov")


def test_after_compaction_the_briefing_is_of_the_current_session(shared_db: Path,
                                                                  private_home: Path):
    """SessionStart with source compact: the session goes on, so it is briefed on itself;
    a session memory does not know gets nothing, never another session of the project."""
    older = "fa812bfe"  # a spotter session before the newest
    with open_store(shared_db, readonly=True) as store:
        (sid,) = store.conn.execute("SELECT id FROM sessions WHERE id LIKE ?",
                                    (older + "%",)).fetchone()
    payload = {"session_id": sid, "cwd": SPOTTER_CWD, "source": "compact",
               "hook_event_name": "SessionStart", "transcript_path": "/nowhere.jsonl"}
    context = context_of(hook("session-start", json.dumps(payload), "--db", str(shared_db)),
                         "SessionStart")
    briefing = context.split("\n\n", 1)[1]  # after what the compaction summary dropped
    assert older in briefing.splitlines()[0] and SPOTTER_NEWEST[:8] not in context
    unknown = dict(payload, session_id="00000000-0000-4000-8000-000000000000")
    proc = hook("session-start", json.dumps(unknown), "--db", str(shared_db))
    assert proc.returncode == 0 and proc.stdout == b""
    entry = status_of(private_home)["session-start"]
    assert entry["success"] and entry["details"]["briefing"] == "nothing for this project"


def test_after_compaction_the_current_transcript_is_ingested_first(claude_samples: Path,
                                                                  private_home: Path):
    """The pre-compact worker may not have finished: the hook ingests the transcript itself."""
    path = claude_samples / f"{SESSION_1}.jsonl"
    payload = {"session_id": SESSION_1, "cwd": "/home/dev/acme-api", "source": "compact",
               "hook_event_name": "SessionStart", "transcript_path": str(path)}
    context = context_of(hook("session-start", json.dumps(payload)), "SessionStart")
    assert SESSION_1[:8] in context


def test_after_compaction_a_busy_database_does_not_hold_the_briefing_past_the_timeout(
        claude_samples: Path, private_home: Path):
    """Another process writing for minutes (a first `causantic ingest` of a large history)
    must not keep the briefing past Claude Code's 10 s hook timeout, which would drop it:
    the hook briefs from what is stored, and a background worker ingests the rest later."""
    import apsw

    assert subprocess.run([PYTHON, "-m", "causantic", "ingest", str(claude_samples)],
                          capture_output=True, timeout=120).returncode == 0
    path = claude_samples / f"{SESSION_1}.jsonl"
    line = json.loads(path.read_text().splitlines()[-1])
    line.update(parentUuid=line["uuid"], uuid="11111111-main-0020",
                timestamp="2026-03-02T09:07:00.000Z")
    line["message"]["content"][0]["text"] = "Both retries now carry an idempotency key quokka."
    with path.open("a") as f:
        f.write(json.dumps(line) + "\n")
    payload = {"session_id": SESSION_1, "cwd": SAMPLES_CWD, "source": "compact",
               "hook_event_name": "SessionStart", "transcript_path": str(path)}
    db = private_home / ".causantic" / "memory.db"
    writer = apsw.Connection(str(db))
    writer.execute("BEGIN IMMEDIATE")  # holds the write lock for the whole hook run
    try:
        proc = subprocess.run([PYTHON, "-m", "causantic", "hook", "session-start"],
                              input=json.dumps(payload).encode(), capture_output=True,
                              timeout=10)  # Claude Code's timeout for this hook
        context = context_of(proc, "SessionStart")
        assert SESSION_1[:8] in context
        entry = status_of(private_home)["session-start"]
        assert entry["details"]["ingest"] == "database busy: left to a background worker"
    finally:
        writer.execute("ROLLBACK")
        writer.close()

    def ingested() -> bool:
        with open_store(db, readonly=True) as store:
            return store.conn.execute("SELECT count(*) FROM chunks WHERE text LIKE '%quokka%'"
                                      ).fetchone()[0] > 0

    wait_for(ingested, "the background worker to ingest the rest", timeout=WAIT_S)


def test_session_start_names_the_active_topics(shared_db_copy: Path):
    """With a topic map, the briefing says which topics the project's recent work is in."""
    with open_store(shared_db_copy) as store, store.conn:
        store.conn.execute("INSERT INTO topics(id, name, centroid) VALUES (7, 'liveview transcript"
                           " rendering', x'00')")
        store.conn.execute("INSERT INTO topic_members(chunk_rowid, topic_id, distance)"
                           " SELECT rowid, 7, 0.05 FROM chunks WHERE project = 'spotter'")
    context = context_of(hook("session-start", json.dumps({"cwd": SPOTTER_CWD}),
                              "--db", str(shared_db_copy)), "SessionStart")
    assert "Active topics: liveview transcript rendering (#7" in context


def test_session_start_respects_a_smaller_cap_and_the_text_format(shared_db: Path,
                                                                  private_home: Path):
    write_config(private_home, '[hooks]\nsession_start_chars = 1200\nsession_start_output = "text"\n')
    proc = hook("session-start", json.dumps({"cwd": SPOTTER_CWD}), "--db", str(shared_db))
    assert proc.returncode == 0
    text = proc.stdout.decode().rstrip("\n")
    assert text.startswith(MEMORY_OPEN) and text.endswith(MEMORY_CLOSE)
    assert len(text) <= 1200


def test_session_start_prints_nothing_without_memory_of_the_project(shared_db: Path,
                                                                    tmp_path: Path):
    """A new project (or no database yet) must not inject anything."""
    unknown = hook("session-start", json.dumps({"cwd": str(tmp_path / "brand-new")}),
                   "--db", str(shared_db))
    assert unknown.returncode == 0 and unknown.stdout == b""
    missing = hook("session-start", json.dumps({"cwd": SPOTTER_CWD}),
                   "--db", str(tmp_path / "none.db"))
    assert missing.returncode == 0 and missing.stdout == b""


def test_session_start_imports_no_mcp_numpy_or_onnxruntime(samples_db: Path):
    """The hook fast path pays for SQL only (DESIGN.md 2.7)."""
    code = (
        "import sys\n"
        "from causantic.cli import main\n"
        f"rc = main(['--db', {str(samples_db)!r}, 'hook', 'session-start'])\n"
        "sys.stdout.flush()\n"
        "heavy = [m for m in ('mcp', 'numpy', 'onnxruntime', 'pydantic', 'tokenizers', 'sqlite_vec')"
        " if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy), file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    proc = subprocess.run([PYTHON, "-c", code], input=json.dumps({"cwd": SAMPLES_CWD}).encode(),
                          capture_output=True, timeout=60)
    context_of(proc, "SessionStart")
    assert proc.stderr.decode().strip().splitlines()[-1] == "HEAVY="


def test_session_start_stays_off_dataclasses(samples_db: Path):
    """`dataclasses` pulls in inspect, ast and dis (~6 ms of a ~40 ms hook): the records the
    hook builds are `Record`s, and modules that define dataclasses are imported only where a
    briefing needs them (a reconstruct's session prefix once imported store.sessions here)."""
    code = (
        "import sys\n"
        "from causantic.cli import main\n"
        f"rc = main(['--db', {str(samples_db)!r}, 'hook', 'session-start'])\n"
        "sys.stdout.flush()\n"
        "print('DATACLASSES=' + str('dataclasses' in sys.modules), file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    proc = subprocess.run([PYTHON, "-c", code], input=json.dumps({"cwd": SAMPLES_CWD}).encode(),
                          capture_output=True, timeout=60)
    context_of(proc, "SessionStart")
    assert proc.stderr.decode().strip().splitlines()[-1] == "DATACLASSES=False"


def test_session_start_loads_the_stored_state_without_compiling_patterns(samples_db: Path):
    """Ingest stored every state, so the briefing loads it as is: the patterns that compute a
    state (compiling them costs the hook ~4 ms) stay uncompiled on the hook path."""
    code = (
        "import sys\n"
        "from causantic.cli import main\n"
        f"rc = main(['--db', {str(samples_db)!r}, 'hook', 'session-start'])\n"
        "sys.stdout.flush()\n"
        "from causantic import derive_state as s\n"
        "patterns = {k: v for k, v in vars(s).items() if k.endswith('_RE')}\n"
        "patterns.update((f'ACTIONS {k}', v) for k, v in s.ACTIONS)\n"
        "used = [k for k, v in patterns.items() if not isinstance(v, s._LazyPattern)"
        " or 'search' in vars(v)]\n"
        "print(f'PATTERNS={len(patterns)} COMPILED=' + ','.join(used), file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    proc = subprocess.run([PYTHON, "-c", code], input=json.dumps({"cwd": SAMPLES_CWD}).encode(),
                          capture_output=True, timeout=60)
    context_of(proc, "SessionStart")
    last = proc.stderr.decode().strip().splitlines()[-1]
    assert last.startswith("PATTERNS=1") and last.endswith(" COMPILED="), last


def test_a_broken_database_never_breaks_claude_code(tmp_path: Path, private_home: Path):
    """Garbage instead of a database: exit 0, print nothing, record the failure."""
    bad = tmp_path / "memory.db"
    bad.write_bytes(b"this is not a sqlite database" * 100)
    proc = hook("session-start", json.dumps({"cwd": SPOTTER_CWD, "session_id": "s1"}),
                "--db", str(bad))
    assert proc.returncode == 0 and proc.stdout == b""
    entry = status_of(private_home)["session-start"]
    assert entry["success"] is False and "damaged" in entry["error"]
    assert entry["session_id"] == "s1"
    log = (private_home / ".causantic" / "logs" / "hooks.log").read_text()
    assert "hook session-start failed" in log
    shown = subprocess.run([PYTHON, "-m", "causantic", "hook-status"], capture_output=True,
                           text=True, timeout=60)
    assert "session-start" in shown.stdout and "FAILED" in shown.stdout


STDIN_VARIANTS = {
    "empty": b"",
    "truncated": b'{"session_id": "x", "cwd": ',
    "array": b'[{"cwd": "/x"}]',
    "string": b'"session-start"',
    "null": b"null",
    "binary": bytes(range(256)) * 4,
    "huge": b'{"prompt": "' + b"a" * (9 << 20) + b'"}',
}


@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit", "pre-compact",
                                   "session-end", "subagent-stop", "pre-tool-use",
                                   "subagent-start"])
@pytest.mark.parametrize("variant", sorted(STDIN_VARIANTS))
def test_bad_stdin_is_harmless(event: str, variant: str, samples_db: Path):
    """Whatever arrives on stdin: exit 0, nothing or valid JSON on stdout, nothing on stderr."""
    proc = hook(event, STDIN_VARIANTS[variant], "--db", str(samples_db))
    assert proc.returncode == 0
    assert proc.stderr == b""
    if proc.stdout.strip():
        json.loads(proc.stdout)


# -- pre-compact / session-end -------------------------------------------------------------


def wait_for(predicate, what: str, timeout: float = WAIT_S):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


@pytest.mark.parametrize(("event", "extra"), [
    ("pre-compact", {"hook_event_name": "PreCompact", "trigger": "manual",
                     "custom_instructions": "keep the retry details"}),
    ("pre-compact", {"hook_event_name": "PreCompact", "trigger": "auto",
                     "custom_instructions": None}),
    ("session-end", {"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}),
])
def test_background_ingest_returns_at_once_and_ingests(event: str, extra: dict,
                                                       claude_samples: Path, private_home: Path):
    """The hook prints nothing and exits; a detached worker ingests the session, its
    sub-agent file included, and records what it did for hook-status."""
    path = claude_samples / f"{SESSION_1}.jsonl"
    payload = {"session_id": SESSION_1, "transcript_path": str(path), "cwd": "/home/dev/acme-api",
               "permission_mode": "default", **extra}
    proc = hook(event, json.dumps(payload))
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    entry = wait_for(lambda: status_of(private_home).get(event), f"the {event} worker")
    assert entry["success"], entry
    assert entry["project"] == "acme-api" and entry["details"]["chunks"] > 0
    db = private_home / ".causantic" / "memory.db"
    with open_store(db, readonly=True) as store:
        agents = {a for (a,) in store.conn.execute(
            "SELECT DISTINCT agent_id FROM chunks WHERE session_id = ?", (SESSION_1,))}
    assert agents == {"", "a1b2c3d"}  # the main stream and its sub-agent
    assert (db.stat().st_mode & 0o777) == 0o600
    log = private_home / ".causantic" / "logs" / "hooks.log"
    assert log.stat().st_mode & 0o777 == 0o600


def test_a_transcript_that_never_existed_is_a_skip(private_home: Path):
    """`claude mcp list` fires SessionEnd for a session that wrote no transcript: recorded as
    a skip, so neither hook-status nor doctor reports a failure."""
    proc = hook("session-end", json.dumps({"session_id": "s", "transcript_path": "/gone.jsonl"}))
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    entry = status_of(private_home)["session-end"]
    assert entry["success"] is True and entry.get("failures", 0) == 0
    assert entry["details"]["skipped"] == "no transcript at /gone.jsonl"
    doctor = subprocess.run([PYTHON, "-m", "causantic", "doctor"], capture_output=True, text=True,
                            timeout=60)
    assert "last runs succeeded (session-end)" in doctor.stdout
    assert "session-end run failed" not in doctor.stdout


def test_a_missing_transcript_path_is_recorded_not_raised(private_home: Path):
    proc = hook("session-end", json.dumps({"session_id": "s"}))
    assert proc.returncode == 0 and proc.stdout == b""
    entry = status_of(private_home)["session-end"]
    assert entry["success"] is False and "no transcript_path" in entry["error"]


def test_subagent_stop_ingests_the_sub_agent_transcript(tmp_path: Path, private_home: Path):
    """SubagentStop names the finished sub-agent's transcript: it is ingested with the parent
    (here in the older layout, beside the session file rather than under <session>/)."""
    folder = private_home / ".claude" / "projects" / "-home-dev-acme-api"
    folder.mkdir(parents=True)
    parent = folder / f"{SESSION_1}.jsonl"
    shutil.copy(SAMPLES / "-home-dev-acme-api" / parent.name, parent)
    agent = folder / "agent-a1b2c3d.jsonl"
    shutil.copy(SAMPLES / "-home-dev-acme-api" / SESSION_1 / "subagents" / agent.name, agent)
    payload = {"session_id": SESSION_1, "transcript_path": str(parent), "cwd": "/home/dev/acme-api",
               "hook_event_name": "SubagentStop", "stop_hook_active": False,
               "agent_id": "a1b2c3d", "agent_type": "general-purpose",
               "agent_transcript_path": str(agent), "last_assistant_message": "done"}
    proc = hook("subagent-stop", json.dumps(payload))
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    entry = wait_for(lambda: status_of(private_home).get("subagent-stop"), "the worker")
    assert entry["success"], entry
    with open_store(private_home / ".causantic" / "memory.db", readonly=True) as store:
        agents = {a for (a,) in store.conn.execute(
            "SELECT DISTINCT agent_id FROM chunks WHERE session_id = ?", (SESSION_1,))}
    assert agents == {"", "a1b2c3d"}


def test_workers_for_one_file_never_pile_up(claude_samples: Path, private_home: Path):
    """While one worker runs, one more may wait; any further worker exits at once. The
    waiting one runs afterwards, so nothing written meanwhile is missed."""
    import hashlib

    path = claude_samples / f"{SESSION_1}.jsonl"
    key = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:16]
    locks = private_home / ".causantic" / "locks"
    worker = [PYTHON, "-m", "causantic", "hook", "ingest-worker", "--event", "pre-compact",
              "--session", SESSION_1, "--", str(path)]
    with file_lock(locks / f"ingest-{key}.running", timeout=5) as held:  # "a worker is running"
        assert held
        queued = subprocess.Popen(worker, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

        def is_queued() -> bool:
            with file_lock(locks / f"ingest-{key}.queued", timeout=0) as free:
                return not free

        wait_for(is_queued, "the second worker to queue", timeout=60)
        third = subprocess.run(worker, capture_output=True, timeout=60)
        assert third.returncode == 0
        assert queued.poll() is None  # still waiting behind the "running" one
        assert not (private_home / ".causantic" / "memory.db").exists()
    assert queued.wait(timeout=WAIT_S) == 0, queued.stderr.read() if queued.stderr else ""
    queued.communicate()  # closes the stderr pipe
    entry = status_of(private_home)["pre-compact"]
    assert entry["success"] and entry["details"]["chunks"] > 0 and entry["runs"] == 1


# -- user-prompt-submit --------------------------------------------------------------------

STRONG_PROMPT = "mix dialyzer reports a call_without_opaque type mismatch in slice_builder again"


def test_prompt_recall_is_off_by_default(shared_db: Path, private_home: Path):
    proc = hook("user-prompt-submit",
                json.dumps({"prompt": STRONG_PROMPT, "cwd": SPOTTER_CWD}), "--db", str(shared_db))
    assert proc.returncode == 0 and proc.stdout == b""
    assert "user-prompt-submit" not in status_of(private_home)


def test_prompt_recall_injects_only_strong_matches_under_its_cap(shared_db: Path,
                                                                  private_home: Path):
    write_config(private_home, "[hooks]\nuser_prompt_submit = true\nprompt_chars = 900\n")
    payload = {"session_id": "s", "cwd": SPOTTER_CWD, "hook_event_name": "UserPromptSubmit",
               "prompt": STRONG_PROMPT}
    context = context_of(hook("user-prompt-submit", json.dumps(payload), "--db", str(shared_db)),
                         "UserPromptSubmit")
    assert len(context) <= 900 and 'kind="recall"' in context
    # the session that hit this dialyzer error, shown as its answer (what was done about it)
    assert "session 4d5611e5" in context and "dialyzer is clean" in context
    for weak in ("please refactor the kubernetes helm chart for grafana dashboards",
                 "fix the flaky test", "/compact"):
        proc = hook("user-prompt-submit", json.dumps({**payload, "prompt": weak}),
                    "--db", str(shared_db))
        assert proc.returncode == 0 and proc.stdout == b"", weak


def test_prompt_recall_leaves_out_the_current_session(shared_db: Path, private_home: Path):
    """What the current session already said is in Claude's context: never inject it."""
    write_config(private_home, "[hooks]\nuser_prompt_submit = true\n")
    with open_store(shared_db, readonly=True) as store:
        (session,) = store.conn.execute(
            "SELECT session_id FROM chunks WHERE text LIKE '%call_without_opaque%'"
            " GROUP BY session_id").fetchone()
    proc = hook("user-prompt-submit",
                json.dumps({"session_id": session, "cwd": SPOTTER_CWD, "prompt": STRONG_PROMPT}),
                "--db", str(shared_db))
    assert proc.returncode == 0 and proc.stdout == b""


def test_hook_runs_under_sh_with_cwd_fallback(shared_db: Path, tmp_path: Path):
    """Without `cwd` in the input the hook uses its working directory (Claude Code's)."""
    folder = tmp_path / "spotter"
    folder.mkdir()
    proc = subprocess.run([PYTHON, "-m", "causantic", "--db", str(shared_db), "hook",
                           "session-start"], input=b"{}", capture_output=True, cwd=folder,
                          timeout=60, env={**os.environ})
    assert "spotter" in context_of(proc, "SessionStart")


def test_injected_briefing_is_not_ingested_back(shared_db: Path, tmp_path: Path):
    """Claude Code persists injected context in the transcript; our own ingest must skip it,
    or every briefing would become memory and be briefed again."""
    context = context_of(hook("session-start", json.dumps({"cwd": SPOTTER_CWD}),
                              "--db", str(shared_db)), "SessionStart")
    session = "99999999-aaaa-4bbb-8ccc-000000000009"
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/newproj",
            "sessionId": session, "version": "2.1.29", "gitBranch": "main"}
    records = [
        {**base, "type": "user", "isMeta": True, "uuid": "u0", "parentUuid": None,
         "timestamp": "2026-03-09T10:00:00.000Z",
         "message": {"role": "user", "content":
                     f"<system-reminder>\nSessionStart hook additional context: {context}\n"
                     "</system-reminder>"}},
        {**base, "type": "user", "uuid": "u1", "parentUuid": "u0",
         "timestamp": "2026-03-09T10:00:05.000Z",
         "message": {"role": "user", "content": "Rename the config loader to settings."}},
        {**base, "type": "assistant", "uuid": "a1", "parentUuid": "u1",
         "timestamp": "2026-03-09T10:00:09.000Z",
         "message": {"id": "m1", "role": "assistant",
                     "content": [{"type": "text", "text": "Renamed it."}]}},
    ]
    path = tmp_path / "projects" / "-home-dev-newproj" / f"{session}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    db = tmp_path / "round.db"
    ingest = subprocess.run([PYTHON, "-m", "causantic", "--db", str(db), "ingest", "--no-embed",
                             str(path)], capture_output=True, text=True, timeout=120)
    assert ingest.returncode == 0, ingest.stderr
    with open_store(db, readonly=True) as store:
        texts = [t for (t,) in store.conn.execute("SELECT text FROM chunks")]
    assert texts and any("Rename the config loader" in t for t in texts)
    briefing_line = context.splitlines()[1]
    assert not any(briefing_line in t or MEMORY_OPEN in t for t in texts)


def test_status_file_survives_concurrent_writers_and_readers(tmp_path: Path):
    """Hooks rewrite the status file in place under its lock; readers take the lock too, so
    nobody ever reads half a file and no run is lost."""
    import threading

    from causantic.claude import status

    home = tmp_path / "home"
    status.record(home, "session-start", success=True, duration_ms=1.0)
    seen_empty: list[bool] = []

    def write() -> None:
        for _ in range(10):
            status.record(home, "session-start", success=True, duration_ms=2.0,
                          details={"padding": "x" * 500})

    def read() -> None:
        for _ in range(50):
            seen_empty.append(status.read_status(home) == {})

    threads = [threading.Thread(target=write) for _ in range(4)]
    threads += [threading.Thread(target=read) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    entry = status.read_status(home)["session-start"]
    assert entry["runs"] == 41
    assert not any(seen_empty)
    assert (os.stat(status.status_path(home)).st_mode & 0o777) == 0o600
    assert status.read_status(tmp_path / "never-used") == {}
    assert not (tmp_path / "never-used").exists()
