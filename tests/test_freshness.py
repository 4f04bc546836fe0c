"""A result whose work edited a file that has changed since says so in its header (search,
recall, predict) or its title (reconstruct QUESTION's matching turns)."""

from __future__ import annotations

import json
import os
import uuid
from datetime import datetime
from pathlib import Path

from causantic.retrieval import freshness
from causantic.retrieval.chains import recall
from causantic.retrieval.prompt import prompt_recall
from causantic.retrieval.reconstruct import reconstruct
from causantic.retrieval.search import search
from causantic.store import open_store

from .conftest import SAMPLES
from .helpers import ingest

EDITED_AT = "2026-03-02T10:03:00.000Z"


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def test_edited_paths_are_the_absolute_paths_of_writing_tool_calls():
    text = ("[User]\nfix it\n\n[Tool:Read] /src/a.py\n\n[Tool:Edit] /src/b.py\n- x = 1\n+ x = 2"
            "\n\n[Tool:Write] /src/c d.py\nprint()\n\n[Tool:MultiEdit] /src/b.py\n\n"
            "[Tool:NotebookEdit] /nb/e.ipynb\n\n[Tool:Edit] relative/f.py\n\n"
            "[Tool:Bash] echo '[Tool:Edit] /not/a/call.py'")
    assert freshness.edited_paths(text) == ["/src/b.py", "/src/c d.py", "/nb/e.ipynb"]


def test_only_files_that_exist_and_are_newer_than_the_chunk_count(tmp_path: Path):
    newer, older, same = (tmp_path / n for n in ("newer.py", "older.py", "same.py"))
    for path, when in ((newer, _epoch(EDITED_AT) + 3600), (older, _epoch(EDITED_AT) - 3600),
                       (same, _epoch(EDITED_AT) + 30)):  # its own edit, a clock apart
        path.write_text("x")
        os.utime(path, (when, when))
    paths = [str(newer), str(older), str(same), str(tmp_path / "gone.py"), "/\x00bad"]
    assert freshness.changed_since(paths, EDITED_AT) == [str(newer)]
    assert freshness.changed_since(paths, "not a time") == []


def _transcript(folder: Path, edited: list[Path], reads: int = 0) -> Path:
    """A session whose assistant edits ``edited`` while fixing the retry backoff (after
    reading ``reads`` files: a few put the edits in a later chunk of the turn)."""
    sid = str(uuid.uuid4())
    lines, parent = [], None

    def add(rtype: str, minute: int, message: dict) -> None:
        nonlocal parent
        rec = {"parentUuid": parent, "isSidechain": False, "userType": "external",
               "cwd": str(folder), "sessionId": sid, "version": "2.1.197", "gitBranch": "main",
               "type": rtype, "uuid": str(uuid.uuid4()), "message": message,
               "timestamp": f"2026-03-02T10:{minute:02d}:00.000Z"}
        parent = rec["uuid"]
        lines.append(json.dumps(rec))

    add("user", 0, {"role": "user", "content": "the worker hammers the payments API after a failure"})
    add("assistant", 0, {"role": "assistant", "content": [{
        "type": "text", "text": "It retries at once: the delay before a retry is always 0."}]})
    add("user", 1, {"role": "user", "content": "the retry backoff in the worker never waits; fix it"})
    for n in range(reads):
        add("assistant", 1, {"role": "assistant", "content": [{
            "type": "tool_use", "id": f"toolu_read{n}", "name": "Read",
            "input": {"file_path": str(folder / f"schedule_{n}.py")}}]})
        add("user", 1, {"role": "user", "content": [{
            "tool_use_id": f"toolu_read{n}", "type": "tool_result",
            "content": "\n".join(f"{i:5d}  entry_{n}_{i} = schedule(slot={i}, every={i * 7})"
                                 for i in range(40))}]})
    for i, path in enumerate(edited):
        tool_id = f"toolu_{i:024d}"
        add("assistant", 2, {"role": "assistant", "content": [{
            "type": "tool_use", "id": tool_id, "name": "Edit",
            "input": {"file_path": str(path), "old_string": "delay = 0", "new_string": "delay = 2 ** attempt"}}]})
        add("user", 2, {"role": "user", "content": [{
            "tool_use_id": tool_id, "type": "tool_result", "content": "The file has been updated."}]})
    add("assistant", 3, {"role": "assistant", "content": [{
        "type": "text", "text": "Fixed the retry backoff: the worker now waits 2 ** attempt seconds."}]})
    out = folder / "projects" / "-work-demo" / f"{sid}.jsonl"
    out.parent.mkdir(parents=True)
    out.write_text("\n".join(lines) + "\n")
    return out


def test_search_and_recall_name_the_files_changed_since(tmp_path: Path):
    worker, util = tmp_path / "worker.py", tmp_path / "util.py"
    for path, when in ((worker, _epoch(EDITED_AT) + 86400), (util, _epoch(EDITED_AT))):
        path.write_text("delay = 2 ** attempt\n")
        os.utime(path, (when, when))
    db = tmp_path / "memory.db"
    ingest(db, _transcript(tmp_path, [worker, util]))
    with open_store(db, readonly=True) as store:
        found = search(store, "retry backoff worker", mode="keyword")
        told = recall(store, "retry backoff worker")
        about = reconstruct(store, None, session=found.results[0].session_id[:8],
                            query="retry backoff worker")
    assert "## Matching turn, 2026-03-02 10:01 UTC · files changed since: worker.py" in about.text
    for answer in (found, told):
        headers = [line for line in answer.text.splitlines() if " · session " in line]
        assert any(h.endswith(" · files changed since: worker.py") for h in headers), answer.text
        assert not any("util.py" in h for h in headers)  # unchanged since its edit
    assert told.mode != "fallback" and "the payments API" in told.text  # a chain, not a fallback
    assert [r.get("changed_since") for r in found.as_dict()["results"]] == [[str(worker)]]
    # The prompt hook's recall (opt-in) says it too (other sessions in memory make the
    # prompt's words rare enough to count as a strong match).
    ingest(db, SAMPLES)
    with open_store(db, readonly=True) as store:
        hinted = prompt_recall(store.conn, "the retry backoff in the worker never waits: fixed,"
                               " now waits 2 ** attempt seconds",
                               project=None)
    assert hinted.matches and "· files changed since: worker.py" in hinted.text, hinted.text
    # Once the file is back to its old time, nothing is said.
    os.utime(worker, (_epoch(EDITED_AT), _epoch(EDITED_AT)))
    with open_store(db, readonly=True) as store:
        assert "changed since" not in search(store, "retry backoff worker", mode="keyword").text


def test_a_match_on_the_prompt_names_the_files_its_turn_edited_later(tmp_path: Path):
    """A result is its turn's answer: a match on the prompt chunk names the files the turn's
    later chunks edited, in search and in reconstruct's matching turns alike."""
    worker, util = tmp_path / "worker.py", tmp_path / "util.py"
    for path, when in ((worker, _epoch(EDITED_AT) + 86400), (util, _epoch(EDITED_AT))):
        path.write_text("delay = 2 ** attempt\n")
        os.utime(path, (when, when))
    db = tmp_path / "memory.db"
    ingest(db, _transcript(tmp_path, [worker, util], reads=8))
    query = "retry backoff worker never waits"
    with open_store(db, readonly=True) as store:
        chunks = store.conn.execute(
            "SELECT text FROM chunks WHERE turn = 1 ORDER BY offset, part").fetchall()
        found = search(store, query, mode="keyword")
        about = reconstruct(store, None, session=found.results[0].session_id[:8], query=query)
    prompt_chunk = next(t for (t,) in chunks if "never waits" in t)
    assert len(chunks) > 1 and "[Tool:Edit]" not in prompt_chunk  # the edits came later
    best = found.results[0]
    assert "never waits" in best.text and best.changed == (str(worker),), found.text
    assert " · files changed since: worker.py" in found.text.splitlines()[2]
    assert "· files changed since: worker.py" in about.text
