"""The PostToolUse lookup: has this error been seen, and fixed, before?

`lookup` takes what Claude Code reports about a tool call (its name, input and error or
output), computes the signatures of its error lines (`causantic.lessons.signature`), and
finds stored lessons with the same normalised message in one indexed query. A lesson is
offered only when it matches well:

- it was resolved (`unresolved = true` in `[lessons]` also offers "seen, never solved"),
- its message is informative (not "Exit code 1", not a bare "FAILED"),
- the same program failed (`go test` then, `go test` now), unless `match = "message"`,
- it is not a built-in file tool's complaint ("File does not exist.", "File has not been
  read yet"): Claude Code's own message already says what to do, and measured matches of
  these were almost never the right lesson,
- no lesson for the same message was already offered in this session (the ledger says).

Stdlib and SQL only (hook fast path): no numpy, no model.
"""

from __future__ import annotations

import json

from causantic.config import LessonSettings
from causantic.lessons.signature import Signature, error_line, is_error_line
from causantic.tokens import clip, clip_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    import apsw

    from causantic.store.lessons import LessonRow

MAX_CHARS = 800
MAX_LINES = 12
#: Claude Code's own tools whose failures are about how the tool was called.
BUILTIN_TOOLS = frozenset({
    "Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "Glob", "Grep", "LS", "WebFetch",
    "WebSearch", "Skill", "Task", "Agent", "TodoWrite", "TaskCreate", "TaskUpdate",
    "ExitPlanMode", "BashOutput", "KillShell", "AskUserQuestion",
})


class Match:
    """A lesson offered for an error, and how well it matched (`exact`: same program)."""

    __slots__ = ("lesson", "exact", "text", "project")

    def __init__(self, lesson: LessonRow, exact: bool, text: str, project: str = "") -> None:
        self.lesson, self.exact, self.text, self.project = lesson, exact, text, project


def error_text(payload: dict[str, object]) -> tuple[str, str, str]:
    """(tool, subject, error text) from a PostToolUse / PostToolUseFailure hook input.

    The error text is '' when the call did not fail and its output shows no error line.
    """
    tool = payload.get("tool_name")
    tool = tool if isinstance(tool, str) else ""
    data = payload.get("tool_input")
    data = data if isinstance(data, dict) else {}
    if tool == "Bash":
        subject = str(data.get("command") or "")
    else:
        subject = str(data.get("file_path") or data.get("path") or data.get("pattern")
                      or data.get("url") or "")
        if not subject and data:
            subject = json.dumps(data, ensure_ascii=False)[:200]
    error = payload.get("error")
    if isinstance(error, str) and error.strip():
        return tool, subject, error
    response = payload.get("tool_response")
    if isinstance(response, dict):
        text = "\n".join(str(response.get(k) or "") for k in ("stderr", "stdout", "error"))
        if response.get("is_error") or response.get("isError") or _looks_failed(text):
            return tool, subject, text
    elif isinstance(response, str) and _looks_failed(response):
        return tool, subject, response
    return tool, subject, ""


def _looks_failed(text: str) -> bool:
    return bool(text.strip()) and any(is_error_line(line) for line in text.splitlines()[:400])


def signatures(tool: str, subject: str, text: str) -> list[Signature]:
    """Signatures of the error: the line ingest would pick, then other error lines."""
    lines = [error_line(tool, text)]
    if tool == "Bash":
        for line in text.splitlines():
            line = line.strip()
            if line and is_error_line(line):
                lines.append(clip(line, 200))
                if len(lines) > MAX_LINES:
                    break
    out: dict[str, Signature] = {}
    for line in lines:
        sig = Signature(tool, subject, line)
        if sig.informative:
            out.setdefault(sig.sig_hash, sig)
    return list(out.values())


def wanted_signatures(tool: str, subject: str, text: str,
                      options: LessonSettings | None = None) -> list[Signature]:
    """The signatures `lookup` would search for; [] when nothing is worth a query (the hook
    then exits without opening the database). `options`: `[lessons]` (default: defaults)."""
    if tool in BUILTIN_TOOLS and not (options or LessonSettings()).builtin_tools:
        return []
    return signatures(tool, subject, text)


def lookup(
    conn: apsw.Connection,
    tool: str,
    subject: str,
    text: str,
    *,
    project: str | Callable[[], str] = "",
    session_id: str = "",
    options: LessonSettings | None = None,
    own_only: bool = False,
) -> Match | None:
    """The best lesson for this error, or None when no lesson matches well (see above).

    `project` (the current one, preferred among equal matches) may be a function: it is then
    called only when some lesson matches, since finding a project can cost a few `stat`s.
    `own_only`: only lessons of that project (`[memory] scope = "project"`).
    """
    # deferred: hook fast path: loaded only when this runs
    from causantic.store.lessons import find_by_message

    options = options or LessonSettings()
    sigs = wanted_signatures(tool, subject, text, options)
    if not sigs:
        return None
    exact = {s.sig_hash for s in sigs}
    unresolved = options.unresolved
    message_level = options.match == "message"
    rank = {s.msg_hash: -i for i, s in reversed(list(enumerate(sigs)))}  # first line first
    best: tuple[tuple[int, int, int, int, str], LessonRow, bool] | None = None
    candidates = find_by_message(conn, list(rank))
    if not candidates:
        return None
    shown = _already_shown(conn, session_id)
    if callable(project):
        project = project()
    for row in candidates:
        is_exact = row.sig_hash in exact
        if (not row.resolved and not unresolved) or (not is_exact and not message_level):
            continue
        if row.msg_hash in shown or row.session_id == session_id and not row.resolved:
            continue
        if own_only and row.project != project:
            continue
        key = (row.resolved, int(is_exact), rank[row.msg_hash], int(row.project == project),
               row.time)
        if best is None or key > best[0]:
            best = (key, row, is_exact)
    if best is None:
        return None
    return Match(best[1], best[2], render(best[1]), str(project))


def _already_shown(conn: apsw.Connection, session_id: str) -> set[str]:
    """Message hashes of the lessons already offered in this session (from the ledger)."""
    if not session_id:
        return set()
    # deferred: hook fast path: loaded only when this runs
    from causantic.store.lessons import shown_msg_hashes

    return shown_msg_hashes(conn, session_id)


def render(row: LessonRow, max_chars: int = MAX_CHARS, listing: bool = False) -> str:
    """"Seen before in <project> on <date>: <error> -> fixed by <change> (session <id>)";
    with `listing`, "<date> <project>: <error> -> ..." (for `causantic lessons`)."""
    date = row.time[:10]
    error = clip(row.error, 240)
    what = f"`{clip_line(row.subject, 100)}` failed with: {error}" if row.tool == "Bash" else \
        f"{row.tool} {clip_line(row.subject, 100)} failed with: {error}"
    if row.resolved:
        tail = f" -> fixed by: {row.fix}"
    else:
        tail = " -> never solved there"
    attempts = json.loads(row.attempts)
    tried = ""
    if row.occurrences > 1 or len(attempts) > 1:
        tried = f" (failed {row.occurrences}x there)"
    head = f"{date} {row.project}: " if listing else f"Seen before in {row.project} on {date}: "
    text = (f"{head}{what}{tried}{tail}"
            f" (session {row.session_id[:8]}"
            + (f", commit {row.fix_commit[:8]}" if row.fix_commit else "") + ")")
    return clip_line(text, max_chars)
