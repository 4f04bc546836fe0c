"""Background ingest on a busy database: retry with backoff, then leave the work for later.

A PreCompact/SessionEnd worker whose database stays locked (another long write, a rebuild)
must not lose that transcript for good: SessionEnd fires once per session. The worker retries
with exponential backoff for up to `RETRY_BUDGET_S`; if the database is still busy it writes
a small marker under `<home>/pending/` and reports the ingest as deferred. The next worker,
for any transcript, ingests every pending transcript after its own, and removes the marker
once that succeeded.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from causantic.errors import DatabaseBusy

RETRY_BUDGET_S = 120.0
FIRST_DELAY_S = 1.0
MAX_DELAY_S = 30.0

T = TypeVar("T")


def with_backoff(step: Callable[[], T], *, budget_s: float | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> T:
    """Run `step`, again after 1, 2, 4 ... (at most 30) s while it raises DatabaseBusy.

    Raises DatabaseBusy when the database is still busy after `budget_s` (default
    `RETRY_BUDGET_S`).
    """
    deadline = time.monotonic() + (RETRY_BUDGET_S if budget_s is None else budget_s)
    delay = FIRST_DELAY_S
    while True:
        try:
            return step()
        except DatabaseBusy:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            sleep(min(delay, left))
            delay = min(delay * 2, MAX_DELAY_S)


def _marker(home: Path, path: Path) -> Path:
    key = hashlib.sha1(str(path).encode()).hexdigest()[:16]
    return home / "pending" / f"ingest-{key}.json"


def defer(home: Path, path: Path, session_id: str) -> Path:
    """Leave `path` for the next worker; returns the marker written (0600 in a 0700 folder)."""
    # deferred: hook fast path: loaded only when this runs
    from causantic.fsutil import private_dir

    marker = _marker(home, path)
    private_dir(marker.parent)
    tmp = marker.with_suffix(".tmp")
    fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"path": str(path), "session_id": session_id}, f)
    os.replace(tmp, marker)
    return marker


def pending(home: Path) -> list[tuple[Path, str]]:
    """Transcripts left by earlier workers, oldest marker first: (path, session id)."""
    folder = home / "pending"
    try:
        names = sorted(folder.glob("ingest-*.json"), key=lambda p: p.stat().st_mtime)
    except OSError:
        return []
    out = []
    for marker in names:
        try:
            data = json.loads(marker.read_text(encoding="utf-8"))
            out.append((Path(data["path"]), str(data.get("session_id") or "")))
        except (OSError, ValueError, KeyError, TypeError):
            marker.unlink(missing_ok=True)  # unreadable: nothing to resume from
    return out


def done(home: Path, path: Path) -> None:
    """Forget the marker of `path` (its ingest succeeded, or the file is gone)."""
    _marker(home, path).unlink(missing_ok=True)
