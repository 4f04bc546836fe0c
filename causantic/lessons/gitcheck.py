"""Is the fix still there? Read-only git questions with a time bound.

For a lesson whose session worked in a git repository that still exists here: is the commit
that followed the fix still an ancestor of HEAD, and have the fixed files changed since the
fix? Each `git` call is local and read-only (`merge-base --is-ancestor`, `log`), runs with a
timeout, and the whole check stops at a deadline; anything unknown is simply not said.
Never called on the hook fast path.
"""

from __future__ import annotations

import os
import subprocess
import time

CALL_TIMEOUT_S = 1.0


class FixStatus:
    """What git says about a fix: `in_head` (True/False/None = unknown), `changed_since`
    (commits touching the fixed files since, or None), and a short phrase for humans."""

    __slots__ = ("in_head", "changed_since", "text")

    def __init__(self, in_head: bool | None, changed_since: int | None) -> None:
        self.in_head, self.changed_since = in_head, changed_since
        parts = []
        if in_head is True:
            parts.append("fix commit is in HEAD")
        elif in_head is False:
            parts.append("fix commit is NOT in HEAD")
        if changed_since == 0:
            parts.append("fixed files unchanged since")
        elif changed_since:
            parts.append(f"fixed files changed in {changed_since} commit"
                         f"{'s' if changed_since != 1 else ''} since")
        self.text = "; ".join(parts)

    def as_dict(self) -> dict[str, object]:
        return {"in_head": self.in_head, "changed_since": self.changed_since, "text": self.text}


def _git(cwd: str, *args: str, deadline: float) -> subprocess.CompletedProcess[str] | None:
    left = min(CALL_TIMEOUT_S, deadline - time.monotonic())
    if left <= 0.05:
        return None
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_OPTIONAL_LOCKS"] = "0"  # read-only: never take the index lock
    try:
        return subprocess.run(["git", "-C", cwd, *args], capture_output=True, text=True,
                              timeout=left, env=env, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError):
        return None


def fix_status(cwd: str | None, commit: str, files: list[str], since: str,
               deadline: float) -> FixStatus | None:
    """What git says about one fix, or None when there is no repository to ask or no time."""
    if not cwd or not os.path.isdir(cwd) or not os.path.exists(os.path.join(cwd, ".git")):
        return None
    in_head: bool | None = None
    if commit:
        done = _git(cwd, "merge-base", "--is-ancestor", commit, "HEAD", deadline=deadline)
        if done is not None and done.returncode in (0, 1):
            in_head = done.returncode == 0
    changed: int | None = None
    paths = [f for f in files if f.startswith(cwd.rstrip("/") + "/") or not f.startswith("/")]
    if paths:
        rel = [os.path.relpath(f, cwd) if f.startswith("/") else f for f in paths]
        args = ["log", "--format=%H"] + ([f"{commit}..HEAD"] if commit and in_head else
                                         [f"--since={since}", "HEAD"] if since else ["HEAD"])
        done = _git(cwd, *args, "--", *rel, deadline=deadline)
        if done is not None and done.returncode == 0:
            changed = len([line for line in done.stdout.splitlines() if line.strip()])
    if in_head is None and changed is None:
        return None
    return FixStatus(in_head, changed)
