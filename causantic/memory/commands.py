"""Command-line handlers and parsers for explicit memory (kept out of cli.py to keep it small).

`causantic remember`, `memories`, `feedback`, `reflect`, `prune-memories`; plus
`attach`, which search and recall (CLI and MCP) call to show memories beside their chunks.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from causantic.config import Settings
from causantic.errors import CausanticError
from causantic.memory import TYPES
from causantic.memory.compact import prune
from causantic.memory.feedback import feedback
from causantic.memory.observe import forget_memories as run
from causantic.memory.recall import list_memories, memory_hits, with_memories
from causantic.memory.reflect import reflect
from causantic.store import open_store

if TYPE_CHECKING:
    from causantic.retrieval.render import Answer


def _emit(args: argparse.Namespace, payload: dict[str, object], text: str) -> None:
    print(json.dumps(payload, ensure_ascii=False) if args.json else text)


def _writable(settings: Settings):

    return open_store(settings.db_path)


def cmd_remember(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: heavy: pulls numpy, only needed here
    from causantic.ingest.run import make_redact
    from causantic.memory.observe import observe

    text = " ".join(args.text)
    if text.strip() == "-":
        text = sys.stdin.read()
    with _writable(settings) as store:
        done = observe(store, text, type=args.type, importance=args.importance,
                       project=args.project or "", cites=args.cite or (),
                       redact=make_redact(settings), importance_table=settings.memory.importance,
                       embed=not args.no_embed, model_dir=settings.model_dir,
                       near_days=settings.memory.near_days)
    _emit(args, done.as_dict(), done.text)
    return 0


def cmd_memories(args: argparse.Namespace, settings: Settings) -> int:

    with open_store(settings.db_path, readonly=True) as store:
        found = list_memories(store, project=args.project, types=args.type or (),
                              limit=args.limit, sort=args.sort)
    _emit(args, found, str(found["text"]))
    return 0


def cmd_feedback(args: argparse.Namespace, settings: Settings) -> int:

    with _writable(settings) as store:
        done = feedback(store, args.memory_id, args.helpful, args.reason)
    _emit(args, done, str(done["text"]))
    return 0


def cmd_reflect(args: argparse.Namespace, settings: Settings) -> int:

    with _writable(settings) as store:
        done = reflect(store, args.project, focus=args.focus, record=not args.peek)
    _emit(args, done, str(done["text"]))
    return 0


def cmd_prune(args: argparse.Namespace, settings: Settings) -> int:

    if not settings.db_path.exists():
        raise CausanticError(f"no memory yet at {settings.db_path}; nothing to prune")
    with open_store(settings.db_path, readonly=not args.yes) as store:
        done = prune(store, ttl_days=args.ttl_days, max_importance=args.below,
                     dry_run=not args.yes)
    _emit(args, done, str(done["text"]))
    return 0


def forget_memories(args: argparse.Namespace, settings: Settings) -> int:
    """`causantic forget --memory ID ...`."""

    with open_store(settings.db_path, readonly=not args.yes) as store:
        done = run(store, args.memory, dry_run=not args.yes)
    text = str(done["text"]).replace("dry_run=false (command line: --yes)", "add --yes")
    _emit(args, {**done, "text": text}, text)
    return 0


def attach(store: Any, result: Answer, query: str, *, project: str | None, mode: str,
           settings: Settings, max_tokens: int) -> Answer:
    """`result` (search or recall) with the best matching memories shown first."""

    hits = memory_hits(store, query, project=project, memory=settings.memory,
                       use_vectors=mode != "keyword")
    return with_memories(result, hits, max_tokens)


def add_parsers(command: Callable[..., argparse.ArgumentParser],
                positive: Callable[[str], int]) -> None:
    """Add the memory subcommands through cli.build_parser's `command` helper."""
    p = command("remember", cmd_remember,
                "Remember an instruction, decision or fact (shown in briefings and searches).",
                'causantic remember "we use pnpm, never npm" --type instruction --project web')
    p.add_argument("text", nargs="+", help="what to remember ('-' reads stdin)")
    p.add_argument("--type", choices=TYPES, default="general",
                   help="instruction 10, error 9, decision 8, code_change/insight/procedure 7, "
                   "test_result 6, general 5 (default), tool_output 3: the default importance")
    p.add_argument("--importance", type=float, help="base importance 1-10 (default: by type)")
    p.add_argument("--project", help="the project it applies to (default: every project)")
    p.add_argument("--cite", action="append", metavar="CHUNK",
                   help="a chunk id it comes from (repeatable; ids from search --json)")
    p.add_argument("--no-embed", action="store_true",
                   help="do not load the model now (`causantic embed` adds the vector)")
    p.add_argument("--json", action="store_true")

    p = command("memories", cmd_memories, "List remembered observations, most important first.",
                "causantic memories web --type instruction")
    p.add_argument("project_word", nargs="?", metavar="PROJECT", help="the same as --project")
    p.add_argument("--project", help="only this project (and memories for every project)")
    p.add_argument("--type", action="append", choices=TYPES, help="only this type (repeatable)")
    p.add_argument("--sort", choices=("importance", "recent"), default="importance")
    p.add_argument("--limit", type=positive, default=50)
    p.add_argument("--json", action="store_true")

    p = command("feedback", cmd_feedback,
                "Say whether a memory helped: effective importance = base + 0.5 x (helpful - harmful).",
                'causantic feedback mem_3fa2b1c0 --harmful --reason "we moved to yarn"')
    p.add_argument("memory_id", help="memory id (or a unique prefix)")
    vote = p.add_mutually_exclusive_group(required=True)
    vote.add_argument("--helpful", dest="helpful", action="store_true")
    vote.add_argument("--harmful", dest="helpful", action="store_false")
    p.add_argument("--reason", help="why (kept with the vote)")
    p.add_argument("--json", action="store_true")

    p = command("reflect", cmd_reflect,
                "Guiding questions and evidence groups to turn observations into insights.",
                "causantic reflect --project web")
    p.add_argument("--project", required=True)
    p.add_argument("--focus", help="only observations related to this text")
    p.add_argument("--peek", action="store_true", help="do not record this as a reflection")
    p.add_argument("--json", action="store_true")

    p = command("prune-memories", cmd_prune,
                "Prune low-importance automatic observations older than a TTL (previews unless "
                "--yes; never chunks or explicit memories).",
                "causantic prune-memories --ttl-days 90")
    p.add_argument("--ttl-days", type=float, default=90.0, help="age in days (default 90)")
    p.add_argument("--below", type=float, default=4.0,
                   help="prune only effective importance below this (default 4)")
    p.add_argument("--yes", action="store_true", help="prune (default: preview only)")
    p.add_argument("--json", action="store_true")
