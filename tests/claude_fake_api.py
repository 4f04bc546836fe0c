#!/usr/bin/env python3
"""A scripted stand-in for the Anthropic Messages API, for driving the real Claude Code offline.

Copied from the project's real-Claude-Code harness (shared/e2e/claude-code/fake_api.py, written
for causantic's issue 13; shared/ is not part of this repository) for tests/test_claude_code_e2e.py.
Changed here: rule 2b (a sub-agent on request) and ToolSearch selecting the deferred tool by the
name the request lists (a plugin's tools are mcp__plugin_<plugin>_<server>__<tool>), both
marked "causantic tests:" below.

Standard library only. Listens on 127.0.0.1 (a free port unless --port is given), writes the
port to --port-file, logs every request (method, path, a few headers, the parsed body and what
was answered) as one JSON object per line to --log, and stops by itself after --lifetime
seconds. Point Claude Code at it with ANTHROPIC_BASE_URL=http://127.0.0.1:PORT.

The "model" follows a script, applied to the newest user-role message of each POST /v1/messages:

0. it asks for a summary of the conversation (compaction)
                             -> "<analysis>…</analysis><summary>FAKE-MODEL summary …</summary>"
1. it holds a tool_result   -> text "FAKE-MODEL tool result, first line: <first line>"
2. its prompt text says "search memory for X" (or "recall memory for X")
                             -> a text block, then a tool_use block calling the causantic
                                search (or recall) tool found in the request's `tools`
                                array, with {"query": X}; stop_reason "tool_use". If
                                that tool is absent but WaitForMcpServers is offered (the
                                server is still connecting) or ToolSearch is (MCP tools
                                deferred), that is called first ("select:mcp__causantic__
                                search"), and its tool_result leads back to the search
2b. its prompt text says "delegate to a sub-agent: X"
                             -> a tool_use of the Agent (or Task) tool with {"prompt": X}, run
                                in the foreground; the sub-agent's own requests get rule 3
3. anything else            -> short text: "FAKE-MODEL reply #N" (side requests such as
                                title generation and quota checks get the same)

Both streaming (SSE) and non-streaming replies are produced; /v1/messages/count_tokens
answers a rough estimate; any other path answers 200 with an empty JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SUMMARY = re.compile(r"summary of the conversation|summarize the conversation", re.IGNORECASE)
TRIGGER = re.compile(r"\b(search|recall)\s+memory\s+for[:\s]+(.+)", re.IGNORECASE | re.DOTALL)
DELEGATE = re.compile(r"\bdelegate to a sub-agent:\s*(.+)", re.IGNORECASE | re.DOTALL)  # causantic tests
WAIT_TOOL = "WaitForMcpServers"  # Claude Code's tool for MCP servers still connecting
WAIT_ID = "toolu_fakewait"
SEARCH_TOOL = "ToolSearch"  # loads deferred tools (MCP tools, in later versions)
SEARCH_ID = "toolu_fakets"
HELPERS = {WAIT_ID: WAIT_TOOL, SEARCH_ID: SEARCH_TOOL}
LOGGED_HEADERS = ("user-agent", "anthropic-beta", "anthropic-version", "x-app", "content-type",
                  "x-claude-code-session-id")

_lock = threading.Lock()
_counter = [0]


def next_id() -> int:
    with _lock:
        _counter[0] += 1
        return _counter[0]


# -- the script ----------------------------------------------------------------------------


def blocks_of(message: dict) -> list[dict]:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def tool_result_text(block: dict) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content
                         if isinstance(b, dict) and b.get("type") == "text")
    return ""


def prompt_text(message: dict) -> str:
    """The user's own words in a message: text blocks minus injected reminders and memory."""
    parts = []
    for b in blocks_of(message):
        if b.get("type") != "text":
            continue
        text = b.get("text", "")
        stripped = text.lstrip()
        if stripped.startswith("<system-reminder>") or "<causantic-memory" in text:
            continue
        parts.append(text)
    return "\n".join(parts).strip()


def find_tool(tools: list, wanted: str) -> str | None:
    """The exact name Claude Code gave the causantic tool `wanted` (e.g. mcp__causantic__search)."""
    names = [t.get("name", "") for t in tools or [] if isinstance(t, dict)]
    for name in names:
        if name == f"mcp__causantic__{wanted}":
            return name
    for name in names:  # another naming scheme (plugin-scoped servers and the like)
        if "causantic" in name and name.endswith(f"__{wanted}"):
            return name
    return None


def helper_calls(messages: list[dict]) -> set[str]:
    """Which helper tools (WaitForMcpServers, ToolSearch) the fake model already called."""
    used = set()
    for m in messages:
        if m.get("role") != "assistant":
            continue
        for b in blocks_of(m):
            if b.get("type") == "tool_use":
                for prefix, tool in HELPERS.items():
                    if str(b.get("id", "")).startswith(prefix):
                        used.add(tool)
    return used


def decide(body: dict, n: int) -> dict:
    """What the fake model answers: {"kind": "text", "text"} or {"kind": "tool_use", ...}."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    # The newest user message. Claude Code (2.1.x, beta mid-conversation-system) may put
    # role "system" messages, such as SessionStart hook context, after it.
    at = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=None)
    last = messages[at] if at is not None else {}
    after = messages[at + 1:] if at is not None else []
    blocks = blocks_of(last)
    prompt = prompt_text(last)
    if SUMMARY.search(prompt):  # compaction: its instructions follow the newest tool_result
        return {"kind": "text", "why": "summary",
                "text": f"<analysis>FAKE-MODEL</analysis>\n<summary>FAKE-MODEL summary #{n}: "
                        "the user asked the fake model to search causantic memory.</summary>"}
    results = [b for b in blocks if b.get("type") == "tool_result"]
    helper_text = helper = ""
    if results and not any(m.get("role") == "assistant" for m in after):
        rid = str(results[-1].get("tool_use_id", ""))
        helper = next((tool for prefix, tool in HELPERS.items() if rid.startswith(prefix)), "")
        if helper:
            # A helper answered (the server connected, or ToolSearch loaded the tool): go
            # back to the prompt that asked for the search.
            helper_text = json.dumps(results[-1].get("content"))
            prompt = next((prompt_text(m) for m in reversed(messages[:at])
                           if m.get("role") == "user" and TRIGGER.search(prompt_text(m))), "")
        else:
            text = tool_result_text(results[-1])
            first = next((line.strip() for line in text.splitlines() if line.strip()), "(empty)")
            flag = " (tool error)" if results[-1].get("is_error") else ""
            return {"kind": "text", "why": "tool_result",
                    "text": f"FAKE-MODEL tool result{flag}, first line: {first}"}
    match = TRIGGER.search(prompt)
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    delegate = DELEGATE.search(prompt)  # causantic tests: a foreground sub-agent
    agent_tool = next((t.get("name") for t in tools if t.get("name") in ("Agent", "Task")), None)
    if delegate and agent_tool and not results:
        return {"kind": "tool_use", "why": "delegate", "name": agent_tool,
                "input": {"description": "fake sub-agent task",
                          "prompt": delegate.group(1).strip(), "run_in_background": False},
                "id": f"toolu_fakeagent{n:06d}", "text": "FAKE-MODEL: delegating."}
    if match and tools:
        wanted = match.group(1).lower()
        query = match.group(2).strip().strip("\"'“”.").strip()
        names = [t.get("name") for t in tools]
        name = find_tool(tools, wanted)
        how = {WAIT_TOOL: "trigger-after-wait", SEARCH_TOOL: "trigger-after-toolsearch"}.get(
            helper, "trigger")
        if name is None and helper_text:  # ToolSearch's <functions> block names it
            found = re.search(r'mcp__[A-Za-z0-9_-]*causantic[A-Za-z0-9_-]*__' + wanted + r'\b',
                              helper_text)
            name = found.group(0) if found else None
        used = helper_calls(messages)
        if name is None and WAIT_TOOL in names and WAIT_TOOL not in used:
            # Headless Claude Code 2.1.1xx waits only ~2 s for MCP servers before the first
            # request; a server still connecting is offered through this tool instead.
            return {"kind": "tool_use", "why": "wait-for-mcp", "name": WAIT_TOOL,
                    "input": {"servers": ["causantic"]}, "id": f"{WAIT_ID}{n:06d}",
                    "text": "FAKE-MODEL: causantic is still connecting; waiting for it."}
        if name is None and SEARCH_TOOL in names and SEARCH_TOOL not in used:
            # Later versions defer MCP tools behind ToolSearch, which also waits for servers
            # that are still connecting.
            # causantic tests: the deferred name as listed (a plugin's is mcp__plugin_…)
            listed = re.search(r"mcp__[A-Za-z0-9_-]*causantic[A-Za-z0-9_-]*__" + wanted + r"\b",
                               json.dumps(body))
            deferred = listed.group(0) if listed else f"mcp__causantic__{wanted}"
            return {"kind": "tool_use", "why": "tool-search", "name": SEARCH_TOOL,
                    "input": {"query": f"select:{deferred}", "max_results": 5},
                    "id": f"{SEARCH_ID}{n:06d}",
                    "text": "FAKE-MODEL: loading the causantic tool through ToolSearch."}
        if name is None:
            return {"kind": "text", "why": "no-tool",
                    "text": f"FAKE-MODEL: no causantic {wanted} tool offered; tools: {names}"}
        return {"kind": "tool_use", "why": how, "name": name, "input": {"query": query},
                "text": f"FAKE-MODEL: calling {name}.", "id": f"toolu_fake{n:06d}"}
    return {"kind": "text", "why": "default", "text": f"FAKE-MODEL reply #{n}"}


# -- wire format ---------------------------------------------------------------------------


def usage(body: dict) -> dict:
    return {"input_tokens": max(1, len(json.dumps(body)) // 4), "output_tokens": 1,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def content_blocks(reply: dict) -> list[dict]:
    out = [{"type": "text", "text": reply["text"]}]
    if reply["kind"] == "tool_use":
        out.append({"type": "tool_use", "id": reply["id"], "name": reply["name"],
                    "input": reply["input"]})
    return out


def message_json(body: dict, reply: dict, n: int) -> dict:
    stop = "tool_use" if reply["kind"] == "tool_use" else "end_turn"
    u = usage(body)
    u["output_tokens"] = max(1, len(reply["text"]) // 4)
    return {"id": f"msg_fake{n:06d}", "type": "message", "role": "assistant",
            "model": body.get("model") or "claude-fake", "content": content_blocks(reply),
            "stop_reason": stop, "stop_sequence": None, "usage": u}


def sse_events(body: dict, reply: dict, n: int):
    msg = message_json(body, reply, n)
    start = dict(msg, content=[], stop_reason=None)
    start["usage"] = dict(msg["usage"], output_tokens=1)
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(msg["content"]):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "text", "text": ""}}
            text = block["text"]
            for i in range(0, len(text), 40):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "text_delta",
                                                        "text": text[i:i + 40]}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "tool_use",
                                                            "id": block["id"],
                                                            "name": block["name"],
                                                            "input": {}}}
            raw = json.dumps(block["input"])
            for i in range(0, len(raw), 16):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "input_json_delta",
                                                        "partial_json": raw[i:i + 16]}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": msg["usage"]["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


# -- server --------------------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-anthropic/1"
    log_path = ""

    def log_message(self, fmt, *args):  # quiet; everything goes to the JSONL log
        pass

    def _body(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _log(self, record: dict) -> None:
        record = {"t": round(time.time(), 3), "method": self.command, "path": self.path,
                  "headers": {k: self.headers[k] for k in LOGGED_HEADERS if self.headers.get(k)},
                  **record}
        line = json.dumps(record, ensure_ascii=False)
        with _lock:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(line + "\n")

    def _send_json(self, status: int, obj, extra=None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", f"req_fake_{time.monotonic_ns():x}")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _dispatch(self):
        path = self.path.split("?", 1)[0].rstrip("/")
        body = self._body() if self.command in ("POST", "PUT", "PATCH") else None
        if self.command == "POST" and path == "/v1/messages/count_tokens":
            tokens = max(1, len(json.dumps(body)) // 4)
            self._log({"body": body, "reply": {"kind": "count_tokens", "input_tokens": tokens}})
            return self._send_json(200, {"input_tokens": tokens})
        if self.command == "POST" and path == "/v1/messages" and isinstance(body, dict):
            n = next_id()
            reply = decide(body, n)
            stream = bool(body.get("stream"))
            self._log({"seq": n, "body": body, "stream": stream, "reply": reply})
            if not stream:
                return self._send_json(200, message_json(body, reply, n))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.send_header("request-id", f"req_fake{n:06d}")
            self.end_headers()
            self.close_connection = True
            try:
                for event, data in sse_events(body, reply, n):
                    self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            return None
        self._log({"body": body, "reply": {"kind": "harmless"}})
        if path == "/v1/models":
            return self._send_json(200, {"data": [], "has_more": False, "first_id": None,
                                         "last_id": None})
        return self._send_json(200, {})

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _dispatch


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--log", required=True, help="JSONL file, one line per request")
    p.add_argument("--port-file", required=True, help="the chosen port is written here")
    p.add_argument("--port", type=int, default=0, help="0 (default): any free port")
    p.add_argument("--lifetime", type=float, default=3600.0,
                   help="stop by itself after this many seconds (default 3600)")
    args = p.parse_args(argv)
    Handler.log_path = args.log
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, args.port_file)
    threading.Timer(args.lifetime, server.shutdown).start()
    print(f"fake_api: 127.0.0.1:{server.server_address[1]} pid {os.getpid()}", file=sys.stderr)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
