"""`causantic doctor`: is memory healthy and wired into Claude Code?

Checks, in order: the database (opens, `PRAGMA quick_check`, schema version), the embedding
model (files match their manifest), vector support (sqlite-vec loads), hook registration in
settings.json (and that its interpreter and archive still exist), MCP registration in
~/.claude.json, the hooks' last runs (hook-status), and Claude Code's `cleanupPeriodDays`
(default 30): Claude Code deletes transcripts older than that, so transcripts not ingested
yet are at risk.

Each check gives one line: `ok`, `warning` (worth knowing, not broken) or `problem` (exit 1).
"""

from __future__ import annotations

import json
import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

import apsw

from causantic.claude import status
from causantic.claude.install import SERVER_NAME, claude_json_path, is_ours, wanted_specs
from causantic.config import Settings
from causantic.errors import CausanticError
from causantic.ingest.exclude import Exclusions, file_cwd
from causantic.ingest.rescan import needs_rescan
from causantic.model import MODEL_ID, load_verified
from causantic.redact import RULES_VERSION
from causantic.retrieval.lessons import ledger_summary
from causantic.store import open_store
from causantic.store.counts import count_chunks
from causantic.store.files import ingested_sizes
from causantic.store.projects import project_dirs
from causantic.store.redaction import rules_version
from causantic.store.schema import MIGRATIONS, quick_check, schema_version
from causantic.store.topics import build_info
from causantic.store.vec0 import ensure_vec, vec_version
from causantic.store.vectors import counts as vector_counts
from causantic.topics.maintain import rebuild_due
from causantic.transcripts.discover import discover

DEFAULT_CLEANUP_DAYS = 30
AT_RISK_DAYS = 7  # un-ingested transcripts this close to deletion make doctor fail


@dataclass(frozen=True)
class Check:
    name: str
    level: str  # "ok" | "warning" | "problem"
    message: str

    def line(self) -> str:
        return f"{self.level:<8} {self.name}: {self.message}"


@dataclass(frozen=True)
class Report:
    checks: list[Check]

    @property
    def healthy(self) -> bool:
        return not any(c.level == "problem" for c in self.checks)

    @property
    def text(self) -> str:
        lines = [c.line() for c in self.checks]
        problems = sum(c.level == "problem" for c in self.checks)
        lines.append("")
        lines.append("All good." if not problems else
                     f"{problems} problem{'s' if problems != 1 else ''} found.")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, object]:
        return {"healthy": self.healthy,
                "checks": [{"name": c.name, "level": c.level, "message": c.message}
                           for c in self.checks],
                "text": self.text}


def run_doctor(settings: Settings, now: float | None = None) -> Report:
    """Run every check; never raises for what it finds (that is what the report is for)."""
    now = time.time() if now is None else now
    checks: list[Check] = []
    checks += _database(settings)
    checks.append(_model(settings))
    checks.append(_vectors(settings))
    settings_json = _read_json(settings.claude_dir / "settings.json")
    checks += _hooks(settings, settings_json)
    checks.append(_mcp(settings))
    checks += _hook_runs(settings)
    checks.append(_transcripts(settings, settings_json, now))
    checks += _injections(settings)
    scope = _scope(settings)
    if scope is not None:
        checks.append(scope)
    return Report(checks)


# -- checks --------------------------------------------------------------------------------


def _database(settings: Settings) -> list[Check]:

    path = settings.db_path
    if not path.exists():
        return [Check("database", "problem",
                      f"no database at {path}; run `causantic ingest` to build it")]
    try:
        with open_store(path, readonly=True) as store:
            conn = store.conn
            result = quick_check(conn)
            version = schema_version(conn)
            chunks = count_chunks(conn)
            redaction = _redaction(conn)
            kept_out = _kept_out(conn, settings)
            topics = _topics(conn, settings)
    except CausanticError as exc:  # names the file and says what to do: advice first
        return [Check("database", "problem", _one_line(exc))]
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        return [Check("database", "problem", f"{path}: {_one_line(exc)}")]
    if result != ["ok"]:
        more = f"; {len(result) - 1} more" if len(result) > 1 else ""
        first = " ".join(x for x in str(result[0]).splitlines() if not x.startswith("***"))
        return [Check("database", "problem",
                      f"{path} is damaged; move it aside and run `causantic ingest` to rebuild it "
                      f"from your transcripts (integrity check: {first[:160]}{more})")]
    latest = len(MIGRATIONS)
    schema = f"schema {version}" + ("" if version == latest else
                                    f" (upgraded to {latest} on the next write)")
    out = [Check("database", "ok", f"{path} ({chunks:,} chunks, {schema}, integrity ok)")]
    if redaction is not None:
        out.append(redaction)
    if kept_out is not None:
        out.append(kept_out)
    if topics is not None:
        out.append(topics)
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        out.append(Check("permissions", "warning",
                         f"{path} is readable by others (mode {mode:o}); `chmod 600 {path}`"))
    return out


def _topics(conn, settings: Settings) -> Check | None:
    """A warning when the topics are due for a rebuild that embedding will not do by itself
    (memory is past `[topics] auto_rebuild`, or that is 0)."""
    chunks = vector_counts(conn).by_model.get(MODEL_ID, 0)
    limit = settings.topics.auto_rebuild
    if chunks <= limit or rebuild_due(conn, max_chunks=chunks) is None:
        return None  # embedding rebuilds them when due, or they are current
    built = build_info(conn)
    since = f"built from {built.chunks:,} chunks" if built else "none built yet"
    return Check("topics", "warning",
                 f"topics are out of date ({since}, memory holds {chunks:,} chunk vectors) and "
                 f"embedding rebuilds them only up to [topics] auto_rebuild = {limit:,}: run "
                 "`causantic topics rebuild`")


def _redaction(conn) -> Check | None:
    """A warning when stored text went through older redaction rules than the current ones."""

    if not needs_rescan(conn):
        return None
    stored = rules_version(conn)
    return Check("redaction", "warning",
                 f"stored text was redacted under {'rules ' + str(stored) if stored else 'older rules'}"
                 f" (current: {RULES_VERSION}); secrets found since may be stored: run "
                 "`causantic redact --rescan`")


def _kept_out(conn, settings: Settings) -> Check | None:
    """A warning naming projects kept out of memory that still hold chunks stored before."""
    exclusions = Exclusions(settings.ingest.exclude)
    found: dict[str, str] = {}
    for d in project_dirs(conn):
        if d.project not in found:
            reason = exclusions.reason(d.cwd or d.project_path)
            if reason:
                found[d.project] = reason
    if not found:
        return None
    named = "; ".join(f"{name} ({why})" for name, why in found.items())
    first = next(iter(found))
    return Check("kept out", "warning",
                 f"kept out of memory but holding chunks stored before: {named}; delete them "
                 f"with `causantic forget --project {first} --yes`")


def _scope(settings: Settings) -> Check | None:
    """What Claude Code sessions see when `[memory] scope` narrows it: "why does Claude not
    find what `causantic search` finds?" has this answer."""
    if settings.memory.scope == "project":
        seen = "their own project's memory"
    elif settings.memory.scope == "worktree":
        seen = ("their own project's memory, and of it only their worktree's and the main "
                "checkout's")
    else:
        return None
    return Check("scope", "ok", f"Claude Code sessions see {seen} ([memory] scope = "
                 f'"{settings.memory.scope}"); causantic commands at the shell see everything')


def _model(settings: Settings) -> Check:

    try:
        verified = load_verified(settings.model_dir)
    except CausanticError as exc:
        return Check("model", "problem", f"{exc} (search falls back to keywords meanwhile)")
    # deferred: heavy: pulls numpy, only needed here
    from causantic.model import embedder as embed

    if not embed.available(settings.model_dir):
        return Check("model", "problem", "the model files are fine but numpy, onnxruntime or "
                     "tokenizers is missing; reinstall causantic")
    return Check("model", "ok", f"{verified.manifest.get('model_id')} in {verified.directory} "
                 "(checksums match)")


def _vectors(settings: Settings) -> Check:


    conn = apsw.Connection(":memory:")
    try:
        if not ensure_vec(conn):
            return Check("vectors", "problem",
                         "sqlite-vec is missing or does not load: search is keyword-only")
        version = vec_version(conn)
    finally:
        conn.close()
    return Check("vectors", "ok", f"sqlite-vec {version} loads")


def _injections(settings: Settings) -> list[Check]:
    """Tokens injected per recent session, from the ledger (`causantic ledger`)."""

    if not settings.db_path.exists():
        return []
    try:
        with open_store(settings.db_path, readonly=True) as store:
            summary = ledger_summary(store.conn)
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        return [Check("injections", "warning", f"the ledger cannot be read: {_one_line(exc)}")]
    return [Check("injections", "ok", "tokens injected per recent session: "
                  + (summary or "none yet") + " (`causantic ledger`)")]


def _hooks(settings: Settings, settings_json: dict | str | None) -> list[Check]:

    path = settings.claude_dir / "settings.json"
    if isinstance(settings_json, str):
        return [Check("hooks", "problem", f"{path}: {settings_json}")]
    if settings_json is None:
        return [Check("hooks", "problem", f"{path} does not exist; run `causantic install`")]
    out = []
    if settings_json.get("disableAllHooks") is True:
        out.append(Check("hooks", "problem",
                         f'{path} has "disableAllHooks": true; no hook runs, causantic included'))
    raw_hooks = settings_json.get("hooks")
    hooks: dict = raw_hooks if isinstance(raw_hooks, dict) else {}
    wanted = wanted_specs(settings)
    missing, broken, found = [], [], []
    for spec in wanted:
        groups = [(g, h) for g in hooks.get(spec.event) or [] if isinstance(g, dict)
                  for h in g.get("hooks") or [] if isinstance(h, dict) and is_ours(h.get("command"))]
        if not groups:
            missing.append(spec.event)
            continue
        found.append(spec.event)
        for group, handler in groups:
            problem = _command_problem(str(handler.get("command")))
            if problem:
                broken.append(f"{spec.event}: {problem}")
            elif group.get("matcher") != spec.matcher:  # e.g. SessionStart before "fork"
                broken.append(f"{spec.event}: matcher {group.get('matcher')!r}, this version"
                              f" registers {spec.matcher!r}")
    if missing:
        out.append(Check("hooks", "problem",
                         f"not registered in {path}: {', '.join(missing)}; run `causantic install`"))
    for b in broken:
        out.append(Check("hooks", "problem", f"{b}; run `causantic install` again"))
    if found and not missing and not broken:
        out.append(Check("hooks", "ok", f"{', '.join(found)} registered in {path}"))
    return out


def _mcp(settings: Settings) -> Check:

    path = claude_json_path(settings)
    data = _read_json(path)
    if isinstance(data, str):
        return Check("mcp", "problem", f"{path}: {data}")
    entry = ((data or {}).get("mcpServers") or {}).get(SERVER_NAME)
    if not isinstance(entry, dict):
        return Check("mcp", "problem", f"MCP server {SERVER_NAME!r} is not registered in {path}; "
                     "run `causantic install` (or `causantic install --print` for the "
                     "`claude mcp add` line)")
    argv = [str(entry.get("command", ""))] + [str(a) for a in entry.get("args") or []]
    problem = _argv_problem(argv)
    if problem:
        return Check("mcp", "problem", f"{SERVER_NAME!r} in {path}: {problem}; run `causantic install`")
    return Check("mcp", "ok", f"{SERVER_NAME!r} registered at user scope in {path}")


def _hook_runs(settings: Settings) -> list[Check]:

    entries = status.read_status(settings.home)
    out = []
    for name, e in sorted(entries.items()):
        if not e.get("success"):
            out.append(Check("hook runs", "problem", f"the last {name} run failed: {e.get('error')}"
                             f" (see {status.log_path(settings.home)})"))
    if entries and not out:
        out.append(Check("hook runs", "ok", f"last runs succeeded ({', '.join(sorted(entries))})"))
    return out


def _transcripts(settings: Settings, settings_json: dict | str | None, now: float) -> Check:
    days = DEFAULT_CLEANUP_DAYS
    if isinstance(settings_json, dict) and isinstance(settings_json.get("cleanupPeriodDays"), int | float):
        days = int(settings_json["cleanupPeriodDays"])
    where = settings.projects_dir
    if not where.is_dir():
        return Check("transcripts", "warning", f"no Claude Code transcripts at {where} yet")

    files = discover([where])
    ingested = _ingested_sizes(settings)
    exclusions = Exclusions(settings.ingest.exclude)
    behind = []
    kept_out = 0
    for tf in files:
        try:
            st = tf.path.stat()
        except OSError:
            continue
        if ingested.get(str(tf.path.resolve())) != st.st_size:
            if exclusions.reason(file_cwd(tf.path)):
                kept_out += 1  # never read, on purpose
                continue
            behind.append(st.st_mtime)
    keep = f"Claude Code deletes transcripts after {days} days (cleanupPeriodDays)"
    if not behind:
        out = f"{len(files) - kept_out} of {len(files)}" if kept_out else f"all {len(files)}"
        return Check("transcripts", "ok",
                     f"{out} transcript files ingested"
                     + (f" ({kept_out} kept out of memory)" if kept_out else "") + f"; {keep}")
    at_risk = sum(1 for m in behind if now - m > (days - AT_RISK_DAYS) * 86400)
    msg = (f"{len(behind)} of {len(files)} transcript files are not ingested (or grew since); "
           f"{keep}: run `causantic ingest` now")
    if at_risk:
        return Check("transcripts", "problem",
                     f"{msg} ({at_risk} will be deleted within {AT_RISK_DAYS} days)")
    return Check("transcripts", "warning", msg)


# -- helpers -------------------------------------------------------------------------------


def _ingested_sizes(settings: Settings) -> dict[str, int]:
    if not settings.db_path.exists():
        return {}

    try:
        with open_store(settings.db_path, readonly=True) as store:
            return ingested_sizes(store.conn)
    except Exception:  # noqa: BLE001 - the database check reports it
        return {}


def _command_problem(command: str) -> str | None:
    try:
        argv = shlex.split(command)
    except ValueError:
        return "the command is not valid shell"
    return _argv_problem(argv)


def _argv_problem(argv: list[str]) -> str | None:
    if not argv or not argv[0]:
        return "no command"
    exe = argv[0]
    if os.path.isabs(exe) and not os.access(exe, os.X_OK):
        return f"{exe} does not exist or is not executable"
    for a in argv[1:]:
        if a.endswith(".pyz") and not os.path.isfile(a):
            return f"{a} does not exist"
    return None


def _read_json(path: Path) -> dict | str | None:
    """The parsed object, None when missing, or a string saying what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return f"unreadable or not valid JSON ({_one_line(exc)})"
    return data if isinstance(data, dict) else "does not hold a JSON object"


def _one_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
