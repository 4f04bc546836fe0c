"""Approximate token counts for budgets (stdlib only: the hook fast path renders with it)."""


def approx_tokens(text: str) -> int:
    """Approximate model tokens for budgets: about 3.5 characters per token."""
    return (2 * len(text) + 6) // 7
