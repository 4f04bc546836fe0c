"""Automatic observations at ingest, without an LLM: cheap heuristics tuned for precision.

After each ingest, every session with chunks added since the last scan (a chunk rowid
watermark in `memory_marks`) is read again in order, and four kinds of statement are kept,
each citing the chunk(s) it came from:

- **instruction** (10): a sentence of a real user prompt that sets a standing rule: it opens
  with "always"/"never" (optionally after "please"), or says "from now on", "going forward",
  "in the future", "remember that/to", "don't ever"/"do not ever", "make sure to always", or
  "should/must always/never". Questions, pasted plans, slash-command expansions and long
  pastes are skipped.
- **decision** (8): a short user reply that confirms a choice ("let's go with A", "yes,
  choose version B", "ok proceed with TypeScript") right after an assistant message that
  asked; the memory quotes the reply and the question (and the chosen option's line).
- **test_result** (6): the summary line of a test run (pytest, go test, jest/vitest, cargo,
  mix, mocha, bun) with its command.
- **error** (9): a failing command that later succeeded when re-run, with the files edited in
  between: the error line, the fix, the evidence chunks of both.

Ids are content hashes of project and text, so re-ingest finds the same memories (a repeat
counts only with new evidence), and tombstoned ones stay forgotten. Precision on the shared
transcripts is measured by hand in `bench/memories.py` (labels in bench/queries).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import apsw

from causantic.derive_state import SessionReader, silent_calls
from causantic.memory import DEFAULT_IMPORTANCE
from causantic.memory.observe import Redact, memory_id
from causantic.store import memories as sql
from causantic.store.counts import existing_ids, max_rowid
from causantic.tokens import clip_line

SCAN_MARK = "scan"
MAX_PROMPT = 1500  # longer user messages are pastes (plans, logs), not instructions

_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|\n+")
_INSTRUCTION_RE = re.compile(
    r"^(?:please\s+|and\s+|also\s+|so\s+)?(?:always|never)\s+\w"
    r"|\b(?:from now on|going forward|in the future|remember (?:that|to)|don'?t ever|do not ever"
    r"|make sure (?:to|you) always|(?:should|must) (?:always|never))\b",
    re.I,
)
_NOT_INSTRUCTION_RE = re.compile(
    r"^(?:i|it|this|that|they|he|she|we've|i've)\b.*\bnever\b|\bnever (?:been|was|were|had)\b",
    re.I,
)
_DECISION_RE = re.compile(
    r"\b(?:let'?s|lets)\s+(?:go with|use|stick with|keep|do|switch to|choose)\b"
    r"|\b(?:go with|choose|chose|pick|proceed with|decided (?:to|on)|we'?ll use|we will use)\b",
    re.I,
)
_OPTION_REF_RE = re.compile(
    r"\b(?:option|version|approach|plan|choice)?\s*([A-D]|[1-5])\b[.)]?", re.I)
_TEST_CMD_RE = re.compile(
    r"\b(?:pytest|py\.test|go test|jest|vitest|cargo test|mix test|mocha|bun test"
    r"|(?:npm|pnpm|yarn) (?:run )?test|make test|mise run test|tox|nox|phpunit|rspec)\b"
    r"|run_tests?\.sh"
)
_TEST_SUMMARY_RE = re.compile(
    r"^=+ (.*\b(?:passed|failed|error)\b.*?) in [\d.]+s.*=+$"  # pytest
    r"|^(Tests?:\s+.*\b(?:passed|failed)\b.*)$"  # jest / vitest "Tests:  1 failed, 2 passed"
    r"|^\s*(Tests\s+\d+ (?:passed|failed).*)$"  # vitest "Tests  3 passed (3)"
    r"|^(test result: (?:ok|FAILED)\. \d+ passed; \d+ failed.*)$"  # cargo
    r"|^(\d+ tests?, \d+ failures?.*)$"  # mix / rspec
    r"|^((?:ok|FAIL)\s+\S+\s+(?:[\d.]+s|\(cached\)|\[build failed\]).*)$"  # go test
    r"|^(\d+ passing(?: \([^)]*\))?)$",  # mocha
    re.M,
)
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*m|\[\d+(?:;\d+)*m")
_ERROR_LINE_RE = re.compile(
    r"\berror\b|\w+Error\b|\bfail(?:ed|ure)?\b|panic|exception|traceback|fatal|undefined|cannot|no such",
    re.I,
)
_SPECIFIC_RE = re.compile(r"\w\.\w+:\d+|--- FAIL|^FAIL\b|Error:|Assertion|\w+Error\b")
_NOT_BUILD_RE = re.compile(r"^(?:git|gh|cd|ls|cat|echo|mkdir|rm|cp|mv|pwd|curl|open)\b")
_EDIT_TOOLS = ("Edit", "MultiEdit", "Write", "NotebookEdit")
_NOT_ERRORS = ("The user doesn't want to proceed", "The user doesn't want to take this action",
               "[Request interrupted", "<tool_use_error>Sibling tool call errored")


@dataclass
class Found:
    """One automatic observation before it is written."""

    type: str
    text: str
    cites: tuple[str, ...]
    session_id: str
    created_at: str


@dataclass
class _Chunk:
    id: str
    start_time: str
    text: str
    silent: Sequence[int] = ()  # its calls with no output (chunk meta, `SessionReader`)


def scan(conn: apsw.Connection, redact: Redact | None = None, limit_sessions: int | None = None
         ) -> dict[str, int]:
    """Observe what the chunks added since the last scan show; return counts by type.

    Reads sessions with new chunks, writes in one short transaction per session, then moves
    the watermark. Safe to run concurrently and repeatedly (content-hash ids).
    """
    start = int(sql.get_mark(conn, SCAN_MARK) or 0)
    top = max_rowid(conn)
    sessions = sql.sessions_after(conn, start)
    if limit_sessions is not None:
        sessions = sessions[:limit_sessions]
    counts: dict[str, int] = {}
    for session_id in sessions:
        project, chunks = _session(conn, session_id)
        found = list(observations(chunks, session_id))
        with conn:
            for f in found:
                status = _write(conn, f, project, redact)
                if status == "created":
                    counts[f.type] = counts.get(f.type, 0) + 1
    if limit_sessions is None:
        with conn:
            sql.set_mark(conn, SCAN_MARK, str(top))
    return counts


def _session(conn: apsw.Connection, session_id: str) -> tuple[str, list[_Chunk]]:
    rows = sql.main_chunks(conn, session_id)
    project = rows[0].project if rows else ""
    return project, [_Chunk(r.id, r.start_time, r.text, silent_calls(r.meta)) for r in rows]


def _write(conn: apsw.Connection, f: Found, project: str, redact: Redact | None) -> str:
    text, redactions = redact(f.text) if redact else (f.text, 0)
    mid = memory_id(project, text)
    if sql.forgotten(conn, [mid]):
        return "forgotten"
    present = existing_ids(conn, f.cites)
    memory = sql.NewMemory(mid, project, f.type, text, DEFAULT_IMPORTANCE[f.type], "auto",
                           f.session_id, f.created_at, redactions,
                           tuple(c for c in f.cites if c in present))
    return sql.upsert(conn, memory, count_repeat=False)


# -- the heuristics (pure functions over a session's chunks) -------------------------------


def observations(chunks: Sequence[_Chunk], session_id: str) -> Iterable[Found]:
    """Every automatic observation in one session's main conversation, in order."""
    last_assistant = ""
    # Pairs each result with its own call, only when no other call of its tool waits.
    reader = SessionReader(unambiguous=True)
    failures: dict[str, tuple[str, str, str, list[str]]] = {}  # command -> (msg, chunk, time, edits)
    for chunk in chunks:
        for _, label, body, call, _ in reader.read(chunk.text, "", chunk.silent):
            if label == "User":
                prompt = body.split("\n\n[", 1)[0].strip()
                yield from _instructions(prompt, chunk, session_id)
                decision = _decision(prompt, last_assistant)
                if decision:
                    yield Found("decision", decision, (chunk.id,), session_id, chunk.start_time)
            elif label == "Assistant":
                last_assistant = body
            elif label.startswith("Tool:"):
                tool = label[5:].strip()
                if tool in _EDIT_TOOLS:
                    path = body.split("\n", 1)[0].strip()
                    for state in failures.values():
                        if path and path not in state[3]:
                            state[3].append(path)
            elif label.startswith("Result:Bash"):
                command = call.subject if call else ""
                failed = label.endswith(" error")
                found = _test_result(command, body, chunk, session_id, failed)
                if found:
                    yield found
                if not command or _NOT_BUILD_RE.match(command) or body.strip().startswith(
                        _NOT_ERRORS):
                    continue
                key = _command_key(command)
                if failed:
                    message = _error_line(body)
                    if message:
                        failures[key] = (message, chunk.id, chunk.start_time, [])
                elif key in failures:
                    message, err_chunk, when, edits = failures.pop(key)
                    if edits:
                        yield Found("error", _fix_text(command, message, edits),
                                    (err_chunk, chunk.id), session_id, when)


def _instructions(prompt: str, chunk: _Chunk, session_id: str) -> Iterable[Found]:
    if not prompt or len(prompt) > MAX_PROMPT or prompt.startswith(("/", "#", "!")):
        return
    if prompt.lower().startswith(("implement the following plan", "<", "❯")):
        return
    for sentence in _SENTENCE_RE.split(prompt):
        s = sentence.strip().strip("*_-• ").strip()
        if len(s) < 12 or len(s) > 400 or s.endswith("?") or "`" * 3 in s:
            continue
        if _INSTRUCTION_RE.search(s) and not _NOT_INSTRUCTION_RE.search(s):
            yield Found("instruction", s, (chunk.id,), session_id, chunk.start_time)


def _decision(prompt: str, last_assistant: str) -> str | None:
    if not prompt or len(prompt) > 200 or prompt.endswith("?") or not _DECISION_RE.search(prompt):
        return None
    question = _question(last_assistant)
    if not question:
        return None
    reply = " ".join(prompt.split())
    text = f'Decided: "{reply}" (asked: {question})'
    option = _option_line(prompt, last_assistant)
    if option:
        text += f" Chosen: {option}"
    return text


def _question(text: str) -> str:
    """The assistant's last question, one line, or ''. A bare "Which one?" is replaced by the
    last earlier question that says what it is about."""
    lines = [line.replace("**", "").strip().strip("*# ").strip() for line in text.strip().splitlines()]
    asked = [line for line in lines[-40:] if line.endswith("?") and len(line) > 10]
    if not asked:
        return ""
    informative = [q for q in asked if len(q) >= 40]
    return clip_line(asked[-1] if len(asked[-1]) >= 40 or not informative else informative[-1], 200)


def _option_line(prompt: str, assistant: str) -> str:
    """The line (or table row) of the option the reply chose, e.g. "A. Delete unused X"."""
    m = _OPTION_REF_RE.search(prompt.replace("let's", "").replace("lets", ""))
    if not m:
        m = re.search(r"\b(?:option|version)\s+([A-D1-5])\b[^\n]*\?\s*$", assistant.strip(), re.I)
    if not m:
        return ""
    key = re.escape(m.group(1).upper())
    pattern = re.compile(
        rf"^\s*(?:[-*|]\s*)?(?:\*\*)?(?:option|version|approach)?\s*\(?{key}[).:]\)?\s*(.+)$",
        re.I | re.M)
    found = pattern.search(assistant)
    if not found:
        return ""
    line = found.group(0).replace("**", "").strip(" |")
    return clip_line(re.sub(r"\s*\|\s*", " — ", line), 200)


def _test_result(command: str, body: str, chunk: _Chunk, session_id: str,
                 failed: bool = False) -> Found | None:
    if not command or not _TEST_CMD_RE.search(command):
        return None
    clean = _ANSI_RE.sub("", body)
    found = [next(g for g in m.groups() if g).strip() for m in _TEST_SUMMARY_RE.finditer(clean)]
    if not found:
        return None
    go_ok = [f for f in found if f.startswith("ok ")]
    go_fail = [f.split()[1] for f in found if f.startswith("FAIL")]
    if go_ok or go_fail:  # go test: one line per package
        parts = [f"{len(go_ok)} package{'s' if len(go_ok) != 1 else ''} ok"] if go_ok else []
        if go_fail:
            parts.append(f"FAIL: {', '.join(dict.fromkeys(go_fail))}")
        summary = ", ".join(parts)
    else:
        summary = "; ".join(dict.fromkeys(found[-2:]))
    if failed and not re.search(r"FAIL|fail|[1-9]\d* failures?|error", summary):
        summary += " (but the command exited with an error)"
    return Found("test_result", f"`{clip_line(command, 160)}` → {clip_line(summary, 240)}",
                 (chunk.id,), session_id, chunk.start_time)


def _error_line(body: str) -> str:
    """The most specific error line: one naming a file:line or a failing test, else the first."""
    clean = _ANSI_RE.sub("", body)
    lines = [line.strip() for line in clean.splitlines()]
    lines = [line for line in lines if len(line) > 8 and _ERROR_LINE_RE.search(line)
             and not line.lower().startswith(("exit code", "warning", "[…"))]
    specific = [line for line in lines if _SPECIFIC_RE.search(line)]
    return clip_line((specific or lines or [""])[0], 200)


def _fix_text(command: str, message: str, edits: list[str]) -> str:
    files = ", ".join(_short_path(p) for p in edits[:5]) + (" …" if len(edits) > 5 else "")
    return (f"`{clip_line(command, 120)}` failed with: {message} — fixed by editing {files}; "
            "the same command then succeeded.")


def _command_key(command: str) -> str:
    """A re-run of a command is the same key: pipes to head/tail/grep and 2>&1 ignored."""
    main = re.split(r"\s*\|\s*(?:head|tail|grep)\b", command)[0]
    main = main.replace("2>&1", "")
    return " ".join(main.split())


def _short_path(path: str) -> str:
    parts = path.strip().split("/")
    return "/".join(parts[-2:]) if len(parts) > 2 else path.strip()
