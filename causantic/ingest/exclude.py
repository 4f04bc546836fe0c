"""Folders kept out of memory: `[ingest] exclude` patterns and `.nocausantic` marker files.

A session is kept out, never read into memory and never briefed by the hooks, when its
working directory or its project's folder (the main checkout of a linked worktree), or a
folder above either, holds a file named `.nocausantic`, or when it matches a pattern:

- a pattern holding a ``/`` (``~`` is expanded when settings load) is a path glob matched
  against those folders and every folder above them: ``*`` and ``?`` stay within one
  folder name, ``**`` spans any number of them. So ``~/clients/*`` or ``~/clients`` keeps
  out everything under ``~/clients``, at any depth;
- a pattern without one is a glob on the project's name as `causantic list-projects` shows
  it: ``scratch``, ``tmp-*``.

Imports (`causantic.transfer`) ask per session, from the folder and project name its stored
row gives (`Exclusions.session_reason`).

Hooks ask on every event, so this is standard library only and costs a few ``stat`` calls;
ingest (and doctor) ask once per transcript file, from the first working directory the file
names (`head_cwd`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from causantic.transcripts.project import project_for_cwd

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    import mmap
    import re

#: A file (or folder) of this name keeps its folder, and everything under it, out of memory.
MARKER = ".nocausantic"


class Exclusions:
    """What to keep out: the `[ingest] exclude` patterns plus the marker files on disk.

    Answers are kept per folder for the object's life (one ingest run, one hook call), as
    the files of a session and its sub-agents share one."""

    def __init__(self, patterns: Iterable[str] = ()) -> None:
        given = [p for p in patterns if p]
        self._paths = [(p, _path_regex(p)) for p in given if "/" in p]
        self._names = [p for p in given if "/" not in p]
        self._seen: dict[str, str | None] = {}

    def reason(self, cwd: str | None) -> str | None:
        """Why a session working in ``cwd`` is kept out of memory (one short phrase), or
        None when it is not. An empty ``cwd`` (a transcript that names none) is never."""
        if not cwd:
            return None
        if cwd not in self._seen:
            self._seen[cwd] = self._reason(cwd)
        return self._seen[cwd]

    def _reason(self, cwd: str) -> str | None:
        project = project_for_cwd(cwd)
        folders = _with_parents(cwd)
        if project.path and project.path != cwd:
            folders += [f for f in _with_parents(project.path) if f not in folders]
        for folder in folders:
            if os.path.exists(os.path.join(folder, MARKER)):  # a file or a folder
                return f"{os.path.join(folder, MARKER)} exists"
        for pattern, regex in self._paths:
            if any(regex.fullmatch(folder) for folder in folders):
                return f"[ingest] exclude {pattern!r}"
        return self._name_reason(project.name)

    def session_reason(self, cwd: str | None, project: str | None) -> str | None:
        """`reason` for a session known from a stored row rather than a transcript (an
        import): its folder when the row names one, and its project's name as the row
        stores it, since the folder may not exist on this machine."""
        return self.reason(cwd) or (self._name_reason(project) if project else None)

    def _name_reason(self, name: str) -> str | None:
        if self._names:
            # deferred: hook fast path: only with name patterns
            from fnmatch import fnmatchcase

            for pattern in self._names:
                if fnmatchcase(name, pattern):
                    return f"[ingest] exclude {pattern!r}"
        return None


_CWD_SCAN_BYTES = 64 << 10


def head_cwd(data: bytes | mmap.mmap) -> str:
    """The first working directory a transcript names in its first 64 KB ('' if none):
    every Claude Code record carries `cwd` near its start, so a file kept out need not be
    parsed."""
    # deferred: hook fast path: only when a file is read
    import json
    import re

    m = re.search(rb'"cwd"\s*:\s*"((?:[^"\\]|\\.){1,4096})"', data[:_CWD_SCAN_BYTES])
    if m is None:
        return ""
    try:
        cwd = json.loads(b'"' + m.group(1) + b'"')
    except ValueError:
        return ""
    return cwd if isinstance(cwd, str) else ""


def file_cwd(path: str | os.PathLike[str]) -> str:
    """`head_cwd` of a transcript file ('' when it cannot be read)."""
    try:
        with open(path, "rb") as f:
            return head_cwd(f.read(_CWD_SCAN_BYTES))
    except OSError:
        return ""


def _with_parents(path: str) -> list[str]:
    """``path`` (without a trailing ``/``) and every folder above it, up to ``/``."""
    path = os.path.normpath(path) if path != "/" else path
    out = [path]
    while True:
        parent = os.path.dirname(path)
        if parent == path:
            return out
        out.append(parent)
        path = parent


def _path_regex(pattern: str) -> re.Pattern[str]:
    """A compiled regex for a path glob: ``**`` any folders, ``*``/``?`` within one name."""
    # deferred: hook fast path: only with path patterns
    import re

    pattern = os.path.normpath(pattern) if pattern != "/" else pattern
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))
