"""Project identity from a session's working directory.

The project is the git top-level of `cwd`, with linked worktrees folded into their main
repository, named by its basename. When the directory no longer exists on this machine
(transcripts copied from elsewhere, deleted worktrees), common worktree layouts are folded by
path shape: `<repo>/.worktrees/<name>`, `<repo>/worktrees/<name>`,
`<repo>/.claude/worktrees/<name>` and `<repo>-worktrees/<name>`. Otherwise: basename of cwd.
"""

from __future__ import annotations

import functools
import os
from collections import namedtuple

_WORKTREE_DIRS = (".worktrees", "worktrees", ".git-worktrees")


# A named tuple, not a dataclass: hooks import this module, and `dataclasses` pulls in
# `inspect`, `ast` and `dis` (~6 ms per hook process).
Project = namedtuple("Project", ["name", "path"])
Project.__doc__ = "A project's name and the folder the name came from."


@functools.lru_cache(maxsize=1024)
def project_for_cwd(cwd: str | None) -> Project:
    """The project a working directory belongs to (cached per process)."""
    if not cwd:
        return Project("unknown", "")
    cwd = cwd.rstrip("/") or "/"
    top = _git_top(cwd)
    if top is not None:
        return Project(os.path.basename(top) or top, top)
    folded = _fold_by_shape(cwd)
    return Project(os.path.basename(folded) or folded, folded)


def _git_top(cwd: str) -> str | None:
    """The main repository folder for cwd, or None if no repository is found on disk."""
    path = cwd
    for _ in range(64):
        dot_git = os.path.join(path, ".git")
        try:
            if os.path.isdir(dot_git):
                return path
            if os.path.isfile(dot_git):
                return _from_gitfile(path, dot_git)
        except OSError:
            return None
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    return None


def _from_gitfile(path: str, dot_git: str) -> str:
    """A `.git` file points at the real git dir; linked worktrees live under `.git/worktrees`."""
    try:
        with open(dot_git, encoding="utf-8", errors="replace") as f:
            line = f.readline().strip()
    except OSError:
        return path
    if not line.startswith("gitdir:"):
        return path
    gitdir = line[len("gitdir:") :].strip()
    if not os.path.isabs(gitdir):
        gitdir = os.path.normpath(os.path.join(path, gitdir))
    marker = os.sep + ".git" + os.sep + "worktrees" + os.sep
    if marker in gitdir:
        return gitdir.split(marker, 1)[0]
    return path  # a submodule or a separate git dir: the checkout itself is the project


def _fold_by_shape(cwd: str) -> str:
    parts = cwd.split("/")
    for i in range(len(parts) - 1, 0, -1):
        part = parts[i]
        if part in _WORKTREE_DIRS and i + 1 < len(parts):
            base = "/".join(parts[:i])
            if base.endswith("/.claude"):
                base = base[: -len("/.claude")]
            return base or cwd
        if part.endswith("-worktrees") and len(part) > len("-worktrees") and i + 1 < len(parts):
            return "/".join(parts[:i] + [part[: -len("-worktrees")]])
    return cwd


@functools.lru_cache(maxsize=1024)
def checkout_for_cwd(cwd: str | None) -> str:
    """The top folder of the working tree holding `cwd` (a linked worktree's own folder), or "".

    On disk: the nearest folder with a `.git` entry (directory or file). Otherwise the
    worktree layouts `project_for_cwd` folds: `<repo>/.worktrees/<name>`, `<repo>-worktrees/<name>`
    and the like. Its basename is the folder name a user sees for a worktree.
    """
    if not cwd:
        return ""
    cwd = cwd.rstrip("/") or "/"
    path = cwd
    for _ in range(64):
        try:
            if os.path.lexists(os.path.join(path, ".git")):
                return path
        except (OSError, ValueError):
            return ""
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    parts = cwd.split("/")
    for i in range(len(parts) - 2, 0, -1):
        part = parts[i]
        if part in _WORKTREE_DIRS or (part.endswith("-worktrees") and len(part) > len("-worktrees")):
            return "/".join(parts[: i + 2])
    return ""


def worktree_name(checkout: str | None, project: str) -> str:
    """The folder name of ``checkout`` when it is a linked worktree of ``project``; '' for
    the main checkout (the folder the project is named after) or no checkout at all."""
    name = os.path.basename(checkout.rstrip("/")) if checkout else ""
    return "" if name == project else name
