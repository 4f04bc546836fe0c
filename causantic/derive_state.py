"""What state a session left things in, computed from its stored chunks without any LLM.

Per session: files touched and edited, commands run, errors seen and whether they were later
resolved, the final todo list, the last user request, the git branch, start and end, commits,
and the outcome of the last turn. Everything comes from the chunks' `meta` JSON (files,
edited, commands, errors, todos, branch, prompt, calls with no output) and their rendered
text (which tool call an error belongs to: `SessionReader`; what followed it, what the
assistant said last), so a state can be recomputed at any time from the store alone.

Ingest refreshes the states of the sessions it touched inside its write transaction
(`refresh`); readers use `load_state`, which recomputes on the fly when the stored row is
missing, no longer matches the session's chunks (older databases, a half-finished ingest
elsewhere) or was computed by another `STATE_VERSION`, so a briefing is never stale. A trigger drops a session's state when any of its
chunks is deleted (`forget`), and ingest writes it again when it re-adds chunks.

Error resolution heuristic (first match wins; anything else stays unresolved):

1. A later run of the same command succeeded: the same program and subcommand (`go test`,
   `npm run`, `mise run`, ...) with non-flag arguments that are a subset or superset of the
   failed ones (`go test ./internal/retry -count=200` resolves
   `go test ./internal/retry -run TestRetryBackoff -count=50`); for chained commands, a step
   of the later one re-runs the failed one's last step; a command with no output succeeded.
2. A later call of the same tool on the same file succeeded (a failed Edit, then an Edit of
   that file that worked).
3. A file named in the error message (`explain.go:301:10: ...`) was edited successfully
   afterwards.
4. The assistant said so soon afterwards (within 40 blocks): "fixed", "now passes",
   "resolved", "works now", "all tests pass", ...

Rejected tool calls ("The user doesn't want to proceed..."), interrupted calls and
"Sibling tool call errored" are not errors of the work and are skipped.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterable, Iterator

import apsw

from causantic.blocks import blocks as read_blocks
from causantic.records import Record
from causantic.store import projects
from causantic.store import session_state as table
from causantic.tokens import clip, clip_line

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    from typing import Any


class _LazyPattern:
    """A regex compiled on first use. The session-start hook imports this module only to load
    stored states, which needs none of the patterns; compiling them all costs it ~4 ms."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        compiled = re.compile(*self._args)
        for method in ("search", "match", "fullmatch", "finditer", "findall", "split", "sub"):
            setattr(self, method, getattr(compiled, method))  # later calls skip __getattr__
        return getattr(compiled, name)


_NOT_ERRORS = (
    "The user doesn't want to proceed",
    "The user doesn't want to take this action",
    "[Request interrupted",
    "<tool_use_error>Sibling tool call errored",
    "Sibling tool call errored",
)
_ERROR_LINE_RE = _LazyPattern(
    r"error|fail|panic|exception|traceback|fatal|denied|not found|cannot|undefined|no such", re.I
)
_TRIVIAL_LINE_RE = _LazyPattern(r"^(exit code \d+|\[\w+\] \$ .*|error:?)$", re.I)
_PATH_IN_TEXT_RE = _LazyPattern(r"([\w./-]+\.[A-Za-z0-9]{1,8})(?::\d+)?")
_FIXED_RE = _LazyPattern(
    r"\b(fixed|resolved|now (?:passes|pass|works|succeeds|builds|compiles)|works now"
    r"|(?:all )?tests? (?:now )?pass(?:es|ed)?|passing now|is green|builds cleanly)\b",
    re.I,
)
_TASK_CREATED_RE = _LazyPattern(r"Task #(\w+) created successfully: (.+)")
_COMMIT_RE = _LazyPattern(r"^\[([\w./+-]+)(?: \(root-commit\))? ([0-9a-f]{7,40})\] (.+)$", re.M)
_PR_URL_RE = _LazyPattern(r"https://github\.com/[\w.-]+/[\w.-]+/pull/\d+")
ACTIONS = (
    ("committed", _LazyPattern(r"\bgit\s+(?:-C\s+\S+\s+)?commit\b")),
    ("pushed", _LazyPattern(r"\bgit\s+(?:-C\s+\S+\s+)?push\b")),
    ("opened a PR", _LazyPattern(r"\bgh\s+pr\s+create\b")),
    ("merged a PR", _LazyPattern(r"\bgh\s+pr\s+merge\b")),
    ("published", _LazyPattern(r"\b(?:npm|pnpm|yarn|cargo)\s+publish\b|\btwine\s+upload\b")),
)
_EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
_MAX_LIST = 100
_MAX_ERRORS = 20
_HEAD_CHARS = 400
_SAID_WINDOW = 40  # blocks after an error within which "fixed" may refer to it


class _Frozen(Record):
    """A `Record` whose fields turn into plain JSON-ready values (`as_dict`)."""

    __slots__: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The fields as plain JSON-ready values (nested records, lists and dicts copied)."""
        return {name: _plain(getattr(self, name)) for name in self.__slots__}


def _plain(value: Any) -> Any:
    if isinstance(value, _Frozen):
        return value.as_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class ErrorSeen(_Frozen):
    """One failed tool call and what became of it."""

    __slots__ = ("tool", "subject", "message", "time", "resolved", "how")
    tool: str
    subject: str  # the command or file it was about
    message: str
    time: str
    resolved: bool
    how: str  # why we think it was resolved

    def __init__(self, tool: str, subject: str, message: str, time: str,
                 resolved: bool = False, how: str = "") -> None:
        init = object.__setattr__
        init(self, "tool", tool)
        init(self, "subject", subject)
        init(self, "message", message)
        init(self, "time", time)
        init(self, "resolved", resolved)
        init(self, "how", how)


class SessionState(_Frozen):
    """A session's state, as far as its chunks tell (see the module docstring)."""

    __slots__ = (
        "session_id", "project", "start_time", "end_time", "branch", "title", "cwd", "chunks",
        "files", "edited", "commands", "errors", "todos", "last_request", "last_request_time",
        "outcome", "last_turn_actions", "actions", "commits", "pull_requests", "agents",
    )
    session_id: str
    project: str
    start_time: str
    end_time: str
    branch: str | None
    title: str | None
    cwd: str | None
    chunks: int
    files: list[str]  # touched, least recent first
    edited: list[str]
    commands: list[str]  # in order, the last _MAX_LIST
    errors: list[ErrorSeen]
    todos: list[dict[str, str]]  # the final list
    last_request: str
    last_request_time: str
    outcome: str  # head of the last thing the assistant said
    last_turn_actions: list[str]
    actions: list[str]  # committed, pushed, opened a PR, ...
    commits: list[str]  # "<sha> <subject>"
    pull_requests: list[str]
    agents: list[str]

    def __init__(
        self,
        session_id: str,
        project: str,
        start_time: str,
        end_time: str,
        branch: str | None,
        title: str | None,
        cwd: str | None,
        chunks: int,
        files: list[str] | None = None,
        edited: list[str] | None = None,
        commands: list[str] | None = None,
        errors: list[ErrorSeen] | None = None,
        todos: list[dict[str, str]] | None = None,
        last_request: str = "",
        last_request_time: str = "",
        outcome: str = "",
        last_turn_actions: list[str] | None = None,
        actions: list[str] | None = None,
        commits: list[str] | None = None,
        pull_requests: list[str] | None = None,
        agents: list[str] | None = None,
    ) -> None:
        init = object.__setattr__
        init(self, "session_id", session_id)
        init(self, "project", project)
        init(self, "start_time", start_time)
        init(self, "end_time", end_time)
        init(self, "branch", branch)
        init(self, "title", title)
        init(self, "cwd", cwd)
        init(self, "chunks", chunks)
        init(self, "files", [] if files is None else files)
        init(self, "edited", [] if edited is None else edited)
        init(self, "commands", [] if commands is None else commands)
        init(self, "errors", [] if errors is None else errors)
        init(self, "todos", [] if todos is None else todos)
        init(self, "last_request", last_request)
        init(self, "last_request_time", last_request_time)
        init(self, "outcome", outcome)
        init(self, "last_turn_actions", [] if last_turn_actions is None else last_turn_actions)
        init(self, "actions", [] if actions is None else actions)
        init(self, "commits", [] if commits is None else commits)
        init(self, "pull_requests", [] if pull_requests is None else pull_requests)
        init(self, "agents", [] if agents is None else agents)

    @property
    def open_todos(self) -> list[dict[str, str]]:
        return [t for t in self.todos if t.get("status") not in ("completed", "deleted")]

    @property
    def unresolved(self) -> list[ErrorSeen]:
        return [e for e in self.errors if not e.resolved]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SessionState:
        d = dict(d)
        d["errors"] = [ErrorSeen(**e) for e in d.get("errors", [])]
        return cls(**d)


class _Call:
    __slots__ = ("tool", "subject", "index")

    def __init__(self, tool: str, subject: str, index: int) -> None:
        self.tool = tool
        self.subject = subject
        self.index = index  # position in the session's event order


class SessionReader:
    """A session's chunks read back block by block, each tool result paired with its call.

    Blocks are numbered in reading order across the session's chunks (`index`). A stream's
    (agent id's) results follow its calls in call order, so they are matched first in, first
    out per tool. But an empty output (`git add`, `mix format`) is stored as no result at
    all; left queued, such a call would take the next result of its tool, and every later
    error would be told of the command before its own. Chunks ingested since name those calls
    (their meta's ``silent``, `causantic.ingest.chunking`), which are never queued. For older
    chunks, a call still waiting when its stream's next round of calls begins (a call after
    any block that is not one) is taken to have had such an output.

    ``unambiguous``: parallel calls may report out of order, so a result is paired only when
    it is the one call of its tool waiting (else with None), and no call of that tool waits
    after it (the automatic observations want precision over recall)."""

    __slots__ = ("index", "_pending", "_calling", "_unambiguous")

    def __init__(self, unambiguous: bool = False) -> None:
        self.index = 0
        self._pending: dict[str, dict[str, deque[_Call]]] = {}
        self._calling: dict[str, bool] = {}  # stream -> its last block was a call
        self._unambiguous = unambiguous

    def read(self, text: str, agent: str, silent: Iterable[int] = ()
             ) -> Iterator[tuple[int, str, str, _Call | None, list[_Call]]]:
        """(index, label, body, call, done) for each block of one chunk's ``text``: ``call``
        is a ``Tool:`` block's call or the call a ``Result:`` block answers (None when none
        waits); ``done`` the calls that succeeded with no output, as this block shows
        (``silent``: the positions among the chunk's calls of those the meta names)."""
        quiet = set(silent)
        calls = 0
        for label, body in read_blocks(text):
            self.index += 1
            if label.startswith("Tool:"):
                tool = label[5:].strip()
                call = _Call(tool, _subject(tool, body), self.index)
                done = self._call(agent, call, answered=calls in quiet)
                calls += 1
                yield self.index, label, body, call, done
            elif label.startswith("Result:"):
                self._calling[agent] = False
                queue = self._pending.get(agent, {}).get(label[7:].removesuffix(" error").strip())
                answered = queue.popleft() if queue else None
                if self._unambiguous and queue:
                    answered = None
                    queue.clear()
                yield self.index, label, body, answered, []
            else:
                self._calling[agent] = False
                yield self.index, label, body, None, []

    def _call(self, agent: str, call: _Call, answered: bool) -> list[_Call]:
        """Queue ``call`` unless ``answered``; the calls now known to have had no output."""
        queues = self._pending.setdefault(agent, {})
        done: list[_Call] = []
        if not self._calling.get(agent):  # a new round: the last one's waiting calls are done
            done = sorted((c for q in queues.values() for c in q), key=lambda c: c.index)
            queues.clear()
        self._calling[agent] = True
        if answered:
            done.append(call)
        else:
            queues.setdefault(call.tool, deque()).append(call)
        return done


def silent_calls(meta: str | None) -> list[int]:
    """A chunk's calls with no output (their positions among its calls), from its stored
    meta JSON (``silent``, written by `causantic.ingest.chunking`): `SessionReader.read`'s
    ``silent``."""
    return _silent(_json(meta or ""))


def _silent(meta: dict[str, Any]) -> list[int]:
    silent = meta.get("silent")
    return [i for i in silent if isinstance(i, int)] if isinstance(silent, list) else []


class _Events:
    """Tool calls, results and assistant texts of a session in order."""

    __slots__ = ("calls", "texts", "errors", "task_lists")

    def __init__(self) -> None:
        self.calls: list[tuple[int, str, str, bool, str]] = []
        # (index, tool, subject, ok, result text)
        self.texts: list[tuple[int, str]] = []  # (index, assistant text)
        self.errors: list[tuple[int, str, str, str, str]] = []
        # (index, tool, subject, message, time)
        self.task_lists: list[tuple[int, dict[str, dict[str, str]]]] = []


# -- computing ------------------------------------------------------------------------------


def compute_state(conn: apsw.Connection, session_id: str) -> SessionState | None:
    """The state of one session from its stored chunks; None when it has no chunks."""
    rows = table.state_chunks(conn, session_id)
    if not rows:
        return None
    info = table.session_info(conn, session_id)
    project = info[0] if info else projects.chunk_project(conn, session_id) or ""  # has chunks
    files: dict[str, None] = {}
    edited: dict[str, None] = {}
    commands: list[str] = []
    todos: list[dict[str, str]] = []
    todos_at = -1
    branch = info[1] if info else None
    agents: dict[str, None] = {}
    last_request = last_request_time = ""
    last_turn_start = 0
    events = _Events()
    reader = SessionReader()
    metas = [_json(r[5]) for r in rows]
    for i, (_cid, agent, kind, start, _end, _meta, text) in enumerate(rows):
        meta = metas[i]
        for f in meta.get("files", []):
            files.pop(f, None)
            files[f] = None
        for f in meta.get("edited", []):
            edited.pop(f, None)
            edited[f] = None
        for cmd in meta.get("commands", []):
            if not commands or commands[-1] != cmd:
                commands.append(cmd)
        if agent:
            agents[agent] = None
        else:
            if meta.get("branch"):
                branch = meta["branch"]
            if isinstance(meta.get("todos"), list):
                todos, todos_at = list(meta["todos"]), reader.index + 1
            if meta.get("prompt") and kind != "summary":
                last_request, last_request_time = meta["prompt"], start
                last_turn_start = i
        _scan_text(text, agent, start, events, reader, _silent(meta))
    events.calls.sort(key=lambda c: c[0])  # silent calls are added when their round ends
    tasks_at, tasks = events.task_lists[-1] if events.task_lists else (-1, {})
    if tasks and tasks_at > todos_at:
        todos = [t for t in tasks.values() if t.get("status") != "deleted"]
    # The last turn's own answer; if it has none yet (still running, or tools only), the
    # last thing the assistant said before it.
    main_texts = [r[6] for r in rows[last_turn_start:] if not r[1]]
    outcome = _last_assistant_text(main_texts) or _last_assistant_text(
        [r[6] for r in rows[:last_turn_start] if not r[1]])
    all_commands = [c for m in metas for c in m.get("commands", [])]
    last_commands = [c for r, m in zip(rows[last_turn_start:], metas[last_turn_start:])
                     if not r[1] for c in m.get("commands", [])]
    results = "\n".join(t for _, _, _, ok, t in events.calls if ok and t)
    return SessionState(
        session_id=session_id,
        project=project,
        start_time=rows[0][3],
        end_time=max(r[4] for r in rows),
        branch=branch,
        title=info[2] if info else None,
        cwd=info[3] if info else None,
        chunks=len(rows),
        files=list(files)[-_MAX_LIST:],
        edited=list(edited)[-_MAX_LIST:],
        commands=commands[-_MAX_LIST:],
        errors=_resolve(events)[-_MAX_ERRORS:],
        todos=todos,
        last_request=last_request,
        last_request_time=last_request_time,
        outcome=outcome,
        last_turn_actions=_actions(last_commands),
        actions=_actions(all_commands),
        commits=[f"{sha[:7]} {subject.strip()}" for _, sha, subject in _COMMIT_RE.findall(results)],
        pull_requests=list(dict.fromkeys(_PR_URL_RE.findall(results))),
        agents=list(agents),
    )


def _scan_text(text: str, agent: str, time: str, events: _Events, reader: SessionReader,
               silent: Iterable[int] = ()) -> None:
    """Append one chunk's tool calls, results and assistant texts to `events`; a call with no
    output (so no stored result: `SessionReader`) is a success with no text."""
    for index, label, body, call, done in reader.read(text, agent, silent):
        events.calls += [(c.index, c.tool, c.subject, True, "") for c in done]
        if label == "Tool:TaskUpdate":
            _task_update(body, events, index)
        elif label.startswith("Result:"):
            failed = label.endswith(" error")
            tool = label[7:].removesuffix(" error").strip()
            subject = call.subject if call else ""
            if tool == "TaskCreate" and not failed:
                _task_created(body, events, index)
            if failed and not body.strip().startswith(_NOT_ERRORS):
                events.errors.append((index, tool, subject, _message(tool, body), time))
            events.calls.append((index, tool, subject, not failed, body))
        elif label == "Assistant":
            events.texts.append((index, body))
    # Calls whose result is in no chunk yet (still running) are neither errors nor successes.


def _subject(tool: str, body: str) -> str:
    first = body.split("\n", 1)[0].strip()
    if tool == "Bash":
        cut = first.rfind("  # ")
        return first[:cut].strip() if cut > 0 else first
    return first


def _message(tool: str, body: str) -> str:
    """The line that says what went wrong: a tool's own first line, or a command's error line
    (with the line after it when it is a heading ending in ":"). An escaped ``\\n`` (a hook or
    tool that printed its output JSON-quoted) breaks lines too, so the line is one line and
    not the whole escaped report."""
    lines = [
        re.sub(r"</?tool_use_error>", "", line).strip()
        for part in body.strip().split("\\n") for line in part.splitlines()
    ]
    lines = [line for line in lines if line]
    informative = [line for line in lines if not _TRIVIAL_LINE_RE.match(line)]
    best = None
    if tool == "Bash":
        best = next((line for line in informative if _ERROR_LINE_RE.search(line)), None)
    best = best or (informative[0] if informative else (lines[0] if lines else "error"))
    if best.endswith(":") and best in informative:  # a heading: what follows says what failed
        after = informative[informative.index(best) + 1:]
        best = f"{best} {after[0]}" if after else best
    return clip(best, 200)


def _task_created(body: str, events: _Events, index: int) -> None:
    m = _TASK_CREATED_RE.search(body)
    if not m:
        return
    tasks = dict(events.task_lists[-1][1]) if events.task_lists else {}
    tasks[m.group(1)] = {"content": m.group(2).strip()[:200], "status": "pending"}
    events.task_lists.append((index, tasks))


def _task_update(body: str, events: _Events, index: int) -> None:
    try:
        data = json.loads(body.split("\n", 1)[0])
    except ValueError:
        return
    if not isinstance(data, dict) or "taskId" not in data:
        return
    tasks = dict(events.task_lists[-1][1]) if events.task_lists else {}
    key = str(data["taskId"])
    old = tasks.get(key, {"content": f"task #{key}", "status": "pending"})
    tasks[key] = {
        "content": str(data.get("subject") or old["content"])[:200],
        "status": str(data.get("status") or old["status"]),
    }
    events.task_lists.append((index, tasks))


def _resolve(events: _Events) -> list[ErrorSeen]:
    """Each distinct error (latest occurrence) with whether something later resolved it."""
    latest: dict[tuple[str, str, str], tuple[int, str]] = {}
    for index, tool, subject, message, time in events.errors:
        latest[(tool, subject, message)] = (index, time)
    out = []
    for (tool, subject, message), (index, time) in sorted(latest.items(), key=lambda kv: kv[1][0]):
        how = _resolution(events, index, tool, subject, message)
        out.append(ErrorSeen(tool, subject, message, time, bool(how), how))
    return out


def _resolution(events: _Events, index: int, tool: str, subject: str, message: str) -> str:
    later = [c for c in events.calls if c[0] > index]
    if tool == "Bash" and subject:
        for _, t, s, ok, _ in later:
            if t == "Bash" and ok and same_command(subject, s):
                return f"`{clip(s, 120)}` later succeeded"
    elif subject:
        for _, t, s, ok, _ in later:
            if ok and t == tool and s == subject:
                return f"a later {tool} of {_short_path(subject)} succeeded"
    named = [m.group(1) for m in _PATH_IN_TEXT_RE.finditer(message) if "/" in m.group(1)
             or "." in m.group(1)]
    for _, t, s, ok, _ in later:
        if ok and t in _EDIT_TOOLS and any(s.endswith(n.lstrip("./")) for n in named if n):
            return f"{_short_path(s)} was edited afterwards"
    for i, text in events.texts:
        if index < i <= index + _SAID_WINDOW:
            m = _FIXED_RE.search(text)
            if m:
                return f'the assistant said "{clip(_sentence(text, m.start()), 120)}"'
    return ""


def same_command(failed: str, later: str) -> bool:
    """Whether `later` re-runs `failed`: same program and subcommand, nested arguments.
    Chained commands (``&&``, ``||``, ``;``) compare by step: `later` re-runs `failed` when
    one of its steps re-runs the last step of `failed` (`git add -A && git commit -m x`
    failed in the commit; `git add a b && git commit -m y` later succeeded)."""
    if failed == later:
        return True
    tail = _steps(failed)[-1:] or [failed]
    return any(_same_step(tail[0], step) for step in _steps(later) or [later])


def _steps(cmd: str) -> list[str]:
    """The steps of a chained command, a leading `cd DIR` left out."""
    return [s for s in _STEP_RE.split(cmd) if s.strip() and not _CD_RE.fullmatch(s.strip())]


def _same_step(failed: str, later: str) -> bool:
    a, b = _command_words(failed), _command_words(later)
    if len(a) < 1 or len(b) < 1 or a[:2] != b[:2]:
        return False
    sa, sb = set(a[2:]), set(b[2:])
    return sa <= sb or sb <= sa


_STEP_RE = _LazyPattern(r"\s*(?:&&|\|\||;)\s*")
_CD_RE = _LazyPattern(r"cd\s+\S+")


_LEADING_CD_RE = _LazyPattern(r"^\s*cd\s+\S+\s*&&\s*")
_ENV_ASSIGNMENT_RE = _LazyPattern(r"^[A-Z_][A-Z0-9_]*=")
_WHITESPACE_RE = _LazyPattern(r"\s+")


def _command_words(cmd: str) -> list[str]:
    cmd = _LEADING_CD_RE.sub("", cmd)
    words = [w for w in _WHITESPACE_RE.split(cmd.strip()) if w]
    while words and _ENV_ASSIGNMENT_RE.match(words[0]):
        words.pop(0)
    return [w for w in words if not w.startswith("-") and w not in ("2>&1", "|", "&&", ";")]


def _actions(commands: Iterable[str]) -> list[str]:
    cmds = list(commands)
    return [name for name, rx in ACTIONS if any(rx.search(c) for c in cmds)]


def _last_assistant_text(texts: list[str]) -> str:
    for text in reversed(texts):
        bodies = [b for label, b in read_blocks(text) if label == "Assistant" and b.strip()]
        if bodies:
            return clip_line(bodies[-1], _HEAD_CHARS)
    return ""


def _sentence(text: str, at: int) -> str:
    start = max(text.rfind(". ", 0, at), text.rfind("\n", 0, at)) + 1
    end = min((i for i in (text.find(". ", at), text.find("\n", at)) if i >= 0), default=len(text))
    return " ".join(text[start : end + 1].split())


def _short_path(path: str) -> str:
    return "/".join(path.rstrip("/").split("/")[-2:])


def _json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# -- storing and loading --------------------------------------------------------------------

#: How states are computed; a stored state of another version is computed again when read.
#: 2: results paired with their own calls (`SessionReader`), chained commands by step.
#: 3: an escaped "\\n" in an error's output breaks its message line.
STATE_VERSION = 3


def refresh(conn: apsw.Connection, session_ids: Iterable[str]) -> int:
    """Recompute and store the states of these sessions (inside the caller's transaction)."""
    n = 0
    for sid in sorted(set(session_ids)):
        state = compute_state(conn, sid)
        if state is None:
            table.delete_state(conn, sid)
            continue
        stored = {**state.as_dict(), "version": STATE_VERSION}
        table.save_state(conn, sid, state.project, state.start_time, state.end_time,
                         state.chunks, json.dumps(stored, ensure_ascii=False))
        n += 1
    return n


def load_state(conn: apsw.Connection, session_id: str) -> SessionState | None:
    """The session's state: the stored row when it matches the chunks and was computed by
    this `STATE_VERSION`, else computed now."""
    stored = table.get_state(conn, session_id)
    if stored is not None:
        chunks, end = table.chunk_span(conn, session_id)
        if stored.chunks == chunks and stored.end_time == end:
            try:
                d = json.loads(stored.state)
                if d.pop("version", 1) == STATE_VERSION:
                    return SessionState.from_dict(d)
            except (ValueError, TypeError, AttributeError):
                pass
    return compute_state(conn, session_id)
