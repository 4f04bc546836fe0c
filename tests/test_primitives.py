"""The one implementation of each small primitive (issue 14 part 5): budgets and clipping,
reading times, the answer type. Many modules call these, so their edge cases are pinned here."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from causantic.retrieval.render import SHORTENED, Answer, Hit, cap
from causantic.timestamps import (
    days_ago,
    iso_utc,
    named_period,
    parse_iso,
    parse_when,
    periods_back,
    relative_period,
    yearless_date,
)
from causantic.tokens import (
    approx_tokens,
    char_limit,
    chars_for_tokens,
    clip,
    clip_line,
    tokens_for_chars,
)


def test_budgets_count_three_and_a_half_characters_a_token():
    assert approx_tokens("x" * 35) == 10 and chars_for_tokens(10) == 35
    assert tokens_for_chars(35) == 10 and tokens_for_chars(34) == 9
    assert char_limit(100) == 350 and char_limit(100, 200) == 200 and char_limit(100, 999) == 350


def test_clip_keeps_short_text_and_ends_a_long_one_with_an_ellipsis_within_the_limit():
    assert clip("abcdef", 6) == "abcdef"
    assert clip("abcdefg", 6) == "abcde…"
    assert clip("ab   defg", 6) == "ab   …"
    assert clip("ab   defg", 6, strip=True) == "ab…"  # whitespace before the mark dropped
    assert clip_line("a\n b\t\tc  " + "d" * 20, 8) == "a b c d…"
    assert clip_line("  one\n\ntwo  ", 80) == "one two"


def test_cap_shortens_at_a_boundary_or_cuts_bare_when_tiny():
    text = "[User] " + "word " * 40 + "\n\n[Assistant] " + "more " * 40
    assert cap(text, 10_000) == text
    shortened = cap(text, 260)
    assert len(shortened) <= 260 and shortened.endswith(SHORTENED)
    assert cap(text, 20) == text[:19].rstrip() + "…"  # no room for the marker


def test_stored_times_read_back_aware_and_naive_ones_as_utc():
    assert parse_iso("2026-02-01T03:40:03.827Z") == datetime(2026, 2, 1, 3, 40, 3, 827000, UTC)
    assert parse_iso("2026-02-01T03:40:03").tzinfo is UTC
    assert iso_utc(parse_iso("2026-02-01T04:40:03+01:00")) == "2026-02-01T03:40:03.000Z"
    with pytest.raises(ValueError):
        parse_iso("yesterday")
    before = datetime.now(UTC)
    assert parse_iso("yesterday", or_now=True) >= before


@pytest.mark.parametrize(("given", "end_of_day", "stored"), [
    ("2026-03-02", False, "2026-03-02T00:00:00.000Z"),
    ("2026-03-02", True, "2026-03-03T00:00:00.000Z"),  # the whole day, as an exclusive bound
    ("  2026-03-02T09:30 ", True, "2026-03-02T09:30:00.000Z"),
    ("2026-03-02 09:30", False, "2026-03-02T09:30:00.000Z"),
    ("2026-03-02T09:30z", False, "2026-03-02T09:30:00.000Z"),
    ("2026-03-02T10:30+01:00", False, "2026-03-02T09:30:00.000Z"),
])
def test_a_users_date_or_time_is_read_as_utc_unless_it_names_an_offset(given, end_of_day, stored):
    assert iso_utc(parse_when(given, end_of_day=end_of_day)) == stored


@pytest.mark.parametrize("bad", ["", "last week", "2026-13-01", "2026-02-30", "02/03/2026"])
def test_a_users_date_that_is_not_one_raises_for_the_caller_to_name_its_flag(bad):
    with pytest.raises(ValueError):
        parse_when(bad)


@pytest.mark.parametrize(("question", "period"), [
    ("What did Maria start, as mentioned on 3 June, 2023?", ("2023-06-03", "2023-06-04")),
    ("What did Caroline share on October 13, 2023?", ("2023-10-13", "2023-10-14")),
    ("the 13th of Oct. 2023", ("2023-10-13", "2023-10-14")),
    ("what did we fix on 2026-02-28", ("2026-02-28", "2026-03-01")),
    ("What happened to John's job in August 2023?", ("2023-08-01", "2023-09-01")),
    ("what did we ship in December 2025", ("2025-12-01", "2026-01-01")),
    ("31 June, 2023 is no day; June 2023 is a month", ("2023-06-01", "2023-07-01")),
])
def test_a_date_named_in_a_question_is_the_day_or_month_it_covers(question, period):
    start, end = (f"{day}T00:00:00.000Z" for day in period)
    assert named_period(question) == (start, end)


@pytest.mark.parametrize("question", ["what did the mayor say in 2023", "in early January",
                                      "we may ship 2024 builds", "marching band 2023", "on March 3"])
def test_a_question_without_a_dated_day_or_month_names_no_period(question):
    assert named_period(question) is None


@pytest.mark.parametrize(("question", "named"), [
    ("What did John do on 3 June?", (6, 3)),
    ("what did we fix on March 3", (3, 3)),
    ("the 13th of Oct.", (10, 13)),
    ("When did Melanie go camping in June?", (6, None)),
    ("the big PR review in early January", (1, None)),
    ("what broke in mid-May", (5, None)),
    ("on 29 February", (2, 29)),
])
def test_a_date_named_without_its_year_is_its_month_and_day(question, named):
    assert yearless_date(question) == named


@pytest.mark.parametrize("question", ["we may ship it", "what did the mayor say", "on 3 June, 2023",
                                      "in June 2023", "on 31 June", "a marching band",
                                      "June 2023 release", "in 2023"])
def test_a_question_without_a_yearless_date_names_none(question):
    assert yearless_date(question) is None


@pytest.fixture
def berlin_time(monkeypatch: pytest.MonkeyPatch):
    """This process's local time zone set to Europe/Berlin (UTC+1 in winter) for one test."""
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_a_period_relative_to_now_is_a_local_calendar_period(berlin_time):
    """Tuesday 24 November 2026, 00:30 in Berlin (23:30 UTC the day before): "yesterday" is
    Monday in Berlin, not Sunday as UTC would have it."""
    now = datetime(2026, 11, 23, 23, 30, tzinfo=UTC)
    day = ("2026-11-22T23:00:00.000Z", "2026-11-23T23:00:00.000Z")
    assert relative_period("what did we fix yesterday?", now) == day
    assert relative_period("today's failing test", now) == (
        "2026-11-23T23:00:00.000Z", "2026-11-24T23:00:00.000Z")
    assert relative_period("the migration we did last week", now) == (
        "2026-11-15T23:00:00.000Z", "2026-11-22T23:00:00.000Z")
    assert relative_period("this week", now)[0] == "2026-11-22T23:00:00.000Z"
    assert relative_period("Last month's release", now) == (
        "2026-09-30T22:00:00.000Z", "2026-10-31T23:00:00.000Z")
    assert relative_period("in the past week", now) == (
        "2026-11-17T23:00:00.000Z", "2026-11-24T23:00:00.000Z")
    january = datetime(2027, 1, 10, 12, tzinfo=UTC)
    assert relative_period("last month", january) == (
        "2026-11-30T23:00:00.000Z", "2026-12-31T23:00:00.000Z")
    for question in ("the weekly report", "a monthly job", "the last weekend", "todays"):
        assert relative_period(question, now) is None


def test_a_yearless_date_means_that_day_in_each_year_back_from_the_newest_chunk():
    day = [(f"{y}-06-03T00:00:00.000Z", f"{y}-06-04T00:00:00.000Z") for y in (2025, 2024)]
    # 3 June 2026 has not come yet on 1 June 2026.
    assert periods_back(6, 3, newest="2026-06-01T09:00:00.000Z",
                        oldest="2024-01-01T00:00:00.000Z") == day
    assert periods_back(12, None, newest="2026-12-05T00:00:00.000Z",
                        oldest="2026-01-01T00:00:00.000Z") == [
        ("2026-12-01T00:00:00.000Z", "2027-01-01T00:00:00.000Z")]
    assert periods_back(2, 29, newest="2026-05-01T00:00:00.000Z",
                        oldest="2023-01-01T00:00:00.000Z") == [
        ("2024-02-29T00:00:00.000Z", "2024-03-01T00:00:00.000Z")]
    assert len(periods_back(1, 1, newest="2026-05-01T00:00:00.000Z",
                            oldest="0001-01-01T00:00:00.000Z")) == 30  # YEARS_BACK
    assert periods_back(1, 1, newest="2026-05-01T00:00:00.000Z", oldest="garbage") == []


def test_days_ago_counts_back_from_the_given_moment():
    now = datetime(2026, 3, 10, 12, tzinfo=UTC)
    assert days_ago(7, now) == datetime(2026, 3, 3, 12, tzinfo=UTC)
    assert days_ago(0.5, now) == datetime(2026, 3, 10, 0, tzinfo=UTC)


def _hit(seed: bool = False) -> Hit:
    return Hit("c1", "s1", "proj", "", "2026-01-01T00:00:00.000Z", "2026-01-01T00:01:00.000Z",
               0.5, ("keyword",), "text", seed=seed)


def test_one_answer_type_reports_each_commands_json_keys_in_the_contracts_order():
    base = ["query", "mode", "results", "text", "tokens", "duration_ms"]
    search = Answer("q", "hybrid", [_hit()], "t", 1, 1.234).as_dict()
    assert list(search) == base and "seed" not in search["results"][0]  # type: ignore[index]
    assert list(Answer("q", "keyword", [], "t", 1, 1.0, notice="no vectors").as_dict()) == \
        [*base, "notice"]
    chain = Answer("q", "chain", [_hit(seed=True)], "t", 1, 1.0, direction="backward",
                   score=2.0, others=[_hit()]).as_dict()
    assert list(chain) == [*base, "direction", "other_matches"]
    assert chain["results"][0]["seed"] is True  # type: ignore[index]
    timeline = Answer("w", "timeline", [], "t", 1, 1.0, truncated=False, sessions=()).as_dict()
    assert list(timeline) == [*base, "truncated", "sessions"] and timeline["sessions"] == []
    answer = Answer("q", "hybrid", [], "t", 1, 1.0)
    assert answer.replace(text="u").text == "u" and answer.others == [] and answer.score == 0.0
    chain_answer = Answer("q", "chain", [], "t", 1, 1.0, direction="forward")
    taught = chain_answer.replace(text="t + lesson", lessons=[{"id": "l1"}]).as_dict()
    assert list(taught) == [*base, "direction", "lessons"] and taught["text"] == "t + lesson"


def test_a_record_subclass_keeps_its_bases_fields_for_equality_replace_and_copy():
    """`MemoryHit` is a `Hit` with two more fields: a copy must keep all of them."""
    import copy

    from causantic.records import Record

    class Base(Record):
        __slots__ = ("a", "b")

        def __init__(self, a: int, b: int) -> None:
            self._init(a=a, b=b)

    class More(Base):
        __slots__ = ("c",)

        def __init__(self, a: int, b: int, c: int) -> None:
            self._init(a=a, b=b, c=c)

    x = More(1, 2, 3)
    assert repr(x).endswith("More(a=1, b=2, c=3)") and x.replace(b=5)._values() == (1, 5, 3)
    assert copy.deepcopy(x) == x and x != More(1, 2, 4) and hash(x) == hash(More(1, 2, 3))


def test_a_chunk_is_labelled_the_same_in_answers_and_listings():
    from causantic.retrieval.render import header, label

    hit = _hit(seed=True).replace(agent_id="a1")
    assert header(hit, 2) == "[2] proj · session s1 · agent a1 · 2026-01-01 00:00 · keyword · ◆ matched"
    assert label("proj", "0123456789", "", "", "first line") == \
        "proj · session 01234567 · unknown time · first line"


def test_blocks_reads_back_what_render_block_writes():
    """One reader of the rendered chunk format (session state and automatic observations)."""
    from causantic.blocks import blocks
    from causantic.ingest.chunking import render_block
    from causantic.transcripts.turns import Block

    written = [Block(kind="prompt", text="fix the flaky test"),
               Block(kind="tool_use", text="", name="Bash", input={"command": "go test ./..."}),
               Block(kind="tool_result", name="Bash", text="FAIL: TestRetry", is_error=True),
               Block(kind="text", text="Fixed: the jitter was unseeded.")]
    text = "\n\n".join(render_block(b) for b in written)
    read = blocks(text)
    assert [label for label, _ in read] == ["User", "Tool:Bash", "Result:Bash error", "Assistant"]
    assert read[0][1] == "fix the flaky test"
    assert read[2][1].startswith("FAIL: TestRetry")
    assert read[3][1] == "Fixed: the jitter was unseeded."
    assert blocks("no labels here") == []


def test_a_label_opens_a_block_only_at_the_start_or_after_a_blank_line():
    """Text that quotes a label (a prompt about `[User]`, a log line) stays in its block."""
    from causantic.blocks import blocks

    text = ("[User]\nwhy does x[Assistant] appear\n[Assistant] inline\n\n\n"
            "[Tool:Bash] grep '[User]' log\n\n[Result:Bash error]\nno [Summary] here\n\n"
            "[Tool:a [User]\n\n[Assistant]\nok")
    assert blocks(text) == [
        ("User", "why does x[Assistant] appear\n[Assistant] inline\n"),
        ("Tool:Bash", "grep '[User]' log"),
        ("Result:Bash error", "no [Summary] here"),
        ("Tool:a [User", ""),
        ("Assistant", "ok"),
    ]
    assert blocks("\n[User]\nnot at the start") == []
