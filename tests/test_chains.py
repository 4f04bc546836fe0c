"""recall/predict walk real causal chains into ordered narratives, within budget, or say why not."""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import pytest

from causantic import cli
from causantic.errors import UsageError
from causantic.ingest.chunking import approx_tokens
from causantic.retrieval import answer, chains
from causantic.retrieval.chains import predict, recall, walk
from causantic.retrieval.render import SHORTENED
from causantic.retrieval.search import search
from causantic.store import open_store

from .conftest import REPO

EPISODIC = json.loads((REPO / "bench" / "queries" / "episodic.json").read_text())["queries"]
TOLD = 9  # of the 11 episodic queries, how many tell the fix after what led to it


def _index(results, marker: str) -> int | None:
    return next((i for i, h in enumerate(results) if marker in h.text), None)


def _edge_kinds(db: Path, results) -> list[str]:
    """The kind of the stored edge between each consecutive pair (narrative order)."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        kinds = []
        for a, b in zip(results, results[1:]):
            row = conn.execute(
                "SELECT kind FROM edges WHERE src = ? AND dst = ?", (a.chunk_id, b.chunk_id)
            ).fetchone()
            kinds.append(row[0] if row else None)
        return kinds
    finally:
        conn.close()


def _tells_the_episode(result, case: dict) -> bool:
    """The fix is shown (in a chain chunk or in the text) after something that led to it."""
    def at(marker: str) -> int | None:
        for i, h in enumerate(result.results):
            if marker in h.text:
                return i
        return None

    fix = at(case["fix_text"])
    if fix is None and case["fix_text"] not in result.text:
        return False
    if fix is not None and any(i is not None and i < fix for i in map(at, case["before_text"])):
        return True
    text = result.text
    end = text.find(case["fix_text"]) if case["fix_text"] in text else len(text)
    led = [t for t in case["before_text"] if t in text[:end]]
    # The match itself led there: the fix is told after the matched chunk.
    matched = text.find("◆ matched")
    return bool(led) or (fix is not None and fix > 0) or 0 <= matched < end


def test_chains_tell_the_episodes_of_the_benchmark(shared_db: Path):
    """The benchmark's episodic queries (keyword mode): the fix, after what led to it.

    Until issue 12 all 11 had the fix chunk in the chain after a chunk before it, because
    the best-scoring chain of any seed won. Now the chain goes through search's best match
    unless another seed's is clearly better (issue 12), and a recall also shows what
    followed the match. In keyword mode two best matches are not the episode's: "Finally PTY
    works" matches another session first, "ended_at session end hook" a later turn of the
    right one (its fix is then among the other matches, without what led to it). On the
    evidence-level benchmark (bench.answers, hybrid) recall shows the answer far more often
    than before; see README.
    """
    told = []
    with open_store(shared_db, readonly=True) as store:
        for case in EPISODIC:
            result = walk(store, case["query"], case["direction"])
            assert result.mode == "chain", result.text[:300]
            if _tells_the_episode(result, case):
                told.append(case["id"])
    assert len(told) >= TOLD, sorted({c["id"] for c in EPISODIC} - set(told))


def test_recall_of_a_fix_returns_the_fix_after_the_question_that_led_to_it(shared_db: Path):
    """How did we fix the shell delay: the user's hunch about PostHog, then the diagnosis."""
    with open_store(shared_db, readonly=True) as store:
        result = recall(store, "how did we fix the shell prompt delay caused by posthog telemetry")
    hunch = _index(result.results, "Could it be a timeout failing to reach Posthog")
    fix = _index(result.results, "Found it! The default `ShutdownTimeout` is 0")
    assert result.mode == "chain" and result.direction == "backward"
    assert hunch is not None and fix is not None and hunch < fix
    # What the query found is told, then how it was resolved (issue 12: recall shows both).
    assert any(h.seed for h in result.results)
    assert all(k is not None for k in _edge_kinds(shared_db, result.results))


def test_predict_from_a_problem_returns_what_followed(shared_db: Path):
    """From "could it be a PostHog timeout?" forward: the diagnosis comes next."""
    with open_store(shared_db, readonly=True) as store:
        result = predict(store, "Could it be a timeout failing to reach Posthog")
    problem = _index(result.results, "Could it be a timeout failing to reach Posthog")
    fix = _index(result.results, "Found it! The default `ShutdownTimeout` is 0")
    assert result.mode == "chain" and result.direction == "forward"
    assert problem == 0 and fix is not None and fix > problem
    assert result.results[0].seed
    assert all(k is not None for k in _edge_kinds(shared_db, result.results))


@pytest.mark.parametrize("direction", ["backward", "forward"])
@pytest.mark.parametrize("query", ["fish shell completion", "daytona pty log streaming",
                                   "attribution of agents via git notes", "mix phx.server"])
def test_every_chain_follows_stored_edges_without_repeats(
    shared_db: Path, query: str, direction: str
):
    """Narrative order is edge order: each chunk links to the next; none appears twice."""
    with open_store(shared_db, readonly=True) as store:
        result = walk(store, query, direction)
    if result.mode == "fallback":
        pytest.skip("no chain for this query")
    ids = [h.chunk_id for h in result.results]
    assert len(ids) == len(set(ids)) >= 2
    assert None not in _edge_kinds(shared_db, result.results)
    for h in result.results:
        assert h.seed == (h.sources != ("chain",))
        assert 0.0 <= h.score <= 1.0
    assert any(h.seed for h in result.results)


def test_chain_crosses_into_a_sub_agent_and_back(shared_db: Path):
    """fish completions: a sub-agent's findings, then the parent turn that used them."""
    with open_store(shared_db, readonly=True) as store:
        result = predict(store, "fish shell completion")
    kinds = _edge_kinds(shared_db, result.results)
    assert "debrief" in kinds, kinds
    agents = [h.agent_id for h in result.results]
    assert agents[0] and not agents[-1]
    # A sub-agent's stream is never re-entered after the chain left it.
    left = {a for a, b in zip(agents, agents[1:]) if a and a != b}
    assert not left & set(agents[agents.index("") :])


def test_samples_recall_crosses_a_sub_agent_and_a_continued_session(samples_db: Path):
    """Idempotency-Key (session 2) goes back through the compaction summary into session 1
    and its sub-agent's audit."""
    with open_store(samples_db, readonly=True) as store:
        result = recall(store, "Idempotency-Key header CreateInvoice")
    kinds = _edge_kinds(samples_db, result.results)
    assert result.mode == "chain"
    assert "continues" in kinds and ("brief" in kinds or "debrief" in kinds), kinds
    sessions = [h.session_id[:8] for h in result.results]
    assert sessions[0] == "11111111" and sessions[-1] == "22222222"
    assert "Idempotency-Key" in result.results[-1].text and result.results[-1].seed
    assert any(h.agent_id == "a1b2c3d" for h in result.results)
    assert "◆ matched" in result.text
    starts = [result.text.index(h.text[:40]) for h in result.results]
    assert starts == sorted(starts)


def test_samples_predict_from_the_flaky_test_reaches_the_next_session(samples_db: Path):
    with open_store(samples_db, readonly=True) as store:
        result = predict(store, "flaky TestRetryBackoff jitter")
    assert result.mode == "chain"
    assert "TestRetryBackoff" in result.results[0].text
    assert result.results[-1].session_id.startswith("22222222")


def test_chunk_with_no_edges_falls_back_to_search_in_one_line(samples_db: Path):
    """The telemetry fix is followed by a topic shift (the link is cut): nothing came next."""
    with open_store(samples_db, readonly=True) as store:
        result = predict(store, "telemetry exporter shutdown flush", project="acme-api")
    assert result.mode == "fallback"
    lines = result.text.splitlines()
    said = [line for line in lines if line.startswith("No chain found")]
    assert len(said) == 1
    assert "telemetry exporter" in result.text and result.results
    assert result.results[0].session_id.startswith("33333333")
    for word in ("seed", "candidate", "chainsAttempted", "diagnostic"):
        assert word not in said[0]


def test_nothing_found_is_one_clear_line(samples_db: Path):
    with open_store(samples_db, readonly=True) as store:
        result = recall(store, "kubernetes helm chart zzqx", project="acme-api")
    assert result.mode == "fallback" and result.results == []
    assert result.text.splitlines()[-1] == 'No relevant memory found for "kubernetes helm chart zzqx".'


def test_unknown_project_is_a_usage_error(samples_db: Path):
    with open_store(samples_db, readonly=True) as store, pytest.raises(UsageError, match="nope"):
        recall(store, "retry", project="nope")


@pytest.mark.parametrize("max_tokens", [150, 400, 1200])
def test_chain_fits_the_token_budget_and_cuts_only_at_boundaries(shared_db: Path, max_tokens: int):
    """Small budgets keep the seed, shorten at a block/line boundary with a marker, no gaps.

    Chunks are shown compacted (issue 12): every line shown is a stored line, a piece of
    one (a long line cut with "…", tool output lines indented), or a marker.
    """
    with open_store(shared_db, readonly=True) as store:
        small = recall(store, "how did we fix the shell prompt delay caused by posthog telemetry",
                       max_tokens=max_tokens)
        stored = "\n".join(t for (t,) in store.conn.execute("SELECT text FROM chunks"))
    assert approx_tokens(small.text) <= max_tokens
    assert small.mode == "chain" or max_tokens == 150
    assert small.tokens == approx_tokens(small.text)
    if small.mode == "chain":
        assert any(h.seed for h in small.results)  # the match is never what gets cut away
        assert None not in _edge_kinds(shared_db, small.results)  # no gaps
    for line in small.text.splitlines():
        core = line.strip().removesuffix("…")
        assert (core in stored or line == SHORTENED
                or line.startswith(("[", "Chain for", "---", "No chain fits the budget",
                                    "Other matches:"))
                or not line.strip() or "Keyword results only" in line), line


def test_hard_character_cap(shared_db: Path):
    with open_store(shared_db, readonly=True) as store:
        for cap in (40, 300, 1500, 5000):
            result = predict(store, "posthog ShutdownTimeout", max_chars=cap)
            assert len(result.text) <= cap
        for tokens in (10, 60):
            result = recall(store, "posthog ShutdownTimeout", max_tokens=tokens)
            assert approx_tokens(result.text) <= tokens


def test_a_huge_query_is_echoed_clipped_on_one_line(samples_db: Path):
    with open_store(samples_db, readonly=True) as store:
        result = recall(store, "zzqx " * 2000)
    assert result.mode == "fallback" and len(result.text.splitlines()[-1]) < 200


def test_step_scores_penalise_weak_edges_and_skip_cycles_on_a_hand_built_graph():
    """A -> B (weak) -> C, and a sub-agent brief/debrief loop that must not be re-entered."""
    graph = chains._Graph(conn=None, backward=False)  # type: ignore[arg-type]
    for cid, stream, sub in (("A", "s\x1f", False), ("B", "s\x1f", False), ("C", "s\x1f", False),
                             ("X", "s\x1fagent", True), ("Y", "s\x1fagent", True)):
        graph.nodes[cid] = chains._Node(100, stream, sub, "")
    graph.adj = {"A": [("B", 0.5), ("X", 1.0)], "B": [("C", 1.0)], "C": [],
                 "X": [("Y", 1.0)], "Y": [("A", 1.0), ("B", 1.0)]}
    scores = dict.fromkeys("ABCXY", 1.0)
    cands = chains._candidates(graph, scores, "A", 0, limit=10, budget=4000)
    paths = {c.ids: c.steps for c in cands}
    assert ("A", "B", "C") in paths
    assert paths[("A", "B", "C")] == (1.0, 0.75, 0.75)  # weak edge: this step and what follows
    assert ("A", "X", "Y", "B", "C") in paths  # sub-agent, then back to the parent stream
    assert all(len(set(p)) == len(p) for p in paths)  # Y -> A would be a cycle


def test_chain_score_is_a_median_that_mildly_prefers_longer_chains():
    assert chains.chain_score([1.0, 0.0]) == pytest.approx(0.5 * 2 / 3)
    assert chains.chain_score([0.9, 0.1, 0.8, 0.7]) == pytest.approx(0.75 * 4 / 5)
    assert chains.chain_score([1.0, 1.0, 1.0]) > chains.chain_score([1.0, 1.0])


def test_keyword_scores_are_rarity_weighted_term_coverage(samples_db: Path):
    with open_store(samples_db, readonly=True) as store:
        texts = dict(store.conn.execute("SELECT id, text FROM chunks").fetchall())
        scores = chains.keyword_scores(store.conn, "TestRetryBackoff jitter kubernetes", texts)
        stems = chains.keyword_scores(store.conn, "idempotency keys", texts)
    assert scores and all(0 < s < 1 for s in scores.values())  # nothing holds "kubernetes"
    best = max(scores, key=scores.get)
    assert "jitter" in texts[best] and "TestRetryBackoff" in texts[best]
    assert set(scores) == {c for c, t in texts.items() if "TestRetryBackoff" in t or "jitter" in t}
    # "keys" finds "key" (and "Idempotency-Key"), at word starts only.
    assert any("Idempotency-Key" in texts[c] and s == 1.0 for c, s in stems.items())


def test_cli_recall_and_predict_json_contract(samples_db: Path, capsys: pytest.CaptureFixture):
    for command in ("recall", "predict"):
        code = cli.main(["--db", str(samples_db), command, "flaky TestRetryBackoff", "--json",
                         "--max-tokens", "1500"])
        assert code == 0
        doc = json.loads(capsys.readouterr().out)
        assert {"query", "mode", "results", "text", "tokens", "duration_ms"} <= doc.keys()
        assert doc["mode"] in ("chain", "fallback")
        for r in doc["results"]:
            assert {"chunk_id", "session_id", "project", "start_time", "end_time", "score",
                    "sources", "text"} <= r.keys()
        times = [r["start_time"] for r in doc["results"]]
        assert doc["mode"] != "chain" or times[0] <= times[-1]


def test_cli_unknown_project_is_one_line_exit_2(samples_db: Path, capsys: pytest.CaptureFixture):
    code = cli.main(["--db", str(samples_db), "recall", "retry", "--project", "nope"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "no project 'nope'" in err


def test_a_chunk_forgotten_while_the_walk_runs_is_left_out(sample_db: Path,
                                                            monkeypatch: pytest.MonkeyPatch):
    """The walk reads the chain's ids, then each chunk: a `forget` committed by another process
    in between drops that chunk from the answer instead of failing the recall (it used to raise)."""
    real_load, gone = chains.load_hit, []

    def load_after_a_concurrent_forget(conn, chunk_id):
        if not gone:  # the first chunk the walk loads is deleted by another connection first
            other = apsw.Connection(str(sample_db))
            with other:
                other.execute("DELETE FROM chunks WHERE id = ?", (chunk_id,))
            other.close()
            gone.append(chunk_id)
        return real_load(conn, chunk_id)

    monkeypatch.setattr(chains, "load_hit", load_after_a_concurrent_forget)
    with open_store(sample_db, readonly=True) as store:
        result = recall(store, "Idempotency-Key header CreateInvoice")
    assert gone and result.results
    assert gone[0] not in {h.chunk_id for h in result.results}


def _turns_of(db: Path, result) -> list[tuple[str, int, int]]:
    """(session, turn, part) of each chunk of a chain."""
    with open_store(db, readonly=True) as store:
        where = answer.positions(store.conn, [h.chunk_id for h in result.results])
    return [(where[h.chunk_id][0][:8], where[h.chunk_id][2], where[h.chunk_id][4])
            for h in result.results]


def test_a_what_came_next_predict_walks_on_from_the_turn_after_the_match(shared_db: Path):
    """The renderer work is one 16-chunk turn: "what came after" it starts the walk at the
    next turn and shows the match with how its own turn ended ("spotter-fum.2 is now
    unblocked" is said deep in that turn), where the plain question walks the turn itself
    (whose units may show that message too: it names the spotter work)."""
    asked = "what came after the renderer got its richer output in the spotter work"
    with open_store(shared_db, readonly=True) as store:
        after = predict(store, asked, max_tokens=2000)
        plain = predict(store, "the renderer got its richer output in the spotter work",
                        max_tokens=2000)
    assert _turns_of(shared_db, after)[:2] == [("8463c716", 0, 0), ("8463c716", 1, 0)]
    assert "spotter-fum.2 is now unblocked." in after.text
    assert _turns_of(shared_db, plain)[:2] == [("8463c716", 0, 0), ("8463c716", 0, 1)]


def test_a_compaction_summary_match_stands_for_the_turns_it_retells(shared_db: Path):
    """Six plan issues were applied in turn 9 ("All 6 issues applied."); the compaction
    summary of turn 11 retells it and is search's best match. A "what came next" walk
    starts from turn 9's matching chunk instead, unless the question is about the
    compaction itself."""
    asked = "once all six plan contradictions were resolved, what happened next"
    with open_store(shared_db, readonly=True) as store:
        found = search(store, asked, max_tokens=10**6, answers=False, limit=1,
                       past_summaries=False)
        after = predict(store, asked, max_tokens=2000)
        compacted = predict(store, "what did I ask right after the plan review got compacted",
                            max_tokens=2000)
    assert found.results[0].text.startswith("[Summary]")
    assert _turns_of(shared_db, after)[0] == ("665369bc", 9, 0)
    assert after.results[0].seed and "All 6 issues applied." in after.text
    # About the compaction itself: the walk goes on from the summary to the next request.
    assert _turns_of(shared_db, compacted)[0][:2] == ("665369bc", 11)
    assert "Clarify what the final structure of the requests_queue will be" in compacted.text


def test_other_matches_leave_out_what_the_chain_or_an_earlier_match_shows(monkeypatch):
    """An other match's unit shows its turn's other messages, which the chain often already
    shows: those paragraphs are left out, and a match with nothing new is not shown at all
    (tune: 26 of 136 2,000-token recall answers repeated the chain's match in 'Other matches')."""
    from causantic.retrieval.render import Hit

    told = "[Assistant]\nThe flaky test waited on a fixed sleep; it now polls the socket."
    own = "[Assistant]\nThe retry budget is read from RETRY_MAX, default three attempts."

    def hit(cid: str) -> Hit:
        return Hit(cid, "s" * 8, "p", "", "2026-01-01T00:00:00Z", "", 1.0, ("keyword",), "")

    def units(conn, hits, query):  # two units repeat the chain's message; one adds its own
        by = {"b": f"[User]\nwhy is the socket test flaky on CI again?\n\n{told}", "c": told, "d": f"{told}\n\n{own}"}
        return [(h, by[h.chunk_id]) for h in hits]

    monkeypatch.setattr(chains, "units", units)
    chain = f"Chain for \"flaky\" (what led to it): 1 chunk.\n\n[1] p · session ssssssss\n{told}"
    text, others = chains._other_matches(None, "flaky", chain, [hit("a")],  # type: ignore[arg-type]
                                         [hit("a"), hit("b"), hit("c"), hit("d")], 4000)
    assert text.count(told) == 1
    assert [h.chunk_id for h in others] == ["b", "d"]
    assert own in text and "flaky on CI again?" in text


def test_a_what_came_next_seed_takes_in_its_turns_later_matches_as_search_does(shared_db: Path):
    """Search's first unit for "what came next" holds the later matches of its turn (one
    result per turn) and then the next turn; predict's seed, shown with the rest of its turn,
    does the same, and its chain has room for it whole and the next turn. The shell
    completion turn's later match (the test run: "All 9 tests pass.") was an other match
    that a 2,000-token predict never reached, while search's first unit showed it."""
    asked = "after the fish shell completion tests passed, what did we do next"
    with open_store(shared_db, readonly=True) as store:
        found = search(store, asked, max_tokens=2000)
        after = predict(store, asked, max_tokens=2000)
    passed = "All 9 tests pass. Now let me run the full pre-commit checks."
    assert found.results[0].also and passed in found.text
    seed = after.results[0]
    assert seed.seed and seed.chunk_id == found.results[0].chunk_id
    assert seed.also == found.results[0].also  # the same later match, folded the same way
    assert passed in after.text.split("Other matches:")[0]
    assert _turns_of(shared_db, after)[1][1] == _turns_of(shared_db, after)[0][1] + 1
    assert after.text.count(passed) == 1
