"""The one time format causantic stores: `2026-02-01T03:40:03.827Z` (UTC, milliseconds),
the format of Claude Code's transcripts, so stored times sort and compare as strings; and the
one way to read a time back (`parse_iso`) or from a user (`parse_when`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def iso_utc(when: datetime) -> str:
    """``when`` as `YYYY-MM-DDTHH:MM:SS.mmmZ` in UTC (a naive time is taken as UTC)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def parse_iso(text: str, *, or_now: bool = False) -> datetime:
    """An ISO 8601 time (a stored one, or a transcript's) as an aware datetime; a naive time
    is taken as UTC.

    Raises ValueError when `text` is not such a time, unless `or_now` (for ranking and
    windows, where one odd stored time must not fail the whole answer): then it is now.
    """
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        if or_now:
            return datetime.now(UTC)
        raise
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def parse_when(value: str, *, end_of_day: bool = False) -> datetime:
    """A date or time a user gave (`2026-03-02`, `2026-03-02T09:30`, `2026-03-02 09:30Z`,
    with or without an offset; UTC when none) as an aware datetime.

    With `end_of_day`, a bare date (`YYYY-MM-DD`) means the end of that day: the next
    midnight, for an exclusive upper bound. Raises ValueError; the caller names its flag.
    """
    text = value.strip()
    if len(text) == 10:
        day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
        return day + timedelta(days=1) if end_of_day else day
    return parse_iso(text.replace("z", "Z"))


def days_ago(days: float, now: datetime | None = None) -> datetime:
    """The moment `days` days before `now` (default: the current time, UTC)."""
    return (now or datetime.now(UTC)) - timedelta(days=days)
