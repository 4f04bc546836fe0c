"""Write the small sample transcripts bundled under tests/data/transcripts/.

They imitate Claude Code's JSONL (see ../shared/reference/transcript-format.md) for a made-up
project, so a new user without Claude Code history can try causantic, and so tests have a
fixture whose every fact we know. Run: python tests/data/make_samples.py
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).parent / "transcripts" / "-home-dev-acme-api"
CWD = "/home/dev/acme-api"
S1 = "11111111-aaaa-4bbb-8ccc-000000000001"
S2 = "22222222-aaaa-4bbb-8ccc-000000000002"
S3 = "33333333-aaaa-4bbb-8ccc-000000000003"


class Writer:
    def __init__(self, session: str, start: datetime, agent: str = "") -> None:
        self.session, self.t, self.agent = session, start, agent
        self.lines: list[dict] = []
        self.parent: str | None = None
        self.n = 0

    def _env(self, kind: str, **extra) -> dict:
        self.n += 1
        self.t += timedelta(seconds=20)
        uid = f"{self.session[:8]}-{self.agent or 'main'}-{self.n:04d}"
        rec = {"parentUuid": self.parent, "isSidechain": bool(self.agent), "userType": "external",
               "cwd": CWD, "sessionId": self.session, "version": "2.1.29", "gitBranch": "main",
               "type": kind, "uuid": uid, "timestamp": self.t.strftime("%Y-%m-%dT%H:%M:%S.000Z")}
        if self.agent:
            rec["agentId"] = self.agent
        rec.update(extra)
        self.parent = uid
        self.lines.append(rec)
        return rec

    def user(self, text, **extra):
        return self._env("user", message={"role": "user", "content": text}, **extra)

    def say(self, text, msg="m"):
        return self._env("assistant", message={"id": f"msg_{msg}{self.n}", "role": "assistant",
                         "model": "claude-opus-4-5", "content": [{"type": "text", "text": text}]})

    def think(self, text):
        return self._env("assistant", message={"id": f"msg_t{self.n}", "role": "assistant",
                         "content": [{"type": "thinking", "thinking": text, "signature": "x"}]})

    def tool(self, name, inp, result, is_error=False, tur=None):
        tid = f"toolu_{self.session[:4]}{self.agent}{self.n:04d}"
        self._env("assistant", message={"id": f"msg_u{self.n}", "role": "assistant",
                  "content": [{"type": "tool_use", "id": tid, "name": name, "input": inp}]})
        block = {"type": "tool_result", "tool_use_id": tid, "content": result}
        if is_error:
            block["is_error"] = True
        extra = {"toolUseResult": tur} if tur is not None else {}
        self._env("user", message={"role": "user", "content": [block]}, **extra)
        return tid

    def raw(self, rec):
        self.lines.append(rec)

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in self.lines))


def session_one() -> None:
    w = Writer(S1, datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc))
    w.raw({"type": "summary", "summary": "Fix flaky retry backoff test", "leafUuid": "x"})
    w.user("The TestRetryBackoff test in internal/retry is flaky on CI, about one run in five. "
           "Can you find out why and fix it?")
    w.think("Probably a timing assumption in the test.")
    w.say("I'll look at the retry package and run the test repeatedly to reproduce the flake.")
    w.tool("Bash", {"command": "go test ./internal/retry -run TestRetryBackoff -count=50",
                    "description": "Reproduce the flaky test"},
           "--- FAIL: TestRetryBackoff (0.21s)\n    retry_test.go:42: expected at least 200ms "
           "between attempts, got 187ms\nFAIL\nexit status 1", is_error=True)
    w.tool("Read", {"file_path": f"{CWD}/internal/retry/backoff.go"},
           "     1→package retry\n     2→\n     3→func Backoff(attempt int) time.Duration {\n"
           "     4→\treturn base * time.Duration(1<<attempt) + jitter()\n     5→}")
    w.say("The jitter is symmetric (it can be negative), so the delay can drop below the base "
          "the test asserts. The fix is to make jitter non-negative: full jitter added on top of "
          "the exponential base.")
    w.tool("Edit", {"file_path": f"{CWD}/internal/retry/backoff.go",
                    "old_string": "return base * time.Duration(1<<attempt) + jitter()",
                    "new_string": "return base*time.Duration(1<<attempt) + time.Duration(rand.Int63n(int64(base)))"},
           "The file internal/retry/backoff.go has been updated successfully.")
    w.tool("Bash", {"command": "go test ./internal/retry -count=200"},
           "ok  \tacme-api/internal/retry\t4.812s")
    w.say("Fixed: TestRetryBackoff passed 200 runs in a row. Jitter is now always added on top "
          "of the exponential delay, so attempts are never closer than the base interval.")
    w.user("Great. Now audit the HTTP client for places where we retry non-idempotent requests.")
    tid = w.tool("Task", {"description": "Audit retries of non-idempotent requests",
                          "subagent_type": "Explore",
                          "prompt": "Find every place in internal/httpclient that retries POST or PATCH requests."},
                 [{"type": "text", "text": "Found two call sites: CreateInvoice (POST) retries on 503 "
                   "and UpdateCustomer (PATCH) retries on timeout. Both should use an idempotency key."}],
                 tur={"status": "completed", "agentId": "a1b2c3d", "prompt": "Find every place..."})
    del tid
    w.tool("TodoWrite", {"todos": [
        {"content": "Add idempotency keys to CreateInvoice", "status": "in_progress", "activeForm": "Adding keys"},
        {"content": "Stop retrying UpdateCustomer on timeout", "status": "pending", "activeForm": "Stopping"}]},
        "Todos have been modified successfully.")
    w.say("Two risky retries found: CreateInvoice and UpdateCustomer. I added both to the todo list.")
    w.write(ROOT / f"{S1}.jsonl")

    a = Writer(S1, datetime(2026, 3, 2, 9, 4, tzinfo=timezone.utc), agent="a1b2c3d")
    a.user("Find every place in internal/httpclient that retries POST or PATCH requests.")
    a.tool("Grep", {"pattern": "Retry\\(", "path": f"{CWD}/internal/httpclient"},
           "internal/httpclient/invoice.go:88\ninternal/httpclient/customer.go:41")
    a.say("Found two call sites: CreateInvoice (POST) retries on 503 and UpdateCustomer (PATCH) "
          "retries on timeout. Both should use an idempotency key.")
    a.write(ROOT / S1 / "subagents" / "agent-a1b2c3d.jsonl")


def session_two() -> None:
    w = Writer(S2, datetime(2026, 3, 3, 14, 0, tzinfo=timezone.utc))
    w.user("This session is being continued from a previous conversation that ran out of context. "
           "The summary below covers the earlier portion of the conversation.\n\nSummary:\n"
           "1. Fixed the flaky TestRetryBackoff by making jitter non-negative.\n"
           "2. Found risky retries in CreateInvoice and UpdateCustomer.\n"
           "3. Next: add idempotency keys.", isCompactSummary=True, isVisibleInTranscriptOnly=True)
    w.user("<command-name>/review</command-name>\n<command-message>review</command-message>\n"
           "<command-args>internal/httpclient</command-args>")
    w.user("Review the code in internal/httpclient for correctness and style.", isMeta=True)
    w.say("Reviewing internal/httpclient. The invoice client builds requests without a timeout.")
    w.user("Add the idempotency key header to CreateInvoice. Use the staging credentials from .env.")
    w.tool("Bash", {"command": "cat .env"},
           "STRIPE_API_KEY=sk_live_51AbCdEfGhIjKlMnOpQrStUvWx0123456789abcdefGHIJKL\n"
           "DATABASE_URL=postgres://acme:hunter2-very-secret@db.internal:5432/acme\n"
           "AWS_ACCESS_KEY_ID=AKIAQ3EXAMPLE7SAMPLE")
    w.tool("Edit", {"file_path": f"{CWD}/internal/httpclient/invoice.go",
                    "old_string": "req.Header.Set(\"Content-Type\", \"application/json\")",
                    "new_string": "req.Header.Set(\"Content-Type\", \"application/json\")\n"
                                  "req.Header.Set(\"Idempotency-Key\", key)"},
           "The file internal/httpclient/invoice.go has been updated successfully.")
    w.tool("Bash", {"command": "go build ./... && git commit -am 'Add idempotency key to CreateInvoice'"},
           "[main 4f1c2ab] Add idempotency key to CreateInvoice\n 1 file changed, 1 insertion(+)")
    w.say("CreateInvoice now sends an Idempotency-Key header, so a retried POST cannot create a "
          "duplicate invoice. Committed as 4f1c2ab.")
    w.write(ROOT / f"{S2}.jsonl")


def session_three() -> None:
    w = Writer(S3, datetime(2026, 3, 5, 10, 0, tzinfo=timezone.utc))
    w.user("Why does the server take ten seconds to shut down after Ctrl-C?")
    w.tool("Bash", {"command": "go run ./cmd/server & sleep 2; kill -INT %1; time wait"},
           "shutting down...\nflushing telemetry exporter (timeout 10s)\nreal\t0m10.04s")
    w.say("The telemetry exporter blocks shutdown: it waits up to 10 s to flush spans to an "
          "unreachable collector. I'll bound the flush with the shutdown context.")
    w.tool("Edit", {"file_path": f"{CWD}/cmd/server/main.go",
                    "old_string": "exporter.Shutdown(context.Background())",
                    "new_string": "ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)\n"
                                  "defer cancel()\nexporter.Shutdown(ctx)"},
           "The file cmd/server/main.go has been updated successfully.")
    w.say("Shutdown now takes under a second: the exporter flush is capped at 500 ms.")
    w.user("Moving on: unrelated question, which Go version does the Dockerfile use?")
    w.tool("Read", {"file_path": f"{CWD}/Dockerfile"}, "     1→FROM golang:1.23-alpine AS build")
    w.say("The Dockerfile builds with golang:1.23-alpine.")
    w.write(ROOT / f"{S3}.jsonl")


if __name__ == "__main__":
    session_one()
    session_two()
    session_three()
    print(f"wrote samples under {ROOT}")
