"""Which project a memory command means.

Memories may hold projects with no sessions (remembered before the first ingest, imported from
another tool), so a name memories hold is taken as it is; any other goes through
`retrieval.projects.resolve_project` like every `--project`: a worktree folder name or a path
inside the project gives the stored name. Reading, an unknown name is a usage error naming the
closest; remembering, it may be a project whose sessions are not stored yet, named as ingest
will name it. Without this, `remember --project .` stored a memory under "." that no
briefing ever showed, and `memories --project` with a typo listed nothing, exit 0.
"""

from __future__ import annotations

import apsw

from causantic.errors import UsageError
from causantic.retrieval.projects import new_project_name, resolve_project
from causantic.store import memories as sql


def memory_project(conn: apsw.Connection, name: str | None, *, new_ok: bool = False) -> str | None:
    """The project name memories are stored under for ``name`` (None or "": every project);
    ``new_ok``: a name nothing holds yet is a new project (`new_project_name`).

    Raises
    ------
    UsageError : reading, no memory, session or folder answers to that name.
    """
    if not name:
        return name
    given = name.strip()
    if given and sql.has_project(conn, given):
        return given
    try:
        return resolve_project(conn, name)
    except UsageError:
        if not new_ok or not given:
            raise
    return new_project_name(given)
