"""How to run this causantic again: for hook commands, the MCP registration and background workers.

Two ways causantic runs:

- from the single-file archive: `<abs python> -S <abs causantic.pyz> …` (`-S` skips site.py,
  which saves 10-30 ms per hook and keeps a user's site-packages out of our imports);
- from an installed package: `<abs python> -m causantic …`, with the interpreter the package
  is installed for (a venv's `bin/python` is kept as is, not resolved, or the venv is lost).

The archive is recognised by the `CAUSANTIC_ARCHIVE` global its bootstrap (`__main__` of
the archive, see `causantic/_bootstrap.py`) defines, else by the path Python was started with
(`sys.argv[0]` ends with `.pyz`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def running_archive(argv0: str | None = None) -> Path | None:
    """The absolute path of the `.pyz` archive we run from, or None for an installed package."""
    marker = getattr(sys.modules.get("__main__"), "CAUSANTIC_ARCHIVE", None)
    if argv0 is None and isinstance(marker, str) and os.path.isfile(marker):
        return Path(os.path.abspath(marker))
    c = argv0 if argv0 is not None else (sys.argv[0] if sys.argv else "")
    if c and c.endswith(".pyz") and os.path.isfile(c):
        return Path(os.path.abspath(c))
    return None


def interpreter() -> str:
    """The absolute path of the running interpreter (symlinks kept: a venv stays a venv)."""
    return os.path.abspath(sys.executable)


def self_command(archive: Path | None = None) -> list[str]:
    """The argv prefix that starts causantic again in a new process."""
    archive = archive if archive is not None else running_archive()
    if archive is not None:
        return [interpreter(), "-S", str(archive)]
    return [interpreter(), "-m", "causantic"]


def shell_join(argv: list[str]) -> str:
    """One shell command line (Claude Code runs hook commands with `sh -c`)."""
    import shlex  # only install needs it, not the hooks that start workers

    return " ".join(shlex.quote(a) for a in argv)
