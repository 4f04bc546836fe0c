"""No secret is stored: a generated corpus of fake secrets in real transcript files, ingested by
the real pipeline into a real SQLite file, then searched for in the file's raw bytes, its WAL
and the FTS vocabulary (issue 17 §2). Also: redaction happens before trimming and splitting,
titles and metadata pass through it, and `causantic redact --rescan` cleans stores written
by older versions. The full-size corpus runs in `bench/redact.py`.
"""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import apsw
import numpy as np
import pytest

from bench.secret_corpus import scan_store, store_bytes, write_corpus
from causantic.cli import main as cli_main
from causantic.config import load_settings
from causantic.ingest.chunking import chunk_turn
from causantic.ingest.pipeline import ingest_paths
from causantic.ingest.rescan import needs_rescan, rescan
from causantic.ingest.run import make_redact
from causantic.redact import RULES_VERSION
from causantic.store import open_store
from causantic.store import vectors as vec_store
from causantic.store.redaction import rules_version
from causantic.transcripts.turns import Block, Turn


def _ingest(root: Path, db: Path, redact=None) -> None:  # type: ignore[no-untyped-def]
    with open_store(db) as store:
        report = ingest_paths(store, [root], redact or make_redact(load_settings(db)))
    assert report.files_read > 0 and not report.problems


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("corpus")
    return root, write_corpus(root / "projects")


def test_corpus_is_broad_enough_to_be_evidence(corpus_dir):  # type: ignore[no-untyped-def]
    """300+ secrets of 40+ kinds in 15+ contexts, 300+ look-alikes: the issue's floor."""
    _, corpus = corpus_dir
    assert len(corpus.secrets) >= 300
    assert len({s.kind for s in corpus.secrets}) >= 40
    assert len({s.context.split("-")[0] for s in corpus.secrets}) >= 15
    assert len(corpus.lookalikes) >= 300
    assert len({s.value for s in corpus.secrets}) == len(corpus.secrets)  # all distinct


def test_ingested_corpus_leaves_no_secret_in_the_database_wal_or_fts(corpus_dir, tmp_path):  # type: ignore[no-untyped-def]
    """At least 99 % of secrets (and every 12-character fragment of them) absent from the raw
    bytes of the file and its WAL (read while the writer still holds them) and from the FTS
    vocabulary; at most 0.5 % of look-alikes changed."""
    root, corpus = corpus_dir
    db = tmp_path / "memory.db"
    with open_store(db) as store:
        ingest_paths(store, [root / "projects"], make_redact(load_settings(db)))
        live = store_bytes(db)  # the WAL holds the pages until the connection checkpoints
        assert len(live) >= 2, "expected a WAL beside the database"
        while_open = scan_store(db, corpus, raw=live)
    closed = scan_store(db, corpus)
    for result in (while_open, closed):
        assert result.leak_rate <= 0.01, result.as_dict()["leaked"]
        assert result.altered_rate <= 0.005, result.as_dict()["altered"]
    # The scan itself can see secrets: an unredacted ingest is caught.
    raw_db = tmp_path / "raw.db"
    _ingest(root / "projects", raw_db, redact=lambda text: (text, 0))
    assert scan_store(raw_db, corpus).leak_rate > 0.8  # the rest is trimmed away anyway


def _pem(lines: int, seed: int = 7) -> tuple[str, list[str]]:
    rng = random.Random(seed)
    body = [base64.b64encode(bytes(rng.randrange(256) for _ in range(48))).decode()
            for _ in range(lines)]
    return "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *body, "-----END RSA PRIVATE KEY-----"]), body


def _turn(*blocks: Block) -> Turn:
    return Turn(session_id="s", agent_id="", index=0, offset=0, blocks=list(blocks),
                start_time="2026-01-01T00:00:00.000Z")


def test_a_key_in_the_trimmed_middle_of_long_output_leaves_no_line(tmp_path):  # type: ignore[no-untyped-def]
    """Output is redacted before it is trimmed: the key's tail after the 'lines omitted'
    marker was stored before issue 17."""
    pem, body = _pem(30)
    output = "\n".join([f"step {i}" for i in range(10)] + pem.splitlines()
                       + [f"after {i}" for i in range(40)])
    block = Block("tool_result", output, name="Bash")
    chunks = chunk_turn(_turn(Block("tool_use", "", name="Bash", input={"command": "cat k"}), block),
                        make_redact(load_settings(tmp_path / "m.db")))
    text = "\n".join(c.text for c in chunks)
    assert "lines omitted" in text  # the output was trimmed
    assert not [line for line in body if line[:12] in text]
    assert sum(c.redactions for c in chunks) == 1


def test_a_key_longer_than_a_chunk_leaves_no_half(tmp_path):  # type: ignore[no-untyped-def]
    """A block split over several chunks is redacted whole first."""
    pem, body = _pem(80)
    chunks = chunk_turn(_turn(Block("prompt", "my key:\n" + pem + "\nplease store it")),
                        make_redact(load_settings(tmp_path / "m.db")), max_tokens=200)
    text = "\n".join(c.text for c in chunks)
    assert not [line for line in body if line[:12] in text]
    assert "[REDACTED:private-key]" in text


@pytest.mark.parametrize(
    "render",
    [
        lambda pem: "\n".join(f"{i:6}\u2192{line}" for i, line in enumerate(pem.splitlines(), 1)),
        lambda pem: "\n".join("+ " + line for line in pem.splitlines()),
        lambda pem: "\n".join("-" + line for line in pem.splitlines()),
        lambda pem: json.dumps({"private_key": pem + "\n"}),
        lambda pem: json.dumps(json.dumps({"private_key": pem + "\n"})),
        lambda pem: "\n".join(pem.splitlines()[:9]) + "\n[\u2026 12 more lines]",
        lambda pem: "[\u2026continued]\n" + "\n".join(pem.splitlines()[9:]),
    ],
    ids=["read-line-numbers", "edit-diff", "git-diff", "json-escaped", "json-in-json",
         "head-cut", "tail-only"],
)
def test_pem_blocks_are_found_through_tool_prefixes_and_escapes(render, tmp_path):  # type: ignore[no-untyped-def]
    pem, body = _pem(20)
    out = make_redact(load_settings(tmp_path / "m.db"))(render(pem))[0]
    assert "[REDACTED:private-key]" in out
    assert not [line for line in body if line[:12] in out]


def test_titles_cwd_todos_and_metadata_are_redacted(tmp_path):  # type: ignore[no-untyped-def]
    """Every text a session stores passes redaction: titles (summary and custom-title
    records), the working directory, todo items, commands and errors in chunk metadata."""
    rng = random.Random(3)
    token = "ghp_" + "".join(rng.choice("abcdefghijkLMNOP0123456789") for _ in range(36))
    folder = tmp_path / "projects" / "-x"
    folder.mkdir(parents=True)
    base = {"sessionId": "s1", "cwd": f"/home/me/{token}", "version": "2", "gitBranch": "main",
            "userType": "external", "isSidechain": False}
    recs = [
        {**base, "type": "user", "uuid": "u1", "timestamp": "2026-01-01T00:00:00.000Z",
         "message": {"role": "user", "content": f"use {token} please"}},
        {**base, "type": "assistant", "uuid": "a1", "timestamp": "2026-01-01T00:00:01.000Z",
         "message": {"id": "m1", "role": "assistant", "content": [
             {"type": "tool_use", "id": "t1", "name": "Bash",
              "input": {"command": f"gh auth login --with-token {token}"}},
             {"type": "tool_use", "id": "t2", "name": "TodoWrite",
              "input": {"todos": [{"content": f"rotate {token}", "status": "pending"}]}}]}},
        {**base, "type": "user", "uuid": "u2", "timestamp": "2026-01-01T00:00:02.000Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "t1", "is_error": True,
              "content": f"error: bad credentials {token}"},
             {"type": "tool_result", "tool_use_id": "t2", "content": "ok"}]}},
        {"type": "summary", "summary": f"Rotate {token}", "leafUuid": "a1"},
        {"type": "custom-title", "customTitle": f"token {token}", "sessionId": "s1"},
    ]
    (folder / "s1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    db = tmp_path / "memory.db"
    _ingest(tmp_path / "projects", db)
    raw = b"".join(store_bytes(db))
    assert token.encode() not in raw and token[4:20].encode() not in raw
    with open_store(db, readonly=True) as store:
        title, cwd = store.conn.execute("SELECT title, cwd FROM sessions").fetchone()
        metas = [json.loads(r[0]) for r in store.conn.execute("SELECT meta FROM chunks")]
    assert "[REDACTED:github-token]" in title and "[REDACTED:github-token]" in cwd
    assert any("[REDACTED:github-token]" in json.dumps(m) for m in metas)


def _old_store(root: Path, db: Path) -> None:
    """A store as an older causantic left it: text stored unredacted, no rules recorded,
    vectors for every chunk (random unit windows: their values don't matter here)."""
    _ingest(root, db, redact=lambda text: (text, 0))
    rng = np.random.default_rng(0)
    with open_store(db) as store:
        conn = store.conn
        with conn:
            conn.execute("DELETE FROM redaction_meta")
        assert store.load_vec()
        vec_store.ensure_table(conn, 384)
        items = []
        for rowid, cid, project in conn.execute("SELECT rowid, id, project FROM chunks").fetchall():
            w = rng.standard_normal((1, 384)).astype(np.float32)
            items.append(vec_store.EmbeddedChunk(rowid, cid, project, w / np.linalg.norm(w)))
        vec_store.write_vectors(conn, items, "test-model")


def test_rescan_cleans_an_old_store_drops_changed_vectors_and_is_idempotent(corpus_dir, tmp_path, capsys):  # type: ignore[no-untyped-def]
    root, corpus = corpus_dir
    db = tmp_path / "memory.db"
    _old_store(root / "projects", db)
    assert scan_store(db, corpus).leak_rate > 0.8
    with open_store(db, readonly=True) as store:
        assert needs_rescan(store.conn)
        total = store.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    doctor = json.loads(_run(capsys, "--db", str(db), "doctor", "--json"))
    assert any(c["name"] == "redaction" and c["level"] == "warning" for c in doctor["checks"])

    # A reader holding a snapshot open does not block the rescan.
    reader = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM chunks").fetchone()
    report = json.loads(_run(capsys, "--db", str(db), "redact", "--rescan", "--json"))
    reader.execute("COMMIT")
    reader.close()
    assert report["chunks_changed"] > 0 and report["secrets_redacted"] >= len(corpus.secrets) * 0.9
    assert report["vectors_dropped"] > 0
    assert report["wal_checkpointed"] is False  # the reader's snapshot keeps the WAL; noted

    with open_store(db) as store:
        conn = store.conn
        assert not needs_rescan(conn) and rules_version(conn) == RULES_VERSION
        pending = {p.rowid for p in vec_store.pending(conn, "test-model")}
        assert len(pending) == report["vectors_dropped"] < total  # unchanged chunks keep theirs
        again = rescan(store, make_redact(load_settings(db)))
    assert again.chunks_changed == 0 and again.secrets == 0
    result = scan_store(db, corpus)
    assert result.leak_rate <= 0.01, result.as_dict()["leaked"]
    assert result.altered_rate <= 0.005, result.as_dict()["altered"]
    doctor = json.loads(_run(capsys, "--db", str(db), "doctor", "--json"))
    assert not any(c["name"] == "redaction" for c in doctor["checks"])


def test_a_new_store_records_the_current_rules_and_needs_no_rescan(tmp_path):  # type: ignore[no-untyped-def]
    db = tmp_path / "memory.db"
    with open_store(db) as store:
        assert rules_version(store.conn) == RULES_VERSION
        assert not needs_rescan(store.conn)


def test_redact_command_filters_stdin(tmp_path, capsys, monkeypatch):  # type: ignore[no-untyped-def]
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("docker login -u me -p Hunter2-x9Q registry\n"))
    assert cli_main(["--db", str(tmp_path / "m.db"), "redact"]) == 0
    assert capsys.readouterr().out == "docker login -u me -p [REDACTED:cli-password] registry\n"


def _run(capsys, *argv: str) -> str:  # type: ignore[no-untyped-def]
    cli_main(list(argv))
    return capsys.readouterr().out


def test_a_long_read_result_is_redacted_as_far_as_its_head_can_show(tmp_path):  # type: ignore[no-untyped-def]
    """Only the shown part of a Read result (plus a margin) is redacted; a key that starts in
    the head and runs past that part still leaves no line, and the rest keeps no text."""
    pem, body = _pem(200)
    lines = ["# notes", "token = 'x'", *pem.splitlines(), *[f"line {i}" for i in range(500)]]
    result = "\n".join(f"{i:6}\u2192{line}" for i, line in enumerate(lines, 1))
    turn = _turn(Block("tool_use", "", name="Read", input={"file_path": "/k.pem"}),
                 Block("tool_result", result, name="Read"))
    chunks = chunk_turn(turn, make_redact(load_settings(tmp_path / "m.db")))
    text = "\n".join(c.text for c in chunks)
    assert "[REDACTED:private-key]" in text
    assert not [line for line in body if line[:12] in text]
    assert "more lines]" in text
    assert "line 499" not in turn.blocks[1].text  # the unshown rest is not kept unredacted


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("az login -u me@example.com -p Zq8vLm2xRt7w", "az login -u me@example.com -p [REDACTED:cli-password]"),
        ("openssl pkcs12 -export -passout pass:Zq8vLm2xRt7w", "openssl pkcs12 -export -passout pass:[REDACTED:cli-password]"),
        ("ldapsearch -x -D cn=admin -w Zq8vLm2xRt7w", "ldapsearch -x -D cn=admin -w [REDACTED:cli-password]"),
        ("smbclient //srv/share -U user%Zq8vLm2xRt7w", "smbclient //srv/share -U user%[REDACTED:cli-password]"),
        ("<password>Zq8vLm2xRt7w</password>", "<password>[REDACTED:env-secret]</password>"),
        ("mkdir -p build/out && ssh -p 2222 host", "mkdir -p build/out && ssh -p 2222 host"),
        ("git add -u && sort -u names.txt", "git add -u && sort -u names.txt"),
        ("<password>${DB_PASSWORD}</password>", "<password>${DB_PASSWORD}</password>"),
    ],
)
def test_command_line_and_xml_passwords(line: str, expected: str, tmp_path):  # type: ignore[no-untyped-def]
    """Shapes found after the corpus was written (held out from it), and flags that are not
    passwords (-p of mkdir and ssh, -u of git and sort)."""
    assert make_redact(load_settings(tmp_path / "m.db"))(line)[0] == expected
