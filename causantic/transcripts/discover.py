"""Finding transcript files: main sessions and their sub-agents, in all three layouts.

- main session: any `*.jsonl` that is not a sub-agent file (usually `<sessionId>.jsonl`);
- sub-agent: `<dir>/<sessionId>/subagents/agent-<id>.jsonl` (Claude Code >= 2.1.2) or the
  legacy `<dir>/agent-<id>.jsonl` beside the sessions (2.0.24 - 2.1.1); inline sidechains
  need no file of their own.

Skipped: the compaction summariser's `agent-acompact-*` files (the summary is already in the
main file), workflow journals, Claude Code's global `history.jsonl`.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_SKIP_NAMES = frozenset({"history.jsonl", "journal.jsonl"})
_SKIP_DIRS = frozenset({".git", "node_modules", "workflows", "tool-results", "memory", "__pycache__"})


@dataclass(frozen=True)
class TranscriptFile:
    """A transcript file and what its location says about it."""

    path: Path
    kind: str  # "session" | "subagent"
    session_hint: str  # session id from the file or folder name ("" if unknown)
    agent_id: str = ""  # sub-agent id from `agent-<id>.jsonl`


def discover(paths: list[Path]) -> list[TranscriptFile]:
    """All transcript files under the given files and folders, main sessions first.

    Raises FileNotFoundError for a path that does not exist (the caller words the error).
    """
    found: dict[Path, TranscriptFile] = {}
    for root in paths:
        if not root.exists():
            raise FileNotFoundError(str(root))
        if root.is_file():
            tf = classify(root)
            if tf is not None:
                found[root.resolve()] = tf
            continue
        visited: set[str] = set()
        for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
            real = os.path.realpath(dirpath)
            if real in visited:  # a symlink loop or a folder linked twice
                dirnames[:] = []
                continue
            visited.add(real)
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
            for name in sorted(filenames):
                if name.endswith(".jsonl"):
                    p = Path(dirpath) / name
                    if not is_regular(p):
                        continue  # a FIFO named *.jsonl would block the reader forever
                    tf = classify(p)
                    if tf is not None:
                        found[p.resolve()] = tf
    return sorted(found.values(), key=lambda t: (t.kind != "session", str(t.path)))


def is_regular(path: Path) -> bool:
    """True for a regular file (symlinks followed); never opens it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def classify(path: Path) -> TranscriptFile | None:
    """Say what a `.jsonl` file is, or None if it is not a transcript we ingest."""
    name = path.name
    if name in _SKIP_NAMES or not name.endswith(".jsonl"):
        return None
    stem = name[: -len(".jsonl")]
    if stem.startswith("agent-"):
        agent_id = stem[len("agent-") :]
        if agent_id.startswith("acompact"):
            return None
        parent = path.parent
        session = parent.parent.name if parent.name == "subagents" else ""
        return TranscriptFile(path, "subagent", session if _UUID_RE.match(session) else "", agent_id)
    return TranscriptFile(path, "session", stem if _UUID_RE.match(stem) else "")


def agents_with_files(session_file: Path, session_id: str) -> frozenset[str]:
    """Ids of the sub-agents of a session that have their own transcript file on disk."""
    out: set[str] = set()
    folders = [session_file.parent]
    if session_id:
        folders.append(session_file.parent / session_id / "subagents")
    stem = session_file.name[: -len(".jsonl")]
    if stem and stem != session_id:
        folders.append(session_file.parent / stem / "subagents")
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.startswith("agent-") and name.endswith(".jsonl"):
                agent = name[len("agent-") : -len(".jsonl")]
                if not agent.startswith("acompact"):
                    out.add(agent)
    return frozenset(out)
