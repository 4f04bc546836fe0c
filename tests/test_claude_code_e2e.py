"""causantic inside the real Claude Code client, offline: hooks, MCP server, ingest, briefings.

Each Claude Code version in `claude_code_versions.txt` (installed from npm by scripts/setup
under ~/.cache/causantic-e2e/<version>; `CAUSANTIC_E2E_CACHE` moves it) runs headless sessions
against a scripted fake Anthropic API on 127.0.0.1 (tests/claude_fake_api.py), with a private
HOME where causantic is installed as a user installs it: history ingested, `causantic install`
(hooks in settings.json, the MCP server in ~/.claude.json), prompt recall switched on. No
network but loopback, no account, no key. The checks follow shared/e2e/claude-code (check.py).

One scenario per version (module fixture), then one test per behaviour:

- `claude mcp list` (fires a SessionEnd for a transcript that never exists);
- A: spotter repo, "search memory for …": briefing, prompt recall, MCP search round trip;
- B1: a new repo, "search memory for …"; its SessionEnd ingests it;
- B2: the same repo again, delegating to a sub-agent: briefed on B1; the sub-agent starts
  with the recall for its task (PreToolUse on Agent, SubagentStart); SubagentStop ingests;
- F: `/compact` on B1 (resumed): PreCompact ingests; SessionStart:compact briefs B1 itself,
  not B2 (the newest other session of the repo);
- K: B1 resumed with `--fork-session`: SessionStart (source "fork" from 2.1.214) briefs it;
- afterwards: no causantic hook error in any debug log, no failed hook run, doctor content.

Runs the archive (dist/causantic.pyz, built by scripts/test) when it is newer than the
sources, else `python -m causantic`. Without Claude Code installed the tests fail in CI
(CI set) and are skipped elsewhere.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .conftest import REPO, SHARED_TRANSCRIPTS, need_shared

pytestmark = pytest.mark.e2e

VERSIONS = Path(__file__).with_name("claude_code_versions.txt").read_text().split()
E2E_CACHE = Path(os.environ.get("CAUSANTIC_E2E_CACHE")
                 or Path(os.path.expanduser("~")) / ".cache" / "causantic-e2e")
FAKE_API = Path(__file__).with_name("claude_fake_api.py")
CLAUDE_TIMEOUT_S = 120
WAIT_S = 60.0
BRIEFING = '<causantic-memory kind="briefing">'
RECALL = '<causantic-memory kind="recall">'
HISTORY = ("marot__spotter/short.jsonl", "marot__spotter/tool_heavy.jsonl",
           "theogbrand__napoli-matcha/04/22b428133d/0/full.jsonl")
Q_A, EXPECT_A = "xterm.js tmux scrolling", "d6e0bada"
Q_B, EXPECT_B = "mix phx.server doesnt start", "55604662"
P_B1 = f"please search memory for {Q_B}"
#: B2's task for its sub-agent: B1 did this, so the sub-agent's start recalls B1 (the words
#: must carry prompt recall's 8 nats of information in a store of a few dozen chunks).
TASK_B2 = f"check the memory search about {Q_B}"
ALLOWED = ["--allowedTools", "mcp__causantic__search", "WaitForMcpServers", "ToolSearch",
           "Agent", "Task"]


def claude_binary(version: str) -> Path:
    binary = E2E_CACHE / version / "node_modules" / ".bin" / "claude"
    if not binary.exists():
        why = (f"Claude Code {version} is not installed at {binary}; run scripts/setup "
               "(needs node and npm)")
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return binary


def causantic_command() -> list[str]:
    archive = REPO / "dist" / "causantic.pyz"
    if archive.exists():
        newest = max(p.stat().st_mtime for p in (REPO / "causantic").rglob("*.py"))
        if archive.stat().st_mtime >= newest:
            return [sys.executable, "-S", str(archive)]
    return [sys.executable, "-m", "causantic"]


# -- the scenario ----------------------------------------------------------------------------


@dataclass
class World:
    version: str
    root: Path
    env: dict[str, str]
    causantic: list[str]
    runs: dict[str, list[dict]] = field(default_factory=dict)  # stream-json events by run
    sessions: dict[str, str] = field(default_factory=dict)  # session id by run
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([*self.causantic, *args], env=self.env, capture_output=True,
                              text=True, timeout=300, cwd=self.root)
        if check:
            assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        return proc

    def cli_json(self, *args: str) -> dict:
        return json.loads(self.cli(*args, "--json").stdout)

    def claude(self, name: str, cwd: Path, *args: str) -> list[dict]:
        started = time.monotonic()
        out = self.logs / f"{name}.jsonl"
        with open(out, "wb") as stdout, open(self.logs / f"{name}.err", "wb") as stderr:
            proc = subprocess.run(
                [str(claude_binary(self.version)), *args, "--output-format", "stream-json",
                 "--verbose", "--include-hook-events", "--debug-file",
                 str(self.logs / f"{name}.debug")],
                cwd=cwd, env=self.env, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                timeout=CLAUDE_TIMEOUT_S)
        self.seconds[name] = round(time.monotonic() - started, 1)
        assert proc.returncode == 0, (name, (self.logs / f"{name}.err").read_text()[-600:])
        events = load_jsonl(out)
        self.runs[name] = events
        self.sessions[name] = next((e.get("session_id", "") for e in reversed(events)
                                    if e.get("type") == "result"), "")
        return events

    def requests(self, run: str) -> list[dict]:
        """The fake API's log of this run's agent-loop requests (those offering tools)."""
        sid = self.sessions[run]
        rows = [r for r in load_jsonl(self.logs / "api.jsonl")
                if r.get("path", "").split("?")[0] == "/v1/messages"
                and isinstance(r.get("body"), dict)
                and (r.get("headers") or {}).get("x-claude-code-session-id") == sid]
        return [r for r in rows if len(r["body"].get("tools") or []) >= 5]

    def hook_status(self, event: str) -> dict:
        return (self.cli_json("hook-status").get("hooks") or {}).get(event) or {}

    def wait(self, what: str, predicate):  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + WAIT_S
        while True:
            value = predicate()
            if value or time.monotonic() > deadline:
                assert value, f"{self.version}: timed out after {WAIT_S:.0f} s waiting for {what}"
                return value
            time.sleep(0.5)


def load_jsonl(path: Path) -> list[dict]:
    out = []
    if path.exists():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
    return out


def copy_session(src: Path, projects: Path) -> None:
    """Put a transcript where Claude Code keeps it: <encoded cwd>/<sessionId>.jsonl."""
    cwd = sid = None
    for line in src.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        cwd, sid = cwd or record.get("cwd"), sid or record.get("sessionId")
        if cwd and sid:
            break
    folder = projects / re.sub(r"[^A-Za-z0-9]", "-", cwd)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, folder / f"{sid}.jsonl")


def private_env(root: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CLAUDE", "CAUSANTIC_", "ANTHROPIC_", "MCP_"))}
    env.update(HOME=str(root / "home"), CAUSANTIC_CACHE_DIR=str(cache),
               DISABLE_AUTOUPDATER="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
               DISABLE_TELEMETRY="1", ANTHROPIC_API_KEY="sk-ant-fake",
               NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost",
               CLAUDE_CODE_DEBUG_LOG_LEVEL="verbose")
    if "PYTHONPATH" in os.environ:  # a development run of `python -m causantic`
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def _fake_api_and_history(w: World, root: Path) -> subprocess.Popen[bytes]:
    """Start the fake Anthropic API for `w` (its address in w.env) and ingest the history
    sessions into w's Claude Code projects folder; the caller stops the API."""
    fake = subprocess.Popen([sys.executable, str(FAKE_API), "--log", str(w.logs / "api.jsonl"),
                             "--port-file", str(w.logs / "port"), "--lifetime", "900"],
                            stderr=subprocess.DEVNULL)
    try:
        w.wait("the fake API", lambda: (w.logs / "port").exists())
        w.env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{(w.logs / 'port').read_text()}"
        for name in HISTORY:
            copy_session(SHARED_TRANSCRIPTS / name, root / "home" / ".claude" / "projects")
        w.cli("ingest")
    except BaseException:
        fake.kill()
        raise
    return fake


@pytest.fixture(scope="module", params=VERSIONS)
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    version = request.param
    claude_binary(version)
    need_shared(SHARED_TRANSCRIPTS)
    root = tmp_path_factory.mktemp(f"claude-{version}")
    cache = tmp_path_factory.getbasetemp() / "causantic-pyz-cache"
    cache.mkdir(mode=0o700, exist_ok=True)
    w = World(version, root, private_env(root, cache), causantic_command())
    for sub in ("home/.claude/projects", "home/.causantic", "logs", "work"):
        (root / sub).mkdir(parents=True, mode=0o700)
    fake = _fake_api_and_history(w, root)
    try:
        (root / "home" / ".causantic" / "config.toml").write_text(
            "[hooks]\nuser_prompt_submit = true\nsubagent_recall = true\n")
        (root / "home" / ".claude" / "settings.json").write_text('{"cleanupPeriodDays": 90}')
        w.cli("install")
        spotter, demo = root / "work" / "spotter", root / "work" / "demo"
        for repo in (spotter, demo):
            subprocess.run(["git", "init", "-q", str(repo)], check=True)

        mcp_list = subprocess.run([str(claude_binary(version)), "mcp", "list"], cwd=root / "work",
                                  env=w.env, capture_output=True, text=True, timeout=120)
        (w.logs / "mcp-list.txt").write_text(mcp_list.stdout + mcp_list.stderr)
        w.claude("A", spotter, "-p", f"please search memory for {Q_A}", *ALLOWED)
        w.claude("B1", demo, "-p", P_B1, *ALLOWED)
        b1 = w.sessions["B1"]
        w.wait("B1 in memory", lambda: b1 in w.cli("list-sessions", "--project", "demo",
                                                  check=False).stdout)
        w.claude("B2", demo, "-p", f"please delegate to a sub-agent: {TASK_B2}", *ALLOWED)
        w.claude("F", demo, "-p", "/compact", "--resume", b1)
        w.claude("K", demo, "-p", "hello again", "--resume", b1, "--fork-session")
        w.wait("the last session-end worker", lambda: w.hook_status("session-end").get(
            "session_id") == w.sessions["K"])
        yield w
    finally:
        fake.terminate()
        fake.wait(10)
        print(f"\nClaude Code {version}: seconds per run {w.seconds}; logs in {w.logs}")


# -- checks ----------------------------------------------------------------------------------


def text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for b in content if isinstance(content, list) else []:
        if isinstance(b, dict) and b.get("type") == "text":
            parts.append(b.get("text", ""))
        elif isinstance(b, dict) and b.get("type") == "tool_result":
            parts.append(text_of(b.get("content")))
    return "\n".join(parts)


def marked(body: dict, marker: str) -> str | None:
    """The first `<causantic-memory kind=…>` block of this kind in a request's messages."""
    for m in body.get("messages") or []:
        text = text_of(m.get("content"))
        i = text.find(marker)
        if i >= 0:
            j = text.find("</causantic-memory>", i)
            return text[i:j if j >= 0 else None]
    return None


def hook_responses(events: list[dict], name_prefix: str) -> list[dict]:
    return [e for e in events if e.get("subtype") == "hook_response"
            and str(e.get("hook_name", "")).startswith(name_prefix)]


def hook_context(response: dict) -> str:
    """The additionalContext a hook printed, from its stream-json hook_response event."""
    for key in ("stdout", "output"):
        try:
            out = json.loads(response.get(key) or "")
        except ValueError:
            continue
        if isinstance(out, dict):
            return (out.get("hookSpecificOutput") or {}).get("additionalContext", "")
    return ""


def test_session_start_briefing_reaches_the_first_request(world: World):
    responses = hook_responses(world.runs["A"], "SessionStart")
    assert responses and all(r.get("exit_code") == 0 for r in responses), responses
    first = world.requests("A")[0]["body"]
    briefing = marked(first, BRIEFING)
    assert briefing is not None, "no briefing in the model's first request"
    assert "# Briefing: spotter" in briefing


def test_prompt_hook_recalls_history_into_the_request(world: World):
    responses = hook_responses(world.runs["A"], "UserPromptSubmit")
    assert responses and all(r.get("exit_code") == 0 for r in responses), responses
    recall = marked(world.requests("A")[0]["body"], RECALL)
    assert recall is not None and EXPECT_A in recall, recall


@pytest.mark.parametrize(("run", "expect"), [("A", EXPECT_A), ("B1", EXPECT_B)])
def test_mcp_tools_are_ready_for_the_first_request_and_answer(world: World, run: str,
                                                              expect: str):
    """Present in the first model request of a fresh headless session, without alwaysLoad:
    in `tools` (2.1.1xx), or listed as a deferred tool to load with ToolSearch (2.1.3xx)."""
    listed = (world.logs / "mcp-list.txt").read_text()
    assert re.search(r"^causantic: .*Connected", listed, re.MULTILINE), listed
    rows = world.requests(run)
    first = rows[0]["body"]
    names = [t.get("name") for t in first.get("tools") or []]
    whys = [(r.get("reply") or {}).get("why") for r in rows]
    assert "wait-for-mcp" not in whys, f"causantic was still connecting: {whys}"
    body = json.dumps(first)
    at = body.find("still connecting")
    assert at < 0 or "causantic" not in body[at:at + 400], body[at:at + 400]
    if "mcp__causantic__search" not in names:
        assert "ToolSearch" in names and "mcp__causantic__search" in json.dumps(first), (
            "causantic's tools are neither in the first request nor listed as deferred")
        assert whys[0] == "tool-search"
    else:
        assert whys[0] == "trigger"
    call = next(r["reply"] for r in rows if (r.get("reply") or {}).get("name")
                == "mcp__causantic__search")
    result = next(b for r in rows for m in r["body"].get("messages") or []
                  for b in (m.get("content") if isinstance(m.get("content"), list) else [])
                  if isinstance(b, dict) and b.get("tool_use_id") == call["id"])
    text = text_of(result.get("content"))
    # (a first line may say the answer is keyword-only, when no embedding model is built)
    assert not result.get("is_error") and re.search(r'^Found \d+ results? for "', text,
                                                    re.MULTILINE), text[:300]
    assert f"session {expect}" in text
    final = next(e for e in world.runs[run] if e.get("type") == "result")["result"]
    assert final.startswith("FAKE-MODEL tool result, first line: ")


def test_session_end_ingests_the_new_session(world: World):
    b1 = world.sessions["B1"]
    sessions = world.cli_json("list-sessions", "--project", "demo")["sessions"]
    assert b1 in {s["session_id"] for s in sessions}
    found = world.cli_json("search", Q_B, "--project", "demo")
    assert any(r["session_id"] == b1 for r in found["results"])
    debug = (world.logs / "B1.debug").read_text(errors="replace")
    assert re.search(r"SessionEnd.*hook session-end.*completed with status 0", debug)


def test_the_next_session_is_briefed_on_the_previous_one(world: World):
    briefing = marked(world.requests("B2")[0]["body"], BRIEFING)
    assert briefing is not None
    assert f"last session {world.sessions['B1'][:8]}" in briefing
    assert f"Last request: {P_B1}" in briefing


def test_subagent_stop_ingests_the_sub_agent(world: World):
    """The sub-agent's transcript (<session>/subagents/agent-*.jsonl) is in memory; the
    SubagentStop hook ran for it (compaction, itself a sub-agent, may have run it since)."""
    from causantic.store import open_store

    b2 = world.sessions["B2"]
    whys = [(r.get("reply") or {}).get("why") for r in world.requests("B2")]
    assert "delegate" in whys, whys
    debug = (world.logs / "B2.debug").read_text(errors="replace").splitlines()
    at = next(i for i, line in enumerate(debug) if "hook commands for SubagentStop" in line)
    assert any("Matched 1 unique hooks" in line for line in debug[at:at + 4]), debug[at:at + 4]
    entry = world.hook_status("subagent-stop")
    assert entry.get("runs", 0) >= 1 and entry["success"], entry

    def agents() -> set[str]:
        with open_store(world.root / "home" / ".causantic" / "memory.db", readonly=True) as store:
            return {a for (a,) in store.conn.execute(
                "SELECT DISTINCT agent_id FROM chunks WHERE session_id = ?", (b2,))}

    found = world.wait("the sub-agent's chunks", lambda: agents() if len(agents()) > 1 else None)
    assert "" in found and len(found) == 2, found


def test_a_sub_agent_starts_with_the_recall_for_its_task(world: World):
    """PreToolUse on the Agent call recalled for the task; SubagentStart put it into the
    sub-agent's first request (not the parent's: it has its own prompt recall); and the
    sub-agent's transcript, ingested, does not hold it as memory."""
    from causantic.store import open_store

    b1, b2 = world.sessions["B1"], world.sessions["B2"]
    sub = [r["body"] for r in world.requests("B2")
           if TASK_B2 in json.dumps(r["body"]) and "delegate to a sub-agent" not in
           json.dumps(r["body"])]
    assert sub, "no request of the sub-agent"
    recall = marked(sub[0], RECALL)
    assert recall is not None and f"session {b1[:8]}" in recall, json.dumps(sub[0])[:1500]
    for event in ("pre-tool-use", "subagent-start"):
        entry = world.hook_status(event)
        assert entry.get("success") and entry.get("session_id") == b2, (event, entry)
    ledger = world.cli_json("ledger", "--session", b2)
    assert "subagent-start" in {e.get("event") for e in ledger.get("injections") or []}, ledger
    with open_store(world.root / "home" / ".causantic" / "memory.db", readonly=True) as store:
        echoed = store.conn.execute(
            "SELECT count(*) FROM chunks WHERE session_id = ? AND agent_id != '' AND"
            " (text LIKE '%causantic-memory%' OR text LIKE '%Possibly relevant memory%')",
            (b2,)).fetchone()[0]
    assert echoed == 0


def test_compaction_ingests_and_briefs_the_current_session(world: World):
    b1, b2 = world.sessions["B1"], world.sessions["B2"]
    assert world.sessions["F"] == b1
    events = world.runs["F"]
    assert any(e.get("compact_result") == "success" for e in events if "compact_result" in e)
    debug = (world.logs / "F.debug").read_text(errors="replace")
    assert re.search(r"PreCompact.*hook pre-compact.*completed with status 0", debug)
    entry = world.hook_status("pre-compact")
    assert entry["success"] and entry["session_id"] == b1, entry
    after = hook_responses(events, "SessionStart:compact")
    assert after and after[0].get("exit_code") == 0, after
    context = hook_context(after[0])
    assert context.startswith(BRIEFING), after[0]
    assert b1[:8] in context and b2[:8] not in context, context[:600]


def test_a_forked_session_is_briefed(world: World):
    """`--fork-session`: Claude Code reports SessionStart source "fork" since 2.1.214 (before,
    "resume"); a matcher without it left every fork without a briefing."""
    fork = world.sessions["K"]
    assert fork and fork != world.sessions["B1"]
    responses = hook_responses(world.runs["K"], "SessionStart")
    assert responses and all(r.get("exit_code") == 0 for r in responses), responses
    assert marked(world.requests("K")[0]["body"], BRIEFING) is not None
    entry = world.hook_status("session-start")
    if tuple(map(int, world.version.split("."))) >= (2, 1, 214):
        assert entry["session_id"] == fork and entry["details"]["source"] == "fork", entry
    else:  # reported as a resume, of the session it forks
        assert entry["session_id"] == world.sessions["B1"], entry
        assert entry["details"]["source"] == "resume", entry


def test_no_hook_failed_and_mcp_list_is_not_a_failure(world: World):
    problems = []
    for debug in sorted(world.logs.glob("*.debug")):
        for line in debug.read_text(errors="replace").splitlines():
            m = re.search(r"\] completed with status (\d+)", line)
            if "causantic" in line and m and m.group(1) != "0":
                problems.append(f"{debug.name}: {line[:200]}")
    assert not problems
    hooks = world.cli_json("hook-status")["hooks"]
    failed = {name: h.get("last_failure") for name, h in hooks.items() if h.get("failures")}
    assert not failed, failed
    doctor = world.cli("doctor", "--json", check=False)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["hook runs"]["level"] == "ok", checks["hook runs"]


# -- the plugin ------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=VERSIONS)
def plugin_world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """causantic as a plugin: `claude plugin marketplace add` this repository's marketplace
    (a copy, with the archive in plugin/bin/), `claude plugin install causantic@causantic`,
    then one session. No `causantic install`."""
    version = request.param
    claude = str(claude_binary(version))
    need_shared(SHARED_TRANSCRIPTS)
    command = causantic_command()
    if "-S" not in command:
        why = "the plugin test needs a fresh dist/causantic.pyz (scripts/test builds it)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    root = tmp_path_factory.mktemp(f"plugin-{version}")
    cache = tmp_path_factory.getbasetemp() / "causantic-pyz-cache"
    cache.mkdir(mode=0o700, exist_ok=True)
    w = World(version, root, private_env(root, cache), command)
    w.env["CAUSANTIC_PYTHON"] = sys.executable  # the interpreter the archive was built for
    for sub in ("home/.claude/projects", "logs", "work", "market/.claude-plugin"):
        (root / sub).mkdir(parents=True, mode=0o700)
    market = root / "market"
    shutil.copy(REPO / ".claude-plugin" / "marketplace.json", market / ".claude-plugin")
    shutil.copytree(REPO / "plugin", market / "plugin", ignore=shutil.ignore_patterns("*.pyz"))
    shutil.copy(command[-1], market / "plugin" / "bin" / "causantic.pyz")
    fake = _fake_api_and_history(w, root)
    try:
        for args in (["marketplace", "add", str(market)], ["install", "causantic@causantic"]):
            proc = subprocess.run([claude, "plugin", *args], cwd=root / "work", env=w.env,
                                  capture_output=True, text=True, timeout=120)
            with (w.logs / "plugin.txt").open("a") as log:
                log.write(proc.stdout + proc.stderr)
            assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        spotter = root / "work" / "spotter"
        subprocess.run(["git", "init", "-q", str(spotter)], check=True)
        w.claude("P", spotter, "-p", f"please search memory for {Q_A}", "--allowedTools",
                 "mcp__plugin_causantic_causantic__search", "WaitForMcpServers", "ToolSearch")
        yield w
    finally:
        fake.terminate()
        fake.wait(10)
        print(f"\nplugin, Claude Code {version}: seconds {w.seconds}; logs in {w.logs}")


def test_plugin_installs_and_its_hooks_and_mcp_server_work(plugin_world: World):
    w = plugin_world
    assert not (w.root / "home" / ".claude" / "settings.json").exists() or "causantic hook" not in (
        w.root / "home" / ".claude" / "settings.json").read_text()  # only the plugin's hooks
    rows = w.requests("P")
    briefing = marked(rows[0]["body"], BRIEFING)
    assert briefing is not None and "# Briefing: spotter" in briefing
    whys = [(r.get("reply") or {}).get("why") for r in rows]
    assert "wait-for-mcp" not in whys and "no-tool" not in whys, whys
    call = next(r["reply"] for r in rows if "causantic" in str((r.get("reply") or {}).get("name")))
    assert call["name"] == "mcp__plugin_causantic_causantic__search"
    result = next(b for r in rows for m in r["body"].get("messages") or []
                  for b in (m.get("content") if isinstance(m.get("content"), list) else [])
                  if isinstance(b, dict) and b.get("tool_use_id") == call["id"])
    text = text_of(result.get("content"))
    assert re.search(r'^Found \d+ results? for "', text, re.MULTILINE) and f"session {EXPECT_A}" in text
    sid = w.sessions["P"]
    entry = w.wait("the plugin's session-end worker", lambda: (
        lambda h: h if h.get("session_id") == sid else None)(w.hook_status("session-end")))
    assert entry["success"], entry
    assert sid in w.cli("list-sessions", "--project", "spotter").stdout
