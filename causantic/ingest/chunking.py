"""Turns -> chunks: rendered, trimmed, redacted text with metadata and a stable id.

A chunk holds whole blocks of one turn up to a token budget (default 1,000 approximate
tokens), so results are precise and chains stay ordered. Rendering:

    [User]\\n<prompt>            [Assistant]\\n<text>        [Summary]\\n<compaction summary>
    [Tool:Bash] <command>        [Result:Bash]\\n<trimmed output>

Thinking blocks are never rendered (they hurt embedding discrimination). Tool output keeps
its head, its tail and its error lines; file reads keep only their first lines. A block
larger than the budget is split at paragraph, then line boundaries, with a visible marker.

Chunk ids are a hash of session, agent, position (file offset of the turn, part) and the
redacted text, so re-ingesting the same bytes yields the same ids.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from causantic.chunk import Chunk  # re-exported: the type lives in a leaf the store can import
from causantic.ingest.scrub import scrub_turn
from causantic.tokens import approx_tokens, chars_for_tokens, clip  # approx_tokens: re-exported
from causantic.transcripts.hygiene import strip_terminal
from causantic.transcripts.turns import Block, Turn, is_agent_tool, tool_files

DEFAULT_MAX_TOKENS = 1000
_ERROR_LINE_RE = re.compile(
    r"^.*(?:error|fail|panic|exception|traceback|fatal|denied|not found|cannot|undefined).*$",
    re.I | re.M,
)
_ERROR_WORDS = ("error", "fail", "panic", "exception", "traceback", "fatal", "denied", "not found",
                "cannot", "undefined")  # the words of _ERROR_LINE_RE, lower case
# The only non-ASCII characters that re.I matches to a letter of those words (İ, ı, Kelvin K).
_FOLDS_TO_ASCII = ("\u0130", "\u0131", "\u212a")
_CONTINUED = "[…continued]"


Redact = Callable[[str], tuple[str, int]]


def chunk_turn(
    turn: Turn,
    redact: Redact,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    fallback_time: str = "",
) -> list[Chunk]:
    """Redact, render and pack one turn into chunks of at most `max_tokens` (approximately).

    A turn whose stream has no timestamp at all gets ``fallback_time`` (ingest passes the
    file's modification time; never the epoch).

    The turn's blocks are redacted whole first (`causantic.ingest.scrub`), before output is trimmed
    or split, so no part of a secret survives a cut; ingest has already done that for the
    whole file (the blocks then carry their counts), and the rendered text is made only of
    redacted blocks, so it is not scanned again.
    """
    if any(b.redactions < 0 for b in turn.blocks):
        scrub_turn(turn, redact)
    pieces: list[tuple[str, Block]] = []
    for block in turn.blocks:
        text = render_block(block)
        if text:
            pieces.append((text, block))
    if not pieces:
        return []
    # Calls whose result rendered as nothing (an empty output): see `_silent_calls`.
    rendered = {b.tool_id for _, b in pieces if b.kind == "tool_result"}
    empty = {b.tool_id for b in turn.blocks
             if b.kind == "tool_result" and b.tool_id and b.tool_id not in rendered}
    budget_chars = chars_for_tokens(max_tokens)
    groups: list[list[tuple[str, Block]]] = [[]]
    used = 0
    for text, block in pieces:
        for piece in _split(text, budget_chars):
            cost = len(piece) + 2
            if groups[-1] and used + cost > budget_chars:
                groups.append([])
                used = 0
            groups[-1].append((piece, block))
            used += cost
    start = turn.start_time or fallback_time
    end = turn.end_time or start
    chunks = []
    counted: set[int] = set()
    for part, group in enumerate(groups):
        # Made of redacted blocks only; escape codes are already gone from block texts and
        # tool inputs (`scrub_turn`), so stripping here is a no-op kept as a guard.
        text = strip_terminal("\n\n".join(p for p, _ in group))
        redactions = 0
        for _, b in group:
            if id(b) not in counted:  # a split block counts in its first chunk
                counted.add(id(b))
                redactions += b.redactions
        meta = _meta(turn, [b for _, b in group], part)
        silent = _silent_calls(group, empty) if empty else []
        if silent:
            meta["silent"] = silent
        digest = hashlib.sha256(
            f"{turn.session_id}\x1f{turn.agent_id}\x1f{turn.offset}\x1f{part}\x1f{text}".encode()
        ).hexdigest()[:24]
        chunks.append(
            Chunk(
                id=digest,
                session_id=turn.session_id,
                agent_id=turn.agent_id,
                offset=turn.offset,
                part=part,
                turn=turn.index,
                kind=turn.kind,
                start_time=start,
                end_time=end,
                text=text,
                tokens=approx_tokens(text),
                redactions=redactions,
                meta=meta,
            )
        )
    return chunks


def render_block(block: Block) -> str:
    """The text of one block as stored and indexed (before redaction)."""
    kind = block.kind
    if kind == "prompt":
        return "[User]\n" + block.text
    if kind == "text":
        return "[Assistant]\n" + block.text
    if kind == "summary":
        return "[Summary]\n" + block.text
    if kind == "command":
        return "[Command expansion]\n" + _head(block.text, 25, 1500)
    if kind == "note":
        return block.text
    if kind == "tool_use":
        return f"[Tool:{block.name}] {tool_summary(block)}".rstrip()
    if kind == "tool_result":
        label = f"[Result:{block.name}{' error' if block.is_error else ''}]"
        body = trim_output(block.text, block.name, block.is_error)
        return f"{label}\n{body}" if body else ""
    return block.text


def tool_summary(block: Block) -> str:
    """A one-glance description of a tool call: the command, file, pattern or query."""
    inp = block.input or {}
    name = block.name
    if name == "Bash":
        cmd = _s(inp.get("command"))
        desc = _s(inp.get("description"))
        return clip(cmd, 600) + (f"  # {desc}" if desc else "")
    if name in ("Edit", "MultiEdit"):
        path = _s(inp.get("file_path"))
        edits = v if isinstance(v := inp.get("edits"), list) else [inp]
        diff = []
        for e in edits[:3]:
            if isinstance(e, dict):
                old, new = _s(e.get("old_string")), _s(e.get("new_string"))
                if old or new:
                    diff.append(_diff(old, new))
        return path + ("\n" + "\n".join(diff) if diff else "")
    if name == "Write":
        return _s(inp.get("file_path")) + "\n" + _head(_s(inp.get("content")), 6, 400)
    if name in ("Read", "NotebookEdit"):
        return _s(inp.get("file_path") or inp.get("notebook_path"))
    if name in ("Grep", "Glob"):
        return " ".join(x for x in (_s(inp.get("pattern")), _s(inp.get("path"))) if x)
    if is_agent_tool(name):
        kind = _s(inp.get("subagent_type"))
        desc = _s(inp.get("description"))
        prompt = _s(inp.get("prompt"))
        head = f"({kind}) " if kind else ""
        return f"{head}{desc}\n{clip(prompt, 500)}".strip()
    if name == "TodoWrite":
        todos = v if isinstance(v := inp.get("todos"), list) else []
        marks = {"completed": "x", "in_progress": "~"}
        lines = [
            f"[{marks.get(_s(t.get('status')), ' ')}] {_s(t.get('content'))}"
            for t in todos
            if isinstance(t, dict)
        ]
        return "\n".join(lines[:20])
    for key in ("query", "url", "command", "file_path", "path", "pattern", "description"):
        if _s(inp.get(key)):
            return clip(_s(inp.get(key)), 300)
    if inp:
        return clip(json.dumps(inp, ensure_ascii=False, sort_keys=True), 300)
    return ""


def trim_output(text: str, tool: str, is_error: bool) -> str:
    """Keep the useful part of a tool's output: head, tail and error lines."""
    text = text.strip()
    if not text:
        return ""
    if text.startswith("<persisted-output>"):
        return _head(text.replace("<persisted-output>", "").strip(), 12, 1000)
    if tool in ("Edit", "Write", "MultiEdit", "TodoWrite", "NotebookEdit") and not is_error:
        return clip(text.splitlines()[0], 200)
    if tool == "Read" and not is_error:
        return _head(text, 8, 600)
    if is_agent_tool(tool):
        return _head(text, 40, 2500)
    lines = text.splitlines()
    if len(lines) <= 30 and len(text) <= 2500:
        return "\n".join(clip(line, 400) for line in lines)
    head, tail = lines[:15], lines[-8:] if len(lines) > 23 else []
    middle = lines[15 : len(lines) - len(tail)]
    errors = _error_lines("\n".join(middle), 10)
    out = [clip(line, 400) for line in head]
    omitted = len(middle) - len(errors)
    if errors:
        out.append(f"[… {omitted} lines omitted; error lines kept …]")
        out += [clip(line, 400) for line in errors]
    elif middle:
        out.append(f"[… {omitted} lines omitted …]")
    out += [clip(line, 400) for line in tail]
    return "\n".join(out)


def _error_lines(text: str, limit: int) -> list[str]:
    """The first `limit` lines of `text` that `_ERROR_LINE_RE` matches, in order.

    Huge outputs are common, and the regex tries its alternatives at every position; plain
    `str.find` of each word in the lower-cased text gives the same lines several times faster.
    That holds while lower-casing keeps every offset and no character folds to an ASCII letter
    only under re.I; otherwise the regex decides.
    """
    low = text.lower()
    if len(low) != len(text) or any(c in text for c in _FOLDS_TO_ASCII):
        return [m.group(0) for _, m in zip(range(limit), _ERROR_LINE_RE.finditer(text))]
    found = {w: low.find(w) for w in _ERROR_WORDS}
    out: list[str] = []
    while len(out) < limit:
        hits = [i for i in found.values() if i != -1]
        if not hits:
            break
        at = min(hits)
        end = text.find("\n", at)
        if end == -1:
            end = len(text)
        out.append(text[text.rfind("\n", 0, at) + 1 : end])
        for w, i in found.items():
            if i != -1 and i < end:
                found[w] = low.find(w, end)
    return out


def _silent_calls(group: list[tuple[str, Block]], empty: set[str]) -> list[int]:
    """Which of a chunk's tool calls (0-based, in the order their ``[Tool:`` lines appear)
    had an ``empty`` output. Such a result renders as nothing, so the stored text cannot
    tell it from a call still waiting; readers that pair results with calls
    (`causantic.derive_state.SessionReader`) need it to keep the pairs in step."""
    calls = [b for piece, b in group if b.kind == "tool_use" and piece.startswith("[Tool:")]
    return [i for i, b in enumerate(calls) if b.tool_id in empty]


def _meta(turn: Turn, blocks: list[Block], part: int) -> dict[str, Any]:
    """Metadata of a chunk, from blocks that are already redacted (`causantic.ingest.scrub`)."""
    files: list[str] = []
    edited: list[str] = []
    tools: list[str] = []
    commands: list[str] = []
    errors: list[str] = []
    spawned: list[str] = []
    returned: list[str] = []
    for b in blocks:
        if b.kind == "tool_use":
            if b.name not in tools:
                tools.append(b.name)
            touched, changed = tool_files(b)
            files += [f for f in touched if f not in files]
            edited += [f for f in changed if f not in edited]
            if b.name == "Bash" and b.input:
                cmd = _s(b.input.get("command")).strip()
                if cmd:
                    commands.append(clip(cmd.splitlines()[0], 200))
            if b.agent_id and b.agent_id not in spawned:
                spawned.append(b.agent_id)
        elif b.kind == "tool_result":
            if b.is_error and b.text.strip():
                errors.append(clip(b.text.strip().splitlines()[0], 200))
            if b.agent_id and b.agent_id not in returned:
                returned.append(b.agent_id)
    meta: dict[str, Any] = {}
    for key, value in (
        ("files", files),
        ("edited", edited),
        ("tools", tools),
        ("commands", commands[:20]),
        ("errors", errors[:10]),
        ("spawned", spawned),
        ("returned", returned),
    ):
        if value:
            meta[key] = value
    if part == 0:
        if turn.shift:
            meta["shift"] = True
        if turn.git_branch:
            meta["branch"] = turn.git_branch
        prompt = next((b.text for b in turn.blocks if b.kind == "prompt"), "")
        if prompt:
            meta["prompt"] = clip(prompt[:2000], 300)
    if turn.todos is not None and part == 0:
        meta["todos"] = [
            {"content": clip(_s(t.get("content")), 200), "status": _s(t.get("status"))}
            for t in turn.todos[:30]
        ]
    return meta


def _split(text: str, budget: int) -> list[str]:
    """Split an oversized block at paragraph, then line, then character boundaries."""
    if len(text) <= budget:
        return [text]
    out: list[str] = []
    current = ""
    for para in re.split(r"\n\n+", text):
        units = [para] if len(para) <= budget else _split_lines(para, budget)
        for unit in units:
            if current and len(current) + len(unit) + 2 > budget:
                out.append(current)
                current = _CONTINUED + "\n" + unit
            else:
                current = f"{current}\n\n{unit}" if current else unit
    if current:
        out.append(current)
    return out


def _split_lines(text: str, budget: int) -> list[str]:
    out: list[str] = []
    current = ""
    for line in text.split("\n"):
        while len(line) > budget:
            cut = budget - 40
            out.append((current + "\n" if current else "") + line[:cut] + " " + _CONTINUED)
            current = ""
            line = line[cut:]
        if current and len(current) + len(line) + 1 > budget:
            out.append(current)
            current = line
        else:
            current = f"{current}\n{line}" if current else line
    if current:
        out.append(current)
    return out


def _head(text: str, lines: int, chars: int) -> str:
    parts = text.splitlines()
    out = "\n".join(clip(line, 300) for line in parts[:lines])
    if len(out) > chars:
        out = out[:chars].rstrip() + " …"
    if len(parts) > lines:
        out += f"\n[… {len(parts) - lines} more lines]"
    return out


def _diff(old: str, new: str) -> str:
    minus = "\n".join("- " + line for line in _head(old, 8, 400).splitlines())
    plus = "\n".join("+ " + line for line in _head(new, 12, 600).splitlines())
    return f"{minus}\n{plus}".strip()


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""
