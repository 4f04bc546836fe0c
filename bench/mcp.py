"""MCP server latency: spawn to `initialize` answered, and `search` tool round trips.

The server is driven with raw JSON-RPC lines over its stdin/stdout (what Claude Code sends),
so the client's own import time is not counted. Rows:

- ``spawn → initialize`` / ``spawn → tools/list``: from spawning ``python -m causantic --db DB
  serve-mcp`` to the ``initialize`` response, and to the ``tools/list`` response sent right
  after it (median of 5 spawns; also through ``python -S dist/causantic.pyz`` when the archive
  is built). The handshake is answered by ``causantic.mcp_front`` while the SDK loads in a
  thread. Target: tools/list within 400 ms on an idle machine (Claude Code headless waits
  2 s). ``spawn → first tools/call`` is when the SDK answers (``stats``, no database needed).
  ``spawn → discover, listen, tools/list`` is Claude Code 2.1.3xx's start (protocol
  2026-07-28), which waits for the ``subscriptions/listen`` acknowledgement.
- ``search``: ``tools/call search`` round trips on a 10,000-chunk corpus, first call apart
  (it opens the database and, in hybrid mode, loads the model), then p50/p95 of the next
  calls over varied queries. Target p95 under 50 ms. ``keyword`` on the corpus without
  vectors; ``hybrid`` on the same corpus with (random) vectors, which embeds each query.
  ``in_process_median_ms`` is the same search called directly, without the server: the
  difference is what the MCP layer (JSON-RPC, validation, the worker thread) adds.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, cli_main, percentile, print_table, write_result

PYTHON = sys.executable
PROTOCOL = "2025-06-18"
QUERIES = [
    "daytona pty log streaming", "flaky test retry backoff", "mix dialyzer type mismatch",
    "worktree branch merge conflict", "SQLITE_BUSY database is locked", "session live tests",
    "checkpoint explain command", "hook settings json", "transcript renderer", "git push upstream",
    "pre-commit validation failed", "credo format", "docker compose up", "api key redaction",
    "subagent task output", "resume session", "summary compaction", "bead issue ready",
    "go test ./...", "npm run build",
]


class Server:
    """A `serve-mcp` process and a minimal JSON-RPC line client."""

    def __init__(self, db: Path, env: dict[str, str], command: list[str] | None = None) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [*(command or [PYTHON, "-m", "causantic"]), "--db", str(db), "serve-mcp"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
        )
        self.next_id = 0

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the server closed its stdout")
            msg = json.loads(line)
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def notify(self, method: str) -> None:
        self._send({"jsonrpc": "2.0", "method": method})

    def _send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def initialize(self) -> float:
        """Send initialize; return ms from spawn to the response."""
        self.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        elapsed = (time.perf_counter() - self.started) * 1000
        self.notify("notifications/initialized")
        return elapsed

    def since_spawn(self, method: str, params: dict[str, Any]) -> float:
        """Send a request; return ms from spawn to its response."""
        self.request(method, params)
        return (time.perf_counter() - self.started) * 1000

    def modern_handshake(self) -> float:
        """Claude Code 2.1.3xx's start (protocol 2026-07-28): server/discover, then
        subscriptions/listen (it waits for the acknowledgement), then tools/list; return ms
        from spawn to the tools."""
        meta = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {},
                          "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"}}}
        self.request("server/discover", meta)
        self._send({"jsonrpc": "2.0", "id": "listen:0", "method": "subscriptions/listen",
                    "params": {**meta, "notifications": {  # what Claude Code asks for
                        "toolsListChanged": True, "promptsListChanged": True,
                        "resourcesListChanged": True}}})
        assert self.proc.stdout is not None
        while json.loads(self.proc.stdout.readline()).get("method") != (
                "notifications/subscriptions/acknowledged"):
            pass
        return self.since_spawn("tools/list", meta)

    def search(self, query: str, mode: str) -> tuple[float, bool]:
        started = time.perf_counter()
        result = self.request("tools/call", {"name": "search",
                                             "arguments": {"query": query, "mode": mode}})
        return (time.perf_counter() - started) * 1000, bool(result.get("isError"))

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def _in_process(db: Path, mode: str, calls: int) -> list[float]:
    """The same searches called directly (no server): what the MCP layer adds is the rest."""
    from causantic.retrieval.search import search
    from causantic.store import open_store

    with open_store(db, readonly=True) as store:
        search(store, QUERIES[0], mode=mode)  # the first call loads the model
    times = []
    for i in range(calls):
        started = time.perf_counter()
        with open_store(db, readonly=True) as store:
            search(store, QUERIES[i % len(QUERIES)], mode=mode)
        times.append((time.perf_counter() - started) * 1000)
    return times


def run(tiny: bool = False) -> dict[str, Any]:
    """Measure initialize and search latency (see the module docstring)."""
    from bench.corpus import corpus

    size = 300 if tiny else 10_000
    spawns = 1 if tiny else 5
    calls = 4 if tiny else 100
    plain = corpus(size)
    with_vectors = corpus(size, vectors=True)
    with tempfile.TemporaryDirectory(prefix="causantic-bench-mcp-") as tmp:
        env = dict(os.environ)
        env.update(HOME=tmp, CAUSANTIC_HOME=str(Path(tmp) / ".causantic"),
                   CLAUDE_CONFIG_DIR=str(Path(tmp) / ".claude"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # users' interpreters cache bytecode
        rows = []
        archive = REPO_ROOT / "dist" / "causantic.pyz"
        commands = [("python -m causantic", [PYTHON, "-m", "causantic"])]
        if archive.exists():
            commands.append(("python -S causantic.pyz", [PYTHON, "-S", str(archive)]))
        for label, command in commands:
            init_ms, list_ms, call_ms, modern_ms = [], [], [], []
            for _ in range(spawns + 1):  # the first spawn warms caches (archive extraction)
                server = Server(plain.path, env, command)
                try:
                    init_ms.append(server.initialize())
                    list_ms.append(server.since_spawn("tools/list", {}))
                    call_ms.append(server.since_spawn("tools/call", {"name": "stats",
                                                                     "arguments": {}}))
                finally:
                    server.close()
                server = Server(plain.path, env, command)
                try:
                    modern_ms.append(server.modern_handshake())
                finally:
                    server.close()
            for measure, ms, target in (("spawn → initialize", init_ms, ""),
                                        ("spawn → tools/list", list_ms, "< 400 ms idle"),
                                        ("spawn → first tools/call", call_ms, ""),
                                        ("spawn → discover, listen, tools/list", modern_ms,
                                         "< 400 ms idle")):
                ms = ms[1:]
                rows.append({"measure": f"{measure} ({label})",
                             "corpus": f"{plain.chunks:,} chunks", "first_ms": round(ms[0], 1),
                             "median_ms": round(statistics.median(ms), 1),
                             "p95_ms": round(percentile(ms, 95), 1), "target": target})
        for mode, info in (("keyword", plain), ("hybrid", with_vectors)):
            server = Server(info.path, env)
            try:
                server.initialize()
                first, err = server.search(QUERIES[0], mode)
                times = []
                for i in range(calls):
                    ms, err2 = server.search(QUERIES[i % len(QUERIES)] + ("" if i < len(QUERIES)
                                                                          else f" {i}"), mode)
                    err = err or err2
                    times.append(ms)
            finally:
                server.close()
            if err:
                raise RuntimeError(f"search ({mode}) returned a tool error")
            direct = _in_process(info.path, mode, calls)
            rows.append({"measure": f"search ({mode})",
                         "corpus": f"{info.chunks:,} chunks, {info.vectors:,} vectors",
                         "first_ms": round(first, 1), "median_ms": round(statistics.median(times), 1),
                         "p95_ms": round(percentile(times, 95), 1), "target": "p95 < 50 ms",
                         "in_process_median_ms": round(statistics.median(direct), 1)})
    print_table("MCP server latency (raw JSON-RPC over stdio)", rows,
                ["measure", "corpus", "first_ms", "median_ms", "p95_ms", "target",
                 "in_process_median_ms"])
    result = {"spawns": spawns, "calls": calls, "load_average": os.getloadavg()[0], "rows": rows}
    write_result("mcp", result, tiny)
    return result


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.mcp [--tiny]``."""
    return cli_main(run, argv)


if __name__ == "__main__":
    sys.exit(main())
