"""Command line: parse, call, print. No SQL and no loops over data here.

Handlers import what they need lazily so that light commands (hooks, `--version`) never pay
for apsw, numpy, onnxruntime or mcp.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from causantic.config import ANSWER_TOKENS, Settings, load_settings
from causantic.errors import CausanticError, UsageError, describe

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    import argparse  # imported where used: hooks dispatch before any parsing (main)

    from causantic.transfer.archive import ImportReport
    from causantic.transfer.foreign import ForeignReport

Handler = Callable[["argparse.Namespace", Settings], int]


# -- handlers ------------------------------------------------------------------------------


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: heavy: pulls numpy, only needed here
    from causantic.ingest.run import run_ingest

    paths = [Path(p) for p in args.paths] if args.paths else [settings.projects_dir]
    if not args.paths and not settings.projects_dir.exists():
        raise CausanticError(
            f"no Claude Code transcripts at {settings.projects_dir}; pass a path "
            "(causantic ingest PATH) or set CLAUDE_CONFIG_DIR"
        )
    report = run_ingest(settings, paths, progress=not args.json)
    embedded, why_not = None, None
    if not args.no_embed:
        # deferred: heavy: pulls numpy, only needed here
        from causantic.ingest.run import run_embed

        try:
            embedded = run_embed(settings, progress=not args.json)
        except CausanticError as exc:  # ingest still succeeded: vectors stay pending
            why_not = str(exc)
    if args.json:
        out = report.as_dict()
        out["embed"] = embedded.as_dict() if embedded else {"skipped": why_not or "--no-embed"}
        print(json.dumps(out))
    else:
        print(report_line(report))
        if embedded is not None and embedded.todo:
            # deferred: heavy: pulls numpy, only needed here
            from causantic.ingest.embed import summary

            print(summary(embedded))
        for problem in report.problems:
            print(f"causantic: warning: {problem}", file=sys.stderr)
    if why_not:
        print(f"causantic: vectors are pending (search uses keywords until `causantic embed` "
              f"succeeds): {why_not}", file=sys.stderr)
    return 0


def cmd_embed(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: heavy: pulls numpy, only needed here
    from causantic.ingest.embed import summary
    from causantic.ingest.run import run_embed

    report = run_embed(settings, progress=not args.json,
                       reindex=args.reindex, limit=args.limit)
    if args.json:
        print(json.dumps(report.as_dict()))
    elif args.reindex and report.todo == 0:
        print(f"Nothing to reindex: every stored vector already comes from {report.model_id}."
              + (f" {report.remaining} chunks still without vectors: run `causantic embed`."
                 if report.remaining else ""))
    else:
        print(summary(report))
    return 0


def report_line(report) -> str:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.wording import plural

    return (
        f"Ingested {plural(report.files, 'transcript file')} ({report.files_read} read, "
        f"{report.files_unchanged} unchanged"
        + (f", {report.files_excluded} kept out: {_first_reasons(report.kept_out)}"
           if report.files_excluded else "")
        + f"): +{plural(report.chunks_added, 'chunk')}, "
        f"{report.chunks_replaced} refreshed, +{plural(report.edges_added, 'edge')}, "
        f"{plural(len(report.sessions), 'session')} touched, "
        f"{plural(report.redactions, 'secret')} redacted, "
        f"{plural(report.bad_lines, 'bad line')} skipped, in {report.seconds:.2f} s"
    )


def _first_reasons(reasons: dict[str, int], shown: int = 2) -> str:
    """Why files were kept out, the first few (JSON `kept_out` has them all)."""
    names = list(reasons)
    return "; ".join(names[:shown]) + ("; …" if len(names) > shown else "")


def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.retrieval.search import search
    from causantic.store import open_store

    expansion = (settings.search.cluster_expansion if args.cluster_expansion is None
                 else args.cluster_expansion)

    with open_store(settings.db_path, readonly=True) as store:
        result = search(
            store,
            _query(args),
            project=args.project,
            limit=args.limit,
            max_tokens=args.max_tokens or settings.search.max_tokens,
            mode=args.mode,
            cluster_expansion=expansion,
        )
        # deferred: a command loads only its own code: hooks and --help start here
        from causantic.memory.commands import attach as attach_memories
        from causantic.retrieval.lessons import attach as attach_lessons

        result = attach_memories(store, result, args.query, project=args.project,
                                 mode=args.mode, settings=settings,
                                 max_tokens=args.max_tokens or settings.search.max_tokens)
        result = attach_lessons(store.conn, args.query, args.project, result)
    _emit(args, result.as_dict(), result.text)
    return 0


def cmd_lessons(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.retrieval.lessons import list_view
    from causantic.store import open_store

    if args.rebuild:
        # deferred: a command loads only its own code: hooks and --help start here
        from causantic.lessons.episodes import rebuild_all

        with open_store(settings.db_path) as store:
            n = rebuild_all(store.conn)
        if not args.json:
            print(f"Rebuilt lessons of every session: {n} stored.", file=sys.stderr)
    unresolved = True if args.unresolved else None
    with open_store(settings.db_path, readonly=True) as store:
        answer, text = list_view(store.conn, project=args.project, limit=args.limit,
                                 unresolved=unresolved, git=not args.no_git)
    _emit(args, answer, text)
    return 0


def cmd_ledger(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.retrieval.lessons import ledger_view
    from causantic.store import open_store

    with open_store(settings.db_path, readonly=True) as store:
        answer, text = ledger_view(store.conn, session_id=args.session, limit=args.limit)
    _emit(args, answer, text)
    return 0


def cmd_stats(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.retrieval.browse import render_stats, stats
    from causantic.store import open_store

    with open_store(settings.db_path, readonly=True) as store:
        counts = stats(store.conn, args.project)
    _emit(args, counts, render_stats(counts, str(settings.db_path)))
    return 0


def cmd_list_projects(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.retrieval.browse import list_projects, render_projects
    from causantic.store import open_store

    with open_store(settings.db_path, readonly=True) as store:
        projects = list_projects(store.conn)
    _emit(args, {"projects": [p.as_dict() for p in projects]}, render_projects(projects))
    return 0


def cmd_list_sessions(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.retrieval.browse import list_sessions, render_sessions
    from causantic.store import open_store

    with open_store(settings.db_path, readonly=True) as store:
        _project_here(args, store.conn)
        sessions = list_sessions(
            store.conn, args.project, days_back=args.days_back, limit=args.limit
        )
    _emit(
        args,
        {"project": args.project, "sessions": [s.as_dict() for s in sessions]},
        render_sessions(args.project, sessions),
    )
    return 0


def cmd_recall(args: argparse.Namespace, settings: Settings) -> int:
    return _chain(args, settings, "backward")


def cmd_predict(args: argparse.Namespace, settings: Settings) -> int:
    return _chain(args, settings, "forward")


def _chain(args: argparse.Namespace, settings: Settings, direction: str) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.retrieval.chains import walk
    from causantic.store import open_store

    with open_store(settings.db_path, readonly=True) as store:
        result = walk(store, _query(args), direction, project=args.project, limit=args.limit,
                      max_tokens=args.max_tokens or settings.search.max_tokens, max_chars=args.max_chars)
        if direction == "backward":
            # deferred: a command loads only its own code: hooks and --help start here
            from causantic.memory.commands import attach as attach_memories
            from causantic.retrieval.lessons import attach as attach_lessons

            result = attach_memories(store, result, args.query, project=args.project,
                                     mode="hybrid", settings=settings,
                                     max_tokens=args.max_tokens or settings.search.max_tokens)
            result = attach_lessons(store.conn, args.query, args.project, result)
    _emit(args, result.as_dict(), result.text)
    return 0


def cmd_reconstruct(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.retrieval.reconstruct import reconstruct
    from causantic.store import open_store
    from causantic.transcripts.project import checkout_for_cwd

    with open_store(settings.db_path, readonly=True) as store:
        if not args.session:  # a session id names its own project, wherever one stands
            # a question can be answered from any project when this folder has no memory
            _project_here(args, store.conn, anywhere=bool(args.query and args.query.strip()))
        result = reconstruct(
            store, args.project, query=args.query, mode=args.mode, session=args.session,
            previous_session=args.previous_session, current_session=args.current_session,
            days_back=args.days_back, start=args.start, end=args.end,
            max_tokens=args.max_tokens or settings.search.max_tokens, max_chars=args.max_chars,
            checkout=checkout_for_cwd(os.getcwd()) or None,
        )
    _emit(args, result.as_dict(), result.text)
    return 0


# -- Claude Code integration (issue 6): MCP server, hooks, install, doctor, forget ----------


def cmd_serve_mcp(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.mcp_front import serve

    serve(settings)
    return 0


def cmd_hook(args: argparse.Namespace, settings: Settings) -> int:
    from causantic.claude.hooks import run  # normally reached through main()'s fast path

    return run([args.event], args.db)


def cmd_hook_status(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.claude import status

    entries = status.read_status(settings.home)
    _emit(args, {"hooks": entries, "text": status.render_status(entries, settings.home)},
          status.render_status(entries, settings.home))
    return 0


def cmd_install(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.claude import install

    plan = install.plan_install(settings, db=str(settings.db_path) if args.db else None,
                                register_mcp=not args.print)
    code = _apply_plan(args, settings, plan, "installed")
    if not settings.db_path.exists():
        print("Memory is empty: run `causantic ingest` once to read the transcripts you already "
              "have (the hooks keep it current from then on).")
    if not args.dry_run:
        print("Private work: an empty .nocausantic file keeps a folder out of memory, and text "
              "between <private> and </private> is never stored (README: Privacy).")
    return code


def cmd_uninstall(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.claude import install

    return _apply_plan(args, settings, install.plan_uninstall(settings), "uninstalled")


def _apply_plan(args: argparse.Namespace, settings: Settings, plan, verb: str) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.claude import install

    if args.dry_run:
        print(plan.diff(), end="")
        print("(dry run: nothing was written)")
    else:
        for line in install.apply(plan, settings):
            print(line)
        if verb == "installed":
            print("Claude Code picks up the hooks at its next session start (or via /hooks); "
                  "check the setup with `causantic doctor`.")
    for note in plan.notes:
        print(note)
    return 0


def cmd_doctor(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.claude.doctor import run_doctor

    report = run_doctor(settings)
    _emit(args, report.as_dict(), report.text)
    return 0 if report.healthy else 1


def cmd_benchmark(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.scorecard import run_benchmark
    from causantic.store import open_store

    with open_store(settings.db_path, readonly=True) as store:
        report = run_benchmark(store, quick=args.quick, samples=args.samples)
    _emit(args, report.as_dict(), report.render())
    return 0


def cmd_forget(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.forget import forget
    from causantic.store import open_store

    if not settings.db_path.exists():
        raise CausanticError(f"no memory yet at {settings.db_path}; nothing to forget")
    if args.memory:
        # deferred: a command loads only its own code: hooks and --help start here
        from causantic.memory.commands import forget_memories

        forget_memories(args, settings)
    else:
        with open_store(settings.db_path, readonly=not args.yes) as store:
            result = forget(store, project=args.project, session_id=args.session,
                            after=args.after, before=args.before, query=args.query,
                            threshold=args.threshold, dry_run=not args.yes,
                            model_dir=settings.model_dir)
        text = result.text.replace("dry_run=false (command line: --yes)", "add --yes")
        _emit(args, {**result.as_dict(), "text": text}, text)
    if args.yes:  # a sub-agent's recall made before, not yet injected, may hold what went
        # deferred: a command loads only its own code: hooks and --help start here
        from causantic.claude import handoff

        handoff.clear(settings.home)
    return 0


def cmd_redact(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.errors import UsageError
    from causantic.ingest.run import make_redact

    redact = make_redact(settings)
    if not args.rescan:
        if sys.stdin.isatty():
            raise UsageError("pipe text in (`git diff | causantic redact`) or add --rescan")
        text = sys.stdin.read()
        print(redact(text)[0], end="")
        return 0
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.ingest.rescan import rescan
    from causantic.store import open_store

    if not settings.db_path.exists():
        raise CausanticError(f"no memory yet at {settings.db_path}; nothing to rescan")
    with open_store(settings.db_path) as store:
        report = rescan(store, redact)
    _emit(args, {**report.as_dict(), "text": report.text}, report.text)
    return 0


def cmd_topics(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.store import open_store
    from causantic.topics import maps

    action = getattr(args, "topics_command", None)
    if action == "rebuild":
        # deferred: heavy: pulls numpy, only needed here
        from causantic.topics.maintain import rebuild

        if not settings.db_path.exists():
            raise CausanticError(f"no memory yet at {settings.db_path}; run `causantic ingest` first")
        with open_store(settings.db_path) as store:
            report = rebuild(store, settings=settings.topics)
        _emit(args, {**report.as_dict(), "text": report.summary()}, report.summary())
        return 0
    with open_store(settings.db_path, readonly=True) as store:
        if action == "show":
            view = maps.show_topic(store.conn, args.id, project=args.project, limit=args.limit)
            _emit(args, view.as_dict(), view.text)
        else:
            found = maps.list_topics(store.conn, project=args.project, sort=args.sort,
                                     limit=args.limit)
            _emit(args, found.as_dict(), found.text)
    return 0


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.store import open_store
    from causantic.transfer.archive import export

    with open_store(settings.db_path, readonly=True) as store:
        report = export(store, Path(args.path), project=args.project, since=args.since,
                        vectors=args.vectors)
    _emit(args, {**report.as_dict(), "text": report.text}, report.text)
    return 0


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.config import peer_store_path

    source = args.source
    if args.path is None and source == "causantic":
        raise UsageError("import needs a FILE written by `causantic export` (or --from "
                         "claude-mem / --from episodic-memory)")
    path = Path(args.path) if args.path else peer_store_path(source)
    report: ImportReport | ForeignReport
    if source == "causantic":
        # deferred: a command loads only its own code: hooks and --help start here
        from causantic.ingest.exclude import Exclusions
        from causantic.transfer.archive import import_archive

        report = import_archive(settings.db_path, path, dry_run=args.dry_run,
                                exclusions=Exclusions(settings.ingest.exclude))
    elif source == "claude-mem":
        # deferred: a command loads only its own code: hooks and --help start here
        from causantic.transfer import claude_mem

        report = claude_mem.import_database(settings, path, dry_run=args.dry_run)
    else:
        # deferred: a command loads only its own code: hooks and --help start here
        from causantic.transfer import episodic_memory

        report = episodic_memory.import_archive(settings, path, dry_run=args.dry_run)
    _emit(args, {**report.as_dict(), "text": report.text}, report.text)
    return 0


def cmd_dashboard(args: argparse.Namespace, settings: Settings) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.dashboard.server import serve

    def ready(url: str) -> None:
        print(f"causantic dashboard: {url}  (read-only, this machine only; Ctrl-C stops it)",
              flush=True)

    try:
        serve(settings, port=args.port, open_browser=not args.no_open, ready=ready)
    except KeyboardInterrupt:
        print("\ncausantic dashboard stopped.", flush=True)
    return 0


def _hook_argv(argv: Sequence[str]) -> tuple[list[str], str | None] | None:
    """(hook args, --db) for `[--db PATH] hook EVENT ...`, parsed without argparse (hooks are
    a fast path: see causantic/claude/hooks.py); None for every other command line."""
    rest = list(argv)
    if "hook" not in rest[:3]:
        return None
    from causantic.claude.events import EVENTS  # stdlib-only module

    db = None
    if rest[:1] == ["--db"] and len(rest) >= 2:
        db, rest = rest[1], rest[2:]
    elif rest and rest[0].startswith("--db="):
        db, rest = rest[0][len("--db="):], rest[1:]
    if len(rest) >= 2 and rest[0] == "hook" and (rest[1] in EVENTS or rest[1] == "ingest-worker"):
        return rest[1:], db
    return None


def _query(args: argparse.Namespace) -> str:
    """The query argument, refused when blank (retrieval itself answers blank text quietly,
    as hooks need; a person typing it made a mistake)."""
    if not args.query.strip():
        raise UsageError("the query is empty; give some words, identifiers or error text")
    return str(args.query)


def _project_here(args: argparse.Namespace, conn, *, anywhere: bool = False) -> None:
    """Without --project, use the project of the current folder (named as ingest names it);
    ``anywhere``: all projects (None) when memory holds nothing of it, else that is an error."""
    if args.project:
        return
    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.retrieval.projects import memory_here, project_here

    args.project = (memory_here(conn, os.getcwd()) if anywhere
                    else project_here(conn, os.getcwd(), how="pass --project NAME"))


def _emit(args: argparse.Namespace, payload: dict[str, object], text: str) -> None:
    print(json.dumps(payload, ensure_ascii=False) if args.json else text)


# -- parser --------------------------------------------------------------------------------


def _positive(value: str) -> int:
    # deferred: a command loads only its own code: hooks and --help start here
    import argparse

    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return n


def project_word(p: argparse.ArgumentParser) -> None:
    """An optional PROJECT word, as people type it (`causantic lessons cli`); `main` merges
    it into ``--project``."""
    p.add_argument("project_word", nargs="?", metavar="PROJECT", help="the same as --project")


def _merge_project_word(args: argparse.Namespace) -> None:
    word = getattr(args, "project_word", None)
    if word is None:
        return
    if args.project is not None and args.project != word:
        raise UsageError(f"two projects given ({word!r} and --project {args.project!r}); "
                         "name one")
    args.project = word


def _global_options(p: argparse.ArgumentParser) -> None:
    """--db and --debug after a command too (`causantic search X --db f.db`): SUPPRESS leaves
    a value given before the command in place when the command's own is absent."""
    # deferred: a command loads only its own code: hooks and --help start here
    import argparse

    p.add_argument("--db", metavar="PATH", default=argparse.SUPPRESS,
                   help="database file (default ~/.causantic/memory.db)")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="show tracebacks on errors")


def _parser_class() -> type[argparse.ArgumentParser]:
    """argparse's parser, whose usage errors say how to give text starting with "-" (a flag
    such as `--no-verify`) as the query: argparse takes it for an unknown option."""
    # deferred: a command loads only its own code: hooks and --help start here
    import argparse
    from typing import NoReturn

    class Parser(argparse.ArgumentParser):
        given: list[str] = []

        def parse_known_args(self, args=None, namespace=None):  # argparse calls it for each subparser too
            self.given = list(sys.argv[1:] if args is None else args)
            return super().parse_known_args(args, namespace)

        def error(self, message: str) -> NoReturn:
            query = next((a for a in self._actions if a.dest == "query"), None)
            dashed = next((a for a in self.given if a.startswith("-") and a != "--"
                           and a.split("=", 1)[0] not in self._option_string_actions), None)
            if (query is not None and dashed is not None and message.startswith(
                    "the following arguments are required:")
                    and str(query.metavar or query.dest) in message):
                message += (f' (text that starts with "-" goes after "--": '
                            f"{self.prog} -- {_shell_quote(dashed)})")
            super().error(message)

    return Parser


def _shell_quote(text: str) -> str:
    # deferred: only for a usage error
    import shlex

    return shlex.quote(text)


def build_parser() -> argparse.ArgumentParser:
    # deferred: a command loads only its own code: hooks and --help start here
    import argparse

    parser = _parser_class()(
        prog="causantic",
        description="Long-term memory for Claude Code: ingest transcripts, search and recall them.",
    )
    from causantic.buildinfo import VersionAction  # here, not at the top: off the hook path

    parser.add_argument("--version", action=VersionAction)
    parser.add_argument("--db", metavar="PATH", help="database file (default ~/.causantic/memory.db)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(name: str, handler: Handler, summary: str, example: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=summary, description=f"{summary}\n\nexample: {example}",
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.set_defaults(handler=handler)
        _global_options(p)
        return p

    def query_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--project", help="only this project: its name (see list-projects), a "
                       "worktree folder name, or a path inside it such as .")
        p.add_argument("--limit", type=_positive,
                       help="most results (default: as many as the budget holds)")
        p.add_argument("--max-tokens", type=_positive, help=f"answer budget in tokens (default {ANSWER_TOKENS})")
        p.add_argument("--json", action="store_true", help="one JSON object (fields: README, Commands)")

    p = command("ingest", cmd_ingest, "Read transcripts into memory, incrementally.",
                "causantic ingest ~/.claude/projects/-home-me-repo")
    p.add_argument("paths", nargs="*", help="transcript files or folders (default: all of ~/.claude/projects)")
    p.add_argument("--json", action="store_true", help="print the ingest report as JSON")
    p.add_argument("--no-embed", action="store_true",
                   help="do not embed the new chunks now (`causantic embed` does it later)")

    p = command("embed", cmd_embed, "Embed the chunks still without vectors (resumable).",
                "causantic embed")
    p.add_argument("--limit", type=_positive, help="embed at most this many chunks")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(reindex=False)

    p = command("reindex", cmd_embed, "Re-embed chunks whose vectors come from another model.",
                "causantic reindex")
    p.add_argument("--limit", type=_positive, help="re-embed at most this many chunks")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(reindex=True)

    p = command("search", cmd_search, "What do we know about X: ranked answers (each match "
                "with what answered it in its turn).",
                'causantic search "daytona pty log streaming" --project napoli-matcha')
    p.add_argument("query")
    query_options(p)
    p.add_argument("--mode", choices=("keyword", "vector", "hybrid"), default="hybrid",
                   help="retrieval mode (default hybrid: keywords and vectors fused)")
    p.add_argument("--cluster-expansion", action=argparse.BooleanOptionalAction,
                   help="hybrid: add topic siblings of the best hits (default: config "
                   "[search] cluster_expansion, off)")

    p = command("stats", cmd_stats, "Counts of what is stored (all of it, or one project's).",
                "causantic stats cli --json")
    project_word(p)
    p.add_argument("--project", help="only what this project holds: its name (see "
                   "list-projects), a worktree folder name, or a path inside it such as .")
    p.add_argument("--json", action="store_true")

    p = command("list-projects", cmd_list_projects, "Projects in memory.", "causantic list-projects")
    p.add_argument("--json", action="store_true")

    p = command("list-sessions", cmd_list_sessions, "Sessions of a project, newest first.",
                "causantic list-sessions cli --days-back 7")
    project_word(p)
    p.add_argument("--project", help="the project (default: the current folder's)")
    p.add_argument("--days-back", type=_positive, help="only sessions active in the last N days")
    p.add_argument("--limit", type=_positive, default=50)
    p.add_argument("--json", action="store_true")

    for name, handler, summary, example in (
        ("recall", cmd_recall,
         "How did we get here: the chain of past work that led to what the query finds, "
         "oldest first.", 'causantic recall "how did we fix the flaky PTY streaming" '
         "--project napoli-matcha"),
        ("predict", cmd_predict,
         "What came next: the chain of past work that followed what the context finds, "
         "oldest first.", 'causantic predict "TestRetryBackoff is flaky on CI" --max-tokens 2000'),
    ):
        p = command(name, handler, summary, example)
        p.add_argument("query", metavar="QUERY" if name == "recall" else "CONTEXT")
        query_options(p)
        p.add_argument("--max-chars", type=_positive, help="hard cap on the answer's characters")

    p = command("reconstruct", cmd_reconstruct,
                "What happened: a project's chunks in time order, a briefing of its last "
                "session for resuming work, or, given a question, the session it is about "
                "(how it started, the matching turns, how it ended; then other sessions' "
                "matches in the budget left).",
                'causantic reconstruct "the session where we cleaned up the streamed output" '
                "--project napoli-matcha")
    p.add_argument("query", nargs="?", metavar="QUESTION",
                   help="what happened in the session where ...: answer it from the session of "
                   "search's best match (or --session), ignoring --mode")
    p.add_argument("--project", help="the project (see list-projects; default: --session's, "
                   "else the current folder's)")
    p.add_argument("--mode", choices=("timeline", "briefing"), default="timeline",
                   help="timeline (default): chunks oldest first, newest kept when the budget "
                   "is tight; briefing: the session's state plus its recent conversation")
    p.add_argument("--session", metavar="ID", help="one session (at least 8 characters of its id)")
    p.add_argument("--previous-session", action="store_true",
                   help="the session before the newest one (or before --current-session)")
    p.add_argument("--current-session", metavar="ID", help="with --previous-session: the session "
                   "to look back from")
    p.add_argument("--days-back", type=_positive, help="only the last N days")
    p.add_argument("--from", dest="start", metavar="WHEN",
                   help="from this date or time (ISO, UTC unless it has an offset)")
    p.add_argument("--to", dest="end", metavar="WHEN",
                   help="up to this date (the whole day) or time")
    p.add_argument("--max-tokens", type=_positive, help=f"answer budget in tokens (default {ANSWER_TOKENS})")
    p.add_argument("--max-chars", type=_positive, help="hard cap on the answer's characters")
    p.add_argument("--json", action="store_true", help="one JSON object (fields: README, Commands)")

    command("serve-mcp", cmd_serve_mcp, "Run the MCP server on stdin/stdout (Claude Code starts it).",
            "claude mcp add --scope user causantic -- $(which python) -m causantic serve-mcp")

    p = command("hook", cmd_hook, "Run a Claude Code hook: reads the hook JSON on stdin.",
                "echo '{\"cwd\": \"'$PWD'\"}' | causantic hook session-start")
    p.add_argument("event", choices=("session-start", "user-prompt-submit", "pre-compact",
                                     "session-end"))

    p = command("hook-status", cmd_hook_status, "When each hook last ran, and its last error.",
                "causantic hook-status")
    p.add_argument("--json", action="store_true")

    for name, handler, summary, example in (
        ("install", cmd_install, "Add causantic's hooks and MCP server to Claude Code's settings.",
         "causantic install --dry-run"),
        ("uninstall", cmd_uninstall, "Remove exactly what install added.", "causantic uninstall"),
    ):
        p = command(name, handler, summary, example)
        p.add_argument("--dry-run", action="store_true", help="show the diff, write nothing")
        if name == "install":
            p.add_argument("--print", action="store_true",
                           help="print the `claude mcp add` line instead of editing ~/.claude.json")

    p = command("doctor", cmd_doctor, "Check the database, model, vectors, hooks and MCP setup.",
                "causantic doctor")
    p.add_argument("--json", action="store_true")

    p = command("benchmark", cmd_benchmark,
                "Score this memory out of 100: health, self-retrieval, chains, latency.",
                "causantic benchmark --quick")
    p.add_argument("--quick", action="store_true",
                   help="fewer samples and a partial integrity check (seconds, not minutes)")
    p.add_argument("--samples", type=_positive, help="chunks to search for (default 40, quick 6)")
    p.add_argument("--json", action="store_true")

    p = command("topics", cmd_topics,
                "Topics: groups of similar chunks, named by their distinctive terms "
                "(largest first; --sort recent for latest activity first).",
                "causantic topics --project cli; causantic topics show 3; causantic topics rebuild")
    p.add_argument("--project", help="only topics with chunks of this project (sizes count them); "
                   "a name, worktree folder name or path")
    p.add_argument("--sort", choices=("size", "recent"), default="size",
                   help="size (default): largest first; recent: latest activity first")
    p.add_argument("--limit", type=_positive, help="most topics to list")
    p.add_argument("--json", action="store_true", help="one JSON object")
    topics_sub = p.add_subparsers(dest="topics_command", metavar="ACTION")
    t = topics_sub.add_parser("rebuild", help="cluster every chunk vector into topics again",
                              description="Cluster every chunk vector into topics (HDBSCAN) and "
                              "replace the stored topics in one transaction.\n\nexample: "
                              "causantic topics rebuild",
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("--json", action="store_true", help="print the report as JSON")
    _global_options(t)
    t = topics_sub.add_parser("show", help="a topic's chunks, oldest first",
                              description="A topic's chunks, oldest first: header and first "
                              "line of each.\n\nexample: causantic topics show 3 --limit 20",
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("id", type=_positive, metavar="ID", help="topic number (see `causantic topics`)")
    t.add_argument("--project", help="only chunks of this project (name, worktree folder or path)")
    t.add_argument("--limit", type=_positive, default=50, help="most chunks (default 50)")
    t.add_argument("--json", action="store_true", help="one JSON object")
    _global_options(t)

    p = command("lessons", cmd_lessons,
                "Lessons from past errors: what failed, what was tried, what fixed it.",
                "causantic lessons cli --json")
    project_word(p)
    p.add_argument("--project", help="only this project")
    p.add_argument("--limit", type=_positive, default=50, help="most lessons (default 50)")
    p.add_argument("--unresolved", action="store_true", help="only errors never solved")
    p.add_argument("--no-git", action="store_true",
                   help="do not ask git whether each fix is still in the repository")
    p.add_argument("--rebuild", action="store_true",
                   help="derive every session's lessons again first (databases from before lessons)")
    p.add_argument("--json", action="store_true", help="one JSON object")

    p = command("ledger", cmd_ledger,
                "What memory was injected into Claude Code (hooks, MCP answers), and its tokens.",
                "causantic ledger --session 61cb3ba8")
    p.add_argument("--session", help="only this session (8+ characters of its id)")
    p.add_argument("--limit", type=_positive, default=100, help="most entries (default 100)")
    p.add_argument("--json", action="store_true", help="one JSON object")

    p = command("redact", cmd_redact,
                "Redact secrets from stdin, or --rescan: redact again what older versions stored.",
                "causantic redact --rescan; git diff | causantic redact")
    p.add_argument("--rescan", action="store_true",
                   help="redact the stored chunks, titles, states and topic names again with the "
                   "current rules (vectors of changed chunks are dropped; `embed` redoes them)")
    p.add_argument("--json", action="store_true", help="print the rescan report as JSON")

    p = command("forget", cmd_forget, "Delete memory for good (previews unless --yes).",
                'causantic forget --project cli --query "api key" --threshold 0.7')
    p.add_argument("--project", help="only this project (name, worktree folder or path)")
    p.add_argument("--session", help="only this session id")
    p.add_argument("--after", help="only chunks from this ISO date/time on")
    p.add_argument("--before", help="only chunks before this ISO date/time")
    p.add_argument("--query", help="only chunks similar to this text")
    p.add_argument("--threshold", type=float, default=0.6,
                   help="similarity needed with --query, 0-1 (default 0.6)")
    p.add_argument("--memory", action="append", metavar="ID",
                   help="forget this memory (id or unique prefix; repeatable)")
    p.add_argument("--yes", action="store_true", help="delete (default: preview only)")
    p.add_argument("--json", action="store_true")

    # deferred: a command loads only its own code: hooks and --help start here
    from causantic.memory.commands import add_parsers

    add_parsers(command, _positive)

    p = command("dashboard", cmd_dashboard,
                "A local read-only web page over memory: overview, timeline, search, topics.",
                "causantic dashboard --no-open")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--no-open", action="store_true", help="print the address, open no browser")

    p = command("export", cmd_export,
                "Write memory to a versioned JSON Lines archive (gzip if the name ends in .gz).",
                "causantic export memory.jsonl.gz --project cli --since 2026-01-01")
    p.add_argument("path", metavar="FILE", help="the archive to write (.jsonl or .jsonl.gz)")
    p.add_argument("--project", help="only this project")
    p.add_argument("--since", metavar="WHEN", help="only chunks and sessions active since this "
                   "ISO date or time")
    p.add_argument("--vectors", action="store_true",
                   help="include the chunk vectors (larger; `causantic embed` can recompute them)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")

    p = command("import", cmd_import,
                "Merge an archive written by `causantic export`, or another tool's memory "
                "(claude-mem, episodic-memory), into memory (idempotent).",
                "causantic import memory.jsonl.gz --dry-run; causantic import --from claude-mem")
    p.add_argument("path", metavar="FILE", nargs="?",
                   help="the archive to read; with --from, the other tool's database or archive "
                   "folder (default: where that tool keeps it)")
    p.add_argument("--from", dest="source", choices=("causantic", "claude-mem", "episodic-memory"),
                   default="causantic", help="what FILE is (default: a causantic export)")
    p.add_argument("--dry-run", action="store_true", help="show what would change, write nothing")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    hook = _hook_argv(sys.argv[1:] if argv is None else argv)
    if hook is not None:
        # deferred: a command loads only its own code: hooks and --help start here
        from causantic.claude.hooks import run

        return run(*hook)
    bad = _not_utf8(sys.argv[1:] if argv is None else argv)
    if bad is not None:
        print(f"causantic: argument {bad!r} is not valid UTF-8; causantic reads and stores "
              "text as UTF-8 (rename the file or retype the argument)", file=sys.stderr)
        return 2
    parser = build_parser()
    args = parser.parse_args(argv)  # argparse itself exits 2 on bad usage
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        _merge_project_word(args)
        return args.handler(args, load_settings(args.db))
    except CausanticError as exc:
        if args.debug:
            raise
        print(f"causantic: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("causantic: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the edge: one line, never a traceback unless --debug
        if args.debug:
            raise
        print(f"causantic: {describe(exc)}", file=sys.stderr)
        return 1


def _not_utf8(argv: Sequence[str]) -> str | None:
    """The first argument holding bytes that are not UTF-8 (shown with U+FFFD), if any."""
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            return arg.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return None
