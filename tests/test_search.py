"""Keyword search finds the right session, never breaks on hostile input, respects budgets."""

from __future__ import annotations

from pathlib import Path

import pytest

from causantic.retrieval.fts import fts_query, query_terms
from causantic.retrieval.render import SHORTENED
from causantic.retrieval.search import search
from causantic.store import open_store

# Written by reading the shared transcripts: (query, session that holds the answer).
KEYWORD_QUERIES = [
    ("posthog timeout delaying the shell after every command", "cde341db"),
    ("Daytona log streaming documentation", "74b8b136"),
    ("PTY log streaming JSON parsing log files", "cae98e19"),
    ("TranscriptUUIDAtStart manual commit strategy metadata", "4931d45a"),
    ("calculatePromptAttributionAtStart staged changes git index", "4fec7ea0"),
    ("attribution of agents via git notes rebase", "6113e919"),
    ("Fish shell completion branch feedback", "61cb3ba8"),
    ("mix phx.server doesnt start", "55604662"),
    ("credo dialyzer mix_audit setup", "491e126e"),
    ("Gemini transcript parsing for checkpointing", "c010174c"),
    ("session end hooks ended_at field", "062a8bdd"),
]


@pytest.mark.parametrize("query,session", KEYWORD_QUERIES)
def test_keyword_search_finds_the_session(shared_db: Path, query: str, session: str):
    with open_store(shared_db, readonly=True) as store:
        result = search(store, query, limit=5, max_tokens=20000)
    assert session in [h.session_id[:8] for h in result.results], [h.session_id[:8] for h in result.results]
    assert all(h.sources == ("keyword",) for h in result.results)


@pytest.mark.parametrize(
    "hostile",
    ['"unbalanced', "a AND (b OR", "NEAR(x y, 3)", "col:value", "*", "-", "foo*", "^start",
     "text:secret", "日本語のテスト", "emoji 🎉 test", "'; DROP TABLE chunks; --", "", "   ",
     "AND OR NOT", '""""', "{a} [b] (c)", "x" * 5000],
)
def test_hostile_query_text_never_raises(samples_db: Path, hostile: str):
    with open_store(samples_db, readonly=True) as store:
        result = search(store, hostile, limit=3)
    assert result.text


def test_fts_query_quotes_every_token_and_keeps_identifiers_whole():
    assert fts_query('fix "SQLITE_BUSY" in build_zipapp.py NEAR(') == (
        'text : ("fix" OR "sqlite_busy" OR "build_zipapp py" OR "near")'
    )
    assert query_terms("how did we do it") == ["how", "did", "we", "do", "it"]  # all stop words
    assert fts_query("?!") is None


def test_project_filter_and_limit(shared_db: Path):
    with open_store(shared_db, readonly=True) as store:
        result = search(store, "test", project="spotter", limit=3, max_tokens=20000)
    assert 0 < len(result.results) <= 3
    assert {h.project for h in result.results} == {"spotter"}


def test_answer_respects_the_token_budget_and_marks_shortening(shared_db: Path):
    with open_store(shared_db, readonly=True) as store:
        result = search(store, "checkpoint strategy", limit=10, max_tokens=300)
    assert result.tokens <= 300
    assert len(result.results) >= 1
    assert SHORTENED in result.text or len(result.results) >= 2


def test_json_shape_follows_the_design_contract(shared_db: Path):
    with open_store(shared_db, readonly=True) as store:
        doc = search(store, "daytona", limit=2).as_dict()
    assert set(doc) >= {"query", "mode", "results", "text", "tokens", "duration_ms"}
    assert set(doc["results"][0]) == {
        "chunk_id", "session_id", "project", "start_time", "end_time", "score", "sources", "text"
    }


def test_identical_chunks_do_not_crowd_results(tmp_path: Path):
    """The same tool output twice is shown once (read time only; both stay stored)."""
    from causantic.config import load_settings
    from causantic.ingest.run import run_ingest

    from .conftest import SAMPLES

    db = tmp_path / "m.db"
    run_ingest(load_settings(db=db), [SAMPLES])
    with open_store(db) as store:
        row = store.conn.execute(
            "SELECT session_id, project, text, tokens FROM chunks WHERE text LIKE '%Dockerfile%'"
        ).fetchone()
        with store.conn:
            for i in range(3):
                store.conn.execute(
                    "INSERT INTO chunks(id, session_id, project, offset, part, turn, kind,"
                    " start_time, end_time, text, tokens) VALUES (?,?,?,?,0,0,'turn','t','t',?,?)",
                    (f"dup{i}", row[0], row[1], 10_000 + i, row[2], row[3]),
                )
        result = search(store, "Dockerfile golang alpine", limit=10)
        texts = [h.text for h in result.results]
    assert len(texts) == len(set(texts))


def test_very_common_words_rank_only_the_newest_matches(tmp_path: Path, monkeypatch):
    """Past RANK_BUDGET matches, a common-word query ranks the newest chunks; rare words
    still reach every chunk."""
    from causantic.retrieval import fts

    db = tmp_path / "m.db"
    with open_store(db) as store:
        with store.conn:
            for i in range(200):
                text = f"deploy note {i} " + ("rareword " if i == 3 else "") + "deploy " * (i % 5)
                store.conn.execute(
                    "INSERT INTO chunks(id, session_id, project, offset, part, turn, kind,"
                    " start_time, end_time, text, tokens) VALUES (?,?,?,?,0,0,'turn','t','t',?,9)",
                    (f"c{i:03}", "s", "p", i, text),
                )
        everything = {h.chunk_id for h in fts.keyword_search(store.conn, "deploy", limit=500)}
        assert len(everything) == 200
        monkeypatch.setattr(fts, "RANK_BUDGET", 50)
        newest = fts.keyword_search(store.conn, "deploy", limit=500)
        assert 40 <= len(newest) <= 60
        assert min(h.chunk_id for h in newest) >= "c140"
        assert [h.chunk_id for h in fts.keyword_search(store.conn, "rareword", limit=5)] == ["c003"]


def test_near_duplicate_check_survives_the_shingle_sample():
    """The sampled pre-check never hides a real repeat and still rejects unrelated text."""
    from causantic.retrieval.fusion import shingles, similar_text

    base = " ".join(f"word{i}" for i in range(400))
    kept = shingles(base)
    repeat = shingles(base.replace("word7 ", "changed ").replace("word300 ", "other "))
    assert similar_text(repeat, kept)
    assert similar_text(shingles(" ".join(f"word{i}" for i in range(50, 350))), kept)
    assert not similar_text(shingles(" ".join(f"term{i}" for i in range(400))), kept)


def test_remembered_word_counts_follow_writes_from_any_connection(tmp_path: Path):
    from causantic.retrieval.fts import _doc_count

    def add(store, i: int) -> None:
        with store.conn:
            store.conn.execute(
                "INSERT INTO chunks(id, session_id, project, offset, part, turn, kind,"
                " start_time, end_time, text, tokens) VALUES (?,?,?,?,0,0,'turn','t','t',?,9)",
                (f"c{i}", "s", "p", i, "zebra crossing"),
            )

    db = tmp_path / "m.db"
    with open_store(db) as reader, open_store(db) as writer:
        assert _doc_count(reader.conn, "zebra") == 0
        add(reader, 1)  # this connection
        assert _doc_count(reader.conn, "zebra") == 1
        add(writer, 2)  # another one
        assert _doc_count(reader.conn, "zebra") == 2
        assert _doc_count(writer.conn, "zebra") == 2


def _chat_project(store, project: str, lines: list[str]) -> None:
    with store.conn:
        for i, line in enumerate(lines):
            store.conn.execute(
                "INSERT INTO chunks(id, session_id, project, offset, part, turn, kind,"
                " start_time, end_time, text, tokens) VALUES (?,?,?,?,0,0,'turn','t','t',?,9)",
                (f"{project}{i}", f"s-{project}", project, i, line),
            )


def test_the_vector_query_leaves_out_what_nearly_every_chunk_of_the_project_holds(
        tmp_path: Path, monkeypatch):
    """A speaker named in every chat of a project tells none of its chunks apart: a
    project-scoped search embeds the question without the name (kept for keywords, outside
    the project, and when nothing else would be left)."""
    from causantic.retrieval import vector
    from causantic.retrieval.fts import project_wide_terms, vector_text

    with open_store(tmp_path / "m.db") as store:
        # Melanie and a user label in all 10 chunks of "chats", pottery in 8 (under 90 %).
        _chat_project(store, "chats", [f"[User]\nMelanie: day {i} " + ("pottery " if i < 8 else "run")
                                       for i in range(10)])
        _chat_project(store, "other", ["Melanie once", "unrelated text", "more words"])
        q = "What does Melanie's pottery class teach?"
        assert project_wide_terms(store.conn, q, "chats") == ["melanie"]
        assert vector_text(store.conn, q, "chats") == "What does pottery class teach?"
        assert vector_text(store.conn, q, "other") == q
        assert vector_text(store.conn, q, None) == q
        assert vector_text(store.conn, "Melanie?", "chats") == "Melanie?"
        assert vector_text(store.conn, "Did Melanie's user run", "chats") == "Did user run"

        embedded: list[str] = []

        def fake_vector_search(store, query, **kw):
            embedded.append(query)
            raise vector.VectorsUnavailable("test: no vectors")

        monkeypatch.setattr(vector, "vectors_state", lambda conn: None)
        monkeypatch.setattr(vector, "vector_search", fake_vector_search)
        result = search(store, q, project="chats")
        assert embedded == ["What does pottery class teach?"]
        assert result.results  # the keyword side still searched for the name
