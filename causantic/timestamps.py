"""The one time format causantic stores: `2026-02-01T03:40:03.827Z` (UTC, milliseconds),
the format of Claude Code's transcripts, so stored times sort and compare as strings; and the
one way to read a time back (`parse_iso`), from a user (`parse_when`) or from a question
(`named_period`, and `yearless_date` + `periods_back` for a date named without its year,
`relative_period` for "yesterday", "last week")."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")
_MONTH_NAMES = (r"january|february|march|april|may|june|july|august|september|october|november"
                r"|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec")
_MONTH = rf"({_MONTH_NAMES})\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
#: A date a question names, with its year: `3 June, 2023`, `June 3rd, 2023`, `June 2023`,
#: `2023-06-03`.
_NAMED = re.compile(rf"\b(?:{_DAY} (?:of )?{_MONTH},? (\d{{4}})|{_MONTH} {_DAY},? (\d{{4}})"
                    rf"|{_MONTH},? (\d{{4}})|(\d{{4}})-(\d{{2}})-(\d{{2}}))\b", re.I)
#: A date a question names without its year: `3 June`, `the 3rd of June`, `June 3rd`, and a
#: month only after "in" or "during" (`in June`, `in early June`: "may" alone is a verb).
_YEARLESS = re.compile(rf"\b(?:{_DAY} (?:of )?{_MONTH}|{_MONTH} {_DAY}"
                       rf"|(?:in|during) (?:(?:early|mid|late)[- ])?({_MONTH_NAMES}))\b"
                       r"(?!,? ?\d)", re.I)


#: How many years back a date without its year is looked for (`periods_back`).
YEARS_BACK = 30


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


def named_period(text: str) -> tuple[str, str] | None:
    """The day or month the first date named in `text` (with its year) covers, as stored
    times ``[start, end)`` in UTC (as `parse_when` reads dates), or None: "on 3 June, 2023",
    "June 3rd, 2023", "2023-06-03" -> that day; "in June 2023" -> that month."""
    for m in _NAMED.finditer(text):
        g = m.groups()
        try:
            if g[0]:
                start = _day(g[2], g[1], g[0])
            elif g[3]:
                start = _day(g[5], g[3], g[4])
            elif g[6]:
                start = _day(g[7], g[6], "1")
                end = start.replace(year=start.year + start.month // 12,
                                    month=start.month % 12 + 1)
                return iso_utc(start), iso_utc(end)
            else:
                start = _day(g[8], g[9], g[10])
        except ValueError:  # 31 June, month 13: not a date
            continue
        return iso_utc(start), iso_utc(start + timedelta(days=1))
    return None


def yearless_date(text: str) -> tuple[int, int | None] | None:
    """The month and day (None for a whole month) of the first date `text` names without a
    year ("on 3 June", "June 3rd" -> (6, 3); "in June", "in early June" -> (6, None)), or
    None; a date with its year is `named_period`'s."""
    for m in _YEARLESS.finditer(text):
        month, day = (m[2], m[1]) if m[1] else (m[3], m[4]) if m[3] else (m[5], None)
        number = _month(month)
        if day is None:
            return number, None
        if 1 <= int(day) <= (29 if number == 2 else 30 if number in (4, 6, 9, 11) else 31):
            return number, int(day)
    return None


#: A period named relative to now: "today", "yesterday", "this / last / past week", "this /
#: last / past month".
_RELATIVE = re.compile(r"\b(?:(today)|(yesterday)|(this|last|past) (week|month))\b", re.I)


def relative_period(text: str, now: datetime | None = None) -> tuple[str, str] | None:
    """The period `text` names relative to `now` (default: the current time), in the local
    calendar of this machine (the user's "yesterday"), as stored times ``[start, end)`` in
    UTC, or None: "today", "yesterday" -> that day; "this week", "last week" -> Monday to
    Monday; "this month", "last month" -> that calendar month; "past week", "past month" ->
    the last 7 or 30 days up to the end of today."""
    m = _RELATIVE.search(text)
    if m is None:
        return None
    # Naive local times: `astimezone` reads them with the local rules of their own date, so a
    # period across a daylight-saving change still starts at local midnight.
    local = (now or datetime.now(UTC)).astimezone().replace(tzinfo=None)
    midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
    tomorrow = midnight + timedelta(days=1)
    which, unit = (m[3] or "").lower(), (m[4] or "").lower()
    if m[1]:
        start, end = midnight, tomorrow
    elif m[2]:
        start, end = midnight - timedelta(days=1), midnight
    elif which == "past":
        start, end = tomorrow - timedelta(days=7 if unit == "week" else 30), tomorrow
    elif unit == "week":
        monday = midnight - timedelta(days=midnight.weekday())
        start, end = (monday, monday + timedelta(days=7)) if which == "this" else \
            (monday - timedelta(days=7), monday)
    else:
        first = midnight.replace(day=1)
        following = first.replace(year=first.year + first.month // 12, month=first.month % 12 + 1)
        before = first.replace(year=first.year - (first.month == 1),
                               month=(first.month - 2) % 12 + 1)
        start, end = (first, following) if which == "this" else (before, first)
    return iso_utc(start.astimezone(UTC)), iso_utc(end.astimezone(UTC))


def periods_back(month: int, day: int | None, newest: str, oldest: str) -> list[tuple[str, str]]:
    """The periods (`named_period`'s form) a yearless date can mean, newest first: that day
    or month in each year from the one holding the stored time `newest` back to `oldest`'s,
    those that start after `newest` left out (a date that did not come yet); at most
    `YEARS_BACK` years, none when a stored time is not one."""
    try:
        last, first = int(newest[:4]), int(oldest[:4])
    except ValueError:
        return []
    periods = []
    for year in range(last, max(first, last - YEARS_BACK + 1) - 1, -1):
        try:
            start = datetime(year, month, day or 1, tzinfo=UTC)
        except ValueError:  # 29 February of a common year
            continue
        end = (start + timedelta(days=1) if day else
               start.replace(year=year + month // 12, month=month % 12 + 1))
        if iso_utc(start) <= newest:
            periods.append((iso_utc(start), iso_utc(end)))
    return periods


def _month(name: str) -> int:
    """A month's number from its English name or abbreviation."""
    return next(i for i, full in enumerate(_MONTHS, 1) if full.startswith(name.lower()[:3]))


def _day(year: str, month: str, day: str) -> datetime:
    """A UTC midnight from a year, a month (its number or an English name) and a day."""
    number = int(month) if month.isdigit() else _month(month)
    return datetime(int(year), number, int(day), tzinfo=UTC)
