"""The one time format causantic stores: `2026-02-01T03:40:03.827Z` (UTC, milliseconds),
the format of Claude Code's transcripts, so stored times sort and compare as strings."""

from __future__ import annotations

from datetime import UTC, datetime


def iso_utc(when: datetime) -> str:
    """``when`` as `YYYY-MM-DDTHH:MM:SS.mmmZ` in UTC (a naive time is taken as UTC)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
