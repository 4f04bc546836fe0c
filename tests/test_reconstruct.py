"""reconstruct: timelines in time order within budget, briefings for resuming work."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import apsw
import pytest

from causantic import cli
from causantic.errors import UsageError
from causantic.ingest.chunking import approx_tokens
from causantic.retrieval.reconstruct import ELSEWHERE, briefing, reconstruct
from causantic.retrieval.search import search
from causantic.store import open_store

from .conftest import PYTHON, REPO

S1, S2, S3 = ("11111111-aaaa-4bbb-8ccc-000000000001", "22222222-aaaa-4bbb-8ccc-000000000002",
              "33333333-aaaa-4bbb-8ccc-000000000003")


def _conn(db: Path) -> apsw.Connection:
    return apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)


def _session_chunks(conn: apsw.Connection, session: str) -> list[tuple[str, str]]:
    return conn.execute(
        "SELECT id, start_time FROM chunks WHERE session_id LIKE ? || '%'"
        " ORDER BY start_time, agent_id, offset, part", (session,)
    ).fetchall()


def test_timeline_of_a_session_is_all_its_chunks_in_time_order(shared_db: Path):
    conn = _conn(shared_db)
    result = reconstruct(conn, "cli", session="cde341db", max_tokens=100_000)
    expected = _session_chunks(conn, "cde341db")
    assert result.mode == "timeline" and not result.truncated
    assert [h.chunk_id for h in result.results] == [cid for cid, _ in expected]
    times = [h.start_time for h in result.results]
    assert times == sorted(times)
    assert result.text.count("=== Session cde341db") == 1
    at = 0
    for h in result.results:  # every chunk whole, each after the one before
        at = result.text.index(h.text, at) + len(h.text)


def test_tight_budget_keeps_the_newest_chunks_and_says_so(shared_db: Path):
    conn = _conn(shared_db)
    result = reconstruct(conn, "cli", session="cde341db", max_tokens=1500)
    expected = [cid for cid, _ in _session_chunks(conn, "cde341db")]
    ids = [h.chunk_id for h in result.results]
    assert result.truncated and approx_tokens(result.text) <= 1500
    assert ids == expected[len(expected) - len(ids):]  # the newest, contiguous
    assert "older chunk" in result.text.splitlines()[0] and "newest kept" in result.text


def test_timeline_hard_character_cap(shared_db: Path):
    conn = _conn(shared_db)
    for cap in (40, 150, 400, 2000, 9000):
        result = reconstruct(conn, "napoli-matcha", max_chars=cap)
        assert len(result.text) <= cap
    tiny = reconstruct(conn, "napoli-matcha", max_chars=150)
    assert tiny.results == [] and tiny.text.startswith("Not even the newest chunk fits")


def test_timeline_without_a_session_covers_the_newest_chunks_of_the_project(shared_db: Path):
    conn = _conn(shared_db)
    result = reconstruct(conn, "spotter", max_tokens=3000)
    newest = conn.execute("SELECT id FROM chunks WHERE project = 'spotter'"
                          " ORDER BY start_time DESC, offset DESC, part DESC LIMIT 1").fetchone()[0]
    assert result.results[-1].chunk_id == newest
    assert all(h.project == "spotter" for h in result.results)


def test_from_to_and_days_back_select_by_time(samples_db: Path):
    conn = _conn(samples_db)
    day = reconstruct(conn, "acme-api", start="2026-03-03", end="2026-03-03")
    assert {h.session_id for h in day.results} == {S2}
    morning = reconstruct(conn, "acme-api", start="2026-03-02T09:04", end="2026-03-02T12:00:00Z")
    assert {h.session_id for h in morning.results} == {S1}
    assert all(h.end_time >= "2026-03-02T09:04" for h in morning.results)
    recent = reconstruct(conn, "acme-api", days_back=3, now=datetime(2026, 3, 6, 12, tzinfo=UTC))
    assert {h.session_id for h in recent.results} == {S2, S3}
    assert [s[:8] for s in recent.sessions] == ["22222222", "33333333"]
    empty = reconstruct(conn, "acme-api", start="2027-01-01")
    assert empty.results == [] and empty.text == 'No chunks of project "acme-api" in that time range.'


def test_sub_agent_chunks_are_labelled_in_the_timeline(samples_db: Path):
    result = reconstruct(_conn(samples_db), "acme-api", session="11111111")
    assert "sub-agent a1b2c3d]" in result.text
    assert any(h.agent_id == "a1b2c3d" for h in result.results)


def test_a_session_id_names_its_project(samples_db: Path):
    conn = _conn(samples_db)
    named = reconstruct(conn, "acme-api", session="11111111")
    assert reconstruct(conn, None, session="11111111").text == named.text
    assert reconstruct(conn, "", session=S1, query="migration").sessions == (S1,)
    with pytest.raises(UsageError, match="no session starting with \"99999999\" in memory"):
        reconstruct(conn, None, session="99999999")
    with pytest.raises(UsageError, match="name a project or a session"):
        reconstruct(conn, None)
    with pytest.raises(UsageError, match="too short"):
        reconstruct(conn, None, session="1")


def test_previous_session(samples_db: Path):
    conn = _conn(samples_db)
    assert reconstruct(conn, "acme-api", previous_session=True).sessions == (S2,)
    assert reconstruct(conn, "acme-api", previous_session=True,
                       current_session=S2[:8]).sessions == (S1,)
    first = reconstruct(conn, "acme-api", previous_session=True, current_session=S1)
    assert first.results == [] and first.text.count("\n") == 0
    # A session that is just starting (not in memory yet): the newest stored one is previous.
    assert reconstruct(conn, "acme-api", previous_session=True,
                       current_session="99999999-new").sessions == (S3,)


def test_briefing_names_the_files_and_last_request_of_the_previous_session(samples_db: Path):
    conn = _conn(samples_db)
    result = reconstruct(conn, "acme-api", previous_session=True, mode="briefing")
    assert result.mode == "briefing" and result.sessions == (S2,)
    text = result.text
    assert "Last request: Add the idempotency key header to CreateInvoice" in text
    assert "internal/httpclient/invoice.go" in text
    assert "committed 4f1c2ab Add idempotency key to CreateInvoice" in text
    assert "branch main" in text and "## Most recent conversation" in text
    assert "- 11111111 (2026-03-02): Fix flaky retry backoff test" in text
    assert "sk_live" not in text


def test_briefing_of_session_one_lists_open_todos_and_the_resolved_error(samples_db: Path):
    text = briefing(_conn(samples_db), "acme-api", session="11111111", max_chars=6000)
    assert "Open todos (2):" in text
    assert "- [~] Add idempotency keys to CreateInvoice" in text
    assert "- [ ] Stop retrying UpdateCustomer on timeout" in text
    assert "Resolved errors (1):" in text and "later succeeded" in text
    assert "Files edited (1): internal/retry/backoff.go" in text


def test_briefing_headings_say_when_a_list_is_cut(shared_db: Path):
    """spotter's last session resolved five errors and ran 70 commands: the briefing shows
    the last three and six, and its headings say so ("Resolved errors (5):" over three
    lines read as a miscount)."""
    text = briefing(_conn(shared_db), "spotter", session="4d5611e5", max_chars=9000)
    assert "Resolved errors (last 3 of 5):" in text
    assert "Commands (last 6 of 70):" in text
    assert "Unresolved errors (1):" in text


def test_briefing_on_the_shared_transcripts(shared_db: Path):
    """cli: the session before the newest is the fish-completions one (edited setup_test.go,
    last asked to commit)."""
    conn = _conn(shared_db)
    result = reconstruct(conn, "cli", previous_session=True, mode="briefing")
    assert result.sessions[0].startswith("61cb3ba8")
    assert "Last request: commit" in result.text
    assert "cmd/entire/cli/setup_test.go" in result.text
    assert "branch 20260209-fish-completions" in result.text


SPOTTER_WORKTREES = "/home/USER/projects/spotter-worktrees/"


def test_briefing_resumes_the_newest_session_of_the_same_worktree(shared_db: Path):
    """spotter's three sessions ran in three worktrees; the newest is spotter-dov's. Opened in
    spotter-fum, the briefing resumes spotter-fum's own session and names the newer one."""
    conn = _conn(shared_db)
    fum = briefing(conn, "spotter", max_chars=3000, checkout=SPOTTER_WORKTREES + "spotter-fum")
    title, newer = fum.splitlines()[:2]
    assert "last session 8463c716" in title and "branch spotter-fum" in title
    assert newer.startswith("Newer work in another checkout: session 4d5611e5 in worktree spotter-dov (")
    assert "branch spotter-dov): Work on bead spotter-dov" in newer
    result = reconstruct(conn, "spotter", mode="briefing",
                         checkout=SPOTTER_WORKTREES + "spotter-fum")
    assert result.sessions[0].startswith("8463c716") and newer in result.text
    for checkout in (SPOTTER_WORKTREES + "spotter-dov", "/home/USER/projects/spotter", None):
        text = briefing(conn, "spotter", max_chars=3000, checkout=checkout)
        assert "last session 4d5611e5" in text and "Newer work" not in text
    later = reconstruct(conn, "spotter", mode="briefing", start="2026-02-12",
                        checkout=SPOTTER_WORKTREES + "spotter-fum")  # spotter-fum's is older
    assert later.sessions[0].startswith("4d5611e5") and "Newer work" not in later.text
    starting = briefing(conn, "spotter", max_chars=3000, exclude_session="8463c716",
                        checkout=SPOTTER_WORKTREES + "spotter-fum")  # its only session starts
    assert "last session 4d5611e5" in starting and "Newer work" not in starting


def test_briefing_lists_no_scratch_output_or_the_project_folder_as_files_read(shared_db: Path):
    """spotter 4d5611e5 read a background task's output under /tmp/claude-<uid>/ and grepped
    its whole worktree folder: neither is a file worth naming; the files it read are."""
    text = briefing(_conn(shared_db), "spotter", session="4d5611e5", max_chars=20_000)
    line = next(x for x in text.splitlines() if x.startswith("Files read or searched"))
    assert "lib/spotter_web/live/pane_list_live.ex" in line
    assert ".output" not in line and "/tasks/" not in line
    assert "spotter-worktrees/spotter-dov," not in line + ","


@pytest.mark.parametrize("cap", [30, 120, 700, 3000, 6000, 20_000])
def test_briefing_never_exceeds_its_cap(shared_db: Path, cap: int):
    conn = _conn(shared_db)
    for project in ("cli", "napoli-matcha", "spotter"):
        text = briefing(conn, project, max_chars=cap)
        assert 0 < len(text) <= min(cap, 9500)
        assert text.startswith("# Briefing") or cap < 200


def test_briefing_excludes_the_starting_session_and_handles_strangers(samples_db: Path):
    conn = _conn(samples_db)
    assert "last session 22222222" in briefing(conn, "acme-api", exclude_session=S3)
    assert briefing(conn, "nope") == 'No memory of project "nope" yet.'
    only = briefing(conn, "acme-api", exclude_session="")
    assert "last session 33333333" in only


def test_briefing_imports_no_numpy_onnxruntime_or_mcp(samples_db: Path, tmp_path: Path):
    """The session-start hook calls it: SQL and strings only."""
    code = (
        "import sys, apsw\n"
        "from causantic.retrieval.reconstruct import briefing\n"
        f"conn = apsw.Connection({str(samples_db)!r}, flags=apsw.SQLITE_OPEN_READONLY)\n"
        "text = briefing(conn, 'acme-api', max_chars=6000)\n"
        "heavy = [m for m in ('numpy', 'onnxruntime', 'mcp', 'tokenizers') if m in sys.modules]\n"
        "print(len(text), heavy)\n"
    )
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, cwd=REPO,
                         timeout=60, check=True)
    size, heavy = out.stdout.split(" ", 1)
    assert int(size) > 100 and heavy.strip() == "[]"


def test_unknown_session_is_one_clear_line(samples_db: Path):
    result = reconstruct(_conn(samples_db), "acme-api", session="deadbeef")
    assert result.results == [] and "\n" not in result.text
    assert 'No session starting with "deadbeef"' in result.text


@pytest.mark.parametrize("kwargs,message", [
    ({"session": "1111"}, "at least 8 characters"),
    ({"start": "yesterday"}, "not a date or time"),
    ({"start": "2026-03-04", "end": "2026-03-02"}, "is not before"),
    ({"mode": "story"}, "unknown reconstruct mode"),
])
def test_bad_input_is_a_usage_error(samples_db: Path, kwargs: dict, message: str):
    with pytest.raises(UsageError, match=message):
        reconstruct(_conn(samples_db), "acme-api", **kwargs)


def test_unknown_project_is_a_usage_error_like_list_sessions(samples_db: Path):
    with pytest.raises(UsageError, match="no project 'nope'"):
        reconstruct(_conn(samples_db), "nope")


def test_cli_reconstruct_json_and_errors(samples_db: Path, capsys: pytest.CaptureFixture):
    code = cli.main(["--db", str(samples_db), "reconstruct", "--project", "acme-api",
                     "--session", "11111111", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["mode"] == "timeline"
    assert {"query", "mode", "results", "text", "tokens", "duration_ms"} <= doc.keys()
    assert [r["session_id"] for r in doc["results"]] == [S1] * 3
    code = cli.main(["--db", str(samples_db), "reconstruct", "--project", "acme-api",
                     "--previous-session", "--mode", "briefing", "--max-chars", "900"])
    out = capsys.readouterr().out
    assert code == 0 and len(out) <= 901 and out.startswith("# Briefing: acme-api")
    for argv in (["--project", "nope"], ["--project", "acme-api", "--from", "soon"]):
        code = cli.main(["--db", str(samples_db), "reconstruct", *argv])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and err.startswith("causantic: ")


# -- a question about a session ------------------------------------------------------------------

ENDED_AT = "handleClaudeCodeSessionEnd markSessionEnded batch"


def _first_and_last_said(conn: apsw.Connection, session: str) -> tuple[str, str]:
    """The session's first prompt line and its main stream's last assistant line, as stored."""
    texts = [t for (t,) in conn.execute(
        "SELECT text FROM chunks WHERE session_id LIKE ? || '%' AND agent_id = ''"
        " ORDER BY offset, part", (session,))]
    first = texts[0].split("\n")[1]
    last = texts[-1].rsplit("[Assistant]\n", 1)[1].split("\n")[0]
    return first, last


def test_a_question_shows_how_the_session_started_the_matching_turn_and_how_it_ended(
        shared_db: Path):
    """"What happened in the session where X": the session of the best match, named, then
    its opening request, the turn matching X and its last conclusion, in that order."""
    conn = _conn(shared_db)
    result = reconstruct(conn, "cli", query=ENDED_AT, max_tokens=2000)
    text = result.text
    assert result.mode == "about" and result.query == ENDED_AT
    assert result.sessions is not None and result.sessions[0].startswith("062a8bdd")
    assert "# Session 062a8bdd of project cli (2026-02-02 23:59 – 2026-02-03 03:00 UTC, " \
           f'branch alex/mark-sessions-as-closed): "{ENDED_AT}", where it matches best' in text
    started, matched, ended = (text.index(t) for t in
                               ("## How it started", "## Matching turn", "## How it ended"))
    assert started < matched < ended
    first, last = _first_and_last_said(conn, "062a8bdd")
    assert first[:80] in text[started:matched]
    assert "handleClaudeCodeSessionEnd" in text[matched:ended]
    assert last[:80] in text[ended:]
    assert "turns left out]" in text  # the gaps between the parts are marked
    assert result.results and {h.session_id[:8] for h in result.results} == {"062a8bdd"}
    assert approx_tokens(text) <= 2000


def test_a_question_names_the_other_sessions_search_matched(shared_db: Path):
    """When reconstruct chooses the session, the header names the next sessions search's best
    matches are in (with their day and title), so a wrong choice is one question away; a
    session that was asked for names none."""
    query = "fix the failing integration test"  # several sessions did
    with open_store(shared_db, readonly=True) as store:
        best = [h.session_id for h in search(store, query, project="cli", limit=10,
                                             max_tokens=10**6, answers=False).results]
        result = reconstruct(store, "cli", query=query, max_tokens=2000)
        assert result.sessions
        chosen = result.sessions[0]
        asked = reconstruct(store, "cli", query=query, session=chosen[:8], max_tokens=2000)
    others = [s for s in dict.fromkeys(best) if s != chosen][:2]
    assert others, best
    line = next(x for x in result.text.splitlines() if x.startswith("Also matching: "))
    assert [part[:8] for part in line[len("Also matching: "):].split("; ")] == \
        [s[:8] for s in others]
    assert line.endswith("(ask with a session id for one of them)")
    assert "Also matching" not in asked.text


def test_the_budget_the_chosen_session_leaves_shows_the_other_sessions_matches(
        shared_db: Path):
    """A chosen session's matches rarely fill a large budget; the rest shows search's matches
    in other sessions, as search renders them (a header naming each one's session), and JSON
    lists them in `other_matches` (`results` stays the chosen session's). An asked-for
    session, or a budget the session fills, shows none."""
    query = "fix the failing integration test"
    with open_store(shared_db, readonly=True) as store:
        wide = reconstruct(store, "cli", query=query, max_tokens=6000)
        assert wide.sessions
        chosen = wide.sessions[0]
        asked = reconstruct(store, "cli", query=query, session=chosen[:8], max_tokens=6000)
        tight = reconstruct(store, "cli", query=query, max_tokens=600)
    own, sep, rest = wide.text.partition(f"\n\n---\n\n{ELSEWHERE}\n\n")
    assert sep and f"# Session {chosen[:8]} of project cli" in own
    headers = [x for x in rest.splitlines() if x.startswith("[") and " · session " in x]
    assert headers and headers[0].startswith("[1] cli · session ")
    sessions = [x.split(" · session ")[1][:8] for x in headers]
    assert chosen[:8] not in sessions
    assert sessions == [h.session_id[:8] for h in wide.others]
    assert {h.session_id for h in wide.results} == {chosen}
    assert wide.as_dict()["other_matches"]
    assert approx_tokens(wide.text) <= 6000
    assert ELSEWHERE not in asked.text and not asked.others
    assert ELSEWHERE not in tight.text and not tight.others


def test_an_outcome_question_shows_the_sessions_end_once_and_last(shared_db: Path):
    """Search's answer units add a stream's end after the best match for "what came out
    of" questions; reconstruct shows the main stream's end itself, after every match."""
    conn = _conn(shared_db)
    result = reconstruct(conn, "cli", query=f"what came out of {ENDED_AT}", max_tokens=3000)
    _, last = _first_and_last_said(conn, "062a8bdd")
    text = result.text
    assert text.count(last[:80]) == 1 and "[… how it ended]" not in text
    assert text.rindex("## Matching turn") < text.index("## How it ended") < text.index(last[:80])


def test_a_matching_request_the_user_interrupted_shows_what_the_next_turn_answered(
        shared_db: Path):
    """A request interrupted before any answer was sent again in the next turn: what came of
    it is that turn's answer, shown right after it (and the next gap counts from there)."""
    conn = _conn(shared_db)
    query, answered = "attribution calculation silently fails logging", "Done. I added logging"
    text = reconstruct(conn, "cli", query=query, session="6113e919", max_tokens=800).text
    asked = text.index("Can we add logging?\n\n[interrupted by user]\n\n[… the next turn]")
    assert text.index(answered) > asked and text.count(answered) == 1
    assert "turns left out]" in text[asked:]
    assert approx_tokens(text) <= 800
    # With room for the next turn's own unit, which shows that answer, it is shown once.
    wide = reconstruct(conn, "cli", query=query, session="6113e919", max_tokens=3000).text
    assert wide.count(answered) == 1 and "[… the next turn]" not in wide


@pytest.mark.parametrize("max_tokens", [250, 600, 1200, 3000, 8000])
def test_a_question_answer_stays_within_its_budget(shared_db: Path, max_tokens: int):
    conn = _conn(shared_db)
    for query in (ENDED_AT, "PR 343 comparison Stefan", "telemetry shutdown timeout"):
        result = reconstruct(conn, "cli", query=query, max_tokens=max_tokens)
        assert approx_tokens(result.text) <= max_tokens
        assert result.text.startswith(("Keyword results only", "# Session"))
    assert len(reconstruct(conn, "cli", query=ENDED_AT, max_chars=700).text) <= 700


def test_a_question_about_a_given_session_answers_from_that_session(shared_db: Path):
    conn = _conn(shared_db)
    result = reconstruct(conn, "cli", query="PR 343 comparison Stefan", session="c010174c")
    assert result.sessions is not None and result.sessions[0].startswith("c010174c")
    assert "## Matching turn" in result.text and "#343" in result.text
    assert '"PR 343 comparison Stefan", as asked' in result.text
    assert {h.session_id[:8] for h in result.results} == {"c010174c"}
    # The best match is elsewhere: this session's start and end are still shown, and said so.
    other = reconstruct(conn, "cli", query=ENDED_AT, session="c010174c")
    assert other.sessions is not None and other.sessions[0].startswith("c010174c")
    assert other.results == [] and "No turn of this session matches" in other.text
    assert "## How it started" in other.text and "## How it ended" in other.text
    # Matching turns that do not fit are not called missing.
    tight = reconstruct(conn, "cli", query="PR 343 comparison Stefan", session="c010174c",
                        max_tokens=250)
    assert tight.results == [] and "Its matching turns do not fit this budget" in tight.text
    unknown = reconstruct(conn, "cli", query=ENDED_AT, session="deadbeef")
    assert unknown.results == [] and 'No session starting with "deadbeef"' in unknown.text


def test_without_a_question_reconstruct_is_unchanged(shared_db: Path):
    conn = _conn(shared_db)
    for kwargs in ({"session": "cde341db"}, {"previous_session": True, "mode": "briefing"}):
        plain = reconstruct(conn, "cli", max_tokens=1500, **kwargs)  # type: ignore[arg-type]
        for query in (None, "", "   "):
            again = reconstruct(conn, "cli", query=query, max_tokens=1500, **kwargs)  # type: ignore[arg-type]
            assert (again.mode, again.text, again.sessions) == (plain.mode, plain.text, plain.sessions)


def test_cli_reconstruct_takes_a_question(shared_db: Path, capsys: pytest.CaptureFixture):
    code = cli.main(["--db", str(shared_db), "reconstruct", ENDED_AT, "--project", "cli",
                     "--max-tokens", "1500", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["mode"] == "about" and doc["query"] == ENDED_AT
    assert doc["sessions"][0].startswith("062a8bdd") and doc["tokens"] <= 1500
    assert "## Matching turn" in doc["text"]
