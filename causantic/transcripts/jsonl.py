"""Reading JSONL transcript bytes into records, defensively and fast.

Real files contain blank lines, garbage, two JSON objects on one line (a torn write),
non-UTF-8 bytes, lone UTF-16 surrogate escapes (`"\\ud83d"`: a string cut inside an emoji),
absurdly deep nesting, huge lines (inline images) and, while Claude Code is still writing, a
last line with no newline yet. None of these is fatal, and none costs more than its own line:

- invalid UTF-8 is decoded with replacement characters, and so are lone surrogates (SQLite
  cannot store them), so the record is kept;
- a line nested deep enough to exhaust Python's recursion is one bad line; shallower but
  still absurd nesting (over `MAX_DEPTH`) in a tool's input is dropped by the parser;
- a line with garbage in it is one bad line, counted once; complete records torn into it
  are still read, but objects found only inside a broken record (its nested dicts) are not.

Lines we never use are recognised from their first bytes and not decoded at all:
`progress` records other than `agent_progress` (60-75 % of lines in recent sessions) and
`file-history-snapshot` bookkeeping. That keeps ingest close to the cost of reading the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

_DECODER = json.JSONDecoder()
# (text, index) -> (value, end): what json.loads runs underneath (set by __init__, so typeshed
# does not list it)
_SCAN = _DECODER.scan_once  # type: ignore[attr-defined]
_HEAD = 1024  # the top-level "type" key sits within the first bytes of every record
MAX_DEPTH = 256  # no real record comes close; deeper data would overflow later recursion
_MAX_RESYNC = 64  # failed restarts inside one garbage line before the rest of it is dropped
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class ReadStats:
    """What a read saw: where it stopped and how many lines it had to skip.

    Bad lines before `count_from` are not counted: a resumed read starts again at the newest
    turn, whose lines an earlier read has already counted.
    """

    complete_offset: int  # end of the last line consumed (next read starts here)
    bad_lines: int = 0
    skipped_lines: int = 0  # recognised and deliberately not decoded
    count_from: int = 0


def iter_records(data: bytes, start: int, stats: ReadStats) -> Iterator[tuple[int, dict]]:
    """Yield (byte offset of the line, record) for each JSON object in `data[start:]`.

    A last line without a trailing newline is consumed only if it decodes cleanly as
    complete objects; otherwise it is left for the next read (the writer has not finished
    it). `stats.complete_offset` ends at the end of the last consumed line.
    """
    pos = start
    end = len(data)
    stats.complete_offset = start
    while pos < end:
        nl = data.find(b"\n", pos)
        terminated = nl != -1
        line_end = nl if terminated else end
        line = data[pos:line_end]
        offset = pos
        next_pos = line_end + 1 if terminated else end
        if line[:1] == b"{" or line.strip():
            if terminated and _skippable(line):
                stats.skipped_lines += 1
            else:
                records, clean = decode_line(line)
                if not clean:
                    if not terminated:
                        return  # unfinished last line: leave it for the next read
                    if offset >= stats.count_from:
                        stats.bad_lines += 1
                for record in records:
                    yield offset, record
        pos = next_pos
        stats.complete_offset = pos


def _skippable(line: bytes) -> bool:
    find = line.find  # bounded finds: no copies of the line's head
    if find(b'"type":"progress"', 0, _HEAD) != -1 or find(b'"type": "progress"', 0, _HEAD) != -1:
        return find(b'"agent_progress"', 0, 4096) == -1
    return line.startswith((b'{"type":"file-history-snapshot"', b'{"type": "file-history-snapshot"'))


def decode_line(line: bytes) -> tuple[list[dict], bool]:
    """The JSON objects of one line, and whether the line was clean (nothing skipped)."""
    if line[:1] == b"{" and line[-1:] == b"}":
        # The usual line: one object, valid UTF-8. Decoding it directly skips json.loads'
        # encoding detection and wrappers; anything else takes the careful path below.
        try:
            text = line.decode()
            value, end = _SCAN(text, 0)
        except (ValueError, StopIteration, RecursionError):  # UnicodeDecodeError: ValueError
            pass
        else:
            if end == len(text):
                value = _checked(value, line)
                return ([value], True) if value is not None else ([], False)
    # Never json.loads(bytes): it decodes with "surrogatepass", turning invalid UTF-8 such as
    # b"\xed\xa0\xbd" into lone surrogates that SQLite then refuses (the whole file failed).
    return _decode_text(line.decode("utf-8", errors="replace"), line)


def _decode_text(text: str, line: bytes) -> tuple[list[dict], bool]:
    """Decode a line holding zero, one or several concatenated JSON objects.

    After garbage, reading restarts at the next `{"` (inside JSON strings quotes are
    escaped, so this is where an object starts). An object read after a restart is kept only
    if it looks like a record and no garbage follows it: otherwise it was a nested part of
    the broken record.
    """
    out: list[dict] = []
    tentative: list[dict] = []
    clean = True
    failures = 0
    pos = 1 if text.startswith("\ufeff") else 0  # a byte-order mark opening the file
    n = len(text)
    while True:
        while pos < n and text[pos] in " \t\r":
            pos += 1
        if pos >= n:
            break
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):
            value, end = None, pos
        value = _checked(value, line) if isinstance(value, dict) else None
        if value is not None and (clean or _record_like(value)):
            (out if clean else tentative).append(value)
            pos = end
            continue
        clean = False
        tentative.clear()
        failures += 1
        nxt = text.find('{"', max(end, pos + 1))
        if nxt == -1 or failures > _MAX_RESYNC:
            break
        pos = nxt
    return out + tentative, clean


def _record_like(value: dict) -> bool:
    """Whether an object found after garbage can be a whole record, not a part of one."""
    return "sessionId" in value or value.get("type") in ("summary", "custom-title", "ai-title")


def _checked(value: dict, line: bytes) -> dict | None:
    """The record made storable (lone surrogates replaced), or None if it cannot be."""
    if _SURROGATE_ESCAPE.search(line):  # a regex scan is faster here than `b"\\u" in line`
        try:
            value = _scrub(value)  # type: ignore[assignment]  # a dict stays a dict
        except RecursionError:  # nested nearly as deep as the decoder allows
            return None
    return value


def too_deep(value: object, limit: int = MAX_DEPTH) -> bool:
    """Whether a decoded value nests deeper than `limit` (walked without recursion).

    The decoder itself stops at Python's recursion limit (about 1,000 levels: a bad line);
    values it accepts are checked where the parser keeps arbitrary nested data (tool
    inputs), so that nothing stored can overflow a later json.dumps.
    """
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if d > limit:
            return True
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values() if isinstance(x, (dict, list)))
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v if isinstance(x, (dict, list)))
    return False


def _scrub(value: object) -> object:
    """A copy of `value` whose strings (keys included) hold U+FFFD instead of lone surrogates."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value
