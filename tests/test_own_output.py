"""Our own output is not memory: a later session that called causantic's search tool (or was
briefed by our hooks) must not quote our answer back as its own memory, nor push the session
that really answered out of the results.

The history is what the Claude Code e2e harness ingests (two real spotter sessions and a
napoli-matcha one, copied unmodified). The later session is built the way Claude Code 2.1
writes it (../shared/e2e/claude-code/README.md, "Echo"): a prompt asking to search memory, the
SessionStart briefing both as an `attachment` line and as the older `isMeta` system-reminder,
an assistant `tool_use` of `mcp__causantic__search` whose `tool_result` holds the tool's real
output (produced here by the real search over the real store), and the model's reply quoting
its first line; plus a sub-agent (its own file under `<session>/subagents/`) that called
`mcp__causantic__recall`. Real SQLite file, real model, real retrieval.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest

from causantic.config import load_settings
from causantic.ingest.run import run_embed, run_ingest
from causantic.markers import wrap_memory
from causantic.retrieval.chains import recall
from causantic.retrieval.reconstruct import briefing, reconstruct
from causantic.retrieval.search import search
from causantic.store import open_store

HISTORY = ["marot__spotter/short.jsonl", "marot__spotter/tool_heavy.jsonl",
           "theogbrand__napoli-matcha/04/22b428133d/0/full.jsonl"]
QUERY = "mix phx.server doesnt start"  # the e2e harness's query B
ANSWERING = "55604662"  # the spotter session where `mix phx.server` was made to start


class _Writer:
    """Writes records in Claude Code 2.1's transcript shape, chained by parentUuid."""

    def __init__(self, session_id: str, cwd: str, agent_id: str = "") -> None:
        self.session_id, self.cwd, self.agent_id = session_id, cwd, agent_id
        self.parent: str | None = None
        self.minute = 0
        self.lines: list[str] = []

    def _envelope(self, rtype: str, **extra: object) -> dict:
        self.minute += 1
        rec: dict = {"parentUuid": self.parent, "isSidechain": bool(self.agent_id),
                     "userType": "external", "cwd": self.cwd, "sessionId": self.session_id,
                     "version": "2.1.197", "gitBranch": "main", "type": rtype,
                     "uuid": str(uuid.uuid4()),
                     "timestamp": f"2026-03-02T10:{self.minute:02d}:00.000Z", **extra}
        if self.agent_id:
            rec["agentId"] = self.agent_id
        self.parent = rec["uuid"]
        return rec

    def add(self, rtype: str, **extra: object) -> dict:
        rec = self._envelope(rtype, **extra)
        self.lines.append(json.dumps(rec))
        return rec

    def user(self, content: object, **extra: object) -> dict:
        return self.add("user", message={"role": "user", "content": content}, **extra)

    def assistant(self, block: dict) -> dict:
        return self.add("assistant", message={
            "model": "claude-opus-4-6", "id": f"msg_{uuid.uuid4().hex[:20]}", "type": "message",
            "role": "assistant", "content": [block], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 12}})

    def tool_call(self, name: str, tool_input: dict, output: str) -> str:
        """An MCP tool call and its result, as Claude Code records them."""
        tool_id = f"toolu_{uuid.uuid4().hex[:24]}"
        self.assistant({"type": "tool_use", "id": tool_id, "name": name, "input": tool_input})
        content = [{"type": "text", "text": output}]
        self.user([{"tool_use_id": tool_id, "type": "tool_result", "content": content}],
                  toolUseResult=content)
        return tool_id

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(self.lines) + "\n")


def _quoting_session(folder: Path, answer: str, recalled: str, briefing_text: str) -> str:
    """Write the later session (and its sub-agent) that called our tools; return its id."""
    sid = str(uuid.uuid4())
    cwd = "/home/dev/work/demo"
    project_dir = folder / "-home-dev-work-demo"
    main = _Writer(sid, cwd)
    main.add("attachment", attachment={"type": "hook_additional_context",
                                       "hookEvent": "SessionStart",
                                       "content": [wrap_memory(briefing_text, "briefing")]})
    main.user("<system-reminder>\nSessionStart hook additional context: "
              + wrap_memory(briefing_text, "briefing") + "\n</system-reminder>", isMeta=True)
    main.user(f"please search memory for {QUERY}")
    main.assistant({"type": "text", "text": "I'll search memory for that."})
    main.tool_call("mcp__causantic__search", {"query": QUERY}, answer)
    main.assistant({"type": "text",
                    "text": "FAKE-MODEL tool result, first line: " + answer.splitlines()[0]})
    # A sub-agent that recalled the same episode through the plugin-named server.
    task_id = f"toolu_{uuid.uuid4().hex[:24]}"
    main.user("ask a helper to recall how the phoenix server was fixed")
    main.assistant({"type": "tool_use", "id": task_id, "name": "Task", "input": {
        "description": "recall the fix", "prompt": "Recall how mix phx.server was fixed",
        "subagent_type": "general-purpose"}})
    agent = _Writer(sid, cwd, agent_id="a1b2c3d4e5f6a7b8")
    agent.user("Recall how mix phx.server was fixed")
    agent.tool_call("mcp__plugin_causantic_causantic__recall", {"query": QUERY}, recalled)
    agent.assistant({"type": "text", "text": "The helper looked it up in memory."})
    agent.write(project_dir / sid / "subagents" / "agent-a1b2c3d4e5f6a7b8.jsonl")
    report = [{"type": "text", "text": "The helper looked it up in memory."}]
    main.user([{"tool_use_id": task_id, "type": "tool_result", "content": report}],
              toolUseResult={"status": "completed", "agentId": "a1b2c3d4e5f6a7b8",
                             "content": report})
    main.assistant({"type": "text", "text": "Done."})
    main.write(project_dir / f"{sid}.jsonl")
    return sid


@pytest.fixture(scope="module")
def echo_store(tmp_path_factory: pytest.TempPathFactory, shared_transcripts: Path) -> dict:
    """History ingested and embedded, our answers taken from it, then the quoting session."""
    folder = tmp_path_factory.mktemp("echo")
    history = folder / "claude" / "history"
    for name in HISTORY:
        target = history / name.replace("/", "__")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(shared_transcripts / name, target)
    settings = load_settings(db=folder / "memory.db", env={"HOME": str(folder)})
    run_ingest(settings, [history])
    run_embed(settings)
    with open_store(settings.db_path, readonly=True) as store:
        before = search(store, QUERY)
        recalled = recall(store, QUERY).text
        brief = briefing(store.conn, "spotter", max_chars=3000)
    later = folder / "claude" / "later"
    sid = _quoting_session(later, before.text, recalled, brief)
    run_ingest(settings, [later])
    run_embed(settings)
    return {"db": settings.db_path, "before": before, "recalled": recalled, "sid": sid}


def _rank(result, session_prefix: str) -> int | None:
    return next((i for i, h in enumerate(result.results) if h.session_id.startswith(session_prefix)),
                None)


def test_a_session_that_called_search_does_not_push_the_answer_out(echo_store: dict) -> None:
    """The issue's test: after ingesting the quoting session, the answering session is still
    found in every mode, and no result of the quoting session is our search output quoted
    back (before the fix, hybrid search dropped the answering session: the quote collapsed
    it as a near-duplicate)."""
    before = echo_store["before"]
    first = _rank(before, ANSWERING)
    assert first is not None, "the history answers the query before anything is quoted"
    quoted = [line for line in before.text.splitlines()[2:] if len(line) > 40]
    with open_store(echo_store["db"], readonly=True) as store:
        for mode in ("hybrid", "keyword", "vector"):
            after = search(store, QUERY, mode=mode)
            rank = _rank(after, ANSWERING)
            # The lookup turn itself repeats the query (prompt, tool call, the model's reply)
            # and may rank above it; the answer must stay among the first results.
            assert rank is not None and rank < 5, (mode, rank, first)
            mine = "\n".join(h.text for h in after.results if h.session_id == echo_store["sid"])
            assert not [line for line in quoted if line in mine], mode


def test_our_tool_output_and_injected_context_are_not_stored(echo_store: dict) -> None:
    """The call stays (what was asked), its output and our briefing do not, in the parent
    session and in its sub-agent."""
    quoted = [line for line in echo_store["before"].text.splitlines()[2:] if len(line) > 40]
    recalled = [line for line in echo_store["recalled"].splitlines() if len(line) > 40]
    assert quoted and recalled
    with open_store(echo_store["db"], readonly=True) as store:
        rows = store.conn.execute("SELECT agent_id, text FROM chunks WHERE session_id = ?",
                                  (echo_store["sid"],)).fetchall()
    text = "\n".join(t for _, t in rows)
    assert {a for a, _ in rows} == {"", "a1b2c3d4e5f6a7b8"}
    assert f"[Tool:mcp__causantic__search] {QUERY}" in text
    assert "[Tool:mcp__plugin_causantic_causantic__recall]" in text
    assert "[Result:mcp__causantic" not in text and "[Result:mcp__plugin_causantic" not in text
    assert "causantic-memory" not in text
    for line in quoted + recalled:
        assert line not in text, line


def test_the_next_briefing_does_not_repeat_our_output(echo_store: dict) -> None:
    """The quoting project's briefing and timeline carry the request, not our answer."""
    quoted = [line for line in echo_store["before"].text.splitlines()[2:] if len(line) > 40]
    with open_store(echo_store["db"], readonly=True) as store:
        brief = briefing(store.conn, "demo", max_chars=6000)
        timeline = reconstruct(store.conn, "demo", session=echo_store["sid"][:8]).text
    assert QUERY in brief
    for text in (brief, timeline):
        assert "causantic-memory" not in text
        for line in quoted:
            assert line not in text, line


def test_collapsing_a_pasted_copy_keeps_the_original(echo_store: dict, tmp_path: Path) -> None:
    """A later prompt that pastes an earlier answer verbatim (and repeats the query, so it
    ranks first) is a near-duplicate of it; the collapse keeps the older chunk, the original."""
    db = tmp_path / "memory.db"
    shutil.copy(echo_store["db"], db)
    with open_store(db, readonly=True) as store:
        original = next(h for h in search(store, QUERY, mode="keyword").results
                        if h.session_id.startswith(ANSWERING))
        # the stored text: a result shows its answer unit, a compacted rendering (issue 12)
        (stored,) = store.conn.execute("SELECT text FROM chunks WHERE id = ?",
                                       (original.chunk_id,)).fetchone()
    body = stored.split("\n", 1)[1]
    sid = str(uuid.uuid4())
    paste = _Writer(sid, "/home/dev/work/notes")
    paste.minute = 40
    paste.user(f"{body}\n\nIs this still why mix phx.server doesnt start?")
    paste.assistant({"type": "text", "text": "Noted."})
    folder = tmp_path / "claude" / "-home-dev-work-notes"
    paste.write(folder / f"{sid}.jsonl")
    settings = load_settings(db=db, env={"HOME": str(tmp_path)})
    run_ingest(settings, [folder])
    run_embed(settings)
    with open_store(db, readonly=True) as store:
        copy = store.conn.execute("SELECT id FROM chunks WHERE session_id = ?", (sid,)).fetchone()
        assert copy is not None
        for mode in ("keyword", "hybrid"):
            ids = [h.chunk_id for h in search(store, QUERY, mode=mode).results]
            assert original.chunk_id in ids and copy[0] not in ids, mode
