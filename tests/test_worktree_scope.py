"""`[memory] scope = "worktree"`: parallel sessions in linked worktrees do not see each other.

A real git repository `shopfront` with two linked worktrees worked in parallel
(`feature-login`, `feature-cart`) and one since removed (`old-spike`); each session's
transcript holds a word no other holds. Ingested and embedded into a real store; then the
MCP server (the SDK's stdio client, started in the `feature-login` worktree as Claude Code
starts it) and the hooks (their real processes) must never show `feature-cart`'s work, while
the worktree's own work, the main checkout's and the removed worktree's stay in reach. The
command line (the user's own tool) still sees everything.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from causantic.config import load_settings
from causantic.errors import UsageError
from causantic.ingest.run import run_embed, run_ingest
from causantic.retrieval.scope import OwnProject
from causantic.retrieval.search import search
from causantic.store import memories as memory_store
from causantic.store import open_store
from causantic.store.visibility import hidden_sessions, hide_sessions
from causantic.topics.active import active_topics_line
from causantic.topics.maps import list_topics

from .conftest import PYTHON, REPO
from .helpers import mcp_client
from .test_mcp import call
from .test_projects import _git, _session, _shopfront

MAIN = "c1000000-0000-4000-8000-000000000001"
LOGIN = "c2000000-0000-4000-8000-000000000002"
CART = "c3000000-0000-4000-8000-000000000003"
SPIKE = "c4000000-0000-4000-8000-000000000004"
#: What feature-cart's work says (its answer, its memory), its session and its folder:
#: never to be seen from feature-login (questions may name its words; answers must not).
HIDDEN = ("idempotent", "server-side", CART[:8], "feature-cart")


@pytest.fixture
def worktrees(tmp_path: Path, private_home: Path) -> dict[str, Path]:
    repo, login = _shopfront(tmp_path)  # login: trees/feature-login
    cart = tmp_path / "trees" / "feature-cart"
    spike = tmp_path / "trees" / "old-spike"
    for tree in (cart, spike):
        _git("worktree", "add", "-q", str(tree), cwd=repo)
    claude = tmp_path / "claude"
    _session(claude, MAIN, repo, "the checkout total rounds wrong, zebrafinch",
             "Fixed the rounding in cart.py: zebrafinch totals use banker's rounding.", 1)
    _session(claude, LOGIN, login, "login form loses the redirect parameter, kingfisher",
             "The next= parameter is kept now; the kingfisher redirect test passes.", 2)
    _session(claude, SPIKE, spike, "try a pelican cache for sessions",
             "The pelican cache spike works; sessions load in 3 ms.", 3)
    _session(claude, CART, cart, "cormorant coupon codes apply twice when the basket merges "
             "guest and member carts", "Coupons apply once now: the cormorant discount is "
             "idempotent when guest and member baskets merge.", 4)
    settings = load_settings(db=tmp_path / "memory.db", env={"HOME": str(tmp_path)})
    run_ingest(settings, [claude])
    run_embed(settings)
    with open_store(settings.db_path) as store, store.conn:
        memory_store.upsert(store.conn, memory_store.NewMemory(
            "mem_c0ffee", "shopfront", "decision", "cormorant coupons are applied server-side",
            8.0, "explicit", CART, "2026-03-04T11:00:00.000Z"))
    _git("worktree", "remove", "--force", str(spike), cwd=repo)
    home = private_home / ".causantic"
    home.mkdir(mode=0o700, exist_ok=True)
    (home / "config.toml").write_text('[memory]\nscope = "worktree"\n\n'
                                      '[hooks]\nuser_prompt_submit = true\n')
    return {"db": settings.db_path, "repo": repo, "login": login, "cart": cart}


def _unseen(text: str) -> None:
    assert not any(word in text for word in HIDDEN), text[:800]


@pytest.mark.anyio
async def test_no_tool_shows_another_worktrees_work(worktrees: dict) -> None:
    db = worktrees["db"]
    async with mcp_client(["-m", "causantic", "--db", str(db), "serve-mcp"],
                          db.parent / "server.log", cwd=worktrees["login"],
                          env={**os.environ, "PYTHONPATH": str(REPO)}) as session:
        started = await session.initialize()
        assert 'scope = "worktree"' in (started.instructions or "")  # what Claude is told
        seen = []
        for word in ("kingfisher", "zebrafinch", "pelican"):  # own, main checkout, removed
            err, text = await call(session, "search", query=f"{word} fix")
            assert not err and word in text, (word, text)
            seen.append(text)
        for tool, args in (("search", {"query": "cormorant coupons apply twice"}),
                           ("search", {"query": "cormorant", "mode": "keyword"}),
                           ("search", {"query": "discount applied once", "mode": "vector"}),
                           ("recall", {"query": "how did we stop coupons applying twice"}),
                           ("predict", {"context": "cormorant coupons apply twice"}),
                           ("reconstruct", {"query": "the session about cormorant coupons"}),
                           ("reconstruct", {"mode": "briefing"}),
                           ("reconstruct", {}),
                           ("list-sessions", {}),
                           ("memories", {}),
                           ("topics", {}),
                           ("forget", {"query": "cormorant coupons"})):
            err, text = await call(session, tool, **args)
            _unseen(text)
            seen.append(text)
        # A hidden session named by id: said so, not "no such session" (the shell lists it).
        for args in ({"session_id": CART[:8]}, {"session_id": CART[:8], "project": "shopfront"}):
            err, text = await call(session, "reconstruct", **args)
            assert f'Session "{CART[:8]}" is work of another worktree' in text, text
            _unseen(text.replace(CART[:8], ""))
        err, text = await call(session, "forget", session_id=CART)
        assert err and f'Session "{CART}" is work of another worktree' in text, text
        err, text = await call(session, "reconstruct", session_id="c9999999")
        assert "No session starting with" in text or "no session starting with" in text, text
        err, text = await call(session, "feedback", memory_id="mem_c0ffee", helpful=True)
        assert err and "own worktree" in text
        assert any(LOGIN[:8] in t for t in seen) and any(MAIN[:8] in t for t in seen)
        # forgetting by query deletes what the session sees, through the narrowed tables
        err, text = await call(session, "forget", query="coupon codes apply twice basket",
                               threshold=0.1, dry_run=False)
        assert not err, text
        _unseen(text)
    with open_store(db, readonly=True) as store:
        left = dict(store.conn.execute("SELECT session_id, count(*) FROM chunks GROUP BY 1"))
    assert left.get(CART, 0) > 0  # never forgotten from feature-login
    assert len(left) < 4  # something it saw was


def _hook(event: str, payload: dict, db: Path) -> str:
    proc = subprocess.run([PYTHON, "-m", "causantic", "--db", str(db), "hook", event],
                          input=json.dumps(payload).encode(), capture_output=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode()


#: A prompt that recalls feature-cart's turn (most of its rare words) where it may.
PROMPT = "cormorant coupon codes apply twice when the basket merges guest and member carts"


def test_hooks_brief_and_recall_from_the_worktree_alone(worktrees: dict) -> None:
    """The session-start briefing of a new session in feature-login resumes its worktree and
    names the main checkout's newer work, never feature-cart's (the newest of all); a prompt
    about feature-cart's words recalls nothing."""
    db, login = worktrees["db"], worktrees["login"]
    start = _hook("session-start", {"session_id": "d0000000-0000-4000-8000-000000000000",
                                    "source": "startup", "cwd": str(login)}, db)
    assert f"last session {LOGIN[:8]}" in start and "kingfisher" in start
    _unseen(start)
    prompt = _hook("user-prompt-submit", {"session_id": "d0000000-0000-4000-8000-000000000000",
                                          "cwd": str(login),
                                          "prompt": PROMPT}, db)
    _unseen(prompt)
    assert "kingfisher" not in prompt  # nothing else matches: no recall at all
    # In feature-cart, the same prompt recalls its own work.
    cart = _hook("user-prompt-submit", {"session_id": "d0000000-0000-4000-8000-000000000000",
                                        "cwd": str(worktrees["cart"]),
                                        "prompt": PROMPT}, db)
    assert "idempotent" in cart


def test_the_command_line_still_sees_every_worktree(worktrees: dict) -> None:
    """`causantic search` is the user at the shell: not narrowed; `doctor` says who is."""
    def cli(*args: str) -> str:
        proc = subprocess.run([PYTHON, "-m", "causantic", "--db", str(worktrees["db"]), *args],
                              capture_output=True, text=True, timeout=120, cwd=worktrees["login"],
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        return proc.stdout

    assert "idempotent" in cli("search", "cormorant coupons")
    scope = next(line for line in cli("doctor").splitlines() if "scope:" in line)
    assert "only their worktree's and the main checkout's" in scope and "shell see everything" \
        in scope


def test_a_hidden_session_is_gone_from_every_table_a_connection_reads(shared_db: Path,
                                                                      tmp_path: Path) -> None:
    """`hide_sessions` on real history: spotter-dov's session leaves chunks, sessions, states,
    lessons and memories alike, the topics its work is part of go, and search finds its work
    no more; other sessions stay, the
    file is untouched, and a write through the narrowed tables is refused."""
    db = tmp_path / "copy.db"
    shutil.copy(shared_db, db)
    query = "TranscriptHighlighter hook selection merged"
    with open_store(db) as store, store.conn:  # two topics: one touches spotter-dov's work
        store.conn.execute("INSERT INTO topics(id, name, centroid) VALUES"
                           " (1, 'transcript highlighting', x'00'), (2, 'beads', x'00')")
        store.conn.execute("INSERT INTO topic_members(chunk_rowid, topic_id, distance)"
                           " SELECT rowid, CASE WHEN session_id LIKE '4d5611e5%' OR rowid % 2"
                           " THEN 1 ELSE 2 END, 0.1 FROM chunks WHERE project = 'spotter'")
        store.conn.execute("INSERT INTO topic_build(id, built_at, model_id, chunks) VALUES"
                           " (1, '2026-01-01T00:00:00Z', 'm', 1)")
    with open_store(db, readonly=True) as store:
        (dov,) = store.conn.execute("SELECT id FROM sessions WHERE id LIKE '4d5611e5%'").fetchone()
        before = {t: store.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                  for t in ("chunks", "sessions", "session_state", "lessons")}
        assert search(store, query, max_tokens=1500).results[0].session_id == dov
        assert "transcript highlighting" in list_topics(store.conn, project="spotter").text
        assert hide_sessions(store.conn, [dov]) == 1 and hidden_sessions(store.conn) == [dov]
        for table, column in (("chunks", "session_id"), ("sessions", "id"),
                              ("session_state", "session_id"), ("lessons", "session_id"),
                              ("memories", "session_id")):
            assert store.conn.execute(f"SELECT count(*) FROM {table} WHERE {column} = ?",
                                      (dov,)).fetchone()[0] == 0, table
        assert store.conn.execute("SELECT count(*) FROM chunks").fetchone()[0] < before["chunks"]
        listed = list_topics(store.conn, project="spotter").text  # a name may come from its work
        assert "beads" in listed and "transcript highlighting" not in listed
        assert "transcript highlighting" not in active_topics_line(store.conn, "spotter", limit=5)
        found = search(store, query, max_tokens=1500)
        assert found.results and all(h.session_id != dov for h in found.results)
        assert dov[:8] not in found.text
    with open_store(db) as store:
        assert store.conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == before["chunks"]
        hide_sessions(store.conn, [dov])
        with pytest.raises(Exception, match="cannot modify chunks because it is a view"):
            store.conn.execute("UPDATE chunks SET tokens = tokens WHERE session_id = ?", (dov,))


def test_a_worktree_that_may_see_nothing_is_told_why(worktrees: dict) -> None:
    """When all of a project's work is in other worktrees, the tools say that, not "memory
    holds nothing of this project" (which is not so)."""
    with open_store(worktrees["db"], readonly=True) as store:
        own = OwnProject(str(worktrees["login"]), worktree=True)
        everything = [r[0] for r in store.conn.execute("SELECT id FROM sessions")]
        hide_sessions(store.conn, everything)
        with pytest.raises(UsageError, match="only work of its other worktrees, left out by"):
            own.project(store.conn, None)
