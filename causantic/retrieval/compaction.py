"""Compaction: a chunk's text as answers show it, what people wrote kept, what tools printed cut.

`compact` keeps what the user and the assistant wrote and cuts what tools printed: user and
assistant text stay (very long ones keep their head and the lines holding the query's words,
`head_cut`), and each run of tool calls becomes one ``[Tools]`` line (tool and target)
followed by at most a few lines of their output: the lines holding most of the query's words
(`line_score`; error lines first among equals; JSON-quoted text split at its escaped
newlines, `output_lines`), and before them the line `git commit` prints
for each commit made ("[branch sha] subject": what came out of the work, `COMMIT_LINES`); what the user said inside a tool
result (answers to the assistant's questions, why they rejected a tool call: `user_words`) is
kept as their text; a note that the user stopped the run (``[interrupted by user]``) is kept
after it. The stored text stays whole; this is rendering only
(`causantic.retrieval.answer` builds answer units from it). Pure Python: hooks render through
it (the session-start briefing too: importing it pulls no dataclasses).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from causantic.tokens import clip

#: Where a block starts inside a chunk's text.
_BLOCK_RE = re.compile(r"\n\n(?=\[(?:User|Assistant|Tool:|Result:|Summary|Command|…continued))")
_TOOL_RE = re.compile(r"^\[Tool:([^\]]+)\] ?(.*)$")
#: How a stored turn says the user stopped it (the transcript's note; it ends the text of the
#: block before it, a tool result's too).
INTERRUPTED = "[interrupted by user]"
#: An error word on its own or at the end of a snake_case name (Claude Code wraps a failed tool
#: call's message in ``<tool_use_error>``).
_ERROR_RE = re.compile(r"(?:\b|(?<=_))(error|fail(ed|ure|s)?|panic|exception|traceback|fatal|denied|"
                       r"undefined|cannot|exit code [1-9])\b", re.I)
_PATH_RE = re.compile(r"^(/|~/|\./)?([\w.@-]+/)+[\w.@-]+$")
#: What `git commit` prints first: "[branch 1a2b3c4] subject" (what came out of the work).
_COMMIT_RE = re.compile(r"^\[[\w./+-]+(?: \(root-commit\))? [0-9a-f]{7,40}\] \S")
#: Characters kept per kind of block (a cut block ends in a "[… n more lines]" marker).
USER_CHARS = 700
ASSISTANT_CHARS = 1200
SUMMARY_CHARS = 900
LINE_CHARS = 180
#: A run's ``[Tools]`` line: about two calls. What the calls were matters less than what came
#: of them and what was said; a longer line pushed other answers' text out of the budget
#: (tune: search +1 question at 2k/4k, recall +1, predict +1; report: search and predict +1 at 2k).
TOOLS_LINE_CHARS = 160
MATCH_LINES = 3
#: Commit lines (`_COMMIT_RE`) a run's output keeps besides those.
COMMIT_LINES = 2


def terms_of(query: str) -> list[str]:
    """The query's words worth keeping lines for (3+ characters), lower-cased."""
    # deferred: the session-start briefing compacts without a query, and fts pulls dataclasses
    from causantic.retrieval.fts import query_terms

    out = []
    for phrase in query_terms(query):
        out += [w for w in phrase.split() if len(w) >= 3]
    return list(dict.fromkeys(out))


def _strong(term: str) -> bool:
    """An identifier-like term: one is enough to keep a line (plain words need two)."""
    return len(term) >= 8 or any(c.isdigit() or c in "_." for c in term)


def holds(line: str, terms: Sequence[str]) -> bool:
    """Whether a line holds the query: one identifier-like term, or two words."""
    return line_score(line, terms) > 0


def line_score(line: str, terms: Sequence[str], error: bool = False) -> int:
    """How much of the query a line of tool output holds: each term it holds counts 1, an
    identifier-like one 2; 0 unless it `holds` the query. An error line (`error`) counts 1
    more and needs no term: what failed is worth showing."""
    low = line.lower()
    found = [t for t in terms if t in low]
    score = sum(2 if _strong(t) else 1 for t in found)
    if error:
        return score + 1
    return score if any(_strong(t) for t in found) or len(found) >= 2 else 0


def blocks_of(text: str) -> list[str]:
    return _BLOCK_RE.split(text)


def messages_only(text: str) -> bool:
    """Whether a chunk is only messages (a chat exchange): the user's text and the
    assistant's, no tool call, output, command or summary."""
    return text.startswith("[User]") and all(
        b.startswith(("[User]", "[Assistant]")) for b in blocks_of(text))


def compact(text: str, terms: Sequence[str] = ()) -> str:
    """A chunk's text with tool calls and their output cut hard (module docstring)."""
    out: list[str] = []
    run: list[str] = []
    for block in blocks_of(text):
        if block.startswith(("[Tool:", "[Result:")):
            run.append(block)
            continue
        if run:
            out.append(_tools(run, terms))
            run = []
        out.append(_text_block(block, terms))
    if run:
        out.append(_tools(run, terms))
    return "\n\n".join(b for b in out if b)


def _text_block(block: str, terms: Sequence[str]) -> str:
    if block.startswith("[Assistant"):
        return head_cut(block, ASSISTANT_CHARS, terms)
    if block.startswith(("[Summary", "[Command")):
        return head_cut(block, SUMMARY_CHARS, terms)
    return head_cut(block, USER_CHARS, terms)


def _line(line: str, limit: int = LINE_CHARS) -> str:
    return clip(line.rstrip(), limit)


def head_cut(block: str, limit: int, terms: Sequence[str]) -> str:
    """The block's head up to `limit` characters (at a line end), plus lines holding terms."""
    if len(block) <= limit:
        return block
    cut = block[:limit]
    nl = cut.rfind("\n")
    if nl > limit // 2:
        cut = cut[:nl]
    rest = [x for x in block[len(cut):].split("\n") if x.strip()]
    extra = [_line(x) for x in rest if holds(x, terms)][:MATCH_LINES]
    return "\n".join([cut.rstrip(), *extra, f"[… {len(rest) - len(extra)} more lines]"])


def _target(name: str, arg: str) -> str:
    """A tool call in a few words: the tool and its file's name, command or argument."""
    arg = arg.strip()
    if _PATH_RE.match(arg.split(" ")[0] if arg else ""):
        arg = arg.split(" ")[0].rsplit("/", 1)[-1]
    arg = arg.split("  # ")[0]
    return f"{name} {_line(arg, 70)}".strip()


def output_lines(body: str) -> list[str]:
    """A tool call's or result's lines; a line that is JSON-quoted text (two or more escaped
    newlines: `gh api` output, a hook's report) is split at those too, so the line that holds
    the query is shown, not the head of the whole quoted blob."""
    return [part for line in body.split("\n")
            for part in (line.split("\\n") if line.count("\\n") >= 2 else (line,))]


def _tools(run: Sequence[str], terms: Sequence[str]) -> str:
    """A run of tool calls and results as one line plus their telling output lines, then
    what the user said in them (`user_words`) as user text."""
    calls: list[str] = []
    scored: list[tuple[int, str]] = []
    commits: list[str] = []
    said: list[str] = []
    for block in run:
        head, _, body = block.partition("\n")
        m = _TOOL_RE.match(head)
        if m:
            calls.append(_target(m.group(1), m.group(2)))
            lines = output_lines(body)
            errors = False
        else:
            words = user_words(body)
            if words:
                said.append(head_cut(f"[User]\n{words}", USER_CHARS, terms))
                continue
            lines = output_lines(body)
            errors = "error" in head
        commits += ["  " + _line(x.strip()) for x in lines if _COMMIT_RE.match(x.strip())]
        for x in lines:
            if not x.strip() or x.startswith("[…"):
                continue
            error = bool((errors or not m) and len(x) > 12 and _ERROR_RE.search(x))
            score = line_score(x, terms, error)
            if score:
                scored.append((score, "  " + _line(x.strip())))
    # The lines holding most of the query, not the first ones: an answer often sits below
    # the lines that only name what the question names (blind tune: +2 questions, none lost).
    best = sorted(range(len(scored)), key=lambda i: (-scored[i][0], i))[:MATCH_LINES]
    kept = [scored[i][1] for i in sorted(best)]
    line = "; ".join(dict.fromkeys(calls))
    line = f"[Tools] {_line(line, TOOLS_LINE_CHARS)}" if line else "[Tools]"
    shown = dict.fromkeys([*list(dict.fromkeys(commits))[:COMMIT_LINES], *kept])
    # The user stopping the work is what came of it: the note survives the cut output.
    stopped = [INTERRUPTED] if run[-1][-40:].rstrip().endswith(INTERRUPTED) else []
    # Results alone (their calls end the chunk before) with no line kept: nothing to say.
    lead = ["\n".join([line, *shown])] if calls or shown else []
    return "\n\n".join([*lead, *said, *stopped])


#: How Claude Code words a tool result that carries the user's own words: the answers to
#: its questions (AskUserQuestion), or why they rejected a tool call.
_ANSWERED = "User has answered your questions: "
_ANSWERED_END = re.compile(r"\s*You can now continue with the user's answers in mind\.?\s*$")
_REJECTED_SAID = "To tell you how to proceed, the user said:\n"


def user_words(result: str) -> str:
    """What the user said inside a tool result (their answers to the assistant's questions, or
    what they said when rejecting a tool call), "" when it holds none: a decision, kept as
    the user's text rather than cut as tool output."""
    if result.startswith(_ANSWERED):
        return _ANSWERED_END.sub("", result[len(_ANSWERED):]).strip()
    _, found, words = result.partition(_REJECTED_SAID)
    return words.strip() if found else ""
