"""`<private>…</private>`: what a user marks private is never stored, indexed or embedded.

The tag is a redaction rule (`causantic.redact`), so every path that redacts applies it:
ingest (prompts, replies, tool inputs and outputs, titles), `remember`, imports, and
`causantic redact --rescan` for stores written before the rule existed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.secret_corpus import store_bytes
from causantic.cli import main as cli_main
from causantic.config import load_settings
from causantic.ingest.pipeline import ingest_paths
from causantic.ingest.rescan import needs_rescan
from causantic.ingest.run import make_redact
from causantic.redact import default_redactor
from causantic.store import open_store

SECRET = "Quillfeather"  # a word nothing else in these transcripts holds


@pytest.mark.parametrize(("text", "expected"), [
    ("deploy <private>to host Quillfeather</private> now", "deploy [REDACTED:private] now"),
    ("a <PRIVATE>x</Private> b <private>y</private> c",
     "a [REDACTED:private] b [REDACTED:private] c"),
    ("forgot to close <private>Quillfeather\nand more", "forgot to close [REDACTED:private]"),
    # held markers of older rules do not shield the region (a rescan of an old store)
    ("<private>pw [REDACTED:env-secret] Quillfeather</private>!", "[REDACTED:private]!"),
    ("no tag here: </private> <privateer> <private >", "no tag here: </private> <privateer> <private >"),
])
def test_a_private_region_is_replaced_whole(text: str, expected: str):
    result = default_redactor().redact(text)
    assert result.text == expected
    assert default_redactor().redact(result.text).text == expected  # idempotent


def _transcript(root: Path) -> Path:
    folder = root / "projects" / "-home-dev-garden"
    folder.mkdir(parents=True)
    base = {"sessionId": "s-private", "cwd": "/home/dev/garden", "version": "2.1.197",
            "userType": "external", "isSidechain": False, "gitBranch": "main"}
    prompt = ("the deploy keeps failing <private>my staging box is Quillfeather, "
              "login as root</private> please look at the nginx config")
    recs = [
        {**base, "type": "user", "uuid": "u1", "parentUuid": None,
         "timestamp": "2026-03-01T10:00:00.000Z",
         "message": {"role": "user", "content": prompt}},
        {**base, "type": "assistant", "uuid": "a1", "parentUuid": "u1",
         "timestamp": "2026-03-01T10:00:05.000Z",
         "message": {"id": "m1", "role": "assistant", "model": "claude-opus-4-6",
                     "content": [{"type": "text", "text": "The nginx config lacks a server_name; "
                                  "adding it fixes the deploy."}]}},
        {"type": "custom-title", "customTitle": "deploy <private>Quillfeather</private>",
         "sessionId": "s-private"},
    ]
    path = folder / "s-private.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_a_private_region_of_a_prompt_is_not_in_the_database_its_wal_or_fts(tmp_path: Path):
    _transcript(tmp_path)
    db = tmp_path / "memory.db"
    with open_store(db) as store:
        report = ingest_paths(store, [tmp_path / "projects"], make_redact(load_settings(db)))
        assert report.chunks_added and not report.problems
        assert not any(SECRET.encode() in part for part in store_bytes(db))  # file and WAL
        conn = store.conn
        assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?",
                            (SECRET,)).fetchone()[0] == 0
        text = "\n".join(r[0] for r in conn.execute("SELECT text FROM chunks"))
        title = conn.execute("SELECT title FROM sessions").fetchone()[0]
    assert "[REDACTED:private]" in text and "please look at the nginx config" in text
    assert title == "deploy [REDACTED:private]"
    assert not any(SECRET.encode() in part for part in store_bytes(db))


def test_rescan_hides_private_regions_a_store_kept_from_before_the_rule(tmp_path: Path, capsys):
    _transcript(tmp_path)
    db = tmp_path / "memory.db"
    with open_store(db) as store:  # as an older causantic stored it: no rule, nothing hidden
        ingest_paths(store, [tmp_path / "projects"], lambda text: (text, 0))
        with store.conn:
            store.conn.execute("DELETE FROM redaction_meta")
        assert needs_rescan(store.conn)
    assert any(SECRET.encode() in part for part in store_bytes(db))
    assert cli_main(["--db", str(db), "redact", "--rescan", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["chunks_changed"] >= 1 and report["secrets_redacted"] >= 2
    assert not any(SECRET.encode() in part for part in store_bytes(db))


def test_remember_keeps_a_private_region_out(tmp_path: Path, capsys):
    db = str(tmp_path / "m.db")
    assert cli_main(["--db", db, "remember", "staging is <private>Quillfeather</private>; "
                     "deploy with make ship", "--project", "garden"]) == 0
    capsys.readouterr()
    assert cli_main(["--db", db, "memories", "--json"]) == 0
    out = capsys.readouterr().out
    assert SECRET not in out and "[REDACTED:private]" in out and "make ship" in out
    assert not any(SECRET.encode() in part for part in store_bytes(Path(db)))
