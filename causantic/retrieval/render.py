"""Turning retrieved chunks into text under a token budget.

Budgets count approximate tokens (3.5 characters each) of the whole answer, headers
included. A chunk that does not fit whole is shortened at block boundaries (`[User]`,
`[Assistant]`, `[Tool:…]`, `[Result:…]`) and marked; it is never cut mid-line without a
marker. A hard character cap (for hook output) applies the same rule to characters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from causantic.store.hits import Hit  # re-exported: defined with the query that loads it
from causantic.tokens import approx_tokens  # not chunking: it pulls the transcript parser

SHORTENED = "[… shortened to fit the budget]"
SEPARATOR = "\n\n---\n\n"
_BLOCK_START_RE = re.compile(r"\n\n(?=\[(?:User|Assistant|Tool:|Result:|Summary|Command))")


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


def header(hit: Hit, index: int | None = None) -> str:
    """The one-line label above a chunk: where and when it came from, and why."""
    parts = [hit.project, f"session {hit.session_id[:8]}"]
    if hit.agent_id:
        parts.append(f"agent {hit.agent_id}")
    parts.append(short_time(hit.start_time))
    if hit.sources:
        parts.append("+".join(hit.sources))
    if hit.seed:
        parts.append("◆ matched")
    prefix = f"[{index}] " if index is not None else ""
    return prefix + " · ".join(parts)


def quote_query(query: str) -> str:
    """The query as echoed in an answer's header: one line, at most 120 characters."""
    flat = " ".join(query.split())
    return flat if len(flat) <= 120 else flat[:119] + "…"


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
    limit_chars = max_tokens * 7 // 2
    if max_chars is not None:
        limit_chars = min(limit_chars, max_chars)
    out: list[str] = []
    used = 0
    for head, body in items:
        sep = len(SEPARATOR) if out else 0
        whole = f"{head}\n{body}"
        if used + sep + len(whole) <= limit_chars:
            out.append(whole)
            used += sep + len(whole)
            continue
        room = limit_chars - used - sep - len(head) - 1
        if room >= min_tokens * 7 // 2:
            out.append(f"{head}\n{shorten(body, room)}")
        break
    return out, len(out)


def join(items: Sequence[str]) -> str:
    return SEPARATOR.join(items)


def tokens_of(text: str) -> int:
    return approx_tokens(text)
