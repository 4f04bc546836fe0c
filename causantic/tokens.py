"""Token counting for budgets, and clipping text to a length (stdlib only: the hook fast path
renders with it).

A token is counted as 3.5 characters: `approx_tokens` turns text into tokens,
`chars_for_tokens` and `tokens_for_chars` convert a budget. `clip` and `clip_line` cut a
short text (a title, a listing's line) with "…". Cutting a chunk's text at block boundaries
under a budget is `causantic.retrieval.render.shorten`.
"""


def approx_tokens(text: str) -> int:
    """Approximate model tokens for budgets: about 3.5 characters per token."""
    return (2 * len(text) + 6) // 7


def chars_for_tokens(tokens: int) -> int:
    """How many characters a budget of `tokens` holds."""
    return tokens * 7 // 2


def tokens_for_chars(chars: int) -> int:
    """How many tokens fit in `chars` characters (rounded down)."""
    return chars * 2 // 7


def char_limit(max_tokens: int, max_chars: int | None = None) -> int:
    """The characters a token budget holds, under a hard character cap when one is given."""
    limit = chars_for_tokens(max_tokens)
    return limit if max_chars is None else min(limit, max_chars)


def clip(text: str, max_chars: int, *, strip: bool = False) -> str:
    """`text` if it has at most `max_chars` characters, else its start and "…" (that many in
    all); with `strip`, without the whitespace before the "…"."""
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars - 1]
    return (cut.rstrip() if strip else cut) + "…"


def clip_line(text: str, max_chars: int) -> str:
    """`text` on one line (whitespace runs, newlines too, become one space), then `clip`ped."""
    return clip(" ".join(text.split()), max_chars)
