"""Reading JSONL transcript bytes into records, defensively and fast.

Real files contain blank lines, garbage, two JSON objects on one line (a torn write),
non-UTF-8 bytes, huge lines (inline images) and, while Claude Code is still writing, a last
line with no newline yet. None of these is fatal: a bad line is skipped and counted.

Lines we never use are recognised from their first bytes and not decoded at all:
`progress` records other than `agent_progress` (60-75 % of lines in recent sessions) and
`file-history-snapshot` bookkeeping. That keeps ingest close to the cost of reading the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

_DECODER = json.JSONDecoder()
_SCAN = _DECODER.scan_once  # (text, index) -> (value, end); what json.loads runs underneath
_HEAD = 1024  # the top-level "type" key sits within the first bytes of every record


@dataclass
class ReadStats:
    """What a read saw: where it stopped and how many lines it had to skip."""

    complete_offset: int  # end of the last line consumed (next read starts here)
    bad_lines: int = 0
    skipped_lines: int = 0  # recognised and deliberately not decoded


def iter_records(data: bytes, start: int, stats: ReadStats) -> Iterator[tuple[int, dict]]:
    """Yield (byte offset of the line, record) for each JSON object in `data[start:]`.

    A last line without a trailing newline is consumed only if it decodes as a complete
    object; otherwise it is left for the next read (the writer has not finished it).
    `stats.complete_offset` ends at the end of the last consumed line.
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
                records = _decode_line(line)
                if records is None:
                    if not terminated:
                        return  # unfinished last line: leave it for the next read
                    stats.bad_lines += 1
                else:
                    for record in records:
                        yield offset, record
        pos = next_pos
        stats.complete_offset = pos


def _skippable(line: bytes) -> bool:
    find = line.find  # bounded finds: no copies of the line's head
    if find(b'"type":"progress"', 0, _HEAD) != -1 or find(b'"type": "progress"', 0, _HEAD) != -1:
        return find(b'"agent_progress"', 0, 4096) == -1
    return line.startswith((b'{"type":"file-history-snapshot"', b'{"type": "file-history-snapshot"'))


def _decode_line(line: bytes) -> list[dict] | None:
    """Decode one line into its JSON objects; None if nothing in it is usable."""
    if line[:1] == b"{" and line[-1:] == b"}":
        # The usual line: one object, valid UTF-8. Decoding it directly skips json.loads'
        # encoding detection and wrappers; anything else takes the careful path below.
        try:
            text = line.decode()
            value, end = _SCAN(text, 0)
        except (ValueError, StopIteration):  # UnicodeDecodeError is a ValueError
            pass
        else:
            if end == len(text):
                return [value]
    try:
        value = json.loads(line)
    except UnicodeDecodeError:
        text = line.decode("utf-8", errors="replace")
        return _decode_text(text)
    except ValueError:
        return _decode_text(line.decode("utf-8", errors="replace"))
    return [value] if isinstance(value, dict) else None


def _decode_text(text: str) -> list[dict] | None:
    """Decode a line that holds zero, one or several concatenated JSON objects."""
    out: list[dict] = []
    pos = 0
    n = len(text)
    while pos < n:
        while pos < n and text[pos] in " \t\r":
            pos += 1
        if pos >= n:
            break
        try:
            value, pos = _DECODER.raw_decode(text, pos)
        except ValueError:
            # Garbage: resynchronise at the next object start, if any.
            nxt = text.find("{", pos + 1)
            if nxt == -1:
                break
            pos = nxt
            continue
        if isinstance(value, dict):
            out.append(value)
    return out or None
