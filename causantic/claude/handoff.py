"""Recall for a sub-agent's task, handed from the PreToolUse hook to the SubagentStart hook.

A sub-agent starts with a fresh context: its task prompt and nothing the parent session
knew. Claude Code's SubagentStart hook can add context to the sub-agent, but it is not told
the task; PreToolUse on the Agent (formerly Task) tool sees the task but its context goes to
the parent. So `causantic hook pre-tool-use` recalls for the task and leaves the result here,
and `causantic hook subagent-start` takes it up a moment later, inside the sub-agent.

One entry per Agent call, even when nothing was recalled, so that several sub-agents started
from one message pair up in order: a start takes the oldest entry of its session and prompt
(`prompt_id`, in both payloads since Claude Code 2.1) whose agent type matches its own
(`subagent_type`, "general-purpose" when the call names none), and deletes it. An entry older
than `TTL_S` (its call was denied, or the sub-agent never started) is dropped unused, in any
session, by the next put or take.

Files: ``<home>/subagent-recall/<session id>/<ns>-<pid>.json``, 0600 in 0700 folders.
Standard library only: this runs on the hook path.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

FOLDER = "subagent-recall"
TTL_S = 120.0
#: The agent type Claude Code reports for an Agent call that names none.
DEFAULT_TYPE = "general-purpose"
_SAFE = re.compile(r"[A-Za-z0-9_-]{1,128}")


def put(home: Path, session_id: str, prompt_id: str, agent_type: str, context: str) -> bool:
    """Leave ``context`` ('' when nothing was recalled) for the sub-agent this call starts.
    False when the session id is not one we can name a folder after (nothing written)."""
    if not _SAFE.fullmatch(session_id):
        return False
    # deferred: hook fast path: only this hook writes entries
    from causantic.fsutil import atomic_write, private_dir

    _drop_expired(home / FOLDER)  # first: it removes the folders it empties
    entry = json.dumps({"prompt_id": prompt_id, "agent_type": agent_type or DEFAULT_TYPE,
                        "context": context}, ensure_ascii=False)
    tries = 3
    while True:
        folder = private_dir(home / FOLDER / session_id)
        try:
            atomic_write(folder / f"{time.time_ns():020d}-{os.getpid()}.json", entry,
                         durable=False)
            return True
        except FileNotFoundError:  # a sibling's take removed the folder it found empty
            tries -= 1
            if not tries:
                raise


def take(home: Path, session_id: str, prompt_id: str, agent_type: str) -> str | None:
    """The context left for a sub-agent of this session, prompt and type (the oldest such
    entry, deleted as it is taken), '' when its call recalled nothing, None when there is no
    entry for it."""
    if not _SAFE.fullmatch(session_id):
        return None
    _drop_expired(home / FOLDER)
    folder = home / FOLDER / session_id
    try:
        names = sorted(n for n in os.listdir(folder) if not n.startswith("."))
    except OSError:
        return None
    for name in names:
        path = folder / name
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # taken by a sibling starting at the same moment, or unreadable
        if not isinstance(entry, dict) or entry.get("agent_type") != (agent_type or DEFAULT_TYPE):
            continue
        if prompt_id and entry.get("prompt_id") not in (prompt_id, "", None):
            continue
        try:
            path.unlink()  # whoever unlinks it owns it: two starts never share an entry
        except FileNotFoundError:
            continue
        _remove_if_empty(folder)
        context = entry.get("context")
        return context if isinstance(context, str) else ""
    return None


def clear(home: Path) -> None:
    """Drop every entry not yet taken, of every session: `forget` calls this, since a recall
    made before it may hold what was just forgotten (an entry lives at most TTL_S)."""
    _drop_expired(home / FOLDER, ttl=float("-inf"))


def _drop_expired(root: Path, ttl: float = TTL_S) -> None:
    """Entries older than `ttl` seconds in every session's folder, and the folders they leave
    empty."""
    now = time.time()
    try:
        sessions = os.listdir(root)
    except OSError:
        return
    for session in sessions:
        folder = root / session
        try:
            for name in os.listdir(folder):
                path = folder / name  # a writer's temporary file too, if one was left
                if now - path.stat().st_mtime > ttl:
                    path.unlink()
        except OSError:
            continue
        _remove_if_empty(folder)


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # not empty, or gone
