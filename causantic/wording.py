"""Small wording helpers for what users read: counts with the right singular or plural."""


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`1 chunk`, `0 chunks`, `2 chunks`; ``many`` for an irregular plural (`1 entry`)."""
    return f"{n} {noun if n == 1 else (many or noun + 's')}"
