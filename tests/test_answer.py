"""Answer units: a match is shown with what answered it, compactly, as many as the budget holds."""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from causantic.config import load_settings
from causantic.ingest.run import run_embed
from causantic.retrieval import answer, compaction
from causantic.retrieval.search import search
from causantic.store import open_store

from .helpers import ingest

CHUNK = """[User]
why does the build fail on CI?

[Assistant]
Let me look at the failing job.

[Tool:Bash] go test ./...  # run the tests
[Result:Bash error]
ok   entire.io/cli/cmd/a 0.2s
ok   entire.io/cli/cmd/b 0.3s
--- FAIL: TestShadowBranch (0.01s)
ok   entire.io/cli/cmd/c 0.1s

[Tool:Read] /Users/me/src/cli/cmd/entire/cli/setup_test.go
[Result:Read]
1→package cli
2→
3→import "testing"

[Assistant]
The shadow branch hash is cut to 7 characters but BaseCommit keeps 40."""


def test_compact_collapses_tool_runs_and_keeps_what_was_said():
    out = compaction.compact(CHUNK, compaction.terms_of("shadow branch"))
    assert out.startswith("[User]\nwhy does the build fail on CI?")
    assert "Let me look at the failing job." in out
    assert "The shadow branch hash is cut to 7 characters but BaseCommit keeps 40." in out
    # One line for the two tool calls: the tool, the command or the file's name.
    tools = [line for line in out.splitlines() if line.startswith("[Tools]")]
    assert tools == ["[Tools] Bash go test ./...; Read setup_test.go"]
    # Of the output, the error line stays; passing lines and the file's content go.
    assert "  --- FAIL: TestShadowBranch (0.01s)" in out
    assert "ok   entire.io/cli/cmd/a" not in out and "import \"testing\"" not in out
    assert len(out) < len(CHUNK)


def test_a_long_run_of_tool_calls_is_one_short_line():
    run = "\n\n".join(f"[Tool:Bash] gh api repos/entireio/cli/pulls/{n}/comments --paginate | jq '.[].body'"
                       f"\n[Result:Bash]\nok" for n in range(5))
    out = compaction.compact("[User]\nlist the review comments\n\n" + run, ())
    tools = [line for line in out.splitlines() if line.startswith("[Tools]")]
    assert len(tools) == 1 and tools[0].startswith("[Tools] Bash gh api repos/entireio/cli/pulls/0/")
    # About two calls' worth: the rest of the run is cut, not spelled out.
    assert len(tools[0]) <= len("[Tools] ") + 160 and tools[0].endswith("…")


def test_compact_keeps_output_lines_holding_the_query_words():
    chunk = "[Tool:Bash] grep -rn Fish .\n[Result:Bash]\n" + "\n".join(
        [f"noise line {i}" for i in range(40)] + ["cmd/setup.go:12: shellCompletionTarget fish"])
    out = compaction.compact(chunk, compaction.terms_of("shellCompletionTarget"))
    assert "  cmd/setup.go:12: shellCompletionTarget fish" in out
    assert "noise line 7" not in out


def test_compact_keeps_the_output_lines_holding_most_of_the_query():
    """A sub-agent's report names the question's identifier in its first lines and answers it
    further down (blind set b156): the lines holding most of the query are shown, in order."""
    report = "\n".join([
        "## Review of the geminicli package",
        "#### 1. **CalculateTokenUsage Function** (geminicli/transcript.go, lines 215-252)",
        "- Parses the JSON once, then walks `Messages` from `startOffset`",
        "#### 2. **ParseTranscript** returns the messages of a session",
        "- see `calculateTokenUsage()` in the strategy layer for the caller",
        *[f"  detail {n}" for n in range(30)],
        "#### 3. **startOffset usage context**",
        "- **Line-based for Claude Code** (JSONL format): `startOffset` is a line number",
        "- **Message-based for Gemini** (JSON format): `startOffset` is a message index",
    ])
    chunk = "[Tool:Task] Review geminicli package code\n\n[Result:Task]\n" + report
    query = "startOffset in calculateTokenUsage, is it a line number or a message index"
    out = compaction.compact(chunk, compaction.terms_of(query))
    shown = [line.strip() for line in out.splitlines() if line.startswith("  ")]
    assert shown == [
        "#### 1. **CalculateTokenUsage Function** (geminicli/transcript.go, lines 215-252)",
        "- **Line-based for Claude Code** (JSONL format): `startOffset` is a line number",
        "- **Message-based for Gemini** (JSON format): `startOffset` is a message index",
    ]


def test_json_quoted_output_is_shown_by_its_own_lines():
    """`gh api` prints a review comment as one JSON line whose body holds escaped newlines:
    the line of the body that holds the query is shown, not the head of the JSON blob."""
    comment = json.dumps({
        "url": "https://api.github.com/repos/entireio/cli/pulls/comments/2780966723",
        "path": "cmd/entire/cli/logging/logger.go", "line": 85,
        "body": "Nit: the doc comment is stale.\n\nThe logger now writes to "
                ".entire/logs/entire.log, not one file per session id.\n\nPlease update it."})
    chunk = "[Tool:Bash] gh api repos/entireio/cli/pulls/260/comments\n[Result:Bash]\n" + comment
    out = compaction.compact(chunk, compaction.terms_of("which log file does the logger write"))
    shown = [line.strip() for line in out.splitlines() if line.startswith("  ")]
    assert "The logger now writes to .entire/logs/entire.log, not one file per session id." \
        in shown
    assert "Please update it" not in out


def test_a_long_message_keeps_its_head_and_the_lines_with_the_query():
    body = "\n".join(f"step {i} of the plan" for i in range(200)) + "\nthe ShutdownTimeout is 0"
    out = compaction.compact("[Assistant]\n" + body, compaction.terms_of("ShutdownTimeout"))
    assert out.startswith("[Assistant]\nstep 0 of the plan")
    assert "the ShutdownTimeout is 0" in out and "more lines]" in out
    assert len(out) < compaction.ASSISTANT_CHARS + 300


def test_extract_brings_the_turns_conclusion_to_a_matched_prompt():
    turn = [("a", "[User]\nthe shell prompt hangs after every command"),
            ("b", "[Tool:Bash] ./entire help\n[Result:Bash]\n" + "x\n" * 50),
            ("c", "[Assistant]\nChecking the telemetry client.\n\n[Tool:Read] main.go"),
            ("d", "[Assistant]\nFixed: PostHog's ShutdownTimeout now 100 ms; ~800 ms -> ~135 ms.")]
    out = answer.extract(turn, "a", compaction.terms_of("shell prompt hangs"))
    assert out.startswith("[User]\nthe shell prompt hangs")
    assert "Fixed: PostHog's ShutdownTimeout now 100 ms" in out
    assert out.index("Checking the telemetry") < out.index("Fixed:")  # conversation order
    # From a later chunk, the turn's prompt comes first, for context.
    late = answer.extract(turn, "c", [])
    assert late.startswith("[User]\nthe shell prompt hangs") and "Fixed:" in late
    # A recall's match takes only what followed it.
    after = answer.extract(turn, "c", [], before=False)
    assert "the shell prompt hangs" not in after and "Fixed:" in after


def test_extract_picks_the_message_saying_the_query_in_other_words():
    """The answer is one short message far from the match, naming the query's rarer words
    in another form ("highlighting" -> "highlight test"); the narration nearer the match
    says none of them."""
    narration = [(f"n{i}", f"[Assistant]\nNow update module number {i} and wire it into the app.\n\n"
                  f"[Tool:Edit] lib/m{i}.ex\n[Result:Edit]\nok") for i in range(8)]
    turn = [("p", "[User]\nwhich fake browser library did the javascript tests for code "
                  "highlighting use?"),
            *narration[:6],
            ("e", "[Assistant]\nNow the JS highlight test: first install happy-dom for the DOM."),
            *narration[6:],
            ("z", "[Assistant]\nAll done.")]
    terms = compaction.terms_of(turn[0][1][7:])
    out = answer.extract(turn, "p", terms, limit=560)
    assert "happy-dom" in out and "All done." in out
    assert answer.weights(["[Assistant]\nthe highlight test", "[Assistant]\nmodule 3"],
                          terms)[1] == 0.0


def test_a_long_conclusion_is_cut_like_the_match_so_the_answer_fits():
    """A 3,000-character wrap-up no longer takes the whole unit: cut to its head (as the
    match's own messages are), it leaves room for the message holding the query's words."""
    summary = "\n".join(f"- step {i}: renamed a helper and moved its test" for i in range(70))
    turn = [("p", "[User]\nwhy did WORK_RESULT say success false?"),
            ("a", "[Assistant]\nWORK_RESULT is false because the agent never got the task text."),
            ("b", "[Tool:Bash] make test\n[Result:Bash]\nok"),
            ("z", f"[Assistant]\nHere is a summary of all changes:\n{summary}")]
    out = answer.extract(turn, "b", compaction.terms_of("WORK_RESULT success false"))
    assert "the agent never got the task text" in out
    assert "Here is a summary of all changes" in out and "more lines]" in out
    assert len(out) <= answer.UNIT_CHARS


def test_search_results_are_answer_units_filling_the_budget(shared_db: Path):
    """The posthog diagnosis is a later chunk of the turn that the prompt matches."""
    with open_store(shared_db, readonly=True) as store:
        units = search(store, "shell prompt delay posthog telemetry", max_tokens=4000)
        chunks = search(store, "shell prompt delay posthog telemetry", max_tokens=4000,
                        answers=False, limit=10)
        small = search(store, "shell prompt delay posthog telemetry", max_tokens=1200)
        capped = search(store, "shell prompt delay posthog telemetry", max_tokens=4000, limit=2)
    assert "[Tools]" in units.text and "[Tools]" not in chunks.text
    assert len(units.results) > len(chunks.results)  # the same budget holds more answers
    assert units.tokens <= 4000 and small.tokens <= 1200 and len(capped.results) <= 2
    assert "ShutdownTimeout" in units.text
    for hit in units.results:  # each result's text is the unit shown
        assert hit.text.splitlines()[0] in units.text


def test_follows_recognises_questions_about_what_came_next():
    assert answer.follows("after the shell completion tests passed, what did we do next")
    assert answer.follows("once the plan was approved, what got created")
    assert answer.follows("what did I ask right after the plan review got compacted")
    assert answer.follows("spotter-fum.4 tests: what happened after the first LiveView run")
    assert not answer.follows("what came out of the session about linting tools")
    assert not answer.follows("how was the flaky shell completion test fixed")


def test_a_what_came_next_question_shows_the_turn_that_followed(shared_db: Path):
    """The completion tests passed at the end of one turn; the next prompt was `commit`."""
    asked = "after the fish shell completion tests passed, what did we do next"
    with open_store(shared_db, readonly=True) as store:
        after = search(store, asked, project="cli", max_tokens=4000)
        plain = search(store, "the fish shell completion tests passed", project="cli",
                       max_tokens=4000)
    first = after.results[0]
    assert first.session_id.startswith("61cb3ba8")
    head, _, following = first.text.partition("\n\n[… the next turn]\n\n")
    assert following.startswith("[User]\ncommit")
    assert "TestAppendShellCompletion" in head  # the unit itself is unchanged
    # Only the first unit shows what followed, and only for such questions.
    assert all("[… the next turn]" not in h.text for h in after.results[1:] + plain.results)


def test_a_what_came_next_search_shows_the_turn_a_compaction_summary_retells(shared_db: Path):
    """Six plan issues were applied in turn 9 of 665369bc ("All 6 issues applied."); the
    compaction summary of turn 11 retells it and is the best keyword match. For "what came
    next", the turn it retells takes the summary's rank, so the first unit is that turn and
    the next turn shown is what followed it, not what followed the compaction."""
    asked = "once all six plan contradictions were resolved, what happened next"
    with open_store(shared_db, readonly=True) as store:
        raw = search(store, asked, max_tokens=10**6, answers=False, limit=5,
                     past_summaries=False)
        ranked = search(store, asked, max_tokens=10**6, answers=False, limit=5)
        shown = search(store, asked, max_tokens=2000)
        about_compaction = search(store, "what did I ask right after the plan review got"
                                  " compacted", max_tokens=10**6, answers=False, limit=5)
        where = answer.positions(store.conn, [h.chunk_id for h in raw.results + ranked.results
                                              + about_compaction.results])
    assert raw.results[0].kind == "summary" and where[raw.results[0].chunk_id][2] == 11
    first = ranked.results[0]
    assert first.kind != "summary" and where[first.chunk_id][:3] == (
        raw.results[0].session_id, "", 9)
    assert first.score == raw.results[0].score
    assert [h.chunk_id for h in ranked.results].count(first.chunk_id) == 1
    head, _, following = shown.results[0].text.partition("\n\n[… the next turn]\n\n")
    assert "All 6 issues applied." in head and following.startswith("[User]")
    # A question about the compaction itself keeps the summary.
    assert about_compaction.results[0].kind == "summary"


def test_the_next_turn_shown_is_work_not_a_bare_command(tmp_path: Path, private_home: Path):
    """A prompt the assistant said nothing to (a "/compact", a "! git pull") is not what came
    next: the first unit of a "what came next" question shows the turn after it."""
    db = tmp_path / "memory.db"
    _session(tmp_path / "projects" / "-chat-demo", [
        ("user", "deploy the staging cluster with the new ingress"),
        ("assistant", "Deployed the staging cluster; the ingress health checks pass."),
        ("user", "/fast"),
        ("user", "now rotate the TLS certificates of the gateway"),
        ("assistant", "Rotated the gateway certificates; they expire in 90 days.")])
    ingest(db, tmp_path / "projects")
    with open_store(db, readonly=True) as store:
        shown = search(store, "after the staging cluster was deployed, what did we do next",
                       max_tokens=2000, mode="keyword")
    head, _, following = shown.results[0].text.partition("\n\n[… the next turn]\n\n")
    assert "ingress health checks pass" in head
    assert following.startswith("[User]\nnow rotate the TLS certificates")
    assert "Rotated the gateway certificates" in following


def test_what_the_user_said_in_a_tool_result_is_kept_as_their_text():
    """Answers to the assistant's questions and the reason for rejecting a tool call are the
    user's decisions: compaction keeps them whole instead of cutting them as tool output."""
    answered = ('User has answered your questions: "Which tools should we set up?"="Credo +'
                ' Dialyxir + mix_audit", "Which rig?"="No rig". You can now continue with the'
                " user's answers in mind.")
    rejected = ("The user doesn't want to proceed with this tool use. The tool use was rejected"
                " (eg. if it was a file edit, the new_string was NOT written to the file). To"
                " tell you how to proceed, the user said:\nthere is already scoped transcript"
                " code in explain, let's avoid code duplication")
    text = (f"[Tool:AskUserQuestion] {{\"questions\": []}}\n\n[Result:AskUserQuestion]\n{answered}"
            f"\n\n[Tool:Write] /src/summarise.go\n\n[Result:Write error]\n{rejected}"
            "\n\n[Assistant]\nUnderstood.")
    shown = compaction.compact(text)
    assert shown == ("[Tools] AskUserQuestion {\"questions\": []}; Write summarise.go\n\n"
                     '[User]\n"Which tools should we set up?"="Credo + Dialyxir + mix_audit",'
                     ' "Which rig?"="No rig".\n\n'
                     "[User]\nthere is already scoped transcript code in explain, let's avoid"
                     " code duplication\n\n[Assistant]\nUnderstood.")
    assert compaction.user_words("STOP what you are doing and wait for the user") == ""


def test_a_folded_match_does_not_repeat_what_its_unit_shows():
    unit = "[User]\nwhy?\n\n[Assistant]\nBecause the hash is cut to seven characters.\n\n[…]"
    match = ("[Assistant]\nBecause the hash is cut to seven characters.\n\n"
             "[Tools] Edit cleanup.go\n\n[Assistant]\nFixed: both now keep the full forty-character hash.")
    assert answer.unseen(match, unit) == (  # (the fold is joined to its unit by a gap)
        "[Tools] Edit cleanup.go\n\n"
        "[Assistant]\nFixed: both now keep the full forty-character hash.")
    assert answer._fold(match.split("\n\n")[0], unit) == ""  # nothing new: nothing folded
    # The match's own gaps beside paragraphs left out make one gap, not a stack of them.
    held = "[Assistant]\nBecause the hash is cut to seven characters."
    gappy = f"[User]\nwhy is the commit id in the listing so short?\n\n[…]\n\n{held}\n\n[…]\n\n{held}\n\n[…]\n\nDone."
    assert answer.unseen(gappy, unit) == "[User]\nwhy is the commit id in the listing so short?\n\n[…]\n\nDone."


def test_search_results_never_repeat_a_paragraph(shared_db: Path):
    """The linting-beads turn matches three times; its unit's extract already shows the
    assistant messages its later matches hold, which used to be shown a second time."""
    queries = ["No Igniter installers exist for credo, dialyxir, mix_audit, or sobelow: what came next",
               "shell prompt delay posthog telemetry", "spotter-fum.3 transcript renderer"]
    with open_store(shared_db, readonly=True) as store:
        answers = [search(store, q, max_tokens=2000) for q in queries]
    assert any(h.also for a in answers for h in a.results)  # later matches were folded ...
    for a in answers:
        for h in a.results:
            long = [p for p in h.text.split("\n\n") if len(p) >= 120]
            assert len(long) == len(set(long)), h.chunk_id  # ... without repeating a paragraph


def test_asks_outcome_recognises_questions_about_how_something_turned_out():
    assert answer.asks_outcome("what came out of the session where I researched linting tools")
    assert answer.asks_outcome("what was the result of validating the spec agent ticket")
    assert answer.asks_outcome("how did the shadow branch migration turn out")
    assert not answer.asks_outcome("where did the design write-up end up")
    assert not answer.asks_outcome("how we ended up tracking edits between snapshots")
    assert not answer.asks_outcome("after the result of the review came in, what did we do next")


def test_an_outcome_question_shows_how_the_matched_session_ended(shared_db: Path):
    """The slow-prompt session ended with the assistant's summary of the telemetry fix."""
    asked = "what came out of debugging the shell prompt delay"
    with open_store(shared_db, readonly=True) as store:
        outcome = search(store, asked, project="cli", max_tokens=4000)
        plain = search(store, "debugging the shell prompt delay", project="cli", max_tokens=4000)
    first = outcome.results[0]
    assert first.session_id.startswith("cde341db")
    _, _, ending = first.text.partition("\n\n[… how it ended]\n\n")
    assert ending.startswith("[Assistant]\nWithout telemetry: ~15ms.")
    assert "ShutdownTimeout: 100ms" in ending and len(ending) <= answer.OUTCOME_CHARS + 40
    assert all("[… how it ended]" not in h.text for h in outcome.results[1:] + plain.results)


def test_each_search_result_is_a_distinct_turn(shared_db: Path):
    """Most of the posthog query's best chunks are one turn: they make one answer, bounded."""
    query = "shell prompt delay posthog telemetry"
    with open_store(shared_db, readonly=True) as store:
        found = search(store, query, max_tokens=4000)
        raw = search(store, query, max_tokens=10**6, answers=False, limit=10)
        turn_of = answer.positions(store.conn, [h.chunk_id for h in found.results + raw.results])
    turns = [turn_of[h.chunk_id][:3] for h in found.results]
    assert len(turns) == len(set(turns))
    first = turns[0]
    later = [h for h in raw.results if turn_of[h.chunk_id][:3] == first][1:]
    assert later  # the turn matched more than once ...
    folded = [h for h in later
              if compaction.compact(h.text, compaction.terms_of(query))[:200] in found.results[0].text]
    assert folded  # ... and a later match is inside the first answer, which names it
    assert {h.chunk_id for h in folded} <= set(found.results[0].also)
    assert found.results[0].as_dict()["also_matched"] == list(found.results[0].also)
    assert all(len(h.text) <= answer.FOLDED_UNIT_CHARS for h in found.results)


def test_compact_keeps_the_line_git_commit_prints_before_the_lines_holding_the_query():
    """What came out of a run of tool calls is often a commit: `git commit`'s
    "[branch sha] subject" line is shown even when other lines already hold the query's words."""
    log = "\n".join(f"{n:07x} Merge pull request #{n} from entireio/alex/ent-221-part-{n}"
                     for n in range(1, 6))
    text = ("[User]\ncommit this\n\n[Tool:Bash] git log --oneline -5\n[Result:Bash]\n" + log
            + "\n\n[Tool:Bash] git commit -m 'Consolidate logging'\n[Result:Bash]\n"
            "[alex/ent-221-consolidate-logging e82511d] Consolidate logging to one file\n"
            " 3 files changed, 40 insertions(+), 12 deletions(-)")
    out = compaction.compact(text, compaction.terms_of("what did the ent-221 branch commit"))
    lines = out.splitlines()
    at = lines.index("  [alex/ent-221-consolidate-logging e82511d] Consolidate logging to one file")
    assert lines[at - 1].startswith("[Tools] Bash git log")  # first among the output lines
    assert sum(line.startswith("  ") for line in lines) == 1 + compaction.MATCH_LINES
    assert "3 files changed" not in out


def test_compact_keeps_a_failed_tool_calls_message():
    """Claude Code wraps a failed call's message in <tool_use_error>: an error line to keep."""
    text = ("[User]\ncommit\n\n[Tool:Skill] {\"skill\": \"commit\"}\n\n[Result:Skill error]\n"
            "<tool_use_error>Unknown skill: commit</tool_use_error>\n\n"
            "[Tool:Bash] git status\n\n[Result:Bash]\nOn branch main")
    out = compaction.compact(text)
    assert "  <tool_use_error>Unknown skill: commit</tool_use_error>" in out
    assert "On branch main" not in out


def test_compact_keeps_the_note_that_the_user_stopped_a_tool_run():
    """A turn stopped while a tool ran stores the note after the tool's output: cutting the
    output must not cut the note (it is how that work ended), as the session in the shared
    transcripts that ended during a WebFetch shows."""
    text = ("[Result:WebFetch]\n# Scroll Issues in xterm.js\n\n" + "prose\n" * 40
            + "\n[interrupted by user]")
    out = compaction.compact(text)
    assert out == "[interrupted by user]"  # the output cut, the note kept
    assert compaction.compact("[Tool:Bash] ls\n\n[Result:Bash]\na\nb") == "[Tools] Bash ls"


def test_compact_says_nothing_of_results_whose_calls_ended_the_chunk_before():
    """A chunk that opens with results (their calls end the chunk before) showed a bare
    `[Tools]` line; it now says nothing unless it keeps an output line."""
    assert compaction.compact("[Result:Bash]\nok\n\n[Assistant]\nDone.") == "[Assistant]\nDone."
    kept = compaction.compact("[Result:Bash error]\nError: exit status 1\n\n[Assistant]\nFailed.")
    assert kept == "[Tools]\n  Error: exit status 1\n\n[Assistant]\nFailed."


#: A chat between two people, one message a record (as bench.locomo converts LoCoMo): each
#: turn is a message and its reply, so the question "what inspired it?" ends one turn and its
#: answer opens the next.
CHAT = [
    ("Caroline", "I finished a new painting for the art show last week."),
    ("Melanie", "Wow, that sounds lovely! What inspired the painting?"),
    ("Caroline", "A visit to the community center: everyone there was so united and strong."),
    ("Melanie", "That is beautiful. I went camping with the kids at the lake."),
    ("Caroline", "Camping sounds fun! Did the kids like the lake?"),
    ("Melanie", "They loved swimming and roasting marshmallows by the fire."),
]


def _chat_session(folder: Path, chat: list[tuple[str, str]] = CHAT,
                  day: str = "2026-03-02") -> None:
    _session(folder, [("user" if i % 2 == 0 else "assistant", f"{speaker}: {text}")
                      for i, (speaker, text) in enumerate(chat)], day)


def _session(folder: Path, messages: list[tuple[str, str]], day: str = "2026-03-02") -> None:
    """A transcript of (role, text) messages, one a second, in a new session."""
    sid = str(uuid.uuid4())
    lines, parent = [], None
    for i, (role, text) in enumerate(messages):
        rid = str(uuid.uuid4())
        message: dict = ({"role": "user", "content": text} if role == "user" else
                         {"id": f"msg_{i}", "type": "message", "role": "assistant",
                          "model": "m", "content": [{"type": "text", "text": text}],
                          "stop_reason": "end_turn"})
        lines.append(json.dumps({
            "parentUuid": parent, "isSidechain": False, "userType": "external",
            "cwd": "/chat/demo", "sessionId": sid, "version": "2.1.0", "gitBranch": "",
            "type": role, "uuid": rid,
            "timestamp": f"{day}T10:00:{i:02d}.000Z", "message": message}))
        parent = rid
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{sid}.jsonl").write_text("\n".join(lines) + "\n")


def test_conversational_turns_are_messages_only():
    assert answer.conversational([("a", "[User]\nhi\n\n[Assistant]\nhello")])
    assert answer.conversational([("a", "[User]\nbye")])
    assert not answer.conversational([("a", CHUNK)])  # tools
    assert not answer.conversational([("a", "[User]\nhi"), ("b", "[Assistant]\nhello")])
    assert not answer.conversational([("a", "[Summary]\nearlier work")])


#: CHAT's messages as stored: "<speaker>: <text>".
SAID = [f"{speaker}: {text}" for speaker, text in CHAT]


@pytest.fixture
def chat_db(tmp_path: Path, private_home: Path) -> Path:
    """A store holding one session of CHAT, a turn per message and its reply."""
    db = tmp_path / "memory.db"
    _chat_session(tmp_path / "projects" / "-chat-demo")
    ingest(db, tmp_path / "projects")
    return db


def test_a_conversational_match_shows_the_messages_around_it(chat_db: Path):
    """The question that matches ends a turn; its answer is the reply that opens the next."""
    said = SAID
    with open_store(chat_db, readonly=True) as store:
        asked = search(store, "what inspired the painting", max_tokens=2000, mode="keyword")
        middle = search(store, "the community center", max_tokens=2000, mode="keyword")
    # The matched turn (messages 0-1), then the reply that opens the next turn.
    assert asked.results[0].text == (f"[User]\n{said[0]}\n\n[Assistant]\n{said[1]}"
                                     f"\n\n[User]\n{said[2]}")
    # A turn in the middle: the message before it, the turn (messages 2-3), the reply after.
    assert middle.results[0].text == (f"[Assistant]\n{said[1]}\n\n[User]\n{said[2]}\n\n"
                                      f"[Assistant]\n{said[3]}\n\n[User]\n{said[4]}")


def test_neighbouring_chat_turns_are_one_result(chat_db: Path):
    """Two matched turns in a row of one chat are one passage, each message once, not two
    results under two headers repeating the messages around them."""
    said = SAID
    with open_store(chat_db, readonly=True) as store:
        found = search(store, "the kids at the lake", max_tokens=2000, mode="keyword")
    assert len(found.results) == 1
    passage = found.results[0]
    assert passage.text == "\n\n".join(f"[{'User' if i % 2 == 0 else 'Assistant'}]\n{m}"
                                        for i, m in enumerate(said) if i > 0)
    assert len(passage.also) == 1
    assert passage.start_time.startswith("2026-03-02")


def test_the_five_best_chat_matches_show_the_reply_after_them(tmp_path: Path,
                                                              private_home: Path):
    """Five chats where the question ends a turn and the answer opens the next one: each of
    the five results shows its answer (`CONTEXT_UNITS`), not only the best two."""
    db = tmp_path / "memory.db"
    for k in range(5):
        _chat_session(tmp_path / "projects" / "-chat-demo", [
            ("Ann", f"I am back from trip {k}."),
            ("Bo", f"Welcome back! Which museum did you visit on trip {k}?"),
            ("Ann", f"The one in city{k}: the old harbour halls."),
            ("Bo", "Lovely."),
        ], f"2026-03-0{k + 1}")
    ingest(db, tmp_path / "projects")
    with open_store(db, readonly=True) as store:
        found = search(store, "which museum did you visit", max_tokens=2000, mode="keyword")
    assert len(found.results) == 5
    for hit in found.results:
        k = hit.text.split("trip ", 1)[1][0]
        assert hit.text.endswith(f"[User]\nAnn: The one in city{k}: the old harbour halls."), hit.text


def test_a_question_naming_a_date_is_answered_from_that_day_first(tmp_path: Path,
                                                                   private_home: Path):
    """Two days' chats about camping; the one that matches the words better is the other day's."""
    db = tmp_path / "memory.db"
    folder = tmp_path / "projects" / "-chat-demo"
    _chat_session(folder, CHAT, "2026-03-02")
    _chat_session(folder, [("Caroline", "We went camping again, camping by the lake with the kids, "
                                        "the best camping trip yet."),
                           ("Melanie", "Camping with kids by the lake is the best!")], "2026-03-20")
    ingest(db, tmp_path / "projects")
    run_embed(load_settings(db=db))
    for mode in ("keyword", "hybrid", "vector"):
        with open_store(db, readonly=True) as store:
            plain = search(store, "camping with the kids at the lake", max_tokens=2000, mode=mode)
            dated = search(store, "camping with the kids at the lake on 2 March, 2026",
                           max_tokens=2000, mode=mode)
        assert dated.notice is None
        assert plain.results[0].start_time.startswith("2026-03-20"), mode
        assert dated.results[0].start_time.startswith("2026-03-02"), mode
        # The other day's chunks still answer, after the named day's.
        days = [h.start_time[:10] for h in dated.results]
        assert "2026-03-20" in days and days == sorted(days), mode


def test_a_date_named_without_its_year_is_the_latest_such_day_with_chats(tmp_path: Path,
                                                                         private_home: Path):
    """"on 2 March" is 2 March 2026 when both 2025 and 2026 held chats that day: the latest
    year, not the first; "in March" is March 2026 (a year without chats then is skipped)."""
    db = tmp_path / "memory.db"
    folder = tmp_path / "projects" / "-chat-demo"
    _chat_session(folder, [("Caroline", "Camping with the kids at the lake again? It rained."),
                           ("Melanie", "The lake was cold, the kids were camping in the rain.")],
                  "2025-03-02")
    _chat_session(folder, CHAT, "2026-03-02")
    _chat_session(folder, [("Caroline", "We went camping again, camping by the lake with the kids, "
                                        "the best camping trip yet."),
                           ("Melanie", "Camping with kids by the lake is the best!")], "2026-04-20")
    ingest(db, tmp_path / "projects")
    with open_store(db, readonly=True) as store:
        for when in ("on 2 March", "on March 2nd", "in March", "in early March"):
            dated = search(store, f"camping with the kids at the lake {when}", max_tokens=2000,
                           mode="keyword")
            assert dated.results[0].start_time.startswith("2026-03-02"), when
        # No chats on 5 March in any year: no period, the words decide.
        plain = search(store, "camping with the kids at the lake on 5 March", max_tokens=2000,
                       mode="keyword")
        assert not plain.results[0].start_time.startswith("2026-03-02")


def test_yesterday_is_answered_from_yesterday_first(tmp_path: Path, private_home: Path,
                                                   monkeypatch: pytest.MonkeyPatch):
    """The strongest match is a year old; "yesterday" puts yesterday's (10:00 UTC, read in
    UTC here) chat first, and the same words without it do not."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yesterday = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%d")
    db = tmp_path / "memory.db"
    folder = tmp_path / "projects" / "-chat-demo"
    _chat_session(folder, [("Caroline", "We went camping again, camping by the lake with the kids, "
                                        "the best camping trip yet."),
                           ("Melanie", "Camping with kids by the lake is the best!")], "2025-04-20")
    _chat_session(folder, [("Caroline", "Camping with the kids at the lake? It rained."),
                           ("Melanie", "Cold lake.")], yesterday)
    ingest(db, tmp_path / "projects")
    with open_store(db, readonly=True) as store:
        dated = search(store, "camping with the kids at the lake yesterday", max_tokens=2000,
                       mode="keyword")
        plain = search(store, "camping with the kids at the lake", max_tokens=2000,
                       mode="keyword")
    assert dated.results[0].start_time.startswith(yesterday)
    assert plain.results[0].start_time.startswith("2025-04-20")
    monkeypatch.undo()
    time.tzset()


def test_an_outcome_question_leads_with_the_session_its_matches_point_to(tmp_path: Path,
                                                                          private_home: Path):
    """One session names the flaky login test once, strongly (the best single match); the
    other worked on it over several turns and ended with the fix. "What came out of" it is
    answered from the second: its matches first, then how it ended."""
    folder = tmp_path / "projects" / "-chat-demo"
    _session(folder, [("user", "flaky login test flaky login test: plan the flaky login test"),
                      ("assistant", "Plan: look at the flaky login test retries.")], "2026-03-01")
    _session(folder, [("user", "the login test is flaky again"),
                      ("assistant", "Looking at the login test."),
                      ("user", "is the login test still flaky?"),
                      ("assistant", "The login test timing is flaky under load."),
                      ("user", "try the flaky login test with a longer wait"),
                      ("assistant", "Retrying the login test."),
                      ("user", "thanks, wrap up"),
                      ("assistant", "Done: the session timeout was 1s; raised to 5s, 40 green runs.")],
             "2026-03-02")
    db = tmp_path / "memory.db"
    ingest(db, tmp_path / "projects")
    with open_store(db, readonly=True) as store:
        plain = search(store, "flaky login test", max_tokens=4000, mode="keyword")
        asked = search(store, "what came out of the flaky login test", max_tokens=4000,
                       mode="keyword")
        raw = search(store, "what came out of the flaky login test", max_tokens=10**6,
                     mode="keyword", answers=False, limit=10)
    first = raw.results[0].session_id  # the plan names it best ...
    other = next(h.session_id for h in raw.results if h.session_id != first)
    assert [h.session_id for h in raw.results].count(other) >= 2  # ... the work, more often
    assert plain.results[0].session_id == first  # other questions: rank order, unchanged
    shown = [h.session_id for h in asked.results]
    assert shown == sorted(shown, key=lambda sid: sid != other)  # its matches lead
    assert "[… how it ended]\n\n[Assistant]\nDone: the session timeout was 1s" in asked.results[0].text
