"""Records -> turns, per stream.

A *stream* is one line of conversation: the main session, or one sub-agent of it. A *turn*
is a real user prompt plus everything until the next real user prompt (assistant text, tool
calls and their results). Compaction summaries become turns of their own (kind "summary").

What counts as a real prompt follows the transcript format notes: tool results, injected
meta text (`isMeta`), slash-command wrappers, task notifications, interruption markers and
our own injected memory are recognised and never open a turn. A slash command opens a turn
with `/name args`, and its expansion (the isMeta text that follows) is attached to it. A
prompt sent with IDE context (`<ide_opened_file>`, `<ide_selection>` blocks) opens its turn
with the typed text, the IDE context following as a short note.

Every text passes through `hygiene.clean` (terminal escapes and our injected context out), and
the results of causantic's own MCP tools are kept empty: the call stays, the quote of memory
it returned does not (`hygiene` says why).

Sub-agents come from three places: inline sidechain records (`isSidechain: true`), separate
`agent-<id>.jsonl` files (parsed with `agent_id` set), and `agent_progress` mirrors inside the
parent file (used only when the agent has no file of its own, e.g. Entire checkpoints).

Nothing here touches SQLite; the output is plain dataclasses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from causantic.timestamps import iso_utc, parse_iso
from causantic.transcripts.hygiene import clean, is_own_tool, strip_terminal
from causantic.transcripts.jsonl import ReadStats, iter_records, too_deep

CONTINUATION_PREFIX = "This session is being continued from a previous conversation"
_WRAPPER_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<task-notification>",
    "<ide_opened_file>",
    "<ide_selection>",
    "<user-memory-input>",
)
_TAG_RE = re.compile(r"<(command-name|command-args|bash-input)>(.*?)</\1>", re.S)
_SYSTEM_REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
# IDE context (VS Code / JetBrains extensions) sent beside the typed prompt, usually as separate
# text blocks of the same user message: kept as a short note after the prompt.
_IDE_RE = re.compile(r"<(ide_[a-z_]+)>(.*?)</\1>", re.S)
_IDE_HEDGE = "This may or may not be related to the current task."
_SHIFT_RE = re.compile(
    r"^\s*(?:actually,?\s+(?:let'?s|can we|could we)\b"
    r"|(?:new|different|another)\s+(?:question|topic|issue|task)\b"
    r"|switching\s+(?:to|gears)\b"
    r"|(?:on|about)\s+(?:a\s+)?(?:different|separate)\s+(?:note|topic)\b"
    r"|moving\s+on\b"
    r"|forget\s+(?:about\s+)?(?:that|this)\b"
    r"|let'?s\s+(?:change|switch|move)\s+(?:to|topics?)\b"
    r"|unrelated(?:\s+(?:question|topic|issue))?\b"
    r"|(?:btw|by the way)\b)",
    re.I,
)
_AGENT_TOOLS = frozenset({"Task", "Agent", "SubAgent"})
_FILE_TOOLS = frozenset({"Read", "Write", "Edit", "MultiEdit", "NotebookEdit"})
_EDIT_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})


@dataclass
class Block:
    """One renderable piece of a turn."""

    kind: str  # prompt | text | tool_use | tool_result | command | summary | note
    text: str
    name: str = ""  # tool name
    tool_id: str = ""
    is_error: bool = False
    agent_id: str = ""  # tool_use: the sub-agent it spawned; tool_result: the one that returned
    input: dict[str, Any] | None = None
    redactions: int = -1  # secrets replaced in text and input; -1: not redacted yet


@dataclass
class Turn:
    """A real user prompt and everything until the next one, in one stream."""

    session_id: str
    agent_id: str  # "" for the main conversation
    index: int
    offset: int  # byte offset of the turn's first record in its file
    kind: str = "turn"  # turn | summary
    blocks: list[Block] = field(default_factory=list)
    start_time: str | None = None
    end_time: str | None = None
    git_branch: str | None = None
    shift: bool = False  # the prompt opens with a topic-shift marker
    todos: list[dict[str, Any]] | None = None  # the last TodoWrite list seen in the turn

    def touch(self, ts: str | None) -> None:
        if ts:
            if self.start_time is None or ts < self.start_time:
                self.start_time = ts
            if self.end_time is None or ts > self.end_time:
                self.end_time = ts


@dataclass
class SessionInfo:
    """What the records say about one session."""

    session_id: str
    cwd: str | None = None
    agent_cwd: str | None = None  # a sub-agent's folder: the project until the parent is read
    git_branch: str | None = None
    title: str | None = None
    start_time: str | None = None
    end_time: str | None = None
    continued: bool = False  # opens with a compaction summary / continuation text
    forked_from: str | None = None


@dataclass
class ParsedFile:
    """The result of reading one transcript file from an offset."""

    turns: list[Turn]
    sessions: dict[str, SessionInfo]
    stats: ReadStats
    resume_offset: int
    resume_state: dict[str, Any]
    records: int = 0


@dataclass
class _Stream:
    session_id: str
    agent_id: str
    next_index: int
    current: Turn | None = None
    tools: dict[str, Block] = field(default_factory=dict)
    pending_command: Turn | None = None  # a slash command waiting for its expansion


class _Parser:
    def __init__(
        self,
        default_session: str,
        file_agent: str,
        agents_with_files: frozenset[str],
        state: dict[str, Any],
    ) -> None:
        self.default_session = default_session
        self.file_agent = file_agent
        self.agents_with_files = agents_with_files
        self.turn_counts: dict[str, int] = dict(state.get("turns", {}))
        self.streams: dict[tuple[str, str], _Stream] = {}
        self.turns: list[Turn] = []
        self.sessions: dict[str, SessionInfo] = {}
        self.seen: set[str] = set()
        self.records = 0
        self.last_session = ""  # records without a sessionId belong to the latest one seen
        self.pending_title: str | None = None

    # -- streams and sessions -------------------------------------------------------------

    def stream(self, session_id: str, agent_id: str) -> _Stream:
        key = (session_id, agent_id)
        s = self.streams.get(key)
        if s is None:
            s = _Stream(session_id, agent_id, self.turn_counts.get(_key(session_id, agent_id), 0))
            self.streams[key] = s
        return s

    def session(self, session_id: str) -> SessionInfo:
        info = self.sessions.get(session_id)
        if info is None:
            info = self.sessions[session_id] = SessionInfo(session_id)
        return info

    def open_turn(self, s: _Stream, offset: int, kind: str = "turn") -> Turn:
        turn = Turn(s.session_id, s.agent_id, s.next_index, offset, kind)
        s.next_index += 1
        s.current = turn
        s.tools = {}
        self.turns.append(turn)
        return turn

    def ensure_turn(self, s: _Stream, offset: int) -> Turn:
        return s.current if s.current is not None else self.open_turn(s, offset)

    # -- records --------------------------------------------------------------------------

    def feed(self, offset: int, rec: dict[str, Any]) -> None:
        rtype = rec.get("type")
        if rtype in ("user", "assistant", "system"):
            self.records += 1
            uuid = rec.get("uuid")
            if isinstance(uuid, str):
                if uuid in self.seen:
                    return
                self.seen.add(uuid)
            session_id = self.session_of(rec)
            agent_id = self.file_agent
            if not agent_id and rec.get("isSidechain"):
                agent_id = _str(rec.get("agentId")) or "sidechain"
            self.note_session(session_id, rec, main=not agent_id)
            if rtype == "system":
                return
            s = self.stream(session_id, agent_id)
            if rtype == "user":
                self.user(s, offset, rec)
            else:
                self.assistant(s, offset, rec)
        elif rtype == "progress":
            self.progress(offset, rec)
        elif rtype in ("summary", "custom-title", "ai-title"):
            title = _str(
                rec.get("summary") or rec.get("customTitle") or rec.get("aiTitle") or rec.get("title")
            )
            title = strip_terminal(title)
            if title:
                self.pending_title = title[:200]  # the newest title line wins

    def session_of(self, rec: dict[str, Any]) -> str:
        sid = _str(rec.get("sessionId"))
        if sid:
            self.last_session = sid
            return sid
        return self.last_session or self.default_session

    def note_session(self, session_id: str, rec: dict[str, Any], main: bool) -> None:
        info = self.session(session_id)
        ts = _timestamp(rec.get("timestamp"))
        if ts:
            if info.start_time is None or ts < info.start_time:
                info.start_time = ts
            if info.end_time is None or ts > info.end_time:
                info.end_time = ts
        cwd = _str(rec.get("cwd"))
        if not main:
            if cwd and not info.agent_cwd:
                info.agent_cwd = cwd
        else:
            if cwd and not info.cwd:
                info.cwd = cwd
            branch = _str(rec.get("gitBranch"))
            if branch:
                info.git_branch = branch
            forked = rec.get("forkedFrom")
            if isinstance(forked, dict) and _str(forked.get("sessionId")):
                info.forked_from = _str(forked.get("sessionId"))

    def progress(self, offset: int, rec: dict[str, Any]) -> None:
        data = rec.get("data")
        if not isinstance(data, dict) or data.get("type") != "agent_progress":
            return
        agent_id = _str(data.get("agentId"))
        msg = data.get("message")
        if not agent_id or agent_id in self.agents_with_files or not isinstance(msg, dict):
            return
        inner = {
            "type": msg.get("type"),
            "message": msg.get("message"),
            "uuid": msg.get("uuid"),
            "timestamp": msg.get("timestamp") or rec.get("timestamp"),
            "toolUseResult": msg.get("toolUseResult"),
        }
        if inner["type"] not in ("user", "assistant"):
            return
        uuid = inner["uuid"]
        if isinstance(uuid, str):
            if uuid in self.seen:
                return
            self.seen.add(uuid)
        self.records += 1
        session_id = self.session_of(rec)
        s = self.stream(session_id, agent_id)
        if inner["type"] == "user":
            self.user(s, offset, inner)
        else:
            self.assistant(s, offset, inner)
        parent_tool = _str(rec.get("parentToolUseID"))
        if parent_tool:
            self.link_spawn(session_id, parent_tool, agent_id)

    def link_spawn(self, session_id: str, tool_id: str, agent_id: str) -> None:
        main = self.streams.get((session_id, ""))
        if main is not None:
            block = main.tools.get(tool_id)
            if block is not None and not block.agent_id:
                block.agent_id = agent_id

    def user(self, s: _Stream, offset: int, rec: dict[str, Any]) -> None:
        message = rec.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        ts = _timestamp(rec.get("timestamp"))
        texts: list[str] = []
        results: list[dict[str, Any]] = []
        images = 0
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for b in content:
                if not isinstance(b, dict):
                    continue
                btype = b.get("type")
                if btype == "text":
                    texts.append(_str(b.get("text")))
                elif btype == "tool_result":
                    results.append(b)
                elif btype in ("image", "document"):
                    images += 1
        # Escape sequences and our own injected context go first, so nothing below sees them.
        text = "\n".join(c for c in (clean(t) for t in texts if t) if c.strip())
        ide = ""
        if "<ide_" in text:
            text, ide = _split_ide(text)
        if not text and not results and not images:
            return

        if rec.get("isCompactSummary") or text.lstrip().startswith(CONTINUATION_PREFIX):
            turn = self.open_turn(s, offset, "summary")
            turn.blocks.append(Block("summary", text.strip()))
            turn.touch(ts)
            if s.agent_id == "" and self.first_turn_of_session(s, turn):
                self.session(s.session_id).continued = True
            s.current = None  # the next record that is not a prompt opens a fresh turn
            return

        if results:
            turn = self.ensure_turn(s, offset)
            turn.touch(ts)
            tur = rec.get("toolUseResult")
            returned_agent = _str(tur.get("agentId")) if isinstance(tur, dict) else ""
            for b in results:
                tool_id = _str(b.get("tool_use_id"))
                call = s.tools.get(tool_id)
                name = call.name if call else "tool"
                if call is not None and returned_agent and not call.agent_id:
                    call.agent_id = returned_agent
                # Our own MCP tools' output is a quote of memory, not memory: the call stays.
                own = call is not None and is_own_tool(call.name)
                turn.blocks.append(
                    Block(
                        "tool_result",
                        "" if own else clean(_result_text(b.get("content"))),
                        name=name,
                        tool_id=tool_id,
                        is_error=bool(b.get("is_error")),
                        agent_id=returned_agent if name in _AGENT_TOOLS else "",
                    )
                )
            return

        stripped = text.lstrip()
        if rec.get("isMeta"):
            pending = s.pending_command
            if pending is not None and stripped and not stripped.startswith(_WRAPPER_PREFIXES):
                body = _SYSTEM_REMINDER_RE.sub("", stripped).strip()
                if body:
                    pending.blocks.append(Block("command", body, name="expansion"))
                    pending.touch(ts)
            return
        if stripped.startswith(_WRAPPER_PREFIXES):
            self.wrapper(s, offset, stripped, ts)
            return
        if stripped.startswith("[Request interrupted"):
            turn = self.ensure_turn(s, offset)
            turn.blocks.append(Block("note", "[interrupted by user]"))
            turn.touch(ts)
            return

        prompt = _SYSTEM_REMINDER_RE.sub("", text).strip()
        if images:
            prompt = (prompt + "\n" if prompt else "") + " ".join(["[image]"] * min(images, 5))
        if not prompt:
            return
        turn = self.open_turn(s, offset)
        turn.blocks.append(Block("prompt", prompt))
        if ide:
            turn.blocks.append(Block("note", ide))
        turn.shift = bool(_SHIFT_RE.match(prompt))
        turn.touch(ts)
        branch = _str(rec.get("gitBranch"))
        if branch:
            turn.git_branch = branch
        s.pending_command = None

    def wrapper(self, s: _Stream, offset: int, text: str, ts: str | None) -> None:
        tags = dict((m.group(1), m.group(2).strip()) for m in _TAG_RE.finditer(text))
        if "command-name" in tags:
            name = tags["command-name"]
            if not name.startswith("/"):
                name = "/" + name
            args = tags.get("command-args", "")
            turn = self.open_turn(s, offset)
            turn.blocks.append(Block("prompt", f"{name} {args}".strip()))
            turn.touch(ts)
            s.pending_command = turn
        elif "bash-input" in tags:
            turn = self.open_turn(s, offset)
            turn.blocks.append(Block("prompt", "! " + tags["bash-input"]))
            turn.touch(ts)
        elif text.startswith(("<local-command-stdout>", "<bash-stdout>", "<bash-stderr>",
                              "<local-command-stderr>")):
            body = re.sub(r"</?[a-z-]+>", "", text).strip()
            if body and s.current is not None:
                s.current.blocks.append(Block("tool_result", body, name="shell"))
                s.current.touch(ts)
        elif text.startswith("<task-notification>"):
            body = re.sub(r"</?[a-z-]+>", " ", text).strip()
            turn = self.ensure_turn(s, offset)
            turn.blocks.append(Block("note", "[task notification] " + " ".join(body.split())[:600]))
            turn.touch(ts)

    def assistant(self, s: _Stream, offset: int, rec: dict[str, Any]) -> None:
        message = rec.get("message")
        if not isinstance(message, dict):
            return
        content = message.get("content")
        ts = _timestamp(rec.get("timestamp"))
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        turn: Turn | None = None
        for b in blocks:
            if not isinstance(b, dict):
                continue
            btype = b.get("type")
            if btype == "text":
                text = clean(_str(b.get("text"))).strip()
                if not text or text == "(no content)":
                    continue
                turn = turn or self.ensure_turn(s, offset)
                turn.blocks.append(Block("text", text))
            elif btype in ("tool_use", "server_tool_use"):
                turn = turn or self.ensure_turn(s, offset)
                name = _str(b.get("name")) or "tool"
                inp = v if isinstance(v := b.get("input"), dict) else {}
                if too_deep(inp):  # would overflow json.dumps when stored
                    inp = {}
                block = Block("tool_use", "", name=name, tool_id=_str(b.get("id")), input=inp)
                turn.blocks.append(block)
                if block.tool_id:
                    s.tools[block.tool_id] = block
                if name == "TodoWrite" and isinstance(inp.get("todos"), list):
                    turn.todos = [t for t in inp["todos"] if isinstance(t, dict)]
        if turn is not None:
            turn.touch(ts)
        elif s.current is not None:
            s.current.touch(ts)

    def first_turn_of_session(self, s: _Stream, turn: Turn) -> bool:
        return turn.index == 0

    # -- finishing ------------------------------------------------------------------------

    def finish(self, stats: ReadStats, base_offset: int) -> ParsedFile:
        _fill_times(self.turns)
        if self.pending_title:
            first = next(iter(self.sessions), None) or self.default_session
            self.session(first).title = self.pending_title
        # Resume at the start of the newest turn of the main conversation (or of the file's
        # only stream): it may still be growing. Everything from there is re-read next time.
        main_turns = [t for t in self.turns if t.agent_id == self.file_agent]
        resume = main_turns[-1].offset if main_turns else stats.complete_offset
        resume = max(base_offset, min(resume, stats.complete_offset))
        counts = dict(self.turn_counts)
        for t in self.turns:
            if t.offset < resume:
                k = _key(t.session_id, t.agent_id)
                counts[k] = max(counts.get(k, 0), t.index + 1)
        return ParsedFile(
            turns=self.turns,
            sessions=self.sessions,
            stats=stats,
            resume_offset=resume,
            resume_state={"turns": counts},
            records=self.records,
        )


def parse_transcript(
    data: bytes,
    *,
    start: int = 0,
    state: dict[str, Any] | None = None,
    default_session: str,
    agent_id: str = "",
    agents_with_files: frozenset[str] = frozenset(),
    count_from: int = 0,
) -> ParsedFile:
    """Parse transcript bytes from `start` into turns.

    Parameters
    ----------
    data : the whole file's bytes (offsets are positions in it).
    start : where to begin (a checkpoint's resume offset).
    state : the `resume_state` saved with that checkpoint (turn counters per stream).
    default_session : session id for records that carry none (usually the file stem).
    agent_id : set when the file is a sub-agent transcript (`agent-<id>.jsonl`).
    agents_with_files : sub-agents that have their own file; their `agent_progress`
        mirrors in this file are ignored so nothing is indexed twice.
    count_from : bad lines before this offset were counted by an earlier read.
    """
    parser = _Parser(default_session, agent_id, agents_with_files, state or {})
    stats = ReadStats(complete_offset=start, count_from=count_from)
    for offset, rec in iter_records(data, start, stats):
        parser.feed(offset, rec)
    return parser.finish(stats, start)


def is_warmup(parsed: ParsedFile) -> bool:
    """Claude Code 2.0.x pre-warms agents with a single 'Warmup' prompt: not memory."""
    prompts = [b.text for t in parsed.turns for b in t.blocks if b.kind == "prompt"]
    return len(prompts) <= 1 and (not prompts or prompts[0].strip() == "Warmup")


def _key(session_id: str, agent_id: str) -> str:
    return f"{session_id}|{agent_id}"


def _fill_times(turns: list[Turn]) -> None:
    """Give every turn a time: its own, else its stream neighbour's (never empty)."""
    by_stream: dict[tuple[str, str], list[Turn]] = {}
    for t in turns:
        by_stream.setdefault((t.session_id, t.agent_id), []).append(t)
    for stream in by_stream.values():
        last: str | None = None
        for t in stream:
            if t.start_time is None:
                t.start_time = t.end_time = last
            last = t.end_time or last
        nxt: str | None = None
        for t in reversed(stream):
            if t.start_time is None:
                t.start_time = t.end_time = nxt
            nxt = t.start_time or nxt


def _split_ide(text: str) -> tuple[str, str]:
    """(typed text, a short note on the IDE context) of a prompt sent with IDE context tags."""
    notes: list[str] = []
    for m in _IDE_RE.finditer(text):
        lines = m.group(2).replace(_IDE_HEDGE, "").strip().splitlines()
        if not lines:
            continue
        head = re.sub(r"^The user (?:has )?", "", lines[0].strip()).rstrip(":")
        head = re.sub(r"^opened the file (.+?) in the IDE\.?$", r"opened \1", head)
        head = re.sub(r"^selected the lines (\d+) to (\d+) from ", r"selected lines \1-\2 of ", head)
        body = [line for line in lines[1:7] if line.strip()]
        note = f"[IDE: {head[:300]}]"
        if body:
            note += "\n" + "\n".join(line[:200] for line in body)
        notes.append(note)
    return _IDE_RE.sub("", text).strip(), "\n".join(notes)


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, dict):
                if b.get("type") == "text":
                    parts.append(_str(b.get("text")))
                elif b.get("type") in ("image", "document"):
                    parts.append("[image]")
                elif b.get("type") == "tool_reference":
                    parts.append(f"[tool {_str(b.get('tool_name'))}]")
            elif isinstance(b, str):
                parts.append(b)
        return "\n".join(parts)
    return ""


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _timestamp(value: Any) -> str | None:
    """Normalise an ISO timestamp to `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC); None if unusable."""
    if not isinstance(value, str) or len(value) < 10:
        return None
    if len(value) == 24 and value.endswith("Z") and value[10] == "T":
        return value
    try:
        return iso_utc(parse_iso(value))
    except ValueError:
        return None


def tool_files(block: Block) -> tuple[list[str], list[str]]:
    """(files read or touched, files edited) named by a tool call's input."""
    inp = block.input or {}
    touched: list[str] = []
    edited: list[str] = []
    if block.name in _FILE_TOOLS:
        path = _str(inp.get("file_path") or inp.get("notebook_path"))
        if path:
            touched.append(path)
            if block.name in _EDIT_TOOLS:
                edited.append(path)
    elif block.name in ("Glob", "Grep"):
        path = _str(inp.get("path"))
        if path:
            touched.append(path)
    return touched, edited


def is_agent_tool(name: str) -> bool:
    return name in _AGENT_TOOLS
