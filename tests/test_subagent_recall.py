"""Recall for a sub-agent's task: PreToolUse on the Agent tool recalls, SubagentStart injects.

The hooks run as Claude Code runs them (processes, JSON on stdin) over the shared-transcript
store; the hand-off between them (`causantic.claude.handoff`) is checked on its own for the
ways sub-agents start: several from one message, of different types, never started.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from causantic.claude import handoff

from .conftest import PYTHON
from .helpers import rows
from .test_hooks import SPOTTER_CWD, STRONG_PROMPT, context_of, hook, status_of, write_config

SESSION = "5e55104e-0000-4000-8000-00000000abcd"
PROMPT_ID = "00488fe2-b561-4665-b35c-aed392097a9b"


def _agent_call(prompt: str, **tool_input: str) -> str:
    return json.dumps({"session_id": SESSION, "prompt_id": PROMPT_ID, "cwd": SPOTTER_CWD,
                       "hook_event_name": "PreToolUse", "tool_name": "Agent",
                       "tool_use_id": "toolu_1",
                       "tool_input": {"description": "look into it", "prompt": prompt,
                                      **tool_input}})


def _start(agent_type: str = "general-purpose") -> str:
    return json.dumps({"session_id": SESSION, "prompt_id": PROMPT_ID, "cwd": SPOTTER_CWD,
                       "hook_event_name": "SubagentStart", "agent_id": "a8f5489a2d00845a8",
                       "agent_type": agent_type})


def test_a_sub_agent_starts_with_the_recall_for_its_task(shared_db_copy: Path,
                                                         private_home: Path):
    write_config(private_home, "[hooks]\nsubagent_recall = true\n")
    db = ("--db", str(shared_db_copy))
    pre = hook("pre-tool-use", _agent_call(f"Find out: {STRONG_PROMPT}"), *db)
    assert pre.returncode == 0 and pre.stdout == b"", "the Agent call itself is left alone"
    context = context_of(hook("subagent-start", _start(), *db), "SubagentStart")
    assert 'kind="recall"' in context and "slice_builder" in context
    assert hook("subagent-start", _start(), *db).stdout == b"", "each recall is injected once"
    status = status_of(private_home)
    assert status["pre-tool-use"]["details"]["chars"] == len(context)
    assert status["subagent-start"]["details"]["recall"] == "none left"
    assert not (private_home / ".causantic" / handoff.FOLDER / SESSION).exists()
    # In the injection ledger, like every other hook's context.
    assert rows(shared_db_copy, "SELECT event FROM injections WHERE session_id = ?",
                SESSION) == [("subagent-start",)]


def test_forget_drops_the_recalls_still_waiting_for_their_sub_agent(shared_db_copy: Path,
                                                                   private_home: Path):
    """A recall made before a forget may hold what it forgets: a deleting forget (CLI or MCP)
    drops every recall not yet injected; a preview leaves them."""
    write_config(private_home, "[hooks]\nsubagent_recall = true\n")
    db = ("--db", str(shared_db_copy))
    assert hook("pre-tool-use", _agent_call(f"Find out: {STRONG_PROMPT}"), *db).returncode == 0
    waiting = private_home / ".causantic" / handoff.FOLDER / SESSION
    assert len(list(waiting.iterdir())) == 1

    def forget(*yes: str) -> None:
        subprocess.run([PYTHON, "-m", "causantic", *db, "forget", "--session",
                        "4d5611e5-241a-462a-8d15-5122611a9569", *yes],
                       capture_output=True, timeout=60, check=True)

    forget()
    assert len(list(waiting.iterdir())) == 1
    forget("--yes")
    assert not waiting.exists()
    assert hook("subagent-start", _start(), *db).stdout == b""


def test_a_task_memory_knows_nothing_of_injects_nothing(shared_db: Path, private_home: Path):
    write_config(private_home, "[hooks]\nsubagent_recall = true\n")
    db = ("--db", str(shared_db))
    pre = hook("pre-tool-use", _agent_call("list the files in this folder and summarise them"),
               *db)
    assert pre.returncode == 0 and pre.stdout == b""
    assert hook("subagent-start", _start(), *db).stdout == b""
    assert status_of(private_home)["subagent-start"]["details"]["recall"] == 0


def test_sub_agent_recall_is_off_by_default(shared_db: Path, private_home: Path):
    db = ("--db", str(shared_db))
    assert hook("pre-tool-use", _agent_call(STRONG_PROMPT), *db).stdout == b""
    assert hook("subagent-start", _start(), *db).stdout == b""
    assert not (private_home / ".causantic" / handoff.FOLDER).exists()
    assert "pre-tool-use" not in status_of(private_home)


def test_sub_agents_of_one_message_take_their_own_recall_in_order(tmp_path: Path):
    home = tmp_path / "home"
    handoff.put(home, SESSION, PROMPT_ID, "", "first general")
    handoff.put(home, SESSION, PROMPT_ID, "Explore", "the explorer's")
    handoff.put(home, SESSION, PROMPT_ID, "general-purpose", "")  # recalled nothing
    handoff.put(home, SESSION, PROMPT_ID, "", "third general")
    folder = home / handoff.FOLDER / SESSION
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert all(oct(p.stat().st_mode & 0o777) == "0o600" for p in folder.iterdir())
    assert handoff.take(home, SESSION, "another-prompt", "general-purpose") is None
    assert handoff.take(home, SESSION, PROMPT_ID, "Explore") == "the explorer's"
    assert handoff.take(home, SESSION, PROMPT_ID, "general-purpose") == "first general"
    assert handoff.take(home, SESSION, PROMPT_ID, "general-purpose") == ""
    assert handoff.take(home, SESSION, PROMPT_ID, "general-purpose") == "third general"
    assert handoff.take(home, SESSION, PROMPT_ID, "general-purpose") is None
    assert not folder.exists()


def test_a_recall_whose_sub_agent_never_started_expires(tmp_path: Path):
    home = tmp_path / "home"
    handoff.put(home, SESSION, PROMPT_ID, "", "denied call's recall")
    (entry,) = (home / handoff.FOLDER / SESSION).iterdir()
    old = time.time() - handoff.TTL_S - 1
    os.utime(entry, (old, old))
    assert handoff.take(home, SESSION, PROMPT_ID, "general-purpose") is None
    assert not entry.exists()
    handoff.put(home, "other-session", PROMPT_ID, "", "x")  # a put sweeps every session
    os.utime(next((home / handoff.FOLDER / "other-session").iterdir()), (old, old))
    handoff.put(home, SESSION, PROMPT_ID, "", "y")
    assert not (home / handoff.FOLDER / "other-session").exists()


@pytest.mark.parametrize("session", ["", "../../etc", "a/b", "x" * 200])
def test_a_session_id_that_is_no_folder_name_is_refused(tmp_path: Path, session: str):
    assert handoff.put(tmp_path, session, PROMPT_ID, "", "text") is False
    assert handoff.take(tmp_path, session, PROMPT_ID, "general-purpose") is None
    assert not (tmp_path / handoff.FOLDER).exists()


@pytest.mark.parametrize("event", ["pre-tool-use", "subagent-start"])
def test_the_sub_agent_hooks_import_no_mcp_numpy_or_onnxruntime(shared_db_copy: Path,
                                                                private_home: Path, event: str):
    """Each sub-agent start waits for these two hooks: keyword recall and a file, nothing
    heavier (DESIGN.md 2.7)."""
    write_config(private_home, "[hooks]\nsubagent_recall = true\n")
    handoff.put(private_home / ".causantic", SESSION, PROMPT_ID, "", "<causantic-memory>x")
    code = (
        "import sys\n"
        "from causantic.cli import main\n"
        f"rc = main(['--db', {str(shared_db_copy)!r}, 'hook', {event!r}])\n"
        "heavy = [m for m in ('mcp', 'numpy', 'onnxruntime', 'pydantic', 'tokenizers', 'sqlite_vec')"
        " if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy), file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    payload = _agent_call(STRONG_PROMPT) if event == "pre-tool-use" else _start()
    proc = subprocess.run([PYTHON, "-c", code], input=payload.encode(), capture_output=True,
                          timeout=60)
    assert proc.returncode == 0
    assert proc.stderr.decode().strip().splitlines()[-1] == "HEAVY="
    assert status_of(private_home)[event]["success"]
