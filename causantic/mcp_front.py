"""`causantic serve-mcp`: answer the MCP handshake at once while the official SDK loads.

Importing the SDK (mcp, mcp_types, pydantic) costs about 0.6 s of CPU, more on a loaded
machine, and Claude Code does not wait long: headless 2.1.1xx sends its first model request
about 2 s after start with whatever servers are connected by then, and newer versions probe a
stdio server with a short `server/discover` time-out. So `serve-mcp` owns stdin and stdout
itself (standard library only) and runs the SDK server (`causantic.mcp_server`) in a thread
behind a pair of pipes, which starts loading at once:

- every line from the client goes on to the SDK server unchanged and in order, so the SDK's
  session state is exactly what it would be without this front;
- the requests whose answers never change (`initialize`, `server/discover`, `tools/list`,
  `prompts/list`, `resources/list`, `ping`, for the protocol versions in `ANSWERS`) are
  answered here at once, and the SDK's own answer to them is dropped when it comes; so is
  the acknowledgement of `subscriptions/listen` (2026-07-28), which Claude Code 2.1.3xx waits
  for before it lists the tools (the stream itself stays with the SDK). `ANSWERS`
  is recorded from the SDK server itself (`python -m causantic.mcp_front --record`);
  tests/test_mcp_front.py fails when it no longer matches;
- everything else (`tools/call`, subscriptions, unknown methods, anything with parameters
  we did not record) is answered by the SDK.

SIGINT and SIGTERM (how Claude Code stops a stdio server) end the process at once. End of
input ends it once the answers still owed are written (at most `DRAIN_S`). If the SDK cannot
be loaded (an archive built for another Python, a broken install), the reason is one line on
stderr and the process exits 1.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from typing import Any

from causantic.config import Settings

DRAIN_S = 5.0
PROTOCOL_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CACHED = ("initialize", "server/discover", "tools/list", "prompts/list", "resources/list", "ping")
LISTEN = "subscriptions/listen"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_KEY = "io.modelcontextprotocol/subscriptionId"


#: Under `[memory] scope = "project"` (or "worktree") the server answers for one project, so
#: what its recorded answers say of "all projects" (the instructions, every `project`
#: argument) is reworded on the way out (`own_project_wording`); tests/test_mcp_front.py checks that each
#: phrase is still in the recording.
OWN_PROJECT_WORDING = (
    ("(all projects)", '(this session\'s project only: [memory] scope = "project")'),
    ("omit for all projects.", "omit for this session's project, the only one it sees."),
    ("omit for every project.", "omit for this session's project."),
)
#: The same under `scope = "worktree"`: the session sees its own worktree of its project.
WORKTREE_WORDING = (
    ("(all projects)", "(this session's worktree of its project and the main checkout only: "
                       '[memory] scope = "worktree")'),
    *OWN_PROJECT_WORDING[1:],
)


def own_project_wording(value: Any, wording: tuple[tuple[str, str], ...] = OWN_PROJECT_WORDING
                        ) -> Any:
    """``value`` (a recorded answer, or any part of one) with ``wording`` (`OWN_PROJECT_WORDING`
    or `WORKTREE_WORDING`) applied to every string in it."""
    if isinstance(value, str):
        for phrase, own in wording:
            value = value.replace(phrase, own)
        return value
    if isinstance(value, dict):
        return {k: own_project_wording(v, wording) for k, v in value.items()}
    if isinstance(value, list):
        return [own_project_wording(v, wording) for v in value]
    return value


def load_answers() -> dict[str, dict]:
    """The recorded results, keyed "METHOD VERSION" (initialize: the client's offered version;
    subscriptions/listen: also the notifications asked for, and the value is the params of
    its acknowledgement)."""
    # deferred: MCP start: answered before the SDK and the tools load
    from causantic.mcp_answers import ANSWERS_JSON

    return json.loads(ANSWERS_JSON)


def answer_key(msg: dict, session_version: str | None) -> str | None:
    """The ANSWERS key of a client request we may answer without the SDK, or None."""
    method = msg.get("method")
    if method not in CACHED + (LISTEN,) or "id" not in msg:
        return None
    params = msg.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return None
    if method == "initialize":
        return f"initialize {params.get('protocolVersion')}"
    meta = params.get("_meta")
    if isinstance(meta, dict) and PROTOCOL_KEY in meta:  # the per-request envelope (2026-07-28)
        if CAPABILITIES_KEY not in meta:
            return None  # malformed: the SDK says why
        version = meta[PROTOCOL_KEY]
    else:
        version = session_version
    if method == LISTEN:  # its acknowledgement depends on the notifications asked for
        if version is None or set(params) - {"_meta", "notifications"}:
            return None
        return f"{method} {version} {json.dumps(params.get('notifications'), sort_keys=True)}"
    if version is None or set(params) - {"_meta"}:
        return None  # before initialize, or a cursor or other parameter: the SDK decides
    return f"{method} {version}"


class Front:
    """Routes lines between the client's wire and the SDK server's pipes."""

    def __init__(self, wire_out, to_sdk, answers: dict[str, dict], *,
                 own_project: bool = False, worktree: bool = False) -> None:
        self.wire_out = wire_out
        self.to_sdk = to_sdk
        # Under `[memory] scope = "project"`, the recorded answers and the SDK's own answers
        # to the same requests (those we could not answer here) speak of one project.
        self.own_project = own_project
        self.wording = WORKTREE_WORDING if worktree else OWN_PROJECT_WORDING
        self.answers = own_project_wording(answers, self.wording) if own_project else answers
        self.reworded: set[str] = set()  # ids of such requests the SDK answers
        self.lock = threading.Lock()
        self.owed = threading.Condition(self.lock)
        self.answered: set[str] = set()  # ids answered here: the SDK's answer is dropped
        self.pending: set[str] = set()  # ids the SDK still has to answer
        self.initialize_ids: set[str] = set()
        self.acknowledged: set[str] = set()  # listen streams acknowledged here
        self.version: str | None = None  # the protocol version the handshake agreed on
        self.input_ended = False  # the client closed stdin: only answers still owed go out

    def _write(self, data: bytes) -> None:
        self.wire_out.write(data)
        self.wire_out.flush()

    def from_client(self, line: bytes) -> None:
        """A line from the client: answer it here if we can, and always pass it on."""
        try:
            msg = json.loads(line)
        except ValueError:
            msg = None
        if isinstance(msg, dict) and "method" in msg and "id" in msg:
            rid = json.dumps(msg["id"])
            with self.lock:
                key = answer_key(msg, self.version)
                result = self.answers.get(key) if key else None
                if msg["method"] == "initialize":
                    self.initialize_ids.add(rid)
                if msg["method"] == LISTEN:  # a stream: never answered, only acknowledged
                    if result is not None:
                        self.acknowledged.add(rid)
                        params = {**result, "_meta": {**result.get("_meta", {}),
                                                      SUBSCRIPTION_KEY: msg["id"]}}
                        self._write(json.dumps({"jsonrpc": "2.0", "method": ACKNOWLEDGED,
                                                "params": params}, separators=(",", ":"),
                                               ensure_ascii=False).encode() + b"\n")
                elif result is not None:
                    self.answered.add(rid)
                    if msg["method"] == "initialize":
                        self.version = result.get("protocolVersion")
                    self._write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result},
                                           separators=(",", ":"), ensure_ascii=False).encode()
                                + b"\n")
                else:
                    self.pending.add(rid)
                    if self.own_project and msg["method"] in CACHED:
                        self.reworded.add(rid)
        self.to_sdk.write(line if line.endswith(b"\n") else line + b"\n")
        self.to_sdk.flush()

    def from_sdk(self, line: bytes) -> None:
        """A line from the SDK server: pass it to the client unless we answered it already."""
        try:
            msg = json.loads(line)
        except ValueError:  # stray output that reached fd 1 before the SDK diverted it
            sys.stderr.buffer.write(line)
            sys.stderr.flush()
            return
        with self.lock:
            owed = (isinstance(msg, dict) and "id" in msg and "method" not in msg
                    and json.dumps(msg["id"]) in self.pending)
            if self.input_ended and not owed:
                # The SDK ending its open streams ("Connection closed" for a listen) or
                # notifying: the client has gone and asked for none of it.
                return
            if isinstance(msg, dict) and msg.get("method") == ACKNOWLEDGED:
                params = msg.get("params")
                meta = params.get("_meta") if isinstance(params, dict) else None
                sid = json.dumps(meta.get(SUBSCRIPTION_KEY)) if isinstance(meta, dict) else ""
                if sid in self.acknowledged:
                    self.acknowledged.discard(sid)
                    return
            if isinstance(msg, dict) and "id" in msg and "method" not in msg:
                rid = json.dumps(msg["id"])
                if rid in self.answered:
                    self.answered.discard(rid)
                    return
                self.pending.discard(rid)
                if rid in self.initialize_ids and isinstance(msg.get("result"), dict):
                    self.version = msg["result"].get("protocolVersion")
                if rid in self.reworded:
                    self.reworded.discard(rid)
                    line = json.dumps(own_project_wording(msg, self.wording), separators=(",", ":"),
                                      ensure_ascii=False).encode() + b"\n"
                self.owed.notify_all()
            self._write(line)

    def end_input(self) -> None:
        """The client closed its input: close the SDK's. From now on only the answers still
        owed reach the client (the SDK then ends its open streams, a listen with a
        "Connection closed" error, which nobody asked for)."""
        with self.lock:
            self.input_ended = True
        self.to_sdk.close()

    def drain(self, seconds: float) -> None:
        """Wait until the SDK has answered every request passed to it, or seconds pass."""
        deadline = time.monotonic() + seconds
        with self.lock:
            while self.pending and time.monotonic() < deadline:
                self.owed.wait(max(0.0, deadline - time.monotonic()))


def _stop(signum: int, frame: object) -> None:
    os._exit(0)  # the client stopping its server is a normal end, whatever is in flight


def serve(settings: Settings) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin or stops us with a signal."""
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    sys.stdout.flush()
    wire_in = os.fdopen(os.dup(0), "rb")
    wire_out = os.fdopen(os.dup(1), "wb")
    # The SDK server serves "stdio": give it pipes as fd 0 and 1 (it then points them at
    # /dev/null and stderr while it serves, so stray output never reaches the wire).
    sdk_in, to_sdk_fd = os.pipe()
    from_sdk_fd, sdk_out = os.pipe()
    os.dup2(sdk_in, 0)
    os.dup2(sdk_out, 1)
    os.close(sdk_in)
    os.close(sdk_out)
    front = Front(wire_out, os.fdopen(to_sdk_fd, "wb"), load_answers(),
                  own_project=settings.memory.own_project,
                  worktree=settings.memory.scope == "worktree")
    threading.Thread(target=_run_sdk, args=(settings,), name="mcp-sdk", daemon=True).start()
    threading.Thread(target=_pump, args=(os.fdopen(from_sdk_fd, "rb"), front),
                     name="mcp-pump", daemon=True).start()
    try:
        for line in wire_in:
            if line.strip():
                front.from_client(line)
        front.end_input()
        front.drain(DRAIN_S)
    except (BrokenPipeError, ConnectionResetError):
        pass
    wire_out.flush()
    os._exit(0)  # daemon threads may be mid-import: don't wait for them


def _run_sdk(settings: Settings) -> None:
    try:
        # deferred: heavy: pulls mcp, pydantic, only needed here
        from causantic.mcp_server import serve as serve_sdk

        serve_sdk(settings)
    except BaseException as exc:  # noqa: BLE001 - the one line, then the process ends
        print(f"causantic: the MCP server cannot start: {type(exc).__name__}: {exc}",
              file=sys.stderr, flush=True)
        os._exit(1)


def _pump(sdk_out, front: Front) -> None:
    try:
        for line in sdk_out:
            front.from_sdk(line)
    except (BrokenPipeError, ConnectionResetError):
        os._exit(0)


# -- recording ANSWERS from the SDK server ---------------------------------------------------

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)
LISTEN_ALL = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}
SDK_SERVER = ("import sys; from causantic.config import load_settings; "
              "from causantic.mcp_server import serve; serve(load_settings(sys.argv[1]))")


def record(db_path: str = os.devnull) -> dict[str, dict]:
    """Ask the SDK server itself (no front) every cached question; the answers by key."""
    # deferred: MCP start: answered before the SDK and the tools load
    import subprocess

    def session(messages: list[dict]) -> dict[int | str, dict]:
        """Send messages to a fresh SDK server; its answers by id, a listen's acknowledgement
        by the listen's id (stdin open until all came)."""
        proc = subprocess.Popen([sys.executable, "-c", SDK_SERVER, db_path], text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        proc.stdin.flush()
        wanted = {m["id"] for m in messages if "id" in m}
        replies: dict[int | str, dict] = {}
        while wanted - set(replies):
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the SDK server stopped; answers so far: {replies}")
            reply = json.loads(line)
            if "id" in reply:
                replies[reply["id"]] = reply
            elif reply.get("method") == ACKNOWLEDGED:
                params = dict(reply["params"])
                params["_meta"] = dict(params["_meta"])
                replies[params["_meta"].pop(SUBSCRIPTION_KEY)] = {"result": params}
        proc.stdin.close()
        proc.wait(30)
        proc.stdout.close()
        return replies

    def request(i: int | str, method: str, params: dict | None = None) -> dict:
        msg = {"jsonrpc": "2.0", "id": i, "method": method}
        return msg if params is None else {**msg, "params": params}

    out: dict[str, dict] = {}
    lists = ("tools/list", "prompts/list", "resources/list")
    for version in HANDSHAKE_VERSIONS:
        init = {"protocolVersion": version, "capabilities": {},
                "clientInfo": {"name": "causantic-record", "version": "0"}}
        by_id = session([request(0, "initialize", init),
                         {"jsonrpc": "2.0", "method": "notifications/initialized"},
                         request(1, "ping"), *(request(2 + i, m) for i, m in enumerate(lists))])
        out[f"initialize {version}"] = by_id[0]["result"]
        agreed = by_id[0]["result"]["protocolVersion"]
        for i, method in enumerate(("ping", *lists)):
            out[f"{method} {agreed}"] = by_id[1 + i]["result"]
    for version in MODERN_VERSIONS:
        meta = {"_meta": {PROTOCOL_KEY: version, CAPABILITIES_KEY: {},
                          "io.modelcontextprotocol/clientInfo": {"name": "causantic-record",
                                                                 "version": "0"}}}
        methods = ("server/discover", *lists)
        by_id = session([request(i, m, meta) for i, m in enumerate(methods)]
                        + [request("listen", LISTEN, {**meta, "notifications": LISTEN_ALL})])
        for i, method in enumerate(methods):
            out[f"{method} {version}"] = by_id[i]["result"]
        out[f"{LISTEN} {version} {json.dumps(LISTEN_ALL, sort_keys=True)}"] = by_id["listen"][
            "result"]
    return out


def write_answers(answers: dict[str, dict]) -> str:
    """Rewrite causantic/mcp_answers.py with these answers; its path."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mcp_answers.py")
    text = json.dumps(answers, indent=1, sort_keys=True, ensure_ascii=False)
    if "'''" in text or text.endswith("\\"):
        raise ValueError("the answers cannot be written as a raw string")
    with open(path, "w", encoding="utf-8") as f:
        f.write('"""The MCP server\'s fixed answers, recorded from the SDK server: '
                "python -m causantic.mcp_front --record.\n\nGenerated; do not edit. "
                'See causantic/mcp_front.py.\n"""\n\n'
                f"ANSWERS_JSON = r'''{text}'''\n")
    return path


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python -m causantic.mcp_front --record")
    print(write_answers(record()))
