"""`causantic hook post-tool-use`: offer a past lesson when a tool call fails the same way.

Registered for PostToolUseFailure on every tool (Claude Code reports failed calls there, with
`error`) and, with `[lessons] bash_output = true`, for PostToolUse on Bash (a command that
exits 0 but prints an error line).
The handler reads the payload, looks the error up (`causantic.lessons.surface`, SQL only) and,
when a past lesson matches well, prints
`{"hookSpecificOutput": {"hookEventName": <event>, "additionalContext": "<causantic-memory
kind="lesson">Seen before in …</causantic-memory>"}}`, at most ~800 characters.

Settings (`[lessons]` in config.toml): `hook = true` (set false to stop the lookups),
`bash_output = false`, `match = "exact" | "message"`, `unresolved = false`,
`builtin_tools = false`.

Also here: `record_injection`, which puts every hook's injected text into the ledger.
"""

from __future__ import annotations

import json
import os

from causantic.claude.hooks import HookResult, _str, context_output, narrow_to_worktree
from causantic.config import Settings
from causantic.markers import wrap_memory

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def registered(settings: Settings, event: str) -> bool:
    """Whether `install` registers the lesson hook for this Claude Code event.

    PostToolUseFailure (failed calls) whenever the hook is on; PostToolUse on Bash (a command
    that exits 0 but prints an error, `… 2>&1 | tail`) only with `[lessons] bash_output = true`:
    it starts a process after every Bash call, and in the replay it made no offer (0 on 83
    successful calls whose output showed error lines).
    """
    if not settings.lessons.hook:
        return False
    return event != "PostToolUse" or settings.lessons.bash_output


def post_tool_use(payload: dict[str, Any], settings: Settings) -> HookResult:
    """Look the failed call's error up among past lessons; inject the best one if it is good."""
    opts = settings.lessons
    if not opts.hook or not settings.db_path.exists():
        return HookResult(record=False)
    # deferred: hook fast path: loaded only when this runs
    from causantic.lessons.surface import error_text

    tool, subject, text = error_text(payload)
    if not text or payload.get("is_interrupt"):
        return HookResult(record=False)
    # deferred: hook fast path: loaded only when this runs
    from causantic.lessons.surface import lookup, wanted_signatures

    if not wanted_signatures(tool, subject, text, opts):  # nothing specific: no database work
        return HookResult(record=False)
    # deferred: hook fast path: loaded only when this runs
    from causantic.store import open_store
    from causantic.transcripts.project import project_for_cwd

    session_id = _str(payload.get("session_id"))
    cwd = _str(payload.get("cwd")) or os.getcwd()
    with open_store(settings.db_path, readonly=True) as store:
        narrow_to_worktree(settings, store.conn, cwd)
        match = lookup(store.conn, tool, subject, text, project=lambda: project_for_cwd(cwd).name,
                       session_id=session_id, options=opts,
                       own_only=settings.memory.own_project)
    if match is None:
        # Most failed calls have no lesson: nothing is written then (hook-status shows offers
        # and failures), which keeps the common path to one indexed read.
        return HookResult(record=False)
    result = HookResult(project=match.project, session_id=session_id or None)
    context = wrap_memory(match.text, "lesson")
    event = _str(payload.get("hook_event_name")) or "PostToolUse"
    result.details.update(lesson=match.lesson.id, exact=match.exact, chars=len(context),
                          lesson_ids=[match.lesson.id],
                          chunk_ids=[c for c in (match.lesson.error_chunk,
                                                 match.lesson.fix_chunk) if c])
    result.output = context_output(event, context)
    return result


def record_injection(settings: Settings, event: str, result: HookResult,
                     session_id: str | None) -> None:
    """Append what a hook just printed to the ledger (one INSERT; never raises)."""
    chunk_ids = result.details.pop("chunk_ids", [])
    lesson_ids = result.details.pop("lesson_ids", [])
    text = result.output or ""
    if text.startswith("{"):
        try:
            text = json.loads(text)["hookSpecificOutput"]["additionalContext"]
        except (ValueError, KeyError, TypeError):
            pass
    try:
        # deferred: hook fast path: loaded only when this runs
        from causantic.store.ledger import record_at

        record_at(str(settings.db_path), event, text,
                  session_id=result.session_id or session_id or "",
                  project=result.project or "", chunk_ids=chunk_ids, lesson_ids=lesson_ids)
    except Exception as exc:  # noqa: BLE001 - an unrecorded injection must not fail the hook
        result.details["ledger"] = f"not recorded: {exc}"
