"""Turning retrieved chunks into text under a token budget.

Budgets count approximate tokens (3.5 characters each) of the whole answer, headers
included. A chunk that does not fit whole is shortened at block boundaries (`[User]`,
`[Assistant]`, `[Tool:…]`, `[Result:…]`) and marked; it is never cut mid-line without a
marker. A hard character cap (for hook output) applies the same rule to characters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from causantic.records import Record
from causantic.store.hits import Hit  # re-exported: defined with the query that loads it
from causantic.tokens import chars_for_tokens, clip_line

SHORTENED = "[… shortened to fit the budget]"
SEPARATOR = "\n\n---\n\n"
_BLOCK_START_RE = re.compile(r"\n\n(?=\[(?:User|Assistant|Tool:|Result:|Summary|Command))")


class Answer(Record):
    """What search, recall/predict and reconstruct return, for the CLI, MCP and hooks alike.

    `text` is the rendered answer (exactly what the MCP tool returns), `results` the hits it
    shows in their order, `tokens` its approximate size, `notice` a line on a degraded
    answer. Recall/predict set `direction` (their results carry `seed` in JSON), `score` and
    `others` (search's other matches after the chain); reconstruct sets `truncated` and
    `sessions` (and, for a question, `others`: other sessions' matches); search and recall
    may carry `lessons` (`causantic.retrieval.lessons.attach`, which leaves `tokens` as it
    was). `as_dict` is the JSON contract of DESIGN.md section 4; fields an answer does
    not have (None) stay out of it. A `Record`: reconstruct is on the session-start hook path.
    """

    __slots__ = ("query", "mode", "results", "text", "tokens", "duration_ms", "notice",
                 "direction", "score", "others", "truncated", "sessions", "lessons")
    query: str  # the query, or for reconstruct what was reconstructed, in words
    mode: str
    results: list[Hit]
    text: str
    tokens: int
    duration_ms: float
    notice: str | None
    direction: str | None  # recall/predict: "backward" | "forward"
    score: float  # recall/predict: the chosen chain's score (0 for fallbacks)
    others: list[Hit]  # recall/predict: search's other matches after the chain; reconstruct
    #                    with a question: the other sessions' matches after the chosen one's
    truncated: bool | None  # reconstruct: older chunks left out for the budget
    sessions: tuple[str, ...] | None  # reconstruct: the sessions it covers
    lessons: list[dict[str, object]] | None  # lessons from past errors shown after the text

    def __init__(self, query: str, mode: str, results: list[Hit], text: str, tokens: int,
                 duration_ms: float, notice: str | None = None, direction: str | None = None,
                 score: float = 0.0, others: list[Hit] | None = None,
                 truncated: bool | None = None,
                 sessions: tuple[str, ...] | None = None,
                 lessons: list[dict[str, object]] | None = None) -> None:
        self._init(query=query, mode=mode, results=results, text=text, tokens=tokens,
                   duration_ms=duration_ms, notice=notice, direction=direction, score=score,
                   others=others or [], truncated=truncated, sessions=sessions,
                   lessons=lessons)

    def as_dict(self) -> dict[str, object]:
        chain = self.direction is not None
        return answer_dict(
            self.query, self.mode,
            [h.as_dict() | {"seed": h.seed} if chain else h.as_dict() for h in self.results],
            self.text, self.tokens, self.duration_ms,
            direction=self.direction, notice=self.notice or None,
            other_matches=[h.as_dict() for h in self.others] or None,
            truncated=self.truncated,
            sessions=None if self.sessions is None else list(self.sessions),
            lessons=self.lessons,
        )


def answer_dict(
    query: str,
    mode: str,
    results: Sequence[dict[str, object]],
    text: str,
    tokens: int,
    duration_ms: float,
    **extra: object,
) -> dict[str, object]:
    """The JSON answer of every query command (DESIGN.md section 4), plus command extras.

    Extras whose value is None are left out.
    """
    out: dict[str, object] = {
        "query": query,
        "mode": mode,
        "results": list(results),
        "text": text,
        "tokens": tokens,
        "duration_ms": round(duration_ms, 2),
    }
    out.update({k: v for k, v in extra.items() if v is not None})
    return out


def short_time(ts: str) -> str:
    """`2026-02-01T03:40:03.827Z` -> `2026-02-01 03:40` (UTC)."""
    return ts[:16].replace("T", " ") if ts else "unknown time"


#: Changed files a header names at most (the rest are counted).
CHANGED_NAMED = 3


def header(hit: Hit, index: int | None = None) -> str:
    """The one-line label above a chunk: where and when it came from, and why, and which files
    its work edited have changed since (`Hit.changed`, set by `freshness.mark`)."""
    why = ["+".join(hit.sources)] if hit.sources else []
    if hit.seed:
        why.append("◆ matched")
    if hit.changed:
        why.append(changed_note(hit.changed))
    return label(hit.project, hit.session_id, hit.agent_id, hit.start_time, *why, index=index)


def changed_note(paths: Sequence[str]) -> str:
    """``files changed since: a.py, b.py (+2)``: a result's files changed on disk since."""
    names = [p.rstrip("/").rsplit("/", 1)[-1] for p in paths[:CHANGED_NAMED]]
    more = f" (+{len(paths) - CHANGED_NAMED})" if len(paths) > CHANGED_NAMED else ""
    return f"files changed since: {', '.join(names)}{more}"


def label(project: str, session_id: str, agent_id: str, start_time: str, *more: str,
          index: int | None = None) -> str:
    """`[3] project · session 1a2b3c4d · agent a1 · 2026-02-01 03:40 · more…`: the one format
    that names a chunk in answers and listings (no agent part for a main-session chunk)."""
    parts = [project, f"session {session_id[:8]}"]
    if agent_id:
        parts.append(f"agent {agent_id}")
    parts.append(short_time(start_time))
    parts.extend(more)
    prefix = f"[{index}] " if index is not None else ""
    return prefix + " · ".join(parts)


def block(head: str, body: str) -> str:
    """One rendered item: its header line, then its text (items are `join`ed)."""
    return f"{head}\n{body}"


def quote_query(query: str) -> str:
    """The query as echoed in an answer's header: one line, at most 120 characters."""
    return clip_line(query, 120)


def shorten(text: str, max_chars: int) -> str:
    """Cut text to at most max_chars at a block, paragraph or line boundary, with a marker."""
    if len(text) <= max_chars:
        return text
    room = max_chars - len(SHORTENED) - 1
    if room <= 0:
        return ""
    cut = text[:room]
    for boundary in (_last_block(cut), cut.rfind("\n\n"), cut.rfind("\n")):
        if boundary > room // 3:
            return cut[:boundary].rstrip() + "\n" + SHORTENED
    space = cut.rfind(" ")
    return cut[: space if space > room // 2 else room].rstrip() + " " + SHORTENED


def cap(text: str, limit: int) -> str:
    """At most `limit` characters: `shorten`, or a bare cut with "…" when too tiny for it."""
    if len(text) <= limit:
        return text
    return shorten(text, limit) or text[: max(0, limit - 1)].rstrip() + "…"


def _last_block(text: str) -> int:
    last = -1
    for m in _BLOCK_START_RE.finditer(text):
        last = m.start()
    return last


def fit(
    items: Sequence[tuple[str, str]],
    max_tokens: int,
    max_chars: int | None = None,
    min_tokens: int = 60,
) -> tuple[list[str], int]:
    """Fit (header, body) items into a budget; return rendered items and how many were used.

    Items are taken in order; the first that does not fit whole is shortened if at least
    `min_tokens` of room remain, and nothing after it is taken.
    """
    limit_chars = chars_for_tokens(max_tokens)
    if max_chars is not None:
        limit_chars = min(limit_chars, max_chars)
    out: list[str] = []
    used = 0
    for head, body in items:
        sep = len(SEPARATOR) if out else 0
        whole = block(head, body)
        if used + sep + len(whole) <= limit_chars:
            out.append(whole)
            used += sep + len(whole)
            continue
        room = limit_chars - used - sep - len(head) - 1
        if room >= chars_for_tokens(min_tokens):
            out.append(block(head, shorten(body, room)))
        break
    return out, len(out)


def join(items: Sequence[str]) -> str:
    """Rendered items as one text, a `---` line between them."""
    return SEPARATOR.join(items)
