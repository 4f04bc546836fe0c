"""The redaction choke point: a parsed transcript is redacted whole before anything is derived.

Everything ingest stores comes from a `ParsedFile`: chunk text (rendered from blocks), chunk
metadata (commands, errors, files, prompt, todos, branch), session rows (title, cwd, branch)
and, computed from those, session states and topic names. `scrub_parsed` redacts every string
of that structure in place, right after parsing, so no later step can forget to:

- each block's text as a whole, before it is rendered, trimmed or split into chunks (a key
  whose middle a trim would drop, or that straddles two chunks, is still seen whole); a
  successful Read result, which only ever shows its first lines, is redacted as far as
  those lines plus a margin, and the rest is dropped to its newlines;
- each tool call's input as one JSON document, so a value keeps the context of its key
  (``{"password": "..."}``) and a multi-line file body is seen whole;
- titles (``summary``/``custom-title`` records), working directories, branches and todos.

`scrub_value` does the same for any JSON-like value (session states, `causantic redact
--rescan`). The redact function is passed in (`causantic.ingest.run.make_redact`), so this module
needs only the standard library and the transcript dataclasses.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from causantic.transcripts.hygiene import strip_terminal
from causantic.transcripts.turns import Block, ParsedFile, Turn

Redact = Callable[[str], tuple[str, int]]


def scrub_parsed(parsed: ParsedFile, redact: Redact) -> int:
    """Redact every text of a parsed file in place; returns the number of secrets replaced."""
    total = sum(scrub_turn(turn, redact) for turn in parsed.turns)
    for info in parsed.sessions.values():
        for name in ("title", "cwd", "git_branch"):
            value = getattr(info, name)
            if value:
                text, n = redact(value)
                setattr(info, name, text)
                total += n
    return total


def scrub_turn(turn: Turn, redact: Redact) -> int:
    """Redact a turn's blocks, todos and branch in place; returns the secrets replaced.

    Each block keeps its own count (``Block.redactions``, -1 before this ran) so a chunk can
    report how many secrets its text lost and chunking knows the turn is done.
    """
    total = 0
    for block in turn.blocks:
        if block.redactions >= 0:
            continue
        n = 0
        if block.text:
            shown = _head_lines(block)
            block.text, n = redact(block.text) if shown is None else _redact_head(
                block.text, shown, redact
            )
        if block.input:
            # escape codes first: one between two halves of a token would hide it
            block.input, m = scrub_json(_without_escapes(block.input), redact)
            n += m
        block.redactions = n
        total += n
    if turn.todos:
        turn.todos, n = scrub_value(turn.todos, redact)
        total += n
    if turn.git_branch:
        turn.git_branch = redact(turn.git_branch)[0]
    return total


# Past the lines a head-only render can show, this much more is redacted, up to the end of
# a line. The cut is always at a line end, so no single-line secret is cut; a PEM block
# without its END in reach is taken line by line to the end of what is redacted, and the
# margin leaves room for a user pattern that looks a little further.
_HEAD_MARGIN = 1024


def _head_lines(block: Block) -> int | None:
    """How many lines of the block's text rendering can show, if it shows only a head.

    Mirrors `causantic.ingest.chunking.trim_output`: a successful Read shows its first 8 lines. Read
    results are half of all transcript text, and most of it is never shown.
    """
    if block.kind == "tool_result" and block.name == "Read" and not block.is_error:
        return None if block.text.lstrip().startswith("<persisted-output>") else 8
    return None


def _redact_head(text: str, lines: int, redact: Redact) -> tuple[str, int]:
    """Redact the part of ``text`` a head of ``lines`` lines can show, with a margin; the rest
    becomes its newlines and a "…" (the "[… N more lines]" count stays, no text is kept
    unredacted).

    Twice the lines are redacted because redaction can fold many lines into one (a PEM block),
    which brings later lines into the head.
    """
    end = 0
    for _ in range(2 * lines):
        nl = text.find("\n", end)
        if nl < 0:
            return redact(text)
        end = nl + 1
    cut = text.find("\n", end + _HEAD_MARGIN)
    if cut < 0:
        return redact(text)
    head, n = redact(text[:cut])
    # The newlines keep the line count; a last "…" keeps them from being stripped away.
    return head + "\n" * text.count("\n", cut) + "\u2026", n


def _without_escapes(value: Any) -> Any:
    """A tool input with terminal escape sequences removed from its strings (rarely any)."""
    if isinstance(value, str):
        return strip_terminal(value) if "\x1b" in value or "\x9b" in value else value
    if isinstance(value, list):
        return [_without_escapes(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_escapes(v) for k, v in value.items()}
    return value


def scrub_json(value: dict[str, Any], redact: Redact) -> tuple[dict[str, Any], int]:
    """A JSON object with secrets replaced, redacted as one document so keys give context.

    A replacement never spans a quote (the detectors stop at quotes), so the result parses;
    if it ever does not, each string is redacted on its own instead.
    """
    try:
        doc = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return scrub_value(value, redact)
    text, n = redact(doc)
    if n == 0:
        return value, 0
    try:
        out = json.loads(text)
    except ValueError:
        return scrub_value(value, redact)
    return (out, n) if isinstance(out, dict) else scrub_value(value, redact)


def scrub_value(value: Any, redact: Redact) -> tuple[Any, int]:
    """Any JSON-like value with every string (keys included) redacted on its own."""
    if isinstance(value, str):
        return redact(value) if value else (value, 0)
    if isinstance(value, list):
        total = 0
        out_list = []
        for item in value:
            item, n = scrub_value(item, redact)
            out_list.append(item)
            total += n
        return out_list, total
    if isinstance(value, dict):
        total = 0
        out_dict = {}
        for key, item in value.items():
            if isinstance(key, str):
                key, n = redact(key)
                total += n
            item, n = scrub_value(item, redact)
            out_dict[key] = item
            total += n
        return out_dict, total
    return value, 0
