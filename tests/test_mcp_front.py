"""The MCP front (causantic/mcp_front.py): the handshake is answered before the SDK is loaded.

Driven with raw JSON-RPC lines, like Claude Code: 2.1.1xx sends `initialize` (2025-11-25),
2.1.3xx probes with `server/discover` and the per-request envelope (2026-07-28).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from causantic import mcp_front
from causantic.mcp_front import CAPABILITIES_KEY, PROTOCOL_KEY, answer_key, load_answers, record

PYTHON = sys.executable
REPO = Path(__file__).resolve().parent.parent
READ_ONLY = {"search", "recall", "predict", "reconstruct", "list-projects", "list-sessions",
             "stats", "topics", "hook-status", "memories"}
WRITES = {"forget", "observe", "feedback", "reflect"}  # reflect records when it last ran
ENVELOPE = {PROTOCOL_KEY: "2026-07-28", CAPABILITIES_KEY: {"roots": {"listChanged": True}},
            "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.330"}}


class Client:
    opened: list[subprocess.Popen[bytes]] = []  # their pipes are closed after each test

    def __init__(self, db: Path, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen([PYTHON, "-m", "causantic", "--db", str(db), "serve-mcp"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        Client.opened.append(self.proc)

    def send(self, msg: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def read(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"the server closed stdout: {self.proc.stderr.read().decode()}"
        return json.loads(line)

    def ask(self, i: int, method: str, params: dict | None = None) -> dict:
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params or {}})
        reply = self.read()
        assert reply["id"] == i, reply
        return reply

    def close(self) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


@pytest.fixture(autouse=True)
def _close_client_pipes() -> Iterator[None]:
    yield
    while Client.opened:
        proc = Client.opened.pop()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe:
                pipe.close()


def initialize(version: str = "2025-11-25") -> dict:
    return {"protocolVersion": version, "capabilities": {"roots": {}},
            "clientInfo": {"name": "claude-code", "version": "2.1.197"}}


def test_recorded_answers_match_the_sdk_server():
    """ANSWERS is what the SDK server itself says; regenerate with
    `python -m causantic.mcp_front --record` when a tool or the SDK changes."""
    assert record() == load_answers()


def test_tools_declare_read_only_and_result_size():
    tools = load_answers()["tools/list 2025-11-25"]["tools"]
    assert {t["name"] for t in tools} == READ_ONLY | WRITES
    for tool in tools:
        assert len(tool["description"].encode()) < 2048, tool["name"]
        assert tool["_meta"]["anthropic/maxResultSizeChars"] >= 80_000, tool["name"]
        assert tool["annotations"]["readOnlyHint"] is (tool["name"] in READ_ONLY), tool["name"]
    assert load_answers()["tools/list 2026-07-28"]["tools"] == tools


def test_answer_keys():
    assert answer_key({"id": 1, "method": "initialize",
                       "params": initialize("2025-06-18")}, None) == "initialize 2025-06-18"
    assert answer_key({"id": 1, "method": "tools/list"}, "2025-11-25") == "tools/list 2025-11-25"
    assert answer_key({"id": 1, "method": "tools/list"}, None) is None  # before initialize
    assert answer_key({"id": 1, "method": "tools/list", "params": {"cursor": "x"}},
                      "2025-11-25") is None
    assert answer_key({"id": 1, "method": "tools/call", "params": {}}, "2025-11-25") is None
    assert answer_key({"method": "ping"}, "2025-11-25") is None  # a notification
    assert answer_key({"id": "p", "method": "server/discover", "params": {"_meta": ENVELOPE}},
                      None) == "server/discover 2026-07-28"
    partial = {PROTOCOL_KEY: "2026-07-28"}
    assert answer_key({"id": 1, "method": "server/discover", "params": {"_meta": partial}},
                      None) is None


def test_handshake_is_answered_while_the_sdk_is_still_loading(tmp_path: Path):
    """An `mcp` package that takes 3 s to import and then fails (as with an archive built for
    another Python): initialize and tools/list are answered at once anyway, and the failure
    ends the process with one line on stderr."""
    slow = tmp_path / "slow"
    (slow / "mcp").mkdir(parents=True)
    (slow / "mcp" / "__init__.py").write_text(
        "import time\ntime.sleep(3)\nraise ImportError('mcp built for another Python')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(slow), str(REPO)]))
    client = Client(tmp_path / "none.db", env)
    try:
        started = time.monotonic()
        init = client.ask(0, "initialize", initialize())["result"]
        assert init["serverInfo"]["name"] == "causantic"
        assert init["protocolVersion"] == "2025-11-25"
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools = client.ask(1, "tools/list")["result"]["tools"]
        assert "search" in {t["name"] for t in tools}
        assert client.ask(2, "ping")["result"] == {}
        assert time.monotonic() - started < 2.5  # before the fake SDK even fails
        client.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                     "params": {"name": "stats", "arguments": {}}})
        assert client.proc.wait(20) == 1
        err = client.proc.stderr.read().decode().strip().splitlines()
        assert err == ["causantic: the MCP server cannot start: ImportError: "
                       "mcp built for another Python"]
    finally:
        client.close()


def test_modern_protocol_and_tool_calls_through_the_sdk(tmp_path: Path):
    """2026-07-28: server/discover and tools/list at once; tools/call and unknown methods go to
    the SDK; its answers to what the front already answered never reach the client twice."""
    client = Client(tmp_path / "none.db")
    try:
        found = client.ask("server-discover-probe-1", "server/discover", {"_meta": ENVELOPE})
        assert "2026-07-28" in found["result"]["supportedVersions"]
        # Claude Code 2.1.3xx waits for this acknowledgement before it lists the tools.
        wanted = {"toolsListChanged": True, "promptsListChanged": True,
                  "resourcesListChanged": True}
        client.send({"jsonrpc": "2.0", "id": "listen:0", "method": "subscriptions/listen",
                     "params": {"_meta": ENVELOPE, "notifications": wanted}})
        ack = client.read()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen:0"
        assert ack["params"]["notifications"] == wanted
        tools = client.ask(1, "tools/list", {"_meta": ENVELOPE})["result"]["tools"]
        assert "recall" in {t["name"] for t in tools}
        call = client.ask(2, "tools/call", {"name": "stats", "arguments": {}, "_meta": ENVELOPE})
        assert call["result"]["isError"] and "causantic ingest" in call["result"]["content"][0]["text"]
        unknown = client.ask(3, "no/such", {"_meta": ENVELOPE})
        assert unknown["error"]["code"] == -32601
        assert client.close() == 0
        assert client.proc.stdout.read() == b""  # no second answer, no second acknowledgement
    finally:
        client.close()


def test_after_the_client_closes_only_answers_it_is_owed_go_out():
    """Closing stdin makes the SDK end the open listen stream with a "Connection closed"
    error; whether that came before the process exited was a race. Only answers to requests
    still pending are written once input ended."""
    out, to_sdk = io.BytesIO(), io.BytesIO()
    front = mcp_front.Front(out, to_sdk, mcp_front.load_answers())
    listen = {"jsonrpc": "2.0", "id": "listen:0", "method": "subscriptions/listen",
              "params": {"_meta": ENVELOPE, "notifications": mcp_front.LISTEN_ALL}}
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "stats", "arguments": {}, "_meta": ENVELOPE}}
    for msg in (listen, call):
        front.from_client(json.dumps(msg).encode() + b"\n")
    acknowledged = out.getvalue()
    assert json.loads(acknowledged)["method"] == mcp_front.ACKNOWLEDGED
    front.end_input()
    closed = {"jsonrpc": "2.0", "id": "listen:0",
              "error": {"code": -32000, "message": "Connection closed"}}
    answer = {"jsonrpc": "2.0", "id": 7, "result": {"content": [], "isError": True}}
    for msg in (closed, answer, {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}):
        front.from_sdk(json.dumps(msg).encode() + b"\n")
    assert [json.loads(x) for x in out.getvalue()[len(acknowledged):].splitlines()] == [answer]


def test_sigint_stops_the_server_at_once(tmp_path: Path):
    """Claude Code stops a stdio server with SIGINT, then SIGTERM after ~100 ms."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        client = Client(tmp_path / "none.db")
        try:
            client.ask(0, "initialize", initialize())
            client.proc.send_signal(sig)  # the SDK is still loading or idle: either way
            started = time.monotonic()
            assert client.proc.wait(5) == 0
            assert time.monotonic() - started < 1.0
        finally:
            client.close()


def test_under_project_scope_the_answers_speak_of_one_project():
    """`[memory] scope = "project"`: the recorded answers and the SDK's own answers to the
    same requests are reworded; a tool's result (memory text) is passed on unchanged."""
    recorded = json.dumps(load_answers())
    for phrase, _ in mcp_front.OWN_PROJECT_WORDING:  # a reworded description fails here
        assert phrase in recorded, phrase
    out, to_sdk = io.BytesIO(), io.BytesIO()
    front = mcp_front.Front(out, to_sdk, load_answers(), own_project=True)
    front.from_client(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                  "params": initialize()}).encode() + b"\n")
    assert "(all projects)" not in json.loads(out.getvalue())["result"]["instructions"]
    # a page we did not record goes to the SDK; its answer is reworded on the way out
    paged = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "x"}}
    said = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "omit for all projects."}}}
    for msg in (paged, said):
        front.from_client(json.dumps(msg).encode() + b"\n")
    tools = {"tools": [{"name": "search", "description": "Only this project: omit for all projects."}]}
    result = {"content": [{"type": "text", "text": "we wrote omit for all projects."}]}
    start = len(out.getvalue())
    for rid, res in ((2, tools), (3, result)):
        front.from_sdk(json.dumps({"jsonrpc": "2.0", "id": rid, "result": res}).encode() + b"\n")
    listed, called = [json.loads(x) for x in out.getvalue()[start:].splitlines()]
    assert listed["result"]["tools"][0]["description"] == (
        "Only this project: omit for this session's project, the only one it sees.")
    assert called["result"] == result


def test_under_worktree_scope_the_instructions_speak_of_the_worktree():
    out = io.BytesIO()
    front = mcp_front.Front(out, io.BytesIO(), load_answers(), own_project=True, worktree=True)
    front.from_client(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                  "params": initialize()}).encode() + b"\n")
    said = json.loads(out.getvalue())["result"]["instructions"]
    assert "(all projects)" not in said and 'scope = "project"' not in said
    assert "worktree of its project and the main checkout only" in said
