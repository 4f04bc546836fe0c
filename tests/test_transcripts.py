"""The transcript reader survives real files: each case is a small file written here."""

from __future__ import annotations

import json
from pathlib import Path

from causantic.transcripts.discover import agents_with_files, discover
from causantic.transcripts.jsonl import ReadStats, iter_records
from causantic.transcripts.project import project_for_cwd
from causantic.transcripts.turns import parse_transcript

SID = "aaaaaaaa-1111-4222-8333-444444444444"


def rec(kind: str, n: int, content, **extra) -> dict:
    r = {
        "type": kind,
        "uuid": f"u{n}",
        "sessionId": SID,
        "cwd": "/home/me/proj",
        "timestamp": f"2026-01-01T10:{n:02d}:00.000Z",
        "message": {"role": kind, "content": content},
    }
    r.update(extra)
    return r


def user(n: int, text, **extra) -> dict:
    return rec("user", n, text, **extra)


def assistant(n: int, block: dict, msg_id: str = "", **extra) -> dict:
    r = rec("assistant", n, [block], **extra)
    r["message"]["id"] = msg_id or f"msg{n}"
    return r


def lines(*records: dict) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def parse(data: bytes, **kw):
    return parse_transcript(data, default_session=SID, **kw)


def texts(parsed) -> list[list[tuple[str, str]]]:
    return [[(b.kind, b.text) for b in t.blocks] for t in parsed.turns]


def test_two_objects_on_one_line_are_both_read():
    """A torn write concatenates two records; both must be kept (seen in a real file)."""
    data = (json.dumps(user(1, "first prompt")) + json.dumps(user(2, "second prompt")) + "\n").encode()
    parsed = parse(data)
    assert [t.blocks[0].text for t in parsed.turns] == ["first prompt", "second prompt"]
    assert parsed.stats.bad_lines == 0


def test_garbage_and_blank_lines_are_skipped_and_counted():
    data = lines(user(1, "hello")) + b"\n\n   \nnot json at all\n{\"broken\": \n" + lines(user(2, "again"))
    parsed = parse(data)
    assert [t.blocks[0].text for t in parsed.turns] == ["hello", "again"]
    assert parsed.stats.bad_lines == 2


def test_truncated_last_line_is_left_for_the_next_read():
    """A file still being written ends mid-line: read up to it, then resume there later."""
    full = lines(user(1, "done"), user(2, "still being written"))
    cut = full[: len(full) - 15]
    stats = ReadStats(0)
    got = list(iter_records(cut, 0, stats))
    assert len(got) == 1
    assert stats.complete_offset == len(lines(user(1, "done")))
    rest = list(iter_records(full, stats.complete_offset, ReadStats(0)))
    assert [r["message"]["content"] for _, r in rest] == ["still being written"]


def test_last_line_without_newline_is_read_when_complete():
    data = lines(user(1, "one")) + json.dumps(user(2, "two")).encode()
    assert [t.blocks[0].text for t in parse(data).turns] == ["one", "two"]


def test_non_utf8_bytes_do_not_lose_the_record():
    raw = json.dumps(user(1, "caf\u00e9 PLACEHOLDER")).encode().replace(b"PLACEHOLDER", b"\xff\xfe bad")
    parsed = parse(raw + b"\n")
    assert len(parsed.turns) == 1
    assert "bad" in parsed.turns[0].blocks[0].text


def test_huge_line_is_parsed():
    big = "x" * 3_000_000
    parsed = parse(lines(user(1, "run it"), assistant(2, {"type": "text", "text": big})))
    assert len(parsed.turns[0].blocks[1].text) == 3_000_000


def test_out_of_order_and_missing_timestamps():
    """Turn times come from the earliest/latest record; a turn without any borrows a neighbour's."""
    a = user(1, "first")
    b = assistant(2, {"type": "text", "text": "answer"})
    b["timestamp"] = "2026-01-01T09:00:00.000Z"  # earlier than the prompt
    c = user(3, "second")
    del c["timestamp"]
    parsed = parse(lines(a, b, c))
    assert parsed.turns[0].start_time == "2026-01-01T09:00:00.000Z"
    assert parsed.turns[0].end_time == "2026-01-01T10:01:00.000Z"
    assert parsed.turns[1].start_time == parsed.turns[0].end_time


def test_first_turn_takes_the_first_timestamped_record():
    """The original tool lost sessions whose first record had no timestamp."""
    a = user(1, "no time here")
    del a["timestamp"]
    b = assistant(2, {"type": "text", "text": "reply"})
    parsed = parse(lines(a, b))
    assert parsed.turns[0].start_time == "2026-01-01T10:02:00.000Z"


def test_several_session_ids_in_one_file():
    other = "bbbbbbbb-1111-4222-8333-444444444444"
    b = user(2, "second session")
    b["sessionId"] = other
    parsed = parse(lines(user(1, "first session"), b))
    assert [t.session_id for t in parsed.turns] == [SID, other]
    assert set(parsed.sessions) == {SID, other}


def test_assistant_message_split_over_lines_stays_in_order_in_one_turn():
    data = lines(
        user(1, "do it"),
        assistant(2, {"type": "thinking", "thinking": "secret plan"}, msg_id="m1"),
        assistant(3, {"type": "text", "text": "part one"}, msg_id="m1"),
        assistant(4, {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}, msg_id="m1"),
        user(5, [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}]),
    )
    parsed = parse(data)
    assert len(parsed.turns) == 1
    kinds = [b.kind for b in parsed.turns[0].blocks]
    assert kinds == ["prompt", "text", "tool_use", "tool_result"]  # thinking is never kept
    assert parsed.turns[0].blocks[3].name == "Bash"


def test_tool_result_content_as_string_or_list_and_images():
    data = lines(
        user(1, "look"),
        assistant(2, {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/x"}}),
        user(3, [{"type": "tool_result", "tool_use_id": "t1", "content": "plain string"}]),
        assistant(4, {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}}),
        user(5, [{"type": "tool_result", "tool_use_id": "t2", "content": [
            {"type": "text", "text": "from a list"},
            {"type": "image", "source": {"type": "base64", "data": "iVBORw0KGgo" * 1000}}]}]),
        user(6, [{"type": "text", "text": "what is this?"},
                 {"type": "image", "source": {"type": "base64", "data": "AAAA" * 5000}}]),
    )
    parsed = parse(data)
    results = [b.text for b in parsed.turns[0].blocks if b.kind == "tool_result"]
    assert results == ["plain string", "from a list\n[image]"]
    assert parsed.turns[1].blocks[0].text == "what is this?\n[image]"
    assert "AAAA" not in json.dumps(texts(parsed))


def test_compaction_summary_is_its_own_turn_and_marks_a_continued_session():
    data = lines(
        user(1, "This session is being continued from a previous conversation that ran out of "
                "context. The summary below covers the earlier portion.\n1. Did things.",
             isCompactSummary=True),
        user(2, "carry on"),
    )
    parsed = parse(data)
    assert [t.kind for t in parsed.turns] == ["summary", "turn"]
    assert parsed.sessions[SID].continued


def test_meta_command_wrappers_and_interrupts_do_not_open_turns():
    data = lines(
        user(1, "real question"),
        user(2, "<local-command-caveat>Caveat: generated by the user</local-command-caveat>", isMeta=True),
        user(3, "[Request interrupted by user]"),
        user(4, "<task-notification><status>done</status></task-notification>"),
    )
    parsed = parse(data)
    assert len(parsed.turns) == 1
    assert [b.kind for b in parsed.turns[0].blocks] == ["prompt", "note", "note"]


def test_slash_command_opens_a_turn_with_its_expansion():
    data = lines(
        user(1, "<command-name>/review</command-name>\n<command-message>review</command-message>\n"
                "<command-args>src/api</command-args>"),
        user(2, "Review the code in src/api carefully.", isMeta=True),
        assistant(3, {"type": "text", "text": "Looks fine."}),
    )
    parsed = parse(data)
    assert texts(parsed) == [[("prompt", "/review src/api"),
                              ("command", "Review the code in src/api carefully."),
                              ("text", "Looks fine.")]]


def test_our_own_injected_memory_is_never_ingested():
    data = lines(
        user(1, '<causantic-memory kind="briefing">\nLast session you fixed X\n</causantic-memory>'),
        user(2, 'hello <causantic-memory kind="recall">old stuff</causantic-memory> there'),
    )
    parsed = parse(data)
    assert texts(parsed) == [[("prompt", "hello  there")]]


def test_inline_sidechain_records_form_their_own_stream():
    side = user(2, "Explore the repo", isSidechain=True, agentId="abc1234")
    side_reply = assistant(3, {"type": "text", "text": "Found it"}, isSidechain=True, agentId="abc1234")
    parsed = parse(lines(user(1, "main prompt"), side, side_reply))
    streams = {(t.agent_id, t.blocks[0].text) for t in parsed.turns}
    assert streams == {("", "main prompt"), ("abc1234", "Explore the repo")}


def test_agent_progress_mirrors_make_a_sub_agent_stream_unless_it_has_a_file():
    tool = assistant(2, {"type": "tool_use", "id": "toolu_T", "name": "Task",
                         "input": {"description": "look", "prompt": "Look around"}})
    progress = {
        "type": "progress", "sessionId": SID, "uuid": "p1", "parentToolUseID": "toolu_T",
        "timestamp": "2026-01-01T10:03:00.000Z",
        "data": {"type": "agent_progress", "agentId": "a77", "message": {
            "type": "user", "uuid": "inner1", "timestamp": "2026-01-01T10:03:00.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "Look around"}]}}},
    }
    data = lines(user(1, "go"), tool, progress)
    parsed = parse(data)
    assert [t.agent_id for t in parsed.turns] == ["", "a77"]
    assert parsed.turns[0].blocks[1].agent_id == "a77"  # the Task call knows whom it spawned
    assert [t.agent_id for t in parse(data, agents_with_files=frozenset({"a77"})).turns] == [""]


def test_hook_progress_lines_are_not_even_decoded():
    noise = {"parentUuid": "x", "type": "progress", "data": {"type": "hook_progress"}}
    stats = ReadStats(0)
    records = list(iter_records(lines(noise, user(1, "hi")), 0, stats))
    assert len(records) == 1 and stats.skipped_lines == 1


def test_discovery_finds_all_three_sub_agent_layouts(tmp_path: Path):
    proj = tmp_path / "-home-me-proj"
    (proj / SID / "subagents").mkdir(parents=True)
    (proj / f"{SID}.jsonl").write_bytes(lines(user(1, "main")))
    (proj / SID / "subagents" / "agent-a1.jsonl").write_bytes(lines(user(1, "new layout")))
    (proj / SID / "subagents" / "agent-acompact-ff.jsonl").write_bytes(lines(user(1, "summariser")))
    (proj / "agent-0123abcd.jsonl").write_bytes(lines(user(1, "legacy layout")))
    found = discover([tmp_path])
    kinds = [(f.kind, f.agent_id, f.session_hint) for f in found]
    assert sorted(kinds) == [("session", "", SID), ("subagent", "0123abcd", ""), ("subagent", "a1", SID)]
    assert kinds[0][0] == "session"  # main sessions come first
    assert agents_with_files(proj / f"{SID}.jsonl", SID) == {"a1", "0123abcd"}


def test_warmup_agents_and_unknown_record_types_are_ignored():
    parsed = parse(lines({"type": "some-future-type", "x": 1}, user(1, "hello")))
    assert len(parsed.turns) == 1


def test_project_identity_folds_worktrees_by_path_shape():
    assert project_for_cwd("/Users/a/workspace/cli/.worktrees/3").name == "cli"
    assert project_for_cwd("/home/u/projects/spotter-worktrees/spotter-dov").name == "spotter"
    assert project_for_cwd("/home/u/repo/.claude/worktrees/feature").name == "repo"
    assert project_for_cwd("/home/u/plain").name == "plain"
    assert project_for_cwd(None).name == "unknown"


def test_project_identity_uses_git_on_disk(tmp_path: Path):
    main = tmp_path / "mainrepo"
    (main / ".git" / "worktrees" / "wt1").mkdir(parents=True)
    wt = tmp_path / "elsewhere" / "wt1"
    (wt / "sub").mkdir(parents=True)
    (wt / ".git").write_text(f"gitdir: {main}/.git/worktrees/wt1\n")
    assert project_for_cwd(str(wt / "sub")).name == "mainrepo"
    assert project_for_cwd(str(main)).name == "mainrepo"


def test_long_tool_output_keeps_its_first_error_lines_whatever_the_characters():
    """The word search behind trim_output finds the same lines as the error-line regex."""
    import re

    from causantic.ingest.chunking import _ERROR_LINE_RE, _error_lines, trim_output

    middle = ["ok"] * 5 + ["  FAILED tests/x.py", "ok", "Error: boom; another error", "cannot open"]
    out = trim_output("\n".join(["head"] * 15 + middle * 4 + ["tail"] * 8), "Bash", False)
    assert out.count("FAILED tests/x.py") == 4 and out.count("cannot open") == 3  # 10 kept
    assert "[… 26 lines omitted; error lines kept …]" in out
    for text in ["", "no match\nhere", "x\nTRACEBAC\u212a here\nnot\nfound\nNot Found",
                 "\u0130 err\u0131r\nerror", "it did fa\u0131l\nok", "caf\u00e9 panic\n\nundefined", "fatalfatal\nok"]:
        want = [m.group(0) for _, m in zip(range(2), re.finditer(_ERROR_LINE_RE, text))]
        assert _error_lines(text, 2) == want
