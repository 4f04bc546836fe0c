"""Claude Code hook handlers: `causantic hook session-start|user-prompt-submit|pre-tool-use|subagent-start|pre-compact|session-end|subagent-stop|post-tool-use`.

Contract (see ../shared/reference/claude-code-integration.md):

- Input is one JSON object on stdin. Empty, malformed, non-object or oversized input (over
  8 MiB) is treated as `{}`; a terminal on stdin is not read; reading gives up after 2 s.
- Every handler exits 0, whatever happens: a broken memory must never break Claude Code.
  Failures are recorded in the hook status file (`causantic hook-status`) and, with a
  traceback, in `<home>/logs/hooks.log`; nothing is printed on failure.
- session-start prints `{"hookSpecificOutput": {"hookEventName": "SessionStart",
  "additionalContext": …}}` (or the bare text with `[hooks] session_start_output = "text"`,
  for Claude Code versions that report a hook error on JSON from SessionStart) holding a
  briefing on the session's project, at most `session_start_chars` characters including
  the `<causantic-memory>` marker that keeps our own ingest from reading it back. Pure SQL:
  this path imports neither numpy, onnxruntime nor mcp. After a compaction (source
  `compact`) the briefing is of the *current* session, never another one: its transcript is
  ingested first (waiting up to `COMPACT_WAIT_S` for the pre-compact worker, and no longer
  than `COMPACT_BUDGET_S` in all: a busy database leaves it to a background worker), and
  nothing is printed when the session is still not in memory.
- pre-compact and session-end start a detached background worker (`hook ingest-worker`) that
  ingests the transcript and its sub-agent files, then embeds new chunks when the model is
  available, and return at once. Per transcript file at most one worker ingests and one
  waits (two `flock`s under `<home>/locks/`): a third arrival skips, because the waiting
  worker starts after the running one and will read everything written by then. Embedding
  follows the same rule for the whole store (one embeds, one waits), which bounds memory.
  A transcript that does not exist (`claude mcp list` ends a session that never wrote one)
  is recorded as a skip, not a failure.
- subagent-stop does the same for a sub-agent that finished (they run in the background in
  recent Claude Code versions, so the parent's session-end can come first): the parent
  transcript, its `<session>/subagents/` folder and the hook's `agent_transcript_path`.
- user-prompt-submit is off unless `[hooks] user_prompt_submit = true`; then it injects a
  keyword recall of at most `prompt_chars` characters, only for strong matches (see
  `causantic.retrieval.prompt`).
- pre-tool-use (PreToolUse on the Agent / Task tool) and subagent-start are off unless
  `[hooks] subagent_recall = true`; then the first recalls for the sub-agent's task as
  user-prompt-submit recalls for a prompt (the session's own chunks included: the sub-agent
  has none of its context) and prints nothing, and the second injects that recall into the
  sub-agent as it starts (`causantic.claude.handoff` pairs them).
- a session whose folder is kept out of memory (`[ingest] exclude`, a `.nocausantic` file:
  `causantic.ingest.exclude`) gets nothing from any hook: no briefing, no recall, no
  lesson, no ingest; the hook status records why.
- post-tool-use (PostToolUse on Bash, PostToolUseFailure) offers a past lesson for the error
  just seen (`causantic.claude.lesson_hook`); on a `compact` session start the briefing opens
  with what the compaction summary dropped (`causantic.lessons.compact`). Whatever a hook
  prints is recorded in the injection ledger (`causantic ledger`).
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from pathlib import Path

from causantic.claude import status
from causantic.claude.events import EVENTS
from causantic.config import HARD_INJECTION_CAP, Settings, load_settings
from causantic.markers import wrap_memory

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    from typing import Any

MAX_STDIN_BYTES = 8 << 20
STDIN_TIMEOUT_S = 2.0
#: How long a queued background ingest waits for the running one before giving up.
WORKER_WAIT_S = 600.0
#: How long the briefing after a compaction waits for the pre-compact worker's ingest ...
COMPACT_WAIT_S = 5.0
#: ... and how long, from the start, it may spend ingesting (Claude Code's timeout: 10 s).
COMPACT_BUDGET_S = 6.0
SHORTENED = "\n[… briefing shortened to fit]"
#: The prompt hook reads at most this much of a prompt (head and tail) ...
PROMPT_SCAN_CHARS = 4000
#: ... and waits at most this long for a locked database (installed timeout: 5 s).
PROMPT_BUSY_MS = 1000


class HookResult:
    """What a handler did: its stdout (None = print nothing) and what to record.

    A plain class, not a dataclass: defining a dataclass costs ~0.5 ms at import, and this
    module is on every hook's path.
    """

    def __init__(
        self,
        output: str | None = None,
        project: str | None = None,
        session_id: str | None = None,
        details: dict[str, Any] | None = None,
        record: bool = True,
    ) -> None:
        self.output = output
        self.project = project
        self.session_id = session_id
        self.details: dict[str, Any] = details if details is not None else {}
        self.record = record


class HookInputError(Exception):
    """The hook input lacks what the handler needs (recorded, never shown to Claude Code)."""


# -- entry point ---------------------------------------------------------------------------


def run(argv: list[str], db: str | None = None) -> int:
    """Run `causantic hook <event> …`; always returns 0 for the four Claude Code events."""
    event = argv[0] if argv else ""
    if event == "ingest-worker":
        return worker_main(argv[1:], db)
    started = time.perf_counter()
    payload = read_payload()
    session_id = _str(payload.get("session_id")) or None
    settings: Settings | None = None
    try:
        settings = load_settings(db)
        handler = HANDLERS[event]
        kept_out = _kept_out(payload, settings)
        result = (HookResult(details={"skipped": f"kept out of memory: {kept_out}"})
                  if kept_out else handler(payload, settings))
        if result.output:
            _write_stdout(result.output)
            # deferred: hook fast path: loaded only when this runs
            from causantic.claude.lesson_hook import record_injection

            record_injection(settings, event, result, session_id)
        if result.record:
            status.record(
                settings.home,
                event,
                success=True,
                duration_ms=(time.perf_counter() - started) * 1000,
                project=result.project,
                session_id=result.session_id or session_id,
                details=result.details,
            )
    except (Exception, KeyboardInterrupt) as exc:  # the edge: a hook never fails Claude Code
        _record_failure(settings, event, started, session_id, exc)
    return 0


def read_payload(fd: int = 0, timeout: float = STDIN_TIMEOUT_S) -> dict[str, Any]:
    """The hook input object from stdin, or {} for anything else (see the module docstring)."""
    try:
        if os.isatty(fd):
            return {}
        parts: list[bytes] = []
        size = 0
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return {}
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                return {}
            data = os.read(fd, 1 << 16)
            if not data:
                break
            size += len(data)
            if size > MAX_STDIN_BYTES:
                return {}
            parts.append(data)
        obj = json.loads(b"".join(parts).decode("utf-8", "replace"))
    except (OSError, ValueError, RecursionError):
        return {}
    return obj if isinstance(obj, dict) else {}


# -- session-start -------------------------------------------------------------------------


def session_start(payload: dict[str, Any], settings: Settings) -> HookResult:
    """A briefing on the session's project, wrapped in the memory marker, under the cap."""
    # deferred: hook fast path: loaded only when this runs
    from causantic.transcripts.project import project_for_cwd

    session_id = _str(payload.get("session_id"))
    cwd = _str(payload.get("cwd")) or os.getcwd()
    project = project_for_cwd(cwd).name
    result = HookResult(project=project, session_id=session_id or None)
    source = result.details["source"] = _str(payload.get("source")) or "unknown"
    compacted = source == "compact"
    if compacted and session_id:
        ingest = _ingest_current(settings, _str(payload.get("transcript_path")), session_id,
                                 time.monotonic() + COMPACT_BUDGET_S)
        if ingest:
            result.details["ingest"] = ingest
    if not settings.db_path.exists():
        result.details["briefing"] = "no memory yet"
        return result
    cap = min(settings.hooks.session_start_chars, HARD_INJECTION_CAP)
    room = cap - len(wrap_memory("", "briefing"))
    restored = ""
    if compacted:  # add back what the compaction summary dropped (causantic.lessons.compact)
        restored = _after_compaction(settings, session_id, _str(payload.get("transcript_path")),
                                     room // 3)
        room -= len(restored) + 2 if restored else 0
    if compacted and not session_id:
        text = ""
    else:  # after compaction the session goes on: brief it on itself, never on another
        result.project, text = _briefing(settings, cwd, session_id, room, current=compacted)
    if restored:
        result.details["restored_chars"] = len(restored)
        text = restored + "\n\n" + clip(text, room) if text else restored
    if not text:
        result.details["briefing"] = "nothing for this project"
        return result
    text = clip(text, room)
    context = wrap_memory(text, "briefing")
    result.details["chars"] = len(context)
    if settings.hooks.session_start_output == "text":
        result.output = context
    else:
        result.output = context_output("SessionStart", context)
    return result


def _after_compaction(settings: Settings, session_id: str, transcript: str, max_chars: int) -> str:
    """What the compaction summary dropped of this session's state (`lessons.compact`)."""
    # deferred: hook fast path: loaded only when this runs
    from causantic.lessons.compact import restore_block
    from causantic.store import open_store

    with open_store(settings.db_path, readonly=True) as store:
        return restore_block(store.conn, session_id, os.path.expanduser(transcript), max_chars)


MORE = "\n\n(More from memory: the causantic MCP tools search, recall, predict, reconstruct.)"


def _briefing(settings: Settings, cwd: str, session_id: str, max_chars: int,
              current: bool = False) -> tuple[str, str]:
    """(the project of `cwd` as memory knows it, its briefing text or '' when memory holds
    nothing of it).

    With `current`, the briefing is of session `session_id` itself (in the project memory
    files it under), or '' when that session is not in memory.
    """
    # deferred: hook fast path: loaded only when this runs
    from causantic.retrieval.projects import project_at
    from causantic.retrieval.reconstruct import briefing
    from causantic.store import open_store
    from causantic.store import projects as project_store  # loaded already by project_at
    from causantic.transcripts.project import checkout_for_cwd  # loaded already by project_at

    with open_store(settings.db_path, readonly=True) as store:
        conn = store.conn
        project = project_at(conn, cwd)
        narrow_to_worktree(settings, conn, cwd, project)
        if current:
            filed_under = project_store.session_project(conn, session_id)
            if filed_under is None:
                return project, ""
            project = filed_under
        if not project_store.has_chunks(conn, project):
            from causantic.memory.briefing import briefing_block  # remembered before any session

            memories = briefing_block(conn, project, max_chars - len(MORE))
            return project, memories + MORE if memories else ""
        topics = ""
        if _has_topics(conn):
            from causantic.topics.active import active_topics_line  # SQL only

            topics = active_topics_line(conn, project,
                                        own_only=settings.memory.own_project)
            topics = "\n\n" + clip(topics, max_chars // 4) if topics else ""  # briefing first
        from causantic.memory.briefing import briefing_block  # SQL only

        memories = briefing_block(conn, project, max_chars // 3)
        memories = memories + "\n\n" if memories else ""
        room = max_chars - len(MORE) - len(topics) - len(memories)
        if current:
            text = briefing(conn, project, max_chars=room, session=session_id).strip()
        else:
            text = briefing(conn, project, max_chars=room, exclude_session=session_id or None,
                            checkout=checkout_for_cwd(cwd) or None).strip()
    if not text and not memories:
        return project, ""
    if text and memories:
        return project, text + "\n\n" + memories.rstrip("\n") + topics + MORE
    return project, (text or memories.rstrip("\n")) + topics + MORE


def _has_topics(conn: Any) -> bool:
    # deferred: hook fast path: loaded only when this runs
    from causantic.store.topic_members import any_members

    return any_members(conn)


def _ingest_current(settings: Settings, transcript: str, session_id: str,
                    deadline: float) -> str:
    """Ingest the current session's transcript now, after the pre-compact worker if it runs.

    Returns what happened, for the hook status. Nothing here may run past `deadline`, or
    Claude Code drops the briefing: if the worker still runs then, the briefing is made of
    what is stored (the worker finishes the rest); if another process keeps the database
    locked (a large `causantic ingest`), a background worker is left to ingest the
    transcript once it is free. Transcripts earlier workers left pending stay for workers.
    """
    if not transcript:
        return ""
    path = Path(os.path.expanduser(transcript)).absolute()
    if not path.is_file():
        return ""
    # deferred: hook fast path: loaded only when this runs
    from causantic.claude import deferred
    from causantic.errors import DatabaseBusy
    from causantic.fsutil import file_lock
    from causantic.ingest.run import run_ingest

    lock = _ingest_lock(settings, path)
    wait = min(COMPACT_WAIT_S, max(0.0, deadline - time.monotonic()))
    with file_lock(lock.with_name(lock.name + ".running"), timeout=wait) as held:
        if not held:
            return "the pre-compact worker is still ingesting"
        try:
            run_ingest(settings, _with_sub_agents(path), deadline=deadline)
            deferred.done(settings.home, path)
            return "ingested"
        except DatabaseBusy:
            pass  # the worker starts below, once this lock is free for it to take
    spawn_detached(worker_command(settings, "pre-compact", path, session_id),
                   status.log_path(settings.home))
    return "database busy: left to a background worker"


def clip(text: str, max_chars: int) -> str:
    """Cut text to max_chars at a line boundary, with a marker (a safety net under the cap)."""
    if len(text) <= max_chars:
        return text
    room = max(0, max_chars - len(SHORTENED))
    cut = text[:room]
    line = cut.rfind("\n")
    if line > room // 2:
        cut = cut[:line]
    return cut.rstrip() + SHORTENED


# -- user-prompt-submit --------------------------------------------------------------------


def user_prompt_submit(payload: dict[str, Any], settings: Settings) -> HookResult:
    """Keyword recall for the prompt, only when switched on and only for strong matches."""
    if not settings.hooks.user_prompt_submit:
        return HookResult(record=False)
    # deferred: hook fast path: loaded only when this runs
    from causantic.transcripts.project import project_for_cwd

    session_id = _str(payload.get("session_id"))
    cwd = _str(payload.get("cwd")) or os.getcwd()
    result = HookResult(project=project_for_cwd(cwd).name, session_id=session_id or None)
    prompt = _focus(_str(payload.get("prompt")).strip())
    if len(prompt) < 8 or prompt.startswith("/") or not settings.db_path.exists():
        result.details["recall"] = "skipped"
        return result
    context = _recall(settings, prompt, cwd, session_id or None, result)
    if not context:
        return result
    result.details["chars"] = len(context)
    result.output = context_output("UserPromptSubmit", context)
    return result


def _recall(settings: Settings, prompt: str, cwd: str, exclude_session: str | None,
            result: HookResult) -> str:
    """Keyword recall for a prompt (`causantic.retrieval.prompt`), wrapped as memory and
    capped at `[hooks] prompt_chars`; '' when no match is strong enough. Sets the result's
    project and match count."""
    # deferred: hook fast path: loaded only when this runs
    from causantic.retrieval.projects import project_at
    from causantic.retrieval.prompt import prompt_recall
    from causantic.store import open_store

    cap = min(settings.hooks.prompt_chars, HARD_INJECTION_CAP)
    room = cap - len(wrap_memory("", "recall"))
    with open_store(settings.db_path, readonly=True, busy_timeout_ms=PROMPT_BUSY_MS) as store:
        result.project = project_at(store.conn, cwd)
        narrow_to_worktree(settings, store.conn, cwd, result.project)
        recall = prompt_recall(
            store.conn,
            prompt,
            project=result.project,
            exclude_session=exclude_session,
            max_chars=room,
            min_coverage=settings.hooks.prompt_min_coverage,
        )
    result.details["matches"] = recall.matches
    return wrap_memory(clip(recall.text, room), "recall") if recall.text else ""


def _focus(prompt: str) -> str:
    """The part of a prompt recall looks at: all of it, or for a long paste its head and its
    tail (where the question usually is). Keeps the hook's time flat in the prompt's size:
    a 4 MB prompt took 25 s before."""
    if len(prompt) <= PROMPT_SCAN_CHARS:
        return prompt
    half = PROMPT_SCAN_CHARS // 2
    return prompt[:half] + "\n" + prompt[-half:]


# -- sub-agents: recall for the task ------------------------------------------------------


def pre_tool_use(payload: dict[str, Any], settings: Settings) -> HookResult:
    """PreToolUse on the Agent (Task) tool: keyword recall for the sub-agent's task, left for
    its SubagentStart (`causantic.claude.handoff`). Prints nothing: the call goes on as it is,
    and the parent, whose context this would reach, does not need it."""
    if not settings.hooks.subagent_recall:
        return HookResult(record=False)
    # deferred: hook fast path: loaded only when this runs
    from causantic.claude import handoff
    from causantic.transcripts.project import project_for_cwd

    session_id = _str(payload.get("session_id"))
    cwd = _str(payload.get("cwd")) or os.getcwd()
    tool_input = payload.get("tool_input")
    task = tool_input if isinstance(tool_input, dict) else {}
    result = HookResult(project=project_for_cwd(cwd).name, session_id=session_id or None)
    prompt = _focus(_str(task.get("prompt")).strip())
    context = ""
    if len(prompt) >= 8 and settings.db_path.exists():
        context = _recall(settings, prompt, cwd, None, result)
    handoff.put(settings.home, session_id, _str(payload.get("prompt_id")),
                _str(task.get("subagent_type")), context)
    result.details["chars"] = len(context)
    return result


def subagent_start(payload: dict[str, Any], settings: Settings) -> HookResult:
    """SubagentStart: the recall the Agent call's pre-tool-use left for this sub-agent."""
    if not settings.hooks.subagent_recall:
        return HookResult(record=False)
    # deferred: hook fast path: loaded only when this runs
    from causantic.claude import handoff

    session_id = _str(payload.get("session_id"))
    context = handoff.take(settings.home, session_id, _str(payload.get("prompt_id")),
                           _str(payload.get("agent_type")))
    result = HookResult(session_id=session_id or None,
                        details={"recall": "none left" if context is None else len(context)})
    if context:
        result.output = context_output("SubagentStart", context)
    return result


# -- pre-compact / session-end: detached background ingest --------------------------------


def background_ingest(payload: dict[str, Any], settings: Settings, event: str,
                      also: Path | None = None) -> HookResult:
    """Start a detached worker that ingests the transcript; return without waiting for it."""
    raw = _str(payload.get("transcript_path"))
    if not raw:
        raise HookInputError("the hook input has no transcript_path")
    path = Path(os.path.expanduser(raw)).absolute()
    if not path.is_file():
        if also is not None and also.is_file():
            path, also = also, None
        else:  # e.g. `claude mcp list`: a session that ended without writing a transcript
            return HookResult(details={"skipped": f"no transcript at {path}"})
    argv = worker_command(settings, event, path, _str(payload.get("session_id")), also)
    spawn_detached(argv, status.log_path(settings.home))
    # The worker records the outcome under this hook's name when it finishes.
    return HookResult(record=False)


def pre_compact(payload: dict[str, Any], settings: Settings) -> HookResult:
    """PreCompact (manual or auto): ingest what is about to be compacted, in the background."""
    return background_ingest(payload, settings, "pre-compact")


def session_end(payload: dict[str, Any], settings: Settings) -> HookResult:
    """SessionEnd (1.5 s budget in Claude Code): ingest the finished session in the background."""
    return background_ingest(payload, settings, "session-end")


def subagent_stop(payload: dict[str, Any], settings: Settings) -> HookResult:
    """SubagentStop: ingest the sub-agent's transcript with its parent's, in the background."""
    raw = _str(payload.get("agent_transcript_path"))
    agent = Path(os.path.expanduser(raw)).absolute() if raw else None
    return background_ingest(payload, settings, "subagent-stop", agent)


def worker_command(settings: Settings, event: str, path: Path, session_id: str,
                   also: Path | None = None) -> list[str]:
    """The command line of the background worker for one transcript (and one more file)."""
    # deferred: hook fast path: loaded only when this runs
    from causantic.claude.launcher import self_command

    argv = self_command() + ["--db", str(settings.db_path), "hook", "ingest-worker",
                             "--event", event]
    if session_id:
        argv += ["--session", session_id]
    if also is not None:
        argv += ["--also", str(also)]
    return argv + ["--", str(path)]


def spawn_detached(argv: list[str], log: Path) -> int:
    """Start argv in a new session, stdin from /dev/null, output appended to `log`; return its pid.

    The child holds none of our pipes, so Claude Code sees the hook finish as soon as this
    process exits; the child then belongs to init and is never waited for.
    """
    # deferred: hook fast path: loaded only when this runs
    from causantic.fsutil import open_private_append

    log_fd = open_private_append(log)
    try:
        if hasattr(os, "posix_spawn"):
            return os.posix_spawn(
                argv[0],
                argv,
                dict(os.environ),
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_DUP2, log_fd, 1),
                    (os.POSIX_SPAWN_DUP2, log_fd, 2),
                ],
                setsid=True,
            )
        import subprocess  # pragma: no cover - systems without posix_spawn

        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd,
                                start_new_session=True, close_fds=True)
        return proc.pid
    finally:
        os.close(log_fd)


def worker_main(argv: list[str], db: str | None) -> int:
    """`causantic hook ingest-worker --event E [--session S] -- PATH` (internal)."""
    # deferred: hook fast path: loaded only when this runs
    import argparse

    parser = argparse.ArgumentParser(prog="causantic hook ingest-worker")
    parser.add_argument("--event", default="session-end")
    parser.add_argument("--session", default="")
    parser.add_argument("--also", type=Path, help="one more transcript (a sub-agent's)")
    parser.add_argument("path")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    settings: Settings | None = None
    try:
        settings = load_settings(db)
        outcome = ingest_locked(settings, Path(args.path), args.session, args.also)
        if outcome is not None:
            project = outcome.pop("project", None)
            status.record(settings.home, args.event, success=True,
                          duration_ms=(time.perf_counter() - started) * 1000,
                          project=project, session_id=args.session or None, details=outcome)
    except BaseException as exc:  # noqa: BLE001 - a worker records, it never raises
        _record_failure(settings, args.event, started, args.session or None, exc)
        return 1
    return 0


def ingest_locked(settings: Settings, path: Path, session_id: str = "",
                  also: Path | None = None) -> dict[str, Any] | None:
    """Ingest one transcript (and its sub-agent folder), then embed what has no vectors yet.

    Both steps let one worker run and one wait (per transcript for ingest, one for the whole
    store for embedding, which keeps memory bounded); a worker that finds another already
    waiting skips the step, because the waiting one starts after the running one and so sees
    everything there is by then. Returns what was done, or None when the ingest was skipped.

    Raises
    ------
    TimeoutError : the running worker held a step for longer than WORKER_WAIT_S.
    """
    out = _one_running_one_waiting(_ingest_lock(settings, path),
                                   lambda: _ingest(settings, path, session_id, also))
    if out is None:
        return None
    vectors = _one_running_one_waiting(settings.home / "locks" / "embed",
                                       lambda: _embed_pending(settings))
    out.update({"vectors": "queued behind another worker"} if vectors is None else vectors)
    return out


def _ingest_lock(settings: Settings, path: Path) -> Path:
    """The lock name (without .running/.queued) for ingesting one transcript file."""
    # deferred: hook fast path: loaded only when this runs
    import hashlib

    key = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:16]
    return settings.home / "locks" / f"ingest-{key}"


def _one_running_one_waiting(lock: Path, step):
    """Run `step` under `<lock>.running`, queueing on `<lock>.queued`; None if one queues already."""
    # deferred: hook fast path: loaded only when this runs
    import contextlib

    # deferred: hook fast path: loaded only when this runs
    from causantic.fsutil import file_lock

    with contextlib.ExitStack() as queued:
        if not queued.enter_context(file_lock(lock.with_name(lock.name + ".queued"), timeout=0)):
            return None
        with file_lock(lock.with_name(lock.name + ".running"), timeout=WORKER_WAIT_S) as running:
            if not running:
                raise TimeoutError(
                    f"another worker held {lock.name} for over {WORKER_WAIT_S:.0f} s; gave up"
                )
            queued.close()  # from here on, a new arrival may queue behind us
            return step()


def _ingest(settings: Settings, path: Path, session_id: str,
            also: Path | None = None) -> dict[str, Any]:
    paths = _with_sub_agents(path)
    folder = path.with_suffix("")
    if also is not None and also.is_file() and folder not in also.parents:
        paths.append(also)
    report = _ingest_or_defer(settings, path, paths, session_id)
    out: dict[str, Any] = {
        "chunks": report.chunks_added,
        "refreshed": report.chunks_replaced,
        "edges": report.edges_added,
        "files": report.files_read,
    }
    if report.problems:
        out["problems"] = len(report.problems)
        for problem in report.problems:
            print(f"causantic: ingest problem: {problem}", file=sys.stderr)
    out["project"] = _project_of(settings, session_id or path.stem)
    left = _ingest_pending(settings, path)
    if left:
        out["pending"] = left
    return out


def _with_sub_agents(path: Path) -> list[Path]:
    """A transcript and, when it has one, its folder (`<session>/subagents/agent-*.jsonl`)."""
    folder = path.with_suffix("")
    return [path, folder] if folder.is_dir() else [path]


def _ingest_or_defer(settings: Settings, path: Path, paths: list[Path], session_id: str):
    """Ingest, retrying while the database is busy; past the retry budget the transcript is
    left for the next worker (see `causantic.claude.deferred`) and DatabaseBusy raised."""
    # deferred: hook fast path: loaded only when this runs
    from causantic.claude import deferred
    from causantic.errors import DatabaseBusy
    from causantic.ingest.run import run_ingest

    try:
        report = deferred.with_backoff(lambda: run_ingest(settings, paths))
    except DatabaseBusy as exc:
        deferred.defer(settings.home, path, session_id)
        raise DatabaseBusy(f"{exc} Still busy after {deferred.RETRY_BUDGET_S:.0f} s of retries;"
                           f" {path.name} is queued for the next hook run") from exc
    deferred.done(settings.home, path)
    return report


def _ingest_pending(settings: Settings, current: Path) -> int:
    """Ingest transcripts earlier workers left behind; the number still pending."""
    # deferred: hook fast path: loaded only when this runs
    from causantic.claude import deferred
    from causantic.errors import DatabaseBusy
    from causantic.ingest.run import run_ingest

    left = 0
    for path, _session in deferred.pending(settings.home):
        if path == current or not path.is_file():
            deferred.done(settings.home, path)
            continue
        folder = path.with_suffix("")
        try:
            run_ingest(settings, [path] + ([folder] if folder.is_dir() else []))
        except DatabaseBusy:
            left += 1
            continue
        deferred.done(settings.home, path)
    return left


def _embed_pending(settings: Settings) -> dict[str, Any]:
    """Embed chunks without vectors: ``vectors``, the count or why not (a missing model is
    not a failure), and ``topics`` when that rebuilt them (`topics.maintain.refresh`)."""
    # deferred: hook fast path: loaded only when this runs
    from causantic.errors import CausanticError
    from causantic.model import embedder as embed

    if not embed.available(settings.model_dir):
        return {"vectors": "model not available"}
    # deferred: heavy: pulls numpy, only needed here
    from causantic.ingest.run import run_embed

    try:
        report = run_embed(settings)
    except CausanticError as exc:
        print(f"causantic: embedding skipped: {exc}", file=sys.stderr)
        return {"vectors": f"skipped: {exc}"}
    if report.topics_note:
        print(f"causantic: topics not rebuilt: {report.topics_note}", file=sys.stderr)
    done = {"vectors": int(report.embedded)}
    return done if report.topics is None else {**done, "topics": report.topics["topics"]}


def _project_of(settings: Settings, session_id: str) -> str | None:
    # deferred: hook fast path: loaded only when this runs
    from causantic.store import open_store
    from causantic.store.projects import session_project

    with open_store(settings.db_path, readonly=True) as store:
        return session_project(store.conn, session_id)


def post_tool_use(payload: dict[str, Any], settings: Settings) -> HookResult:
    """PostToolUse / PostToolUseFailure: a past lesson for this error (`claude.lesson_hook`)."""
    # deferred: hook fast path: loaded only when this runs
    from causantic.claude.lesson_hook import post_tool_use as handler

    return handler(payload, settings)


# -- shared --------------------------------------------------------------------------------

HANDLERS = {
    "session-start": session_start,
    "user-prompt-submit": user_prompt_submit,
    "pre-tool-use": pre_tool_use,
    "subagent-start": subagent_start,
    "pre-compact": pre_compact,
    "session-end": session_end,
    "subagent-stop": subagent_stop,
    "post-tool-use": post_tool_use,
}


def _record_failure(
    settings: Settings | None, event: str, started: float, session_id: str | None,
    exc: BaseException,
) -> None:
    """Record a failed run in the status file and its traceback in the log; never raise."""
    message = describe(exc)
    try:
        if settings is None:
            print(f"causantic hook {event}: {message}", file=sys.stderr)
            return
        status.record(settings.home, event or "unknown", success=False,
                      duration_ms=(time.perf_counter() - started) * 1000,
                      session_id=session_id, error=message)
        # deferred: hook fast path: loaded only when this runs
        import traceback

        # deferred: hook fast path: loaded only when this runs
        from causantic.fsutil import open_private_append

        fd = open_private_append(status.log_path(settings.home))
        with os.fdopen(fd, "a", encoding="utf-8") as log:
            log.write(f"{status.now_iso()} hook {event} failed: {message}\n")
            traceback.print_exception(exc, file=log)
    except BaseException:  # noqa: BLE001 - nowhere left to report to
        pass


def describe(exc: BaseException) -> str:
    """One line for the status file: what went wrong."""
    # deferred: hook fast path: loaded only when this runs
    from causantic.errors import CausanticError

    if isinstance(exc, CausanticError | HookInputError | TimeoutError):
        return str(exc)
    if isinstance(exc, KeyError):
        return f"unknown hook event {exc}; expected one of {', '.join(EVENTS)}"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return f"{type(exc).__name__}: {exc}"


def _kept_out(payload: dict[str, Any], settings: Settings) -> str | None:
    """Why the session's folder is kept out of memory (`causantic.ingest.exclude`), or None.
    A session there is neither briefed, recalled for, nor read into memory."""
    # deferred: hook fast path: loaded only when this runs
    from causantic.ingest.exclude import Exclusions

    return Exclusions(settings.ingest.exclude).reason(_str(payload.get("cwd")) or os.getcwd())


def context_output(event: str, context: str) -> str:
    """What a hook prints to add ``context`` to Claude's (or the sub-agent's) context."""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}},
                      ensure_ascii=False)


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def narrow_to_worktree(settings: Settings, conn: Any, cwd: str, project: str | None = None
                       ) -> None:
    """Under `[memory] scope = "worktree"`, leave the other linked worktrees of ``project``
    (default: the project of ``cwd``) out of what ``conn`` reads
    (`causantic.retrieval.scope.narrow_to_worktree`); otherwise nothing, at no cost."""
    if settings.memory.scope != "worktree":
        return
    # deferred: hook fast path: only with this setting
    from causantic.retrieval import scope
    from causantic.transcripts.project import project_for_cwd

    scope.narrow_to_worktree(conn, project or project_for_cwd(cwd).name, cwd)


def _write_stdout(text: str) -> None:
    try:
        sys.stdout.write(text)
        if not text.endswith("\n"):
            sys.stdout.write("\n")
        sys.stdout.flush()
    except (BrokenPipeError, OSError):
        pass
