"""Topics on real embeddings: rebuild, naming, joining between rebuilds, browsing, expansion.

One session fixture ingests and embeds the napoli-matcha sessions of the shared transcripts
with the real model (121 chunks, about 10 s); another rebuilds topics on a copy once. Tests
that write work on their own copies.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import apsw
import numpy as np
import pytest

from causantic.cli import main as cli_main
from causantic.config import SearchSettings, load_settings
from causantic.errors import CausanticError, UsageError
from causantic.ingest.run import run_embed, run_ingest
from causantic.retrieval import expand as expand_mod
from causantic.retrieval.search import search
from causantic.store import open_store
from causantic.store import topics as topic_store
from causantic.topics import maps
from causantic.topics.active import active_topics_line
from causantic.topics.maintain import Assigner, TopicSettings, rebuild
from causantic.topics.naming import BACKGROUND, name_topics, tokens

from .conftest import PYTHON, SAMPLES

PROJECT = "napoli-matcha"
NAPOLI_CWD = "/Users/ob1/projects/opus-hackathon/napoli-matcha"


@pytest.fixture(scope="session")
def napoli_db(tmp_path_factory: pytest.TempPathFactory, shared_transcripts: Path) -> Path:
    """napoli-matcha ingested and fully embedded, no topics (read-only use: copy to write)."""
    folder = tmp_path_factory.mktemp("topics-napoli")
    (folder / ".causantic").mkdir(mode=0o700)
    (folder / ".causantic" / "config.toml").write_text("[topics]\nauto_rebuild = 0\n")
    settings = load_settings(db=folder / "memory.db", env={"HOME": str(folder)})
    assert settings.topics.auto_rebuild == 0
    run_ingest(settings, [shared_transcripts / "theogbrand__napoli-matcha"])
    assert run_embed(settings).remaining == 0
    return folder / "memory.db"


@pytest.fixture(scope="session")
def topics_db(napoli_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """napoli_db with topics rebuilt once (read-only use)."""
    db = tmp_path_factory.mktemp("topics-built") / "memory.db"
    shutil.copy2(napoli_db, db)
    with open_store(db) as store:
        rebuild(store)
    return db


def _copy(db: Path, tmp_path: Path) -> Path:
    target = tmp_path / "work" / "memory.db"
    target.parent.mkdir(mode=0o700)
    shutil.copy2(db, target)
    return target


def _snapshot(conn: apsw.Connection) -> tuple[list, list, list]:
    return (conn.execute("SELECT * FROM topics ORDER BY id").fetchall(),
            conn.execute("SELECT * FROM topic_members ORDER BY chunk_rowid").fetchall(),
            conn.execute("SELECT * FROM topic_build").fetchall())


def _vector(conn: apsw.Connection, rowid: int) -> np.ndarray:
    blob = conn.execute("SELECT vector FROM chunk_vectors_meta WHERE chunk_rowid = ?",
                        (rowid,)).fetchone()[0]
    return np.frombuffer(blob, dtype=np.float32)


def _centroids(conn: apsw.Connection) -> tuple[list[int], np.ndarray]:
    rows = topic_store.centroids(conn)
    return [i for i, _ in rows], np.stack([np.frombuffer(b, dtype=np.float32) for _, b in rows])


# -- rebuild -------------------------------------------------------------------------------


def test_rebuild_groups_real_chunk_vectors_into_named_topics(topics_db: Path):
    """Several topics, unit centroids, true angular distances, names from member text."""
    with open_store(topics_db, readonly=True) as store:
        conn = store.conn
        build = topic_store.build_info(conn)
        stats = topic_store.topic_stats(conn)
        chunks = conn.execute("SELECT count(*) FROM chunk_vectors_meta").fetchone()[0]
        assert build is not None and build.chunks == chunks == 121
        assert build.params["min_cluster_size"] == 4 and build.params["metric"] == "angular"
        assert len(stats) >= 3
        sizes = [s.size for s in sorted(stats, key=lambda s: s.id)]
        assert sizes == sorted(sizes, reverse=True) and min(sizes) >= 4  # id 1 = largest
        assert max(sizes) < chunks / 2  # no catch-all topic
        ids, cents = _centroids(conn)
        assert cents.dtype == np.float32 and cents.shape == (len(stats), 384)
        assert np.allclose(np.linalg.norm(cents, axis=1), 1.0, atol=1e-5)
        index = {t: i for i, t in enumerate(ids)}
        members = conn.execute(
            "SELECT chunk_rowid, topic_id, probability, distance FROM topic_members").fetchall()
        assert len(members) == sum(sizes)
        for rowid, topic, prob, dist in members:
            cos = float(_vector(conn, rowid) @ cents[index[topic]])
            assert dist == pytest.approx(math.acos(min(1.0, cos)) / math.pi, abs=1e-5)
            assert prob is None or 0.0 <= prob <= 1.0
        for s in stats:
            assert s.projects == {PROJECT: s.size} and s.first <= s.last
            texts = [t.lower() for (t,) in conn.execute(
                "SELECT c.text FROM topic_members m JOIN chunks c ON c.rowid = m.chunk_rowid"
                " WHERE m.topic_id = ?", (s.id,))]
            assert s.terms and s.name.startswith(s.terms[0])
            for term in s.terms[:3]:  # each named term occurs in at least two member chunks
                assert sum(term.lower() in t for t in texts) >= 2, (s.name, term)


def test_rebuild_is_deterministic_and_replaces_the_previous_topics(topics_db: Path, tmp_path: Path):
    db = _copy(topics_db, tmp_path)
    with open_store(db) as store:
        before = _snapshot(store.conn)
        report = rebuild(store)
        after = _snapshot(store.conn)
    assert report.topics == len(before[0]) and report.skipped == 0
    assert before[0] == after[0] and before[1] == after[1]  # same topics, same memberships
    assert before[2][0][1] != after[2][0][1]  # a new build time


def test_a_failure_midway_through_the_write_leaves_the_old_topics(topics_db: Path, tmp_path: Path):
    """The write is one transaction: an error after some memberships were written rolls
    everything back (here a trigger aborts the fourth membership insert)."""
    db = _copy(topics_db, tmp_path)
    with open_store(db) as store:
        conn = store.conn
        before = _snapshot(conn)
        conn.execute(
            "CREATE TEMP TRIGGER fail_midway BEFORE INSERT ON main.topic_members"
            " WHEN (SELECT count(*) FROM main.topic_members) >= 3"
            " BEGIN SELECT RAISE(ABORT, 'disk on fire'); END")
        with pytest.raises(apsw.ConstraintError, match="disk on fire"):
            rebuild(store, settings=TopicSettings(min_cluster_size=5, min_samples=3))
        assert _snapshot(conn) == before
        conn.execute("DROP TRIGGER fail_midway")
        report = rebuild(store, settings=TopicSettings(min_cluster_size=5, min_samples=3))
        assert report.topics >= 1 and _snapshot(conn)[2] != before[2]


def test_rebuild_without_vectors_says_to_embed_first(tmp_path: Path):
    """Chunks without vectors: embed first; no chunks at all: ingest first (not embed, which
    would have nothing to do)."""
    with open_store(tmp_path / "memory.db") as store:
        with pytest.raises(CausanticError, match="memory is empty: run `causantic ingest`"):
            rebuild(store)
    run_ingest(load_settings(db=tmp_path / "memory.db", env={"HOME": str(tmp_path)}), [SAMPLES])
    with open_store(tmp_path / "memory.db") as store:
        with pytest.raises(CausanticError, match="run `causantic embed`"):
            rebuild(store)


# -- joining topics between rebuilds -------------------------------------------------------


def _member_nearest_its_own_centroid(conn: apsw.Connection) -> tuple[int, int, float, float]:
    """(rowid, topic, distance to it, distance to the next nearest centroid) of a member."""
    ids, cents = _centroids(conn)
    for rowid, topic, dist in conn.execute(
            "SELECT chunk_rowid, topic_id, distance FROM topic_members ORDER BY distance"):
        sims = cents @ _vector(conn, rowid)
        order = np.argsort(-sims)
        if ids[order[0]] == topic:
            second = math.acos(min(1.0, float(sims[order[1]]))) / math.pi
            return rowid, topic, dist, second
    raise AssertionError("no member is nearest its own centroid")


def test_a_new_chunk_joins_the_nearest_topic_only_within_the_threshold(topics_db: Path,
                                                                     tmp_path: Path):
    db = _copy(topics_db, tmp_path)
    with open_store(db) as store:
        conn = store.conn
        rowid, topic, dist, _ = _member_nearest_its_own_centroid(conn)
        model = topic_store.build_info(conn).model_id  # type: ignore[union-attr]
        conn.execute("DELETE FROM topic_members WHERE chunk_rowid = ?", (rowid,))
        outside = Assigner.load(conn, model, dist - 1e-6)
        assert outside is not None and outside.assign(conn, [rowid]) == 0
        assert topic_store.topics_of_rowids(conn, [rowid]) == {}
        inside = Assigner.load(conn, model, dist + 1e-6)
        assert inside is not None and inside.assign(conn, [rowid]) == 1
        row = conn.execute("SELECT topic_id, probability, distance FROM topic_members"
                           " WHERE chunk_rowid = ?", (rowid,)).fetchone()
        assert row[0] == topic and row[1] is None and row[2] == pytest.approx(dist, abs=1e-6)
        assert inside.assign(conn, [rowid]) == 0  # already in a topic: left alone
        assert Assigner.load(conn, "some-other-model", 1.0) is None


def test_embedding_new_chunks_assigns_them_by_the_configured_threshold(
        topics_db: Path, tmp_path: Path, private_home: Path, shared_transcripts: Path):
    """The embed step joins fresh chunks to topics: all of them with threshold 1, none with
    a threshold below every distance; `[topics] threshold` in config.toml sets it."""
    spotter = [shared_transcripts / "marot__spotter" / "tool_heavy.jsonl"]
    config = private_home / ".causantic" / "config.toml"
    config.parent.mkdir(exist_ok=True)
    joined = {}
    for threshold in (1.0, 0.0001):
        db = tmp_path / f"t{threshold}" / "memory.db"
        db.parent.mkdir()
        shutil.copy2(topics_db, db)
        config.write_text(f"[topics]\nthreshold = {threshold}\nauto_rebuild = 0\n")
        settings = load_settings(db=db)
        assert settings.topics.threshold == threshold
        run_ingest(settings, spotter)
        report = run_embed(settings)
        assert report.embedded >= 3
        with open_store(db, readonly=True) as store:
            new = store.conn.execute(
                "SELECT count(*) FROM topic_members m JOIN chunks c ON c.rowid = m.chunk_rowid"
                " WHERE c.project = 'spotter'").fetchone()[0]
        assert new == report.topics_joined
        joined[threshold] = (new, report.embedded)
    assert joined[1.0][0] == joined[1.0][1] and joined[0.0001][0] == 0


def test_embedding_builds_topics_when_there_are_none_and_when_memory_outgrew_them(
        napoli_db: Path, tmp_path: Path, private_home: Path,
        capsys: pytest.CaptureFixture[str]):
    """The embed step rebuilds the topics itself (`[topics] auto_rebuild`): memory of 121
    chunk vectors and no topics gets them; unchanged memory is left alone; a quarter more
    chunks than the last build (and at least a hundred), or another model, calls for a new
    one; past the cap, or with 0, only `causantic topics rebuild` builds them."""
    from causantic.topics.maintain import rebuild_due

    db = _copy(napoli_db, tmp_path)
    with open_store(db, readonly=True) as store:
        assert rebuild_due(store.conn, max_chunks=20000) == "no topics yet"
        assert rebuild_due(store.conn, max_chunks=120) is None  # more than the cap
        assert rebuild_due(store.conn, max_chunks=0) is None
    settings = load_settings(db=db)
    assert settings.topics.auto_rebuild == 20000  # the default
    first = run_embed(settings)
    assert first.embedded == 0 and first.topics is not None
    assert first.topics["reason"] == "no topics yet" and int(str(first.topics["topics"])) >= 2
    with open_store(db, readonly=True) as store:
        built = topic_store.build_info(store.conn)
        assert built is not None and built.chunks == 121
        assert maps.list_topics(store.conn).topics
    again = run_embed(settings)
    assert again.topics is None and not again.topics_note
    with open_store(db) as store:
        for chunks, model, due in ((100, built.model_id, None),  # 21 more: not yet
                                   (20, built.model_id, "101 chunks embedded since they were built"),
                                   (121, "another-model", "the topics came from another model's vectors")):
            topic_store.save_build(store.conn, topic_store.BuildInfo(
                built.built_at, model, chunks, built.params, built.seconds))
            assert rebuild_due(store.conn, max_chunks=20000) == due, chunks
    # the command line says so after embedding
    code, out, _ = _cli(capsys, "--db", str(db), "embed")
    assert code == 0 and "Topics rebuilt (the topics came from another model's vectors): " in out


def test_the_hooks_background_worker_rebuilds_them_too(napoli_db: Path, tmp_path: Path,
                                                     private_home: Path):
    """A session ends: the detached worker ingests and embeds it, then builds the topics
    memory lacked, and hook-status records how many."""
    db = _copy(napoli_db, tmp_path)
    session = SAMPLES / "-home-dev-acme-api" / "11111111-aaaa-4bbb-8ccc-000000000001.jsonl"
    worker = subprocess.run([PYTHON, "-m", "causantic", "--db", str(db), "hook", "ingest-worker",
                             "--event", "session-end", "--", str(session)],
                            capture_output=True, text=True, timeout=300)
    assert worker.returncode == 0, worker.stderr
    entry = json.loads((private_home / ".causantic" / "hook-status.json").read_text())["session-end"]
    assert entry["success"] and entry["details"]["vectors"] > 0, entry
    with open_store(db, readonly=True) as store:
        assert entry["details"]["topics"] == len(maps.list_topics(store.conn).topics) >= 2


def test_doctor_warns_only_when_embedding_will_not_rebuild_them(napoli_db: Path, tmp_path: Path,
                                                              private_home: Path):
    """121 chunk vectors, no topics: fine while embedding will build them (the default cap);
    past `[topics] auto_rebuild`, or with 0, doctor says to run the rebuild; after it, quiet."""
    from causantic.claude.doctor import run_doctor

    db = _copy(napoli_db, tmp_path)
    config = private_home / ".causantic" / "config.toml"
    config.parent.mkdir(exist_ok=True)

    def topic_checks(auto: int) -> list[str]:
        config.write_text(f"[topics]\nauto_rebuild = {auto}\n")
        return [c.message for c in run_doctor(load_settings(db=db)).checks if c.name == "topics"]

    assert topic_checks(20000) == []
    for auto in (100, 0):
        (warning,) = topic_checks(auto)
        assert "none built yet, memory holds 121 chunk vectors" in warning
        assert f"auto_rebuild = {auto}" in warning and "`causantic topics rebuild`" in warning
    with open_store(db) as store:
        rebuild(store)
    assert topic_checks(0) == []


def test_a_rebuild_that_cannot_write_is_a_note_and_the_embed_stands(
        napoli_db: Path, tmp_path: Path, private_home: Path):
    """Another process holding the write lock past the busy timeout: the old (no) topics stay
    and embed reports why, without failing."""
    db = _copy(napoli_db, tmp_path)
    holder = apsw.Connection(str(db))
    holder.execute("BEGIN IMMEDIATE")
    try:
        report = run_embed(load_settings(db=db))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert report.topics is None and "locked" in report.topics_note
    with open_store(db, readonly=True) as store:
        assert topic_store.build_info(store.conn) is None


@pytest.mark.parametrize("table, message", [
    ({"topics": {"threshold": 0}}, "threshold"),
    ({"topics": {"threshold": "near"}}, "threshold"),
    ({"topics": {"min_cluster_size": 1}}, "min_cluster_size"),
    ({"topics": 3}, "table"),
])
def test_bad_topic_settings_are_one_line_usage_errors(table: dict, message: str):
    with pytest.raises(UsageError, match=message):
        TopicSettings.from_config(table)


# -- naming --------------------------------------------------------------------------------


def test_names_are_the_terms_that_set_a_topic_apart():
    """Words shared with the rest of memory lose to the topic's own identifiers; labels,
    stop words, numbers, hashes and directories never become terms; spelling is kept; one
    chunk repeating a word does not name its topic; near-copies (hook/hooks) count once."""
    common = ("Let me run pytest and check the file again, set the line and commit. Why does "
              "it happen? The function works.")
    busy = [
        f"[User]\nwhy does SQLITE_BUSY happen? {common}\n\n[Assistant]\nSet busy_timeout in "
        f"/home/dev/src/causantic/store/db.py line {n} (commit a3f9c2d41e5f)."
        for n in range(4)
    ]
    blas = [f"[Tool:Bash] pytest -x\n\n[Result:Bash]\nOpenBLAS segfault in GEMM {common} {n}"
            for n in range(3)]
    spam = ["[Result:Bash]\n" + "function " * 300 + "flaky"]
    hooks = [f"[User]\nthe hook fires; hooks run at SessionStart. {common}"] * 3
    names = name_topics({0: busy, 1: blas + spam, 2: hooks, BACKGROUND: [common] * 6})
    assert set(names) == {0, 1, 2}
    assert set(names[0].terms[:3]) == {"SQLITE_BUSY", "busy_timeout", "db.py"}
    assert names[0].name == ", ".join(names[0].terms[:3])
    assert set(names[1].terms[:3]) == {"OpenBLAS", "segfault", "GEMM"}
    assert "flaky" not in names[1].terms
    assert len({"hook", "hooks"} & set(names[2].terms)) == 1 and "SessionStart" in names[2].terms
    for t in names[0].terms + names[1].terms:
        assert t.lower() not in {"user", "assistant", "result", "bash", "tool", "the", "why",
                                 "home", "dev", "src", "store", "a3f9c2d41e5f"}
    assert tokens("[REDACTED:api-key] https://example.com/x/y \x1b[1mBold 12345") == ["Bold"]


# -- browsing ------------------------------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli_main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_topics_list_and_show_from_the_command_line(topics_db: Path,
                                                    capsys: pytest.CaptureFixture[str]):
    db = str(topics_db)
    code, out, _ = _cli(capsys, "--db", db, "topics")
    assert code == 0
    lines = out.splitlines()
    assert "topics" in lines[0] and "largest first" in lines[0]
    assert lines[1].startswith("#1 ") and PROJECT in lines[1]
    code, out, _ = _cli(capsys, "--db", db, "topics", "--json", "--project", PROJECT,
                        "--sort", "recent")
    listed = json.loads(out)
    assert code == 0 and listed["project"] == PROJECT and listed["sort"] == "recent"
    lasts = [t["last"] for t in listed["topics"]]
    assert lasts == sorted(lasts, reverse=True)
    first = listed["topics"][0]
    assert set(first) >= {"id", "name", "terms", "size", "first", "last", "projects"}
    code, out, _ = _cli(capsys, "--db", db, "topics", "show", str(first["id"]), "--json")
    shown = json.loads(out)
    assert code == 0 and len(shown["chunks"]) == first["size"]
    starts = [c["start_time"] for c in shown["chunks"]]
    assert starts == sorted(starts) and all(c["first_line"] for c in shown["chunks"])
    assert all(not c["first_line"].startswith("[User]") for c in shown["chunks"])
    assert shown["text"].startswith(f"Topic #{first['id']} {first['name']}")
    code, out, _ = _cli(capsys, "--db", db, "topics", "show", str(first["id"]), "--limit", "2")
    assert code == 0 and f"(first 2 of {first['size']})" in out and "[3]" not in out


@pytest.mark.parametrize("args, message", [
    (["topics", "show", "999"], "no topic #999"),
    (["topics", "--project", "nope"], "no project 'nope'"),
    (["topics", "--sort", "name"], "invalid choice"),
])
def test_topic_commands_reject_bad_input_in_one_line(topics_db: Path, args: list[str],
                                                     message: str):
    proc = subprocess.run([PYTHON, "-m", "causantic", "--db", str(topics_db), *args],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert message in proc.stderr.strip().splitlines()[-1]
    assert "Traceback" not in proc.stderr


def test_without_vectors_or_topics_the_commands_say_what_to_run(
        napoli_db: Path, shared_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    code, out, _ = _cli(capsys, "--db", str(shared_db), "topics")  # keyword-only memory
    assert code == 0 and "no chunk vectors" in out and "causantic embed" in out
    code, out, _ = _cli(capsys, "--db", str(napoli_db), "topics", "--json")
    assert code == 0 and json.loads(out)["text"] == "No topics yet: run `causantic topics rebuild`."
    code, _, err = _cli(capsys, "--db", str(napoli_db), "topics", "show", "1")
    assert code == 2 and "causantic topics rebuild" in err
    db = _copy(shared_db, tmp_path)
    code, _, err = _cli(capsys, "--db", str(db), "topics", "rebuild")
    assert code == 1 and "no chunk vectors yet" in err and "causantic embed" in err


def test_topics_rebuild_command_reports_and_stats_count_topics(napoli_db: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]):
    db = str(_copy(napoli_db, tmp_path))
    code, out, _ = _cli(capsys, "--db", db, "topics", "rebuild", "--json")
    report = json.loads(out)
    assert code == 0 and report["topics"] >= 3 and report["chunks"] == 121
    assert report["in_topics"] + report["unassigned"] == 121
    assert report["text"].startswith(f"Built {report['topics']} topics from 121 chunks")
    code, out, _ = _cli(capsys, "--db", db, "stats", "--json")
    assert json.loads(out)["clusters"] == report["topics"]


@pytest.mark.anyio
async def test_the_topics_tool_answers_what_the_command_line_shows(topics_db: Path,
                                                                  capsys: pytest.CaptureFixture[str]):
    from mcp.client import Client

    from causantic.mcp_server import build_server

    settings = load_settings(db=topics_db)
    async with Client(build_server(settings)) as client:
        listed = await client.call_tool("topics", {"limit": 30})
        shown = await client.call_tool("topics", {"topic_id": 2})
        missing = await client.call_tool("topics", {"topic_id": 999})
    assert not listed.is_error and not shown.is_error
    assert listed.content[0].text == _cli(capsys, "--db", str(topics_db), "topics",
                                          "--limit", "30")[1].rstrip("\n")
    assert shown.content[0].text.startswith("Topic #2 ")
    assert missing.is_error and "no topic #999" in missing.content[0].text


def test_the_session_start_briefing_names_active_topics_without_numpy(topics_db: Path):
    """Nor `dataclasses` (with `inspect` and `ast`: ~10 ms of the hook's 45), which the topic
    map's module pulls in: now that embedding builds topics, nearly every briefing would pay it."""
    code = (
        "import sys\n"
        "from causantic.cli import main\n"
        f"rc = main(['--db', {str(topics_db)!r}, 'hook', 'session-start'])\n"
        "sys.stdout.flush()\n"
        "print('HEAVY=' + ','.join(m for m in ('numpy', 'onnxruntime', 'mcp', 'dataclasses')"
        " if m in sys.modules),"
        " file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    proc = subprocess.run([PYTHON, "-c", code], input=json.dumps({"cwd": NAPOLI_CWD}).encode(),
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    with open_store(topics_db, readonly=True) as store:
        line = active_topics_line(store.conn, PROJECT)
    assert line.startswith("Active topics: ") and line in context
    assert proc.stderr.decode().strip().splitlines()[-1] == "HEAVY="


# -- cluster expansion ---------------------------------------------------------------------


def _query_in_a_topic(conn: apsw.Connection) -> str:
    """The first line of the member nearest the centroid of the largest topic."""
    cid = topic_store.members(conn, 1, order="distance", limit=1)[0][0]
    text = conn.execute("SELECT text FROM chunks WHERE id = ?", (cid,)).fetchone()[0]
    return maps.first_line(text, 200)


def test_expansion_adds_topic_siblings_as_cluster_results_only_when_on(topics_db: Path):
    """Queries made of each topic's terms: with expansion, some answer lists gain `cluster`
    results, all from the topic of a non-sibling result and scored below the best result;
    without it (or in keyword mode) none do."""
    seen = 0
    with open_store(topics_db, readonly=True) as store:
        conn = store.conn
        for topic in topic_store.topic_stats(conn):
            query = " ".join(topic.terms[:3])
            off = search(store, query, limit=10, max_tokens=10**6, mode="hybrid")
            on = search(store, query, limit=10, max_tokens=10**6, mode="hybrid",
                        cluster_expansion=True)
            keyword = search(store, query, limit=10, max_tokens=10**6, mode="keyword",
                             cluster_expansion=True)
            assert off.notice is None and on.notice is None
            assert not any("cluster" in h.sources for h in off.results + keyword.results)
            siblings = [h for h in on.results if h.sources == ("cluster",)]
            if not siblings:
                assert [h.chunk_id for h in on.results] == [h.chunk_id for h in off.results]
                continue
            seen += len(siblings)
            membership = topic_store.topics_of(conn, [h.chunk_id for h in on.results])
            seeds = {membership[h.chunk_id][0] for h in on.results
                     if "cluster" not in h.sources and h.chunk_id in membership}
            assert all(membership[h.chunk_id][0] in seeds for h in siblings)
            assert max(h.score for h in siblings) < max(h.score for h in on.results)
    assert seen > 0


def test_expansion_respects_the_project_filter_and_its_limits(topics_db: Path):
    with open_store(topics_db, readonly=True) as store:
        conn = store.conn
        hits = search(store, _query_in_a_topic(conn), limit=20, mode="hybrid").results
        grown = expand_mod.expand(conn, hits, topics=1, siblings=2)
        added = [h for h in grown if h.sources == ("cluster",)]
        assert len(added) == 2 and len(grown) == len(hits) + 2
        by_hit = expand_mod.expand(conn, hits, topics=1, siblings=2, order="hit")
        assert len([h for h in by_hit if h.sources == ("cluster",)]) == 2
        assert expand_mod.expand(conn, hits, project="elsewhere") == hits
        assert expand_mod.expand(conn, hits, topics=0) == hits
        with pytest.raises(UsageError, match="sibling order"):
            expand_mod.expand(conn, hits, order="random")
    assert SearchSettings.from_config({}).cluster_expansion is False
    assert SearchSettings.from_config({"search": {"cluster_expansion": True}}).cluster_expansion is True


# -- forgetting ----------------------------------------------------------------------------


def test_forgetting_chunks_removes_their_memberships_and_counts(topics_db: Path, tmp_path: Path):
    from causantic.forget import forget

    db = _copy(topics_db, tmp_path)
    with open_store(db) as store:
        conn = store.conn
        cid = topic_store.members(conn, 1, limit=1)[0][0]
        session = conn.execute("SELECT session_id FROM chunks WHERE id = ?", (cid,)).fetchone()[0]
        doomed = {r for (r,) in conn.execute(
            "SELECT m.chunk_rowid FROM topic_members m JOIN chunks c ON c.rowid = m.chunk_rowid"
            " WHERE c.session_id = ?", (session,))}
        total = conn.execute("SELECT count(*) FROM topic_members").fetchone()[0]
        size_before = {s.id: s.size for s in topic_store.topic_stats(conn)}
        forget(store, session_id=session, dry_run=False)
        assert topic_store.topics_of_rowids(conn, sorted(doomed)) == {}
        assert conn.execute("SELECT count(*) FROM topic_members").fetchone()[0] == total - len(doomed)
        size_after = {s.id: s.size for s in topic_store.topic_stats(conn)}
        assert sum(size_before.values()) - sum(size_after.values()) == len(doomed)
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
