"""Which files a past result edited have changed on disk since: memory that may be stale.

A result quotes past work. When a file that work edited (a ``[Tool:Edit]``, ``MultiEdit``,
``Write`` or ``NotebookEdit`` call in the chunk's stored text, by absolute path) has been
modified after the chunk ended, the code it describes may have moved on. A result shown as its
answer unit counts the edits of every chunk of its turn (`with_turn`), so a match on the
prompt names the files the turn's later chunks edited: the result's header
says so (`Hit.changed`, which `render.header` shows as ``files changed since: settings.go``
and the JSON as ``changed_since``), so the reader checks the file before relying on it.
Files that no longer exist, paths that were redacted or are relative, and transcripts from
another machine say nothing: only a file that is there and newer is named.

Pure Python and cheap: a regular expression over each result's stored text and a `os.stat`
per file it names, well under a millisecond for an answer's results.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from datetime import datetime

from causantic.store.hits import Hit

#: A tool call that wrote a file, as chunking records it: ``[Tool:Edit] /abs/path`` (the path
#: is the rest of the line; an edit's diff follows on the next lines).
_EDIT_RE = re.compile(r"^\[Tool:(?:Edit|MultiEdit|Write|NotebookEdit)\] (/[^\n]+?)\s*$", re.M)
#: Seconds a file may be newer than the chunk's end and still count as that chunk's own edit
#: (a transcript's timestamps and the file system's clock are not one clock).
SLACK_S = 120


def edited_paths(text: str) -> list[str]:
    """The absolute paths a chunk's tool calls wrote, in order, each once."""
    if "Edit] /" not in text and "Write] /" not in text:  # most chunks: skip the regex scan
        return []
    return list(dict.fromkeys(m.group(1) for m in _EDIT_RE.finditer(text)))


def changed_since(paths: Iterable[str], when: str) -> list[str]:
    """Those of ``paths`` modified more than `SLACK_S` after ``when`` (an ISO time)."""
    try:
        since = datetime.fromisoformat(when.replace("Z", "+00:00")).timestamp() + SLACK_S
    except ValueError:
        return []
    out = []
    for path in paths:
        try:
            if os.stat(path).st_mtime > since:
                out.append(path)
        except (OSError, ValueError):  # gone, unreadable, or not a path here
            continue
    return out


def with_turn(hit: Hit, turn_texts: Iterable[str]) -> Hit:
    """The hit, `Hit.changed` also naming the files its turn's chunks (``turn_texts``)
    edited that have changed since: a hit shown as its answer unit shows its turn's work.
    Every chunk of a turn ends when the turn does, so the hit's end is theirs."""
    paths = [p for text in turn_texts for p in edited_paths(text) if p not in hit.changed]
    newer = changed_since(dict.fromkeys(paths), hit.end_time) if paths else []
    return hit.replace(changed=hit.changed + tuple(newer)) if newer else hit


def mark(hits: Iterable[Hit]) -> list[Hit]:
    """The hits, each with `Hit.changed` also naming the files its own chunk edited that have
    changed since. Call it before a hit's text is replaced by its answer unit."""
    return [with_turn(hit, (hit.text,)) for hit in hits]
