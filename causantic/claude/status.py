"""The hook status file: what each hook did last, so failures are visible without breaking Claude Code.

Hooks never report errors to Claude Code (a broken memory must not break a session); they
record them here instead. `<home>/hook-status.json` maps a hook name to::

    {"last_run": "2026-11-21T10:00:00.000Z", "success": true, "duration_ms": 41.2,
     "project": "cli", "session_id": "…", "details": {...}, "error": null,
     "runs": 12, "failures": 1, "last_failure": {"at": "…", "error": "…"}}

Writers merge their entry under a short `flock` and replace the file atomically, so
concurrent hooks never lose each other's entries and readers never see half a file.
`causantic hook-status` and the MCP tool `hook-status` render it with `render_status`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from causantic.claude.events import EVENTS
from causantic.fsutil import atomic_write, file_lock, overwrite, private_dir
from causantic.timestamps import iso_utc, parse_iso

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    from typing import Any

STATUS_FILE = "hook-status.json"
LOG_FILE = Path("logs") / "hooks.log"
#: Listed first, in this order (other entries follow by name): the session's own events.
HOOKS = EVENTS[:4]


def status_path(home: Path) -> Path:
    """Where the status file lives under the causantic home."""
    return home / STATUS_FILE


def log_path(home: Path) -> Path:
    """The log file background ingest workers append to."""
    return home / LOG_FILE


def now_iso(now: datetime | None = None) -> str:
    """UTC time as stored everywhere in causantic: `YYYY-MM-DDTHH:MM:SS.mmmZ`."""
    return iso_utc(now or datetime.now(UTC))


def read_status(home: Path) -> dict[str, dict[str, Any]]:
    """The recorded entries by hook name; {} when nothing was recorded or the file is damaged.

    Reads under the status lock (hooks rewrite the file in place while holding it); after a
    second without it, reads anyway.
    """
    if not status_path(home).exists():
        return {}  # and create no lock folder in a home that was never used
    with file_lock(_lock_path(home), timeout=1.0):
        return _read(home)


def _lock_path(home: Path) -> Path:
    return home / "locks" / "hook-status.lock"


def _read(home: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(status_path(home).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict)}


def record(
    home: Path,
    hook: str,
    *,
    success: bool,
    duration_ms: float,
    project: str | None = None,
    session_id: str | None = None,
    details: dict[str, Any] | None = None,
    error: str | None = None,
    now: datetime | None = None,
) -> None:
    """Merge one run of `hook` into the status file.

    Raises OSError when the causantic home cannot be written (callers in hooks catch it).
    """
    private_dir(home)
    when = now_iso(now)
    # Best effort: after 2 s without the lock, write anyway (a lost entry beats a slow hook).
    with file_lock(_lock_path(home), timeout=2.0) as locked:
        status = _read(home)
        old = status.get(hook, {})
        entry: dict[str, Any] = {
            "last_run": when,
            "success": success,
            "duration_ms": round(duration_ms, 1),
            "project": project,
            "session_id": session_id,
            "details": details or {},
            "error": None if success else (error or "failed"),
            "runs": int(old.get("runs", 0) or 0) + 1,
            "failures": int(old.get("failures", 0) or 0) + (0 if success else 1),
        }
        if not success:
            entry["last_failure"] = {"at": when, "error": entry["error"]}
        elif isinstance(old.get("last_failure"), dict):
            entry["last_failure"] = old["last_failure"]
        status[hook] = entry
        # Not fsynced: losing the last status entry in a power cut is harmless, and hooks are
        # on Claude Code's critical path. In place under the lock (readers take it too).
        text = json.dumps(status, indent=2, sort_keys=True) + "\n"
        if locked:
            overwrite(status_path(home), text)
        else:
            atomic_write(status_path(home), text, durable=False)


def render_status(status: dict[str, dict[str, Any]], home: Path, now: datetime | None = None,
                  *, own_project: str | None = None) -> str:
    """Human-readable status, one line per hook, then a one-line verdict.

    ``own_project`` (the MCP server under `[memory] scope = "project"`): a run for any other
    project (or none known) says when it ran and whether it failed, never which project,
    session or error (those may name another project: `causantic hook-status` in a shell
    shows them)."""
    if not status:
        return (
            "Hook status: no hook has run yet. If Claude Code sessions ran since "
            "`causantic install`, check `causantic doctor`."
        )
    now = now or datetime.now(UTC)
    lines = ["Hook status:"]
    failing = []
    order = [h for h in HOOKS if h in status] + sorted(set(status) - set(HOOKS))
    for name in order:
        e = status[name]
        state = "ok" if e.get("success") else "FAILED"
        line = f"- {name}: last ran {time_ago(e.get('last_run'), now)} ({state}, {_duration(e)})"
        if own_project is not None and e.get("project") != own_project:
            line += " for another project (details: `causantic hook-status` in a shell)"
            if not e.get("success"):
                failing.append(name)
            lines.append(line)
            continue
        if e.get("project"):
            line += f" for {e['project']}"
        if e.get("session_id"):
            line += f" session {str(e['session_id'])[:8]}"
        extra = _details(e.get("details") or {})
        if not e.get("success"):
            failing.append(name)
            extra = str(e.get("error") or "failed")
        if extra:
            line += f" — {extra}"
        runs, failures = int(e.get("runs", 0) or 0), int(e.get("failures", 0) or 0)
        if failures and e.get("success") and isinstance(e.get("last_failure"), dict):
            lf = e["last_failure"]
            line += (f" (earlier: {failures} of {runs} runs failed, last {time_ago(lf.get('at'), now)}:"
                     f" {lf.get('error')})")
        lines.append(line)
    lines.append("")
    if failing:
        lines.append(
            f"Failing: {', '.join(failing)}. Details in {log_path(home)}; "
            "`causantic doctor` checks the setup."
        )
    else:
        lines.append("No issues detected: the last run of every hook succeeded.")
    return "\n".join(lines)


def time_ago(iso: object, now: datetime) -> str:
    """`just now`, `5 min ago`, `3 hours ago`, `2 days ago` (or `at an unknown time`)."""
    try:
        then = parse_iso(str(iso))
    except ValueError:
        return "at an unknown time"
    seconds = max(0.0, (now - then).total_seconds())
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        n = int(seconds // 3600)
        return f"{n} hour{'s' if n != 1 else ''} ago"
    n = int(seconds // 86400)
    return f"{n} day{'s' if n != 1 else ''} ago"


def _duration(entry: dict[str, Any]) -> str:
    ms = float(entry.get("duration_ms") or 0.0)
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def _details(details: dict[str, Any]) -> str:
    parts = []
    for key, value in details.items():
        if value in (None, "", [], {}):
            continue
        parts.append(f"{key.replace('_', ' ')} {value}")
    return ", ".join(parts)
