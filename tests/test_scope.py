"""`[memory] scope = "project"`: a Claude Code session sees only its own project's memory.

The MCP server is driven by the SDK's stdio client from a folder of one project (as Claude
Code starts it); every tool answers for that project alone, and a refusal names no other
project. The hooks' shared pieces (topic names, lessons) keep to the project too.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from causantic.lessons.surface import lookup
from causantic.store import open_store
from causantic.topics.active import active_topics_line
from causantic.topics.maps import list_topics, show_topic

from .conftest import PYTHON
from .helpers import mcp_client
from .test_mcp import call

CLI_SESSION = "1b3e6441-62e3-4b41-8a0c-9d252f531f7a"  # a session of project cli
OTHERS = ("spotter", "cli")  # project names a napoli-matcha session must never be shown


def _scoped_home(home: Path) -> Path:
    (home / ".causantic").mkdir(mode=0o700, exist_ok=True)
    (home / ".causantic" / "config.toml").write_text('[memory]\nscope = "project"\n')
    folder = home / "work" / "napoli-matcha"  # named like the stored project, a checkout
    (folder / ".git").mkdir(parents=True)
    return folder


def _no_other_project(text: str) -> None:
    assert not any(f"{name} ·" in text or f'"{name}"' in text or f"'{name}'" in text
                   for name in OTHERS), text[:600]


@pytest.mark.anyio
async def test_every_tool_answers_for_the_sessions_project_alone(shared_db_copy: Path,
                                                                  private_home: Path):
    db = shared_db_copy
    folder = _scoped_home(private_home)
    args = ["-m", "causantic", "--db", str(db), "serve-mcp"]
    async with mcp_client(args, db.parent / "server.log", cwd=folder,
                          env={"HOME": str(private_home)}) as session:
        await session.initialize()
        err, text = await call(session, "search", query="git commit pre-commit hook failed")
        assert not err and "napoli-matcha ·" in text
        _no_other_project(text)
        err, text = await call(session, "list-projects")
        assert not err and "napoli-matcha" in text
        _no_other_project(text)
        for tool, args_ in (("recall", {"query": "how was the failing test fixed"}),
                            ("predict", {"context": "the tests fail after a refactor"}),
                            ("reconstruct", {"query": "the session where tests were fixed"}),
                            ("memories", {})):
            err, text = await call(session, tool, **args_)
            assert not err, (tool, text)
            _no_other_project(text)
        for tool, args_ in (("search", {"query": "session", "project": "cli"}),
                            ("recall", {"query": "session", "project": "spotter"}),
                            ("list-sessions", {"project": "cli"}),
                            ("reconstruct", {"project": "spotte"}),  # a near miss: no hints
                            ("topics", {"project": "cli"}),
                            ("memories", {"project": "spotter"})):
            err, text = await call(session, tool, **args_)
            assert err and 'own project "napoli-matcha"' in text, (tool, text)
            _no_other_project(text)
            assert "closest" not in text
        # another project's session is not found from here
        err, text = await call(session, "reconstruct", session_id=CLI_SESSION[:8])
        assert text.startswith(f'No session starting with "{CLI_SESSION[:8]}" in project '
                               '"napoli-matcha"'), text
        _no_other_project(text)
        # forget still needs a criterion: the scope is not one ("forget everything here")
        err, text = await call(session, "forget")
        assert err and "needs at least one of" in text
        err, text = await call(session, "forget", session_id=CLI_SESSION)
        assert err and "no session of project 'napoli-matcha'" in text, text
        # a path inside the project, or ".", is this project
        err, text = await call(session, "list-sessions", project=".")
        assert not err and 'Sessions of "napoli-matcha"' in text
        # observe files under this project, never under every project
        err, text = await call(session, "observe", content="deploys go through make ship")
        assert not err, text
    listed = subprocess.run([PYTHON, "-m", "causantic", "--db", str(db), "memories", "--json",
                             "--sort", "recent"],
                            capture_output=True, text=True, timeout=60)
    mine = [m for m in json.loads(listed.stdout)["memories"]
            if m["text"] == "deploys go through make ship"]
    assert [m["project"] for m in mine] == ["napoli-matcha"]


def test_topics_and_lessons_keep_to_the_project(shared_db_copy: Path):
    db = shared_db_copy
    with open_store(db) as store, store.conn:
        conn = store.conn
        conn.execute("INSERT INTO topics(id, name, centroid) VALUES (1, 'napoli only', x'00'),"
                     " (2, 'mixed with cli words', x'00')")
        conn.execute("INSERT INTO topic_members(chunk_rowid, topic_id, distance) SELECT rowid,"
                     " 1, 0.1 FROM chunks WHERE project = 'napoli-matcha' AND rowid % 2 = 0")
        conn.execute("INSERT INTO topic_members(chunk_rowid, topic_id, distance) SELECT rowid,"
                     " 2, 0.1 FROM chunks WHERE project IN ('napoli-matcha', 'cli')"
                     " AND rowid % 2 = 1")
        conn.execute("INSERT INTO topic_build(id, built_at, model_id, chunks) VALUES"
                     " (1, '2026-01-01T00:00:00Z', 'm', 1)")
    with open_store(db, readonly=True) as store:
        conn = store.conn
        mixed = list_topics(conn, project="napoli-matcha").text
        own = list_topics(conn, project="napoli-matcha", own_only=True).text
        assert "mixed with cli words" in mixed and "cli" in mixed
        assert "napoli only" in own and "mixed with cli words" not in own
        _no_other_project(own)
        with pytest.raises(Exception, match="no topic #2"):
            show_topic(conn, 2, project="napoli-matcha", own_only=True)
        assert "mixed" in active_topics_line(conn, "napoli-matcha", limit=5)
        assert "mixed" not in active_topics_line(conn, "napoli-matcha", limit=5, own_only=True)
        # a lesson of another project is offered only when projects may mix
        offered = None
        for project, tool, subject, error in conn.execute(
                "SELECT project, tool, subject, error FROM lessons WHERE resolved = 1"
                " AND informative = 1 AND project != 'napoli-matcha'").fetchall():
            offered = lookup(conn, tool, subject, error, project="napoli-matcha")
            if offered is not None and offered.lesson.project == project:
                break
        assert offered is not None, "no lesson of another project to test with"
        assert lookup(conn, tool, subject, error, project="napoli-matcha", own_only=True) is None


@pytest.mark.anyio
async def test_a_new_project_is_told_so_without_naming_the_others(shared_db_copy: Path,
                                                                   private_home: Path):
    """A folder memory holds nothing of: the usual "no such project" would list the others."""
    db = shared_db_copy
    _scoped_home(private_home)
    folder = private_home / "work" / "brand-new"
    (folder / ".git").mkdir(parents=True)
    args = ["-m", "causantic", "--db", str(db), "serve-mcp"]
    async with mcp_client(args, db.parent / "server.log", cwd=folder,
                          env={"HOME": str(private_home)}) as session:
        await session.initialize()
        for tool, args_ in (("search", {"query": "tests"}), ("list-sessions", {"project": "."}),
                            ("topics", {}), ("reconstruct", {})):
            err, text = await call(session, tool, **args_)
            assert err and 'nothing of this project ("brand-new") yet' in text, (tool, text)
            _no_other_project(text)
        err, text = await call(session, "memories")
        assert not err
        _no_other_project(text)
        err, text = await call(session, "observe", content="brand-new uses uv, not pip")
        assert not err, text
        err, text = await call(session, "memories")
        assert "brand-new uses uv, not pip" in text
        _no_other_project(text)


@pytest.mark.anyio
async def test_counts_hook_runs_and_tool_texts_speak_of_one_project(shared_db_copy: Path,
                                                                    private_home: Path):
    """`stats` counts the project alone, `hook-status` names no other project (nor its
    session or error), and what the server tells the model no longer offers "all projects"."""
    from causantic.claude import status

    db = shared_db_copy
    folder = _scoped_home(private_home)
    home = private_home / ".causantic"
    status.record(home, "session-start", success=True, duration_ms=20, project="napoli-matcha",
                  session_id="aaaa1111", details={"chars": 900})
    status.record(home, "session-end", success=False, duration_ms=20, project="spotter",
                  session_id="bbbb2222", error="cannot read /home/u/spotter/x.jsonl")
    status.record(home, "pre-compact", success=True, duration_ms=20, project="cli",
                  session_id="cccc3333", details={"chunks": 4})
    args = ["-m", "causantic", "--db", str(db), "serve-mcp"]
    async with mcp_client(args, db.parent / "server.log", cwd=folder,
                          env={"HOME": str(private_home)}) as session:
        started = await session.initialize()
        assert "all projects" not in started.instructions
        assert 'scope = "project"' in started.instructions
        listed = json.dumps([t.model_dump() for t in (await session.list_tools()).tools])
        assert "all projects" not in listed and "every project" not in listed
        assert "this session's project" in listed

        err, text = await call(session, "stats")
        assert not err and text.startswith("Memory of project napoli-matcha at "), text
        with open_store(db, readonly=True) as store:
            (own,) = store.conn.execute(
                "SELECT count(*) FROM chunks WHERE project = 'napoli-matcha'").fetchone()
            (every,) = store.conn.execute("SELECT count(*) FROM chunks").fetchone()
        assert f"- chunks: {own} " in text and own < every
        assert "projects:" not in text
        err, text = await call(session, "stats", project="cli")
        assert err and 'own project "napoli-matcha"' in text

        err, text = await call(session, "hook-status")
        assert not err
        assert "session-start: last ran" in text and "for napoli-matcha session aaaa1111" in text
        _no_other_project(text)
        for leak in ("spotter", "cli", "bbbb2222", "cccc3333", "x.jsonl", "chunks 4"):
            assert leak not in text, (leak, text)
        assert text.count("for another project") == 2
        assert "Failing: session-end" in text
    # the shell still shows every run whole
    shown = subprocess.run([PYTHON, "-m", "causantic", "--db", str(db), "hook-status"],
                           capture_output=True, text=True, timeout=60,
                           env={**os.environ, "HOME": str(private_home)})
    assert "for spotter session bbbb2222" in shown.stdout and "x.jsonl" in shown.stdout
