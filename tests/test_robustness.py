"""Issue 17: no line lost to its neighbours, and reading in steps equals reading once.

Reader cases (each reproduced against the earlier reader first), the incremental == clean
property over the shared transcripts, and a bounded reader fuzz run. The full versions live
in `bench/robustness.py`.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
from pathlib import Path

import apsw
import pytest

from bench.fuzzlines import mutated_lines, sentinel
from bench.robustness import store_snapshot
from causantic.transcripts.jsonl import ReadStats, decode_line, iter_records
from causantic.transcripts.turns import parse_transcript

from .helpers import ingest

SID = "eeeeeeee-1111-4222-8333-444444444444"
OTHER = "ffffffff-1111-4222-8333-444444444444"


def user(n: int, text: str, sid: str = SID, cwd: str = "/gone/repo", **extra) -> dict:
    r = {"type": "user", "uuid": f"u{sid[:2]}{n}", "sessionId": sid, "cwd": cwd,
         "timestamp": f"2026-01-01T10:{n:02d}:00.000Z", "message": {"role": "user", "content": text}}
    r.update(extra)
    return r


def answer(n: int, text: str, sid: str = SID, cwd: str = "/gone/repo") -> dict:
    return {"type": "assistant", "uuid": f"a{sid[:2]}{n}", "sessionId": sid, "cwd": cwd,
            "timestamp": f"2026-01-01T10:{n:02d}:30.000Z",
            "message": {"id": f"m{sid[:2]}{n}", "role": "assistant",
                        "content": [{"type": "text", "text": text}]}}


def jsonl(*records: dict) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def stored_texts(db: Path) -> str:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return "\n".join(r[0] for r in conn.execute("SELECT text FROM chunks"))
    finally:
        conn.close()


# -- one bad line, counted, never more --------------------------------------------------------


def test_lone_surrogate_escape_keeps_the_line_and_the_file(tmp_path: Path):
    """JavaScript writes "\\ud83d" when it cuts a string inside an emoji; SQLite refuses the
    lone surrogate, and the whole file used to store nothing, on every rerun."""
    cut = b'{"type":"user","uuid":"cut","sessionId":"' + SID.encode() + b'","timestamp":' \
          b'"2026-01-01T10:05:00.000Z","message":{"role":"user","content":"emoji cut \\ud83d here"}}\n'
    path = tmp_path / "p" / f"{SID}.jsonl"
    path.parent.mkdir()
    path.write_bytes(jsonl(user(1, "first prompt")) + cut + jsonl(user(9, "last prompt")))
    db = tmp_path / "m.db"
    for _ in range(2):
        report = ingest(db, path.parent)
        assert report.problems == []
    text = stored_texts(db)
    assert "first prompt" in text and "last prompt" in text
    assert "emoji cut \ufffd here" in text


def test_invalid_utf8_drops_at_most_its_line(tmp_path: Path):
    """Bytes that json.loads decodes with "surrogatepass" into lone surrogates (an encoded
    surrogate, b"\\xed\\xa0\\xbd") used to fail the whole file; plain bad bytes are replaced."""
    line = jsonl(user(2, "cesu PLACEHOLDER end")).replace(b"PLACEHOLDER", b"\xed\xa0\xbd")
    line += jsonl(user(3, "bad PLACEHOLDER byte")).replace(b"PLACEHOLDER", b"\xff")
    path = tmp_path / "p" / f"{SID}.jsonl"
    path.parent.mkdir()
    path.write_bytes(jsonl(user(1, "before")) + line + jsonl(user(4, "after")))
    db = tmp_path / "m.db"
    report = ingest(db, path.parent)
    assert report.problems == []
    text = stored_texts(db)
    assert "before" in text and "after" in text and "cesu \ufffd" in text and "bad \ufffd" in text


@pytest.mark.parametrize("deep", [b"[" * 1000 + b"]" * 1000,
                                  b'{"type":"user","x":' + b"[" * 990 + b"]" * 990 + b"}",
                                  b'{"a":' * 700 + b"1" + b"}" * 700,
                                  b'{"type":"assistant","sessionId":"' + SID.encode() + b'",'
                                  b'"message":{"role":"assistant","content":[{"type":"tool_use",'
                                  b'"id":"t1","name":"Odd","input":{"x":' + b"[" * 600
                                  + b"]" * 600 + b"}}]}}"])
def test_deeply_nested_line_is_one_bad_line_not_a_stopped_run(tmp_path: Path, deep: bytes):
    path = tmp_path / "p" / f"{SID}.jsonl"
    path.parent.mkdir()
    path.write_bytes(jsonl(user(1, "before")) + deep + b"\n" + jsonl(user(3, "after")))
    other = tmp_path / "p" / f"{OTHER}.jsonl"
    other.write_bytes(jsonl(user(1, "another file", sid=OTHER)))
    db = tmp_path / "m.db"
    for _ in range(2):  # and every later run too
        report = ingest(db, path.parent)
        assert report.problems == []
    assert report.bad_lines == 0  # counted once, by the first run
    text = stored_texts(db)
    assert "before" in text and "after" in text and "another file" in text


def test_bad_lines_of_the_newest_turn_are_counted_once(tmp_path: Path):
    path = tmp_path / "p" / f"{SID}.jsonl"
    path.parent.mkdir()
    path.write_bytes(jsonl(user(1, "only turn")) + b"garbage line\n" + jsonl(answer(1, "ok")))
    db = tmp_path / "m.db"
    counts = []
    for n in range(2, 5):  # each append re-reads the newest turn, garbage included
        counts.append(ingest(db, path.parent).bad_lines)
        with open(path, "ab") as f:
            f.write(jsonl(answer(n, f"more {n}")))
    counts.append(ingest(db, path.parent).bad_lines)
    assert counts == [1, 0, 0, 0]
    assert store_snapshot(db)["files"][0][-1] == 1


def test_truncated_lines_are_counted_and_never_yield_their_inner_objects():
    """A line cut short holds complete nested objects ({"role":...}); they are not records."""
    full = json.dumps(user(1, "cut short")).encode()
    cut = full[: full.index(b', "timestamp"')]  # ends inside the record, after complete parts
    cut2 = full[: full.index(b"}") + 1]  # ends right after a nested object
    torn = full[:40] + json.dumps(user(2, "torn in")).encode()  # a torn write: keep the second
    data = cut + b"\n" + cut2 + b"\n" + torn + b"\n" + jsonl(user(3, "fine"))
    parsed = parse_transcript(data, default_session=SID)
    assert [t.blocks[0].text for t in parsed.turns] == ["torn in", "fine"]
    assert parsed.stats.bad_lines == 3
    # Unterminated, the same cut line is left for the next read instead of consumed.
    stats = ReadStats(0)
    assert list(iter_records(cut2, 0, stats)) == [] and stats.complete_offset == 0


def test_decode_line_reports_whether_the_line_was_clean():
    good = json.dumps(user(1, "x")).encode()
    assert decode_line(good) == ([user(1, "x")], True)
    assert decode_line(good + good) == ([user(1, "x"), user(1, "x")], True)
    assert decode_line(b"\xef\xbb\xbf" + good)[0] == [user(1, "x")]  # byte-order mark
    assert decode_line(b"[1, 2]") == ([], False)
    assert decode_line(b'{"type": "user", "message": {"a": 1}') == ([], False)


def test_fifo_named_jsonl_is_skipped_not_read(tmp_path: Path):
    """`ingest` used to block forever opening it."""
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / f"{SID}.jsonl").write_bytes(jsonl(user(1, "a real file")))
    os.mkfifo(folder / f"{OTHER}.jsonl")
    report = ingest(tmp_path / "m.db", folder)
    assert report.files == 1 and report.problems == []
    assert "a real file" in stored_texts(tmp_path / "m.db")


# -- reading in steps equals reading once -----------------------------------------------------


def _in_steps_equals_clean(tmp_path: Path, data: bytes, cuts: list[int], name: str = f"{SID}.jsonl"):
    live = tmp_path / "live" / name
    live.parent.mkdir(parents=True)
    db = tmp_path / "steps.db"
    done = 0
    for cut in [*cuts, len(data)]:
        with open(live, "ab") as f:
            f.write(data[done:cut])
        done = cut
        assert ingest(db, live.parent).problems == []
    clean = tmp_path / "clean.db"
    ingest(clean, live.parent)
    assert store_snapshot(db) == store_snapshot(clean), f"cuts {cuts}"
    return store_snapshot(clean)


def test_session_moving_into_a_subfolder_of_a_vanished_repo_stays_one_project(tmp_path: Path):
    pad = " and more words" * 300  # past the 4 KB head a checkpoint compares
    src = "/gone/repo/src"
    data = jsonl(user(1, "start here" + pad), answer(1, "ok"),
                 user(2, "now in src" + pad, cwd=src), answer(2, "ok", cwd=src),
                 user(3, "still in src" + pad, cwd=src), answer(3, "ok", cwd=src))
    cut = data.rindex(b"\n", 0, data.index(b"still in src")) + 1  # the newest turn: in src
    snap = _in_steps_equals_clean(tmp_path, data, [cut])
    assert snap["projects"] == [("repo",)]


def test_two_interleaved_sessions_in_one_file_gain_no_continues_edge_in_steps(tmp_path: Path):
    records = []
    pad = " and more words" * 40  # past the 4 KB head a checkpoint compares
    for n in range(1, 5):
        records += [user(n, f"a prompt {n}{pad}"), answer(n, f"a answer {n}"),
                    user(n, f"b prompt {n}{pad}", sid=OTHER), answer(n, f"b answer {n}", sid=OTHER)]
    data = jsonl(*records)
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    for k, cut in enumerate(ends[:-1]):
        snap = _in_steps_equals_clean(tmp_path / str(k), data, [cut])
    continued = {row[0]: row[8] for row in snap["sessions"]}
    assert continued == {SID: 0, OTHER: 1}


def test_shared_transcripts_cut_at_random_points_equal_one_clean_ingest(
    tmp_path: Path, shared_transcripts: Path
):
    """Every file cut at seeded random byte offsets (mid-line included), appended in steps."""
    files = sorted(shared_transcripts.rglob("*.jsonl"))
    data = {f: f.read_bytes() for f in files}
    for seed in (1, 2):
        rnd = random.Random(seed)
        root = tmp_path / str(seed)
        cuts = {f: sorted(rnd.randrange(len(d) + 1) for _ in range(3)) + [len(d)]
                for f, d in data.items()}
        db = root / "steps.db"
        for step in range(4):
            for f in files:
                dst = root / "live" / f.relative_to(shared_transcripts)
                dst.parent.mkdir(parents=True, exist_ok=True)
                start = cuts[f][step - 1] if step else 0
                with open(dst, "ab") as out:
                    out.write(data[f][start:cuts[f][step]])
            assert ingest(db, root / "live").problems == []
        ingest(root / "clean.db", root / "live")
        steps, clean = store_snapshot(db), store_snapshot(root / "clean.db")
        for table in clean:
            assert steps[table] == clean[table], f"seed {seed}: {table} differ"
        shutil.rmtree(root / "live")


# -- fuzz ---------------------------------------------------------------------------------------


def test_fuzzed_lines_cost_at_most_themselves(tmp_path: Path, shared_transcripts: Path):
    """10,000 mutated real lines (truncations, byte flips, surrogates, deep nesting, huge
    lines, wrong field types, NULs, ...), each between two sentinel prompts: no file dropped,
    no crash, every sentinel stored, bad lines at most the mutated ones."""
    rnd = random.Random(17)
    folder = tmp_path / "fuzz"
    folder.mkdir()
    total = 0
    sids = [f"{i:08d}-0000-4000-8000-000000000000" for i in range(10)]
    for i, batch in enumerate(mutated_lines(shared_transcripts, rnd, files=10, per_file=1000,
                                            session_ids=sids)):
        sid = sids[i]
        body = b"".join(sentinel(sid, i, k) + line + b"\n" for k, line in enumerate(batch))
        (folder / f"{sid}.jsonl").write_bytes(body + sentinel(sid, i, len(batch)))
        total += len(batch)
    assert total >= 10_000
    db = tmp_path / "m.db"
    report = ingest(db, folder)
    assert report.problems == [] and report.files_read == 10
    assert report.bad_lines <= total
    found = set(re.findall(r"sentinel (\d+-\d+) still here", stored_texts(db)))
    missing = {f"{i}-{k}" for i in range(10) for k in range(1001)} - found
    assert missing == set()
    again = ingest(db, folder)
    assert again.problems == [] and again.files_unchanged == 10
