"""`causantic serve-mcp`: the memory tools over MCP (stdio), on the official SDK's `MCPServer`.

Tools are thin: typed parameters (the SDK turns them into the JSON schema Claude sees), a
short description that tells Claude when to pick the tool, one call into retrieval, and the
same `text` the CLI's `--json` reports. Expected failures (bad arguments, unknown project,
no memory yet) come back as tool errors (`isError`) with a one-line message the model can act
on; the server itself never stops on a tool failure.

Startup does no work beyond building the tool table: no database is opened and no model is
loaded until a tool needs it, so `initialize` is answered as soon as the SDK is imported.
Tools are plain functions; the SDK runs them in a worker thread, so a slow query (or the
first vector query, which loads the model) never blocks the event loop. Each call opens its
own read-only connection (about 1 ms), so a database replaced or migrated meanwhile is seen.

This module imports mcp and pydantic (about 0.6 s of CPU): only `serve-mcp` imports it, never
a hook, and only in a thread behind `causantic.mcp_front`, which answers the handshake first.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from causantic import __version__
from causantic.config import ANSWER_TOKENS, Settings
from causantic.errors import CausanticError, describe
from causantic.store.db import Store

if TYPE_CHECKING:
    from causantic.retrieval.render import Answer
    from causantic.retrieval.scope import OwnProject

T = TypeVar("T")

INSTRUCTIONS = (
    "Long-term memory of past Claude Code sessions on this machine (all projects), read from "
    "their transcripts. Pick the tool by the question: search = what do we know about X; "
    "recall = how did we solve or decide X (the story, in order); predict = what usually comes "
    "next after X; reconstruct = what happened recently, in session S or in the session where "
    "X. Results quote past sessions and may be stale: check them against the code before "
    "relying on them."
)

Project = Annotated[
    str | None,
    Field(description="Only this project: a name from list-projects, a worktree folder name, "
                      "or a path inside it (\".\" = the current one); omit for all projects."),
]
MaxTokens = Annotated[
    int | None,
    Field(ge=200, le=20000, description=f"Answer budget in tokens (default {ANSWER_TOKENS})."),
]
Limit = Annotated[int | None, Field(ge=1, le=50, description=(
    "Most results (default: as many as the token budget holds)."))]
READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# Claude Code (2.1.1xx on) reads this from a tool's `_meta`: answers up to this size are kept
# whole in the conversation. max_tokens allows 20,000 tokens, about 80,000 characters.
META = {"anthropic/maxResultSizeChars": 100_000}


def build_server(settings: Settings) -> MCPServer:
    """The MCP server with every causantic tool bound to these settings."""
    mcp: MCPServer = MCPServer("causantic", version=__version__, instructions=INSTRUCTIONS)

    def tool(name: str, annotations: ToolAnnotations = READ) -> Callable[[T], T]:
        return mcp.tool(name=name, annotations=annotations, meta=META,  # type: ignore[return-value]
                        structured_output=False)

    def budget(max_tokens: int | None) -> int:
        return max_tokens or settings.search.max_tokens

    own = _own_project(settings)

    def scoped(conn: Any, project: str | None, *, new_ok: bool = False) -> str | None:
        """``project``; under `[memory] scope = "project"` the session's own, and another
        one refused (`causantic.retrieval.scope`)."""
        return project if own is None else own.project(conn, project, new_ok=new_ok)

    @tool("search")
    def search(
        query: Annotated[str, Field(min_length=1, description="Words, identifiers, error text.")],
        project: Project = None,
        limit: Limit = None,
        max_tokens: MaxTokens = None,
        mode: Annotated[
            Literal["hybrid", "keyword", "vector"],
            Field(description="hybrid (default) = keywords + meaning; keyword = exact terms."),
        ] = "hybrid",
    ) -> str:
        """What do we know about X: past discussion, errors, decisions, files, commands, ranked by relevance. Not for "what happened last/recently" (use reconstruct) or "how did we get to X" (use recall)."""
        # deferred: MCP start: a tool's code loads at its first call
        from causantic.memory.commands import attach as attach_memories
        from causantic.retrieval.lessons import attach as attach_lessons
        from causantic.retrieval.search import search as run

        with _store(settings, own) as store:
            project = scoped(store.conn, project)
            result = run(store, query, project=project, limit=limit,
                         max_tokens=budget(max_tokens), mode=mode,
                         cluster_expansion=settings.search.cluster_expansion)
            result = attach_memories(store, result, query, project=project, mode=mode,
                                     settings=settings, max_tokens=budget(max_tokens))
            result = attach_lessons(store.conn, query, project, result)
        return _recorded(settings, "mcp:search", result)

    @tool("recall")
    def recall(
        query: Annotated[str, Field(min_length=1, description="The fix, decision or result to explain.")],
        project: Project = None,
        limit: Limit = None,
        max_tokens: MaxTokens = None,
    ) -> str:
        """How did we solve or decide X: walks the causal chain backwards from the best match and tells the episode in order (problem, attempts, fix). Not for recency questions (use reconstruct)."""
        # deferred: MCP start: a tool's code loads at its first call
        from causantic.memory.commands import attach as attach_memories
        from causantic.retrieval.chains import recall as run
        from causantic.retrieval.lessons import attach as attach_lessons

        with _store(settings, own) as store:
            project = scoped(store.conn, project)
            result = run(store, query, project=project, limit=limit,
                         max_tokens=budget(max_tokens))
            result = attach_memories(store, result, query, project=project, mode="hybrid",
                                     settings=settings, max_tokens=budget(max_tokens))
            result = attach_lessons(store.conn, query, project, result)
        return _recorded(settings, "mcp:recall", result)

    @tool("predict")
    def predict(
        context: Annotated[str, Field(min_length=1, description="The current task, error or step.")],
        project: Project = None,
        limit: Limit = None,
        max_tokens: MaxTokens = None,
    ) -> str:
        """What usually comes next: walks the causal chain forwards from similar past moments (follow-up steps, later errors, what was done after). Use before a familiar multi-step task."""
        # deferred: MCP start: a tool's code loads at its first call
        from causantic.retrieval.chains import predict as run

        with _store(settings, own) as store:
            result = run(store, context, project=scoped(store.conn, project), limit=limit,
                         max_tokens=budget(max_tokens))
        return _recorded(settings, "mcp:predict", result)

    @tool("reconstruct")
    def reconstruct(
        project: Annotated[
            str | None,
            Field(description="Project name (see list-projects), worktree folder name or path; "
                  "left out: session_id's project, else the one Claude Code runs in (for a "
                  "query, any project when memory holds nothing of that one)."),
        ] = None,
        mode: Annotated[
            Literal["timeline", "briefing"],
            Field(description="timeline = chunks in time order; briefing = state + last steps."),
        ] = "timeline",
        session_id: Annotated[
            str | None, Field(description="This session: full id or its first 8+ characters.")
        ] = None,
        previous_session: Annotated[
            bool, Field(description="The session before the newest (or before current_session_id).")
        ] = False,
        current_session_id: Annotated[
            str | None, Field(description="The session you are in, to leave it out.")
        ] = None,
        days_back: Annotated[int | None, Field(ge=1, le=3650, description="Only the last N days.")] = None,
        start: Annotated[str | None, Field(description="From this ISO date/time.")] = None,
        end: Annotated[str | None, Field(description="Up to this ISO date/time (a date: that whole day).")] = None,
        query: Annotated[
            str | None, Field(description="A question about a session (\"what came out of the "
                              "session where we ...\"): answers it from the session of the best "
                              "match (or session_id): how it started, the matching turns, how it "
                              "ended, and (when it chose the session) other sessions' matches in "
                              "the budget left. mode does not apply.")
        ] = None,
        max_tokens: MaxTokens = None,
    ) -> str:
        """What happened recently or in session S, in time order: the tool for "what did we do last time / yesterday / in that session". mode=briefing gives the last session's state (this worktree's when it has one; branch, last request, open todos, errors, files) and its final steps, for resuming work. With query: what happened in the session where X."""
        # deferred: MCP start: a tool's code loads at its first call
        from causantic.retrieval.projects import memory_here, project_here
        from causantic.retrieval.reconstruct import reconstruct as run
        from causantic.transcripts.project import checkout_for_cwd

        with _store(settings, own) as store:
            if own is None and not project and not session_id:  # this folder's, as in the CLI
                project = (memory_here(store.conn, os.getcwd()) if query and query.strip()
                           else project_here(store.conn, os.getcwd()))
            result = run(store, scoped(store.conn, project), query=query, mode=mode,
                         session=session_id,
                         previous_session=previous_session, current_session=current_session_id,
                         days_back=days_back, start=start, end=end,
                         max_tokens=budget(max_tokens),
                         checkout=checkout_for_cwd(os.getcwd()) or None)
        return _recorded(settings, "mcp:reconstruct", result)

    @tool("list-projects")
    def list_projects() -> str:
        """The projects in memory with session and chunk counts and time spans; use the names as `project` in other tools."""
        # deferred: MCP start: a tool's code loads at its first call
        from causantic.retrieval.browse import list_projects as run
        from causantic.retrieval.browse import render_projects

        with _store(settings, own) as store:
            found = run(store.conn)
            if own is not None:
                here = own.name(store.conn)
                found = [p for p in found if p.name == here]
            return render_projects(found)

    @tool("list-sessions")
    def list_sessions(
        project: Annotated[str | None, Field(description=(
            "Project name (see list-projects), worktree folder name or path; left out: the "
            "project Claude Code runs in."))] = None,
        days_back: Annotated[
            int | None, Field(ge=1, le=3650, description="Only sessions active in the last N days.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="Most sessions to list.")] = 30,
    ) -> str:
        """A project's sessions, newest first, with ids, times, sizes and titles; use an id with reconstruct."""
        # deferred: MCP start: a tool's code loads at its first call
        from causantic.retrieval.browse import list_sessions as run
        from causantic.retrieval.browse import render_sessions
        from causantic.retrieval.projects import project_here

        with _store(settings, own) as store:
            if own is not None:
                name = own.project(store.conn, project)
            else:  # this folder's project, as in the CLI
                name = project or project_here(store.conn, os.getcwd())
            return render_sessions(name, run(store.conn, name, days_back=days_back, limit=limit))

    @tool("stats")
    def stats(project: Project = None) -> str:
        """Counts of what memory holds: projects, sessions, chunks, edges, vectors, topics."""
        # deferred: MCP start: a tool's code loads at its first call
        from causantic.retrieval.browse import render_stats
        from causantic.retrieval.browse import stats as run

        with _store(settings, own) as store:
            return render_stats(run(store.conn, scoped(store.conn, project)), str(settings.db_path))

    @tool("topics")
    def topics(
        project: Project = None,
        topic_id: Annotated[
            int | None, Field(ge=1, description="Show this topic's chunks (ids from the list).")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="Most topics (or chunks) to list.")] = 30,
    ) -> str:
        """The topic map of memory: groups of similar past work, each named by its distinctive terms, with size, time span and projects, largest first; with topic_id, that topic's chunks in time order. For an overview of what past work covered."""
        # deferred: MCP start: a tool's code loads at its first call
        from causantic.topics import maps

        with _store(settings, own) as store:
            project = scoped(store.conn, project)
            if topic_id is not None:
                return maps.show_topic(store.conn, topic_id, project=project, limit=limit,
                                       own_only=own is not None).text
            return maps.list_topics(store.conn, project=project, limit=limit,
                                    own_only=own is not None).text

    @tool(
        "forget",
        ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                        open_world_hint=False),
    )
    def forget(
        project: Project = None,
        session_id: Annotated[str | None, Field(description="Only this session (full id).")] = None,
        after: Annotated[
            str | None, Field(description="Only chunks from this ISO date/time on, e.g. 2026-01-31.")
        ] = None,
        before: Annotated[str | None, Field(description="Only chunks before this ISO date/time.")] = None,
        query: Annotated[
            str | None, Field(description="Only chunks similar to this text (see threshold).")
        ] = None,
        threshold: Annotated[
            float, Field(gt=0, le=1, description="Similarity needed with a query, 0-1.")
        ] = 0.6,
        dry_run: Annotated[
            bool, Field(description="true (default) only previews; false deletes for good.")
        ] = True,
        memory_id: Annotated[
            str | None, Field(description="Forget this remembered observation (id from search/memories) instead.")
        ] = None,
    ) -> str:
        """Delete memory by project, session, time range and/or query, e.g. when the user asks to forget something. Previews by default; deletes only with dry_run=false, and leaves tombstones so a re-ingest does not bring it back. Show the preview to the user before deleting."""
        # deferred: MCP start: a tool's code loads at its first call
        from causantic.forget import forget as run
        from causantic.store import open_store

        if not settings.db_path.exists():
            raise ToolError(f"no memory yet at {settings.db_path}; nothing to forget")
        if memory_id:
            # deferred: MCP start: a tool's code loads at its first call
            from causantic.memory.observe import forget_memories

            with _errors(), open_store(settings.db_path, readonly=dry_run) as store:
                if own is not None:
                    own.memory(store.conn, memory_id)
                text = str(forget_memories(store, [memory_id], dry_run=dry_run)["text"])
        else:
            with _errors(), open_store(settings.db_path, readonly=dry_run) as store:
                if any((project, session_id, after, before, query)):  # else forget refuses
                    project = scoped(store.conn, project)
                if own is not None:
                    own.narrow(store.conn)  # other worktrees' memory is neither shown nor deleted
                text = run(store, project=project, session_id=session_id, after=after,
                           before=before, query=query, threshold=threshold, dry_run=dry_run,
                           model_dir=settings.model_dir).text
        if not dry_run:  # a sub-agent's recall made before, not yet injected, may hold what went
            # deferred: MCP start: a tool's code loads at its first call
            from causantic.claude import handoff

            handoff.clear(settings.home)
        return text

    @tool("hook-status")
    def hook_status() -> str:
        """When each causantic hook (session start briefing, background ingest at compaction and session end) last ran and whether it failed. For diagnosing missing memory."""
        # deferred: MCP start: a tool's code loads at its first call
        from causantic.claude import status

        with _errors():
            runs = status.read_status(settings.home)
            if own is None:
                return status.render_status(runs, settings.home)
            if not settings.db_path.exists():
                return status.render_status(runs, settings.home, own_project=own.name(None))
            with _store(settings, own) as store:
                return status.render_status(runs, settings.home, own_project=own.name(store.conn))

    # deferred: heavy: pulls mcp, pydantic, only needed here
    from causantic.memory.tools import add_tools

    add_tools(mcp, tool, settings, _errors, scoped, own)
    return mcp


def _own_project(settings: Settings) -> OwnProject | None:
    """Under `[memory] scope = "project"` (or "worktree"), the project of the folder Claude
    Code started this server in (every tool answers for it alone; under "worktree", its
    worktree of it); else None."""
    if not settings.memory.own_project:
        return None
    # deferred: MCP start: only with this setting
    from causantic.retrieval.scope import OwnProject

    return OwnProject(os.getcwd(), worktree=settings.memory.scope == "worktree")


@contextmanager
def _errors() -> Iterator[None]:
    """Turn failures into tool errors with one line the model can act on."""
    try:
        yield
    except ToolError:
        raise
    except CausanticError as exc:
        raise ToolError(str(exc)) from exc
    except Exception as exc:  # the edge: one line, the server keeps running
        raise ToolError(describe(exc)) from exc


@contextmanager
def _store(settings: Settings, own: OwnProject | None) -> Iterator[Store]:
    """The database, read-only, narrowed to this session's worktree under `[memory] scope =
    "worktree"` (`OwnProject.narrow`)."""
    # deferred: MCP start: a tool's code loads at its first call
    from causantic.store import open_store

    with _errors(), open_store(settings.db_path, readonly=True) as store:
        if own is not None:
            own.narrow(store.conn)
        yield store


def _recorded(settings: Settings, event: str, answer: Answer) -> str:
    """The answer's text, after recording it in the injection ledger (`causantic ledger`)."""
    # deferred: MCP start: a tool's code loads at its first call
    from causantic.store.ledger import record_at

    try:
        record_at(str(settings.db_path), event, answer.text,
                  chunk_ids=[cid for h in answer.results for cid in h.chunk_ids],
                  lesson_ids=[str(r["id"]) for r in answer.lessons or []])
    except Exception:  # noqa: BLE001 - an unrecorded answer is still an answer
        pass
    return answer.text


def serve(settings: Settings) -> None:
    """Run the SDK server on stdin/stdout until the client closes the connection.

    `causantic serve-mcp` runs it behind `causantic.mcp_front.serve`, which answers the
    handshake while this module is still being imported."""
    build_server(settings).run("stdio")
