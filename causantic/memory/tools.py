"""The memory tools of `causantic serve-mcp`: observe, memories, feedback, reflect.

Registered by `mcp_server.build_server` through its `tool` helper; imports mcp and pydantic,
so only the server imports this module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from causantic.config import Settings

if TYPE_CHECKING:
    from causantic.retrieval.scope import OwnProject

WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                        open_world_hint=False)
Type = Literal["instruction", "error", "decision", "code_change", "insight", "procedure",
               "test_result", "general", "tool_output"]


def add_tools(mcp: MCPServer, tool: Callable[..., Any], settings: Settings,
              errors: Callable[[], Any], scoped: Callable[..., str | None],
              own: OwnProject | None) -> None:
    """Register the memory tools on the server (tool(name, annotations) is its decorator).

    ``scoped``/``own``: the server's `[memory] scope` (`causantic.retrieval.scope`); under
    "project", observe files under the session's project, never under every project; under
    "worktree", what the tools read is narrowed to the session's worktree too.
    """

    def writable():
        # deferred: MCP start: a tool's code loads at its first call
        from causantic.store import open_store

        return open_store(settings.db_path)

    @tool("observe", WRITE)
    def observe(
        content: Annotated[str, Field(min_length=1, max_length=4000,
                                      description="One self-contained statement to remember.")],
        observation_type: Annotated[Type, Field(description=(
            "instruction (a standing rule from the user), decision, error (and its fix), "
            "insight / procedure (your synthesis after reflect), code_change, test_result, "
            "general, tool_output"))] = "general",
        importance: Annotated[float | None, Field(ge=1, le=10, description=(
            "Override the type's default importance (instruction 10 ... tool_output 3)."))] = None,
        project: Annotated[str | None, Field(description=(
            "The project it applies to: a name from list-projects, a worktree folder name, or "
            "a path inside it (\".\" = the current one); omit for every project."))] = None,
        cites: Annotated[list[str] | None, Field(description=(
            "Chunk ids the statement rests on (from search/reflect)."))] = None,
    ) -> str:
        """Remember something for future sessions: a user's standing instruction ("always use pnpm"), a decision and its reason, a hard-won fix, or an insight/procedure you drew after `reflect`. Stored locally, shown in session briefings and in search results. An exact repeat is counted, not duplicated."""
        # deferred: heavy: pulls numpy, only needed here
        from causantic.ingest.run import make_redact
        from causantic.memory.observe import observe as run

        origin = "reflection" if observation_type in ("insight", "procedure") and cites else "explicit"
        with errors(), writable() as store:
            project = scoped(store.conn, project, new_ok=True)
            return run(store, content, type=observation_type, importance=importance,
                       project=project or "", cites=cites or (), origin=origin,
                       redact=make_redact(settings), importance_table=settings.memory.importance,
                       model_dir=settings.model_dir,
                       near_days=settings.memory.near_days).text

    @tool("memories")
    def memories(
        project: Annotated[str | None, Field(description=(
            "Only this project (plus global ones): a name, worktree folder name or path."))] = None,
        observation_type: Annotated[Type | None, Field(description="Only this type.")] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="Most memories to list.")] = 30,
    ) -> str:
        """List remembered observations (instructions, decisions, fixes, insights), most important first, with ids for feedback and forget."""
        # deferred: MCP start: a tool's code loads at its first call
        from causantic.memory.recall import list_memories
        from causantic.store import open_store

        with errors(), open_store(settings.db_path, readonly=True) as store:
            if own is not None:
                own.narrow(store.conn)
            return str(list_memories(store, project=scoped(store.conn, project, new_ok=True),
                                     types=[observation_type] if observation_type else (),
                                     limit=limit, new_ok=own is not None)["text"])

    @tool("feedback", WRITE)
    def feedback(
        memory_id: Annotated[str, Field(min_length=4, description="The memory's id (mem_...).")],
        helpful: Annotated[bool, Field(description="true if it helped, false if wrong or harmful.")],
        reason: Annotated[str | None, Field(description="Why, in a few words.")] = None,
    ) -> str:
        """Tell memory whether a remembered observation helped (raises its importance) or was wrong/outdated (lowers it). Effective importance = base + 0.5 x (helpful - harmful); it does not make the memory look recent."""
        # deferred: MCP start: a tool's code loads at its first call
        from causantic.memory.feedback import feedback as run

        with errors(), writable() as store:
            if own is not None:
                own.memory(store.conn, memory_id)
            return str(run(store, memory_id, helpful, reason)["text"])

    @tool("reflect", WRITE)
    def reflect(
        project: Annotated[str, Field(min_length=1, description=(
            "Project name (see list-projects), worktree folder name or path."))],
        focus: Annotated[str | None, Field(description="Only observations about this.")] = None,
    ) -> str:
        """Reflect on a project's recent observations: returns guiding questions and evidence groups (topics, recent errors and fixes, repeated items). Answer them yourself and save each conclusion with observe(observation_type="insight" or "procedure", cites=[chunk ids]). Use when the session briefing says reflection is due."""
        # deferred: MCP start: a tool's code loads at its first call
        from causantic.memory.reflect import reflect as run

        with errors(), writable() as store:
            if own is not None:
                own.narrow(store.conn)  # reflect writes only its mark, never a narrowed table
            return str(run(store, scoped(store.conn, project) or project, focus=focus)["text"])
