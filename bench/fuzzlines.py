"""Mutated transcript lines for the reader's fuzz checks (tests and `bench.robustness`).

The lines start from real records of the shared transcripts and are broken the ways real
files and hostile inputs break them: cut short, bytes flipped or inserted, invalid UTF-8,
lone surrogate escapes, NULs, deep nesting, huge values, fields of the wrong type, two
records torn into one line, a record spread over two lines. `sentinel` makes a known-good
prompt line to put between them, so a test can check that every good line survived.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path

_SESSION_RE = re.compile(rb'"sessionId":"[^"]*"')
_FIELDS = ("type", "message", "content", "sessionId", "timestamp", "cwd", "uuid", "isSidechain",
           "isMeta", "toolUseResult", "gitBranch", "agentId", "data", "summary", "forkedFrom")
_WRONG = (None, 0, 1.5, True, [], {}, "", "x" * 50, [1, "a", None], {"type": "text"},
          "\ud83d", "\x00", -1, 10**30)


def real_lines(transcripts: Path, limit: int = 4000) -> list[bytes]:
    """Up to `limit` decodable record lines (no progress noise), smallest files first."""
    out: list[bytes] = []
    for path in sorted(transcripts.rglob("*.jsonl"), key=lambda p: p.stat().st_size):
        for line in path.read_bytes().splitlines():
            if b'"type":"progress"' in line[:1024] and b"agent_progress" not in line[:4096]:
                continue
            if line.startswith(b"{") and len(line) < 200_000:
                out.append(line)
                if len(out) >= limit:
                    return out
    return out


def mutate(line: bytes, rnd: random.Random, pool: list[bytes]) -> bytes:
    """One broken variant of `line` (never containing a newline)."""
    kind = rnd.randrange(14)
    n = len(line)
    if kind == 0:  # cut short
        return line[: rnd.randrange(1, max(2, n))]
    if kind == 1:  # flipped bytes
        b = bytearray(line)
        for _ in range(rnd.randint(1, 8)):
            b[rnd.randrange(n)] = rnd.randrange(256)
        return bytes(b).replace(b"\n", b" ")
    if kind == 2:  # invalid UTF-8 inserted
        junk = rnd.choice([b"\xff", b"\xc3", b"\xed\xa0\xbd", b"\xf0\x9f", b"\x80\x80", b"\xc0\x80"])
        at = rnd.randrange(n)
        return line[:at] + junk + line[at:]
    if kind == 3:  # a lone surrogate escape inside a string
        at = line.find(b'"text":"')
        at = at + 8 if at != -1 else line.find(b'"', 2) + 1
        return line[:at] + rnd.choice([b"\\ud83d", b"\\udc00", b"\\uDBFF", b"\\ud83d\\ud83d"]) + line[at:]
    if kind == 4:  # NULs, raw and escaped
        at = rnd.randrange(n)
        return line[:at] + rnd.choice([b"\x00", b"\\u0000", b"\x00\x00\x00"]) + line[at:]
    if kind == 5:  # deep nesting, bare or inside a record
        depth = rnd.choice([200, 500, 990, 1000, 3000])
        deep = rnd.choice([b"[" * depth + b"]" * depth, b'{"a":' * depth + b"1" + b"}" * depth])
        return deep if rnd.random() < 0.5 else b'{"type":"user","message":' + deep + b"}"
    if kind == 6:  # a huge value
        size = 2_000_000 if rnd.random() < 0.01 else rnd.choice([5_000, 50_000])
        return json.dumps({"type": "user", "sessionId": "huge", "message": {
            "role": "user", "content": "y" * size}}).encode()
    if kind in (7, 8):  # wrong types for fields
        try:
            rec = json.loads(line)
        except ValueError:
            return line
        _retype(rec, rnd)
        return json.dumps(rec).encode()
    if kind == 9:  # two records torn into one line
        other = rnd.choice(pool)
        return line[: rnd.randrange(1, n)] + other
    if kind == 10:  # complete records concatenated
        return line + rnd.choice(pool)
    if kind == 11:  # not an object at all
        return rnd.choice([b"null", b"42", b'"text"', b"[1,2,3]", b"}{", b"{", b"\t \r", b"\xef\xbb\xbf"])
    if kind == 12:  # control characters and a byte-order mark
        return b"\xef\xbb\xbf" + line if rnd.random() < 0.5 else line.replace(b" ", b"\x01", 3)
    # random garbage of random length
    return bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 300))).replace(b"\n", b"?")


def _retype(rec: object, rnd: random.Random) -> None:
    """Give some fields (at any level) values of the wrong type."""
    stack = [rec]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for key in list(v):
                if key in _FIELDS and rnd.random() < 0.3:
                    v[key] = rnd.choice(_WRONG)
                else:
                    stack.append(v[key])
        elif isinstance(v, list):
            stack.extend(v)


def mutated_lines(transcripts: Path, rnd: random.Random, files: int, per_file: int,
                  session_ids: list[str] | None = None) -> Iterator[list[bytes]]:
    """`files` batches of `per_file` mutated lines each. With `session_ids` (one per file),
    the records of batch i name session i, as in a real file, instead of the sessions they
    were taken from (which would then grow across every file)."""
    pool = real_lines(transcripts)
    for i in range(files):
        own = None if session_ids is None else f'"sessionId":"{session_ids[i]}"'.encode()
        batch = []
        for _ in range(per_file):
            line = rnd.choice(pool)
            if own is not None:
                line = _SESSION_RE.sub(own, line)
            batch.append(mutate(line, rnd, pool))
        yield batch


def sentinel(session_id: str, i: int, k: int) -> bytes:
    """A clean prompt line naming its place: `sentinel <i>-<k> ...`."""
    return json.dumps({
        "type": "user", "uuid": f"sentinel-{i}-{k}", "sessionId": session_id, "cwd": "/fuzz/proj",
        "timestamp": "2026-03-01T10:00:00.000Z",
        "message": {"role": "user", "content": f"sentinel {i}-{k} still here"},
    }).encode() + b"\n"
