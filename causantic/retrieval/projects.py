"""What a user calls a project -> the project name memory stores.

Projects are stored under the name ingest gives them (`transcripts.project`: the git
top-level's folder name, linked worktrees folded into their repository). Users see other
names: the folder of the worktree they work in, or just "here". `resolve_project` accepts, in
this order:

1. a stored project name (one index lookup: the common case costs nothing more);
2. a linked worktree's (or any checkout's) folder name, from the sessions' stored `checkout`,
   or derived from their `cwd` for sessions stored before checkouts were recorded;
3. a path inside a project, absolute or relative to ``cwd`` (``.``, ``../api``, ``src``):
   the project ingest would give that folder, else the stored folder
   (project, cwd or checkout) that holds it most closely, else the one project whose folders
   lie inside it.

Anything else is a usage error naming the closest names. Every query entry point (CLI, MCP,
hooks) goes through here by way of the retrieval functions; none repeats the check. SQL lives in
`store.projects`; no dataclasses or difflib on the fast path (the session-start hook uses
`project_at`).
"""

from __future__ import annotations

import os

import apsw

from causantic.errors import UsageError
from causantic.store import projects as table
from causantic.transcripts.project import checkout_for_cwd, project_for_cwd


def resolve_project(conn: apsw.Connection, name: str | None, *, cwd: str | None = None) -> str | None:
    """The stored project that ``name`` refers to (None stays None: all projects).

    ``cwd`` anchors relative paths (default: the process's working directory).

    Raises
    ------
    UsageError : no project by that name, folder or path (the message lists the closest
        names), or a folder name shared by several projects.
    """
    if name is None:
        return None
    given = name.strip()
    if not given:
        raise UsageError("the project name is empty; `causantic list-projects` shows the names")
    if table.has_chunks(conn, given):
        return given
    dirs = table.project_dirs(conn)
    found = _by_folder_name(dirs, given)
    if found is None and _looks_like_path(given, cwd):
        found = _by_path(conn, dirs, _absolute(given, cwd))
    if found is None:
        raise UsageError(_unknown(given, dirs))
    return found


def new_project_name(name: str, *, cwd: str | None = None) -> str:
    """The name ingest will give the project ``name`` means when memory holds nothing of it
    yet (for writes that may come first, such as remembering): a path's project is named from
    its folder as ingest names it (`transcripts.project`); a plain name stays as given."""
    given = name.strip()
    if _looks_like_path(given, cwd):
        return project_for_cwd(_absolute(given, cwd)).name
    return given


def project_at(conn: apsw.Connection, path: str) -> str:
    """The project of a working directory as memory knows it (never raises; for hooks).

    The name ingest would give ``path``; when memory holds nothing under that name, the
    stored project whose folders hold ``path`` most closely, if any.
    """
    computed = project_for_cwd(path).name
    if not path or table.has_chunks(conn, computed):
        return computed
    return _enclosing(table.project_dirs(conn), os.path.normpath(path)) or computed


def memory_here(conn: apsw.Connection, cwd: str) -> str | None:
    """The project of the folder a command runs in (the CLI's, or the one Claude Code started
    the MCP server in), or None when memory holds nothing of it."""
    here = project_at(conn, cwd)
    return here if table.has_chunks(conn, here) else None  # an index probe


def project_here(conn: apsw.Connection, cwd: str, *, how: str = "name a project") -> str:
    """`memory_here`, for commands that need a project when none is named.

    Raises
    ------
    UsageError : memory holds nothing of this folder's project; the message names the
        projects there are and ``how`` says what to do (e.g. "pass --project NAME").
    CausanticError : memory is empty.
    """
    here = memory_here(conn, cwd)
    if here is not None:
        return here
    # deferred: only for the message
    from causantic.errors import CausanticError
    from causantic.store.chunks import project_summaries

    known = [p.project for p in project_summaries(conn)]  # reads every chunk: only here
    if not known:
        raise CausanticError("no memory yet: run `causantic ingest` first")
    raise UsageError(f"the current folder belongs to project {project_at(conn, cwd)!r}, which "
                     f"has no memory; {how} (most recent: {', '.join(known[:5])})")


# -- the steps -----------------------------------------------------------------------------


def _checkout(d: table.ProjectDir) -> str:
    return d.checkout or checkout_for_cwd(d.cwd)


def _by_folder_name(dirs: list[table.ProjectDir], name: str) -> str | None:
    """The project one of whose checkouts (a worktree's own folder) is named ``name``."""
    if "/" in name:
        return None
    projects = sorted({d.project for d in dirs if os.path.basename(_checkout(d)) == name})
    if len(projects) > 1:
        raise UsageError(f"{name!r} is a folder of several projects ({', '.join(projects)}); "
                         "pass one of those names")
    return projects[0] if projects else None


def _looks_like_path(name: str, cwd: str | None) -> bool:
    if name.startswith((".", "/")) or "/" in name:
        return True
    return os.path.isdir(_absolute(name, cwd))


def _absolute(name: str, cwd: str | None) -> str:
    return os.path.normpath(os.path.join(cwd or os.getcwd(), name))


def _by_path(conn: apsw.Connection, dirs: list[table.ProjectDir], path: str) -> str | None:
    computed = project_for_cwd(path).name
    if table.has_chunks(conn, computed):
        return computed
    found = _enclosing(dirs, path)
    if found is not None:
        return found
    inside = sorted({d.project for d in dirs for f in _folders(d) if _within(f, path)})
    if len(inside) > 1:
        raise UsageError(f"{path} holds several projects ({', '.join(inside)}); "
                         "pass one of those names")
    return inside[0] if inside else None


def _enclosing(dirs: list[table.ProjectDir], path: str) -> str | None:
    """The project whose stored folder is ``path`` or its nearest ancestor."""
    best: tuple[int, str] | None = None
    for d in dirs:
        for folder in _folders(d):
            if _within(path, folder) and (best is None or len(folder) > best[0]):
                best = (len(folder), d.project)
    return best[1] if best else None


def _folders(d: table.ProjectDir) -> list[str]:
    return [os.path.normpath(f) for f in (d.project_path, d.cwd, _checkout(d)) if f]


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _unknown(name: str, dirs: list[table.ProjectDir]) -> str:
    """One line: no such project, and the names it is closest to (or what exists)."""
    # deferred: hook fast path: loaded only when this runs
    import difflib

    projects = sorted({d.project for d in dirs})
    if not projects:
        return f"no project {name!r}: memory holds no projects yet (run `causantic ingest`)"
    names = projects + sorted({os.path.basename(c) for c in map(_checkout, dirs) if c} - set(projects))
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    close += [n for n in names if name.lower() in n.lower() and n not in close][: 3 - len(close)]
    if close:
        return f"no project {name!r}; closest: {', '.join(close)}"
    shown = ", ".join(projects[:8]) + (", …" if len(projects) > 8 else "")
    return f"no project {name!r}; projects in memory: {shown} (`causantic list-projects`)"
