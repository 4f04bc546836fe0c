"""After compaction: what the summary dropped, added back from the session's stored state.

On `SessionStart` with source `compact`, Claude continues from a summary written by the
model. `dropped` compares that summary with what causantic recorded of the same session
(`causantic.derive_state`): files edited, commands that failed, errors still open, the open
todo list and the last request. Whatever the summary does not mention is returned, and
`render` turns it into a short block for the session-start context. No LLM: "mentioned" means
the file's name, the command's program, enough of the error's or todo's
words, or half the last request's words appear in the summary (a failed command counts as
mentioned when its program is).

`read_summary` finds the newest compaction summary at the end of the transcript (read from its
last 4 MiB only), so it works before the background ingest has stored it.
"""

from __future__ import annotations

import json
import os
import re

from causantic.records import Record
from causantic.tokens import clip_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from causantic.derive_state import SessionState

TAIL_BYTES = 4 << 20
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{2,}")
_STOP = frozenset("the and for with that this from into have has was were are not but you "
                  "your can will then than them they its it's let's lets all any also".split())


class Dropped(Record):
    """What the summary left out (each list in the session's order)."""

    __slots__ = ("edited", "failed", "open_errors", "todos", "last_request")
    edited: list[str]
    failed: list[str]
    open_errors: list[str]
    todos: list[str]
    last_request: str

    def __init__(self, edited: list[str], failed: list[str], open_errors: list[str],
                 todos: list[str], last_request: str) -> None:
        self._init(edited=edited, failed=failed, open_errors=open_errors, todos=todos,
                   last_request=last_request)

    def __bool__(self) -> bool:
        return bool(self.edited or self.failed or self.open_errors or self.todos
                    or self.last_request)


def read_summary(transcript: str) -> str:
    """The text of the newest compaction summary in the transcript file, or ''."""
    try:
        with open(transcript, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - TAIL_BYTES))
            tail = f.read()
    except OSError:
        return ""
    for raw in reversed(tail.split(b"\n")):
        if b"isCompactSummary" not in raw and b"This session is being continued" not in raw:
            continue
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(rec, dict) or rec.get("type") != "user":
            continue
        text = _content_text((rec.get("message") or {}).get("content"))
        if rec.get("isCompactSummary") or text.lstrip().startswith("This session is being continued"):
            return text
    return ""


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content
                         if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP}


def _mentioned(words: set[str], summary_words: set[str], share: float) -> bool:
    return bool(words) and len(words & summary_words) >= share * len(words)


def dropped(state: SessionState, summary: str) -> Dropped:
    """What `summary` does not mention of the session's state (see the module docstring)."""
    lower = summary.lower()
    summary_words = _words(summary)
    root = (state.cwd or "").rstrip("/") + "/"
    edited = [f.removeprefix(root) if root != "/" else f for f in state.edited
              if os.path.basename(f).lower() not in lower]
    failed, open_errors = [], []
    for e in state.errors:
        if e.tool == "Bash":
            words = e.subject.split()
            named = bool(words) and words[0].lower() in summary_words
        else:
            named = os.path.basename(e.subject).lower() in lower if e.subject else False
        said = _mentioned(_words(e.message), summary_words, 0.6)
        line = f"{e.tool} `{clip_line(e.subject, 90)}`: {clip_line(e.message, 140)}"
        if not e.resolved and not said:
            open_errors.append(line)
        elif e.tool == "Bash" and not named and not said:
            failed.append(line + (f" (resolved: {clip_line(e.how, 80)})" if e.resolved else ""))
    todos = [t.get("content", "") for t in state.open_todos
             if not _mentioned(_words(t.get("content", "")), summary_words, 0.6)]
    request = state.last_request.strip()
    last = "" if not request or _mentioned(_words(request), summary_words, 0.5) else request
    return Dropped(edited[-12:], failed[-8:], open_errors[-8:], todos[:12], last)


def render(d: Dropped, max_chars: int) -> str:
    """The dropped state as a short block (at most `max_chars`); '' when nothing was dropped."""
    if not d or max_chars < 80:
        return ""
    lines = ["Not in the compaction summary, from causantic's record of this session:"]
    if d.last_request:
        lines.append(f"- Last request: {clip_line(d.last_request, 400)}")
    if d.todos:
        lines.append("- Open todos: " + "; ".join(clip_line(t, 120) for t in d.todos))
    if d.open_errors:
        lines += ["- Open error: " + e for e in d.open_errors]
    if d.failed:
        lines += ["- Failed earlier: " + e for e in d.failed]
    if d.edited:
        lines.append("- Files edited: " + ", ".join(d.edited))
    out = ""
    for line in lines:
        if len(out) + len(line) + 1 > max_chars:
            break
        out += ("\n" if out else "") + line
    return out if "\n" in out else ""


def restore_block(conn: object, session_id: str, transcript: str, max_chars: int) -> str:
    """The block for a `compact` session start: this session's stored state minus what the
    newest summary (from the transcript, else the newest stored summary chunk) mentions."""
    # deferred: hook fast path: loaded only when this runs
    from causantic.derive_state import load_state
    from causantic.store.session_state import latest_summary

    if not session_id:
        return ""
    state = load_state(conn, session_id)  # type: ignore[arg-type]
    if state is None:
        return ""
    summary = read_summary(transcript) if transcript else ""
    if not summary:
        summary = latest_summary(conn, session_id)  # type: ignore[arg-type]
    return render(dropped(state, summary), max_chars)
