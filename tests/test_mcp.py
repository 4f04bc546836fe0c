"""`causantic serve-mcp` driven by the official SDK's stdio client, as Claude Code drives it."""

from __future__ import annotations

import json
import subprocess
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
from mcp.client.session import ClientSession

from causantic.claude import handoff

from .conftest import PYTHON
from .helpers import mcp_client

NAPOLI_SESSION = "665369bc-1ebb-4fe8-981f-44a473807022"
EXPECTED_TOOLS = {"search", "recall", "predict", "reconstruct", "list-projects", "list-sessions",
                  "stats", "topics", "forget", "hook-status", "observe", "memories", "feedback",
                  "reflect"}


def server(db: Path) -> AbstractAsyncContextManager[ClientSession]:
    return mcp_client(["-m", "causantic", "--db", str(db), "serve-mcp"], db.parent / "server.log")


async def call(session: ClientSession, name: str, **arguments: object) -> tuple[bool, str]:
    result = await session.call_tool(name, arguments)
    assert len(result.content) == 1 and result.content[0].type == "text"
    return bool(result.is_error), result.content[0].text


def cli_text(db: Path, *args: str, json_text: bool = False) -> str:
    """What the command line answers: the `text` of its --json (query commands) or its
    output (browse commands). The tool must return exactly this."""
    proc = subprocess.run([PYTHON, "-m", "causantic", "--db", str(db), *args,
                           *(["--json"] if json_text else [])],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["text"] if json_text else proc.stdout.rstrip("\n")


@pytest.mark.anyio
async def test_every_tool_answers_over_stdio(shared_db_copy: Path, private_home: Path):
    db = shared_db_copy
    async with server(db) as session:
        init = await session.initialize()
        assert init.server_info.name == "causantic"
        assert "recall" in (init.instructions or "")

        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert EXPECTED_TOOLS <= set(tools)
        for tool in tools.values():
            assert tool.description and len(tool.description.encode()) < 2048, tool.name
            assert tool.input_schema["type"] == "object"
        search_props = tools["search"].input_schema["properties"]
        # No default count: as many results as the token budget holds (issue 12).
        limit = search_props["limit"]
        assert limit["default"] is None
        assert any(o.get("maximum") == 50 for o in limit.get("anyOf", [limit])), limit
        assert tools["search"].input_schema["required"] == ["query"]
        assert tools["forget"].input_schema["properties"]["dry_run"]["default"] is True
        assert tools["forget"].annotations.destructive_hint is True
        assert tools["search"].annotations.read_only_hint is True

        # Thin wrappers: the same text as the command line's --json.
        err, text = await call(session, "search", query="daytona pty streaming", limit=5)
        assert not err and "daytona" in text.lower()
        assert text == cli_text(db, "search", "daytona pty streaming", "--limit", "5",
                                 json_text=True)
        err, text = await call(session, "list-projects")
        assert not err and text == cli_text(db, "list-projects")
        assert {"cli", "napoli-matcha", "spotter"} <= {ln.split()[1] for ln in text.splitlines()[1:]}
        err, text = await call(session, "list-sessions", project="spotter", limit=3)
        assert not err and text == cli_text(db, "list-sessions", "--project", "spotter",
                                            "--limit", "3")
        err, text = await call(session, "stats")
        assert not err and text == cli_text(db, "stats")

        err, text = await call(session, "recall", query="how did we fix the daytona pty log streaming",
                               project="napoli-matcha")
        assert not err and "daytona" in text.lower()
        err, text = await call(session, "predict", context="mix dialyzer type mismatch",
                               project="spotter")
        assert not err and "spotter" in text
        err, text = await call(session, "reconstruct", project="spotter", mode="briefing")
        assert not err and "spotter" in text and "4d5611e5" in text
        err, text = await call(session, "reconstruct", project="spotter",
                               session_id="fa812bfe", max_tokens=600)
        assert not err and "fa812bfe" in text and len(text) < 600 * 4
        err, alone = await call(session, "reconstruct", session_id="fa812bfe", max_tokens=600)
        assert not err and alone == text  # a session id names its project
        # A question about a session: the tool takes it, and answers as the command line does.
        assert "query" in tools["reconstruct"].input_schema["properties"]
        question = "handleClaudeCodeSessionEnd markSessionEnded batch"
        err, text = await call(session, "reconstruct", project="cli", query=question,
                               max_tokens=1500)
        assert not err and "# Session 062a8bdd of project cli" in text
        assert "## Matching turn" in text
        assert text == cli_text(db, "reconstruct", question, "--project", "cli",
                                "--max-tokens", "1500", json_text=True)
        err, text = await call(session, "hook-status")
        assert not err and text.startswith("Hook status")
        err, text = await call(session, "topics", project="spotter")
        assert not err and text == cli_text(db, "topics", "--project", "spotter")

        # forget previews, then deletes only when told.
        err, text = await call(session, "forget", session_id=NAPOLI_SESSION)
        assert not err and text.startswith("Dry run: 33 chunks in 1 session")
        err, text = await call(session, "list-sessions", project="napoli-matcha")
        assert NAPOLI_SESSION in text
        # A sub-agent's recall not yet injected may hold what is forgotten: it goes too.
        waiting = handoff.put(private_home / ".causantic", "s1", "p1", "Explore", "daytona")
        err, text = await call(session, "forget", session_id=NAPOLI_SESSION, dry_run=False)
        assert not err and text.startswith("Forgot 33 chunks")
        assert waiting and not (private_home / ".causantic" / handoff.FOLDER / "s1").exists()
        err, text = await call(session, "list-sessions", project="napoli-matcha")
        assert not err and NAPOLI_SESSION not in text

        # Bad arguments are tool errors; the server keeps serving.
        bad = [
            ("search", {"query": ""}, "at least 1 character"),
            ("search", {"query": "x", "limit": 500}, "less than or equal to 50"),
            ("search", {}, "query"),
            ("list-sessions", {"project": "no-such-project"}, "no project 'no-such-project'"),
            ("reconstruct", {"project": "spotter", "mode": "everything"}, "timeline"),
            ("reconstruct", {"project": "spotter", "session_id": "abc"}, "8"),
            ("reconstruct", {}, "which has no memory; name a project (most recent: "),
            ("reconstruct", {"previous_session": True, "query": "x"}, "name a project or a session"),
            ("forget", {}, "needs at least one of"),
            ("forget", {"project": "spotter", "before": "yesterday-ish"}, "ISO date"),
            ("no-such-tool", {}, "Unknown tool"),
        ]
        for name, arguments, message in bad:
            err, text = await call(session, name, **arguments)
            assert err and message in text, (name, arguments, text)
        err, text = await call(session, "stats")
        assert not err


@pytest.mark.anyio
async def test_reconstruct_and_list_sessions_default_to_the_folder_claude_code_runs_in(
        shared_db: Path, tmp_path: Path):
    """As on the command line: left out, the project is the one of the server's folder (where
    Claude Code started it); a question is answered from any project when that folder has none."""
    checkout = tmp_path / "work" / "spotter"  # a checkout named like the stored project
    (checkout / ".git").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    args = ["-m", "causantic", "--db", str(shared_db), "serve-mcp"]
    async with mcp_client(args, tmp_path / "a.log", cwd=checkout) as session:
        await session.initialize()
        err, text = await call(session, "reconstruct", mode="briefing", max_tokens=800)
        assert not err and text.startswith("# Briefing: spotter, last session "), text
        err, text = await call(session, "list-sessions")
        assert not err and text.startswith('Sessions of "spotter"'), text
    async with mcp_client(args, tmp_path / "b.log", cwd=elsewhere) as session:
        await session.initialize()
        err, text = await call(session, "reconstruct", query="fish shell completions",
                               max_tokens=800)
        assert not err and "\n# Session 61cb3ba8 of project cli (" in text, text  # keyword only
        err, text = await call(session, "list-sessions")
        assert err and "project 'elsewhere', which has no memory" in text


@pytest.mark.anyio
async def test_without_a_database_tools_say_what_to_do(tmp_path: Path):
    """initialize needs nothing: no database, no model; tools then explain the next step."""
    async with server(tmp_path / "missing.db") as session:
        init = await session.initialize()
        assert init.server_info.name == "causantic"
        err, text = await call(session, "search", query="anything")
        assert err and "causantic ingest" in text
        err, text = await call(session, "hook-status")
        assert not err and "no hook has run yet" in text
    assert not (tmp_path / "missing.db").exists()
