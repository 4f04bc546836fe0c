"""`causantic install` / `uninstall`: merge our hooks and MCP server into Claude Code's settings.

What install writes (nothing else in either file changes):

- `<claude dir>/settings.json` (`~/.claude/settings.json`, or `$CLAUDE_CONFIG_DIR/settings.json`):
  one handler group per event under `hooks`, each a `command` hook with an absolute
  interpreter path and a timeout in seconds::

      SessionStart      matcher "startup|resume|clear|compact|fork"  … hook session-start  10 s
      UserPromptSubmit  only with [hooks] user_prompt_submit    … hook user-prompt-submit   5 s
      PreToolUse        matcher "Agent|Task", only with [hooks] subagent_recall  … hook pre-tool-use 5 s
      SubagentStart     only with [hooks] subagent_recall       … hook subagent-start      5 s
      PreCompact        (all: manual and auto)                  … hook pre-compact         30 s
      SessionEnd        (all reasons)                           … hook session-end         10 s
      SubagentStop      (all agent types)                       … hook subagent-stop       10 s
      PostToolUse       matcher "Bash", only with [lessons] bash_output  … hook post-tool-use 5 s
      PostToolUseFailure (all tools; not with [lessons] hook = false) … hook post-tool-use 5 s

  (the table is `causantic.claude.events.HOOKS`)

  The command is `<abs python> -S <abs causantic.pyz> hook <event>` when running from the
  archive, else `<abs python> -m causantic hook <event>`; `--db PATH` is added when install
  was given one. The file is created when missing.
- `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`): `mcpServers.causantic =
  {"type": "stdio", "command": <abs python>, "args": [..., "serve-mcp"], "env": {}}` (user
  scope). `--print` prints the equivalent `claude mcp add` line instead.

Our entries are recognised by their command (a token naming causantic, then `hook <event>`),
so uninstall removes exactly those and install replaces them (an upgrade moves the path). A
group is dropped only when it held nothing but ours. Install is idempotent: when the wanted
entries are already in place a file is not rewritten at all. Before a file is changed it is
copied to `<causantic home>/backups/<name>.<UTC time>` (0600); files are replaced atomically
and a symlinked settings.json keeps its link. A file that is not valid JSON is never touched.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import shlex
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from causantic.claude.events import HOOKS, SUBAGENT_RECALL
from causantic.claude.launcher import self_command, shell_join
from causantic.claude.lesson_hook import registered
from causantic.config import Settings
from causantic.errors import CausanticError
from causantic.fsutil import atomic_write, private_dir

SERVER_NAME = "causantic"


@dataclass(frozen=True)
class HookSpec:
    event: str  # Claude Code's event name
    command: str  # our `hook` subcommand
    matcher: str | None
    timeout: int  # seconds


HOOK_SPECS = tuple(HookSpec(*row) for row in HOOKS)
OUR_COMMANDS = frozenset(s.command for s in HOOK_SPECS)


@dataclass(frozen=True)
class FileChange:
    """One config file before and after (text None = the file does not exist)."""

    path: Path
    before: str | None
    after: str | None
    summary: list[str]

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        a = [] if self.before is None else self.before.splitlines(keepends=True)
        b = [] if self.after is None else self.after.splitlines(keepends=True)
        return "".join(difflib.unified_diff(a, b, f"{self.path} (now)", f"{self.path} (after)"))


@dataclass(frozen=True)
class Plan:
    """Everything install or uninstall would change."""

    changes: list[FileChange]
    notes: list[str]

    def diff(self) -> str:
        parts = [c.diff() for c in self.changes if c.changed]
        return "".join(parts) if parts else "No changes: everything is already in place.\n"


# -- paths and commands --------------------------------------------------------------------


def settings_path(settings: Settings) -> Path:
    """Claude Code's user settings file (hooks live here)."""
    return settings.claude_dir / "settings.json"


def claude_json_path(settings: Settings) -> Path:
    """Claude Code's user state file (user-scope MCP servers live here)."""
    return settings.claude_json_path or settings.claude_dir.parent / ".claude.json"


def base_command(db: str | None = None) -> list[str]:
    """argv prefix for hook and MCP commands: absolute interpreter, archive or module, --db."""
    argv = self_command()
    if db:
        argv += ["--db", str(Path(db).absolute())]
    return argv


def hook_command(spec: HookSpec, db: str | None = None) -> str:
    return shell_join(base_command(db) + ["hook", spec.command])


def mcp_entry(db: str | None = None) -> dict[str, Any]:
    argv = base_command(db) + ["serve-mcp"]
    return {"type": "stdio", "command": argv[0], "args": argv[1:], "env": {}}


def mcp_add_line(db: str | None = None) -> str:
    """The `claude mcp add` command that registers the same server at user scope."""
    argv = base_command(db) + ["serve-mcp"]
    return shell_join(["claude", "mcp", "add", "--scope", "user", SERVER_NAME, "--"] + argv)


def is_ours(command: object) -> bool:
    """Whether a hook command is one of causantic's (any version, any install location)."""
    if not isinstance(command, str):
        return False
    try:
        tokens = shlex.split(command)
    except ValueError:
        tokens = command.split()
    names = [os.path.basename(t) for t in tokens]
    if not any("causantic" in n for n in names):
        return False
    return any(t == "hook" and i + 1 < len(tokens) and tokens[i + 1] in OUR_COMMANDS
               for i, t in enumerate(tokens))


# -- plans ---------------------------------------------------------------------------------


def wanted_specs(settings: Settings) -> list[HookSpec]:
    """The hooks install registers under these settings (some are switched on in config)."""
    return [s for s in HOOK_SPECS
            if (s.command != "user-prompt-submit" or settings.hooks.user_prompt_submit)
            and (s.command not in SUBAGENT_RECALL or settings.hooks.subagent_recall)
            and (s.command != "post-tool-use" or registered(settings, s.event))]


def plan_install(
    settings: Settings, *, db: str | None = None, register_mcp: bool = True
) -> Plan:
    """What install would change, without changing anything.

    Raises CausanticError when a config file exists but is not a JSON object.
    """
    specs = wanted_specs(settings)
    path = settings_path(settings)
    before, data = _load(path)
    after_data = copy.deepcopy(data)
    summary = _merge_hooks(after_data, specs, db)
    changes = [_change(path, before, data, after_data, summary)]
    notes = []
    if not settings.hooks.user_prompt_submit:
        notes.append("UserPromptSubmit recall is off ([hooks] user_prompt_submit = false).")
    if not settings.hooks.subagent_recall:
        notes.append("Sub-agent recall is off ([hooks] subagent_recall = false).")
    if register_mcp:
        cpath = claude_json_path(settings)
        cbefore, cdata = _load(cpath)
        cafter = copy.deepcopy(cdata)
        servers = cafter.setdefault("mcpServers", {})
        if not isinstance(servers, dict):
            raise CausanticError(f"{cpath}: mcpServers is not an object; fix it by hand first")
        wanted = mcp_entry(db)
        csummary = []
        if servers.get(SERVER_NAME) != wanted:
            csummary.append(
                f"{'updated' if SERVER_NAME in servers else 'added'} MCP server "
                f"{SERVER_NAME!r} (user scope)"
            )
            servers[SERVER_NAME] = wanted
        changes.append(_change(cpath, cbefore, cdata, cafter, csummary))
        if csummary:
            notes.append(
                f"A running Claude Code may rewrite {cpath.name} from memory: restart it now. "
                "If `causantic doctor` later misses the MCP server, run the line "
                "`causantic install --print` shows."
            )
    else:
        notes.append(f"Register the MCP server yourself:\n  {mcp_add_line(db)}")
    return Plan(changes, notes)


def plan_uninstall(settings: Settings) -> Plan:
    """What uninstall would change: our hook handlers and our MCP server entry, nothing else."""
    path = settings_path(settings)
    before, data = _load(path)
    after = copy.deepcopy(data)
    summary = _remove_hooks(after)
    changes = [_change(path, before, data, after, summary)]
    cpath = claude_json_path(settings)
    cbefore, cdata = _load(cpath)
    cafter = copy.deepcopy(cdata)
    csummary = []
    servers = cafter.get("mcpServers")
    if isinstance(servers, dict) and SERVER_NAME in servers:
        del servers[SERVER_NAME]
        csummary.append(f"removed MCP server {SERVER_NAME!r}")
    changes.append(_change(cpath, cbefore, cdata, cafter, csummary))
    return Plan(changes, [])


def apply(plan: Plan, settings: Settings, now: datetime | None = None) -> list[str]:
    """Write the changed files (backing each up first); return one report line per file."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    lines = []
    for change in plan.changes:
        if not change.changed:
            lines.append(f"{change.path}: already up to date")
            continue
        backup = None
        if change.before is not None:
            folder = private_dir(settings.home / "backups")
            backup = folder / f"{change.path.name.lstrip('.')}.{stamp}"
            fd = os.open(backup, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(change.before)
        else:
            private_dir(change.path.parent)
        assert change.after is not None
        atomic_write(change.path, change.after)
        done = "; ".join(change.summary) or "rewritten"
        lines.append(f"{change.path}: {done}" + (f" (backup: {backup})" if backup else " (created)"))
    return lines


# -- merging -------------------------------------------------------------------------------


def _merge_hooks(data: dict[str, Any], specs: list[HookSpec], db: str | None) -> list[str]:
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise CausanticError('settings.json: "hooks" is not an object; fix it by hand first')
    summary = []
    wanted_events = {s.event for s in specs}
    for spec in specs:
        group: dict[str, Any] = {}
        if spec.matcher:
            group["matcher"] = spec.matcher
        group["hooks"] = [{"type": "command", "command": hook_command(spec, db),
                           "timeout": spec.timeout}]
        groups = hooks.setdefault(spec.event, [])
        if not isinstance(groups, list):
            raise CausanticError(f'settings.json: hooks.{spec.event} is not a list; fix it by hand first')
        ours = [g for g in groups if _count_ours(g)]
        if ours == [group] and sum(_count_ours(g) for g in groups) == 1:
            continue
        existed = bool(ours)
        _strip_ours(hooks, spec.event)
        hooks.setdefault(spec.event, []).append(group)
        summary.append(f"{'updated' if existed else 'added'} {spec.event} hook")
    # A hook install no longer wants (user-prompt-submit switched off) is removed.
    for spec in HOOK_SPECS:
        if spec.event not in wanted_events and spec.event in hooks and _strip_ours(hooks, spec.event):
            summary.append(f"removed {spec.event} hook")
    return summary


def _remove_hooks(data: dict[str, Any]) -> list[str]:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return []
    summary = []
    for event in list(hooks):
        if _strip_ours(hooks, event):
            summary.append(f"removed {event} hook")
    if summary and not hooks:
        del data["hooks"]
    return summary


def _strip_ours(hooks: dict[str, Any], event: str) -> int:
    """Remove our handlers from one event; drop groups and the event left empty by that."""
    groups = hooks.get(event)
    if not isinstance(groups, list):
        return 0
    removed = 0
    kept = []
    for g in groups:
        n = _count_ours(g)
        if n:
            removed += n
            rest = [h for h in g["hooks"] if not (isinstance(h, dict) and is_ours(h.get("command")))]
            if rest:
                kept.append({**g, "hooks": rest})
        else:
            kept.append(g)
    if removed:
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    return removed


def _count_ours(group: object) -> int:
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        return 0
    return sum(1 for h in group["hooks"] if isinstance(h, dict) and is_ours(h.get("command")))


# -- files ---------------------------------------------------------------------------------


def _load(path: Path) -> tuple[str | None, dict[str, Any]]:
    """(text, parsed object) of a JSON config file; (None, {}) when it does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, {}
    except OSError as exc:
        raise CausanticError(f"cannot read {path}: {exc.strerror}") from exc
    if not text.strip():
        return text, {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CausanticError(
            f"{path} is not valid JSON ({exc}); fix it first, causantic will not overwrite it"
        ) from exc
    if not isinstance(data, dict):
        raise CausanticError(f"{path} does not hold a JSON object; fix it first")
    return text, data


def _change(
    path: Path, before: str | None, data: dict[str, Any], after: dict[str, Any], summary: list[str]
) -> FileChange:
    if after == data:
        return FileChange(path, before, before, [])
    return FileChange(path, before, _dump(after, before), summary)


def _dump(data: dict[str, Any], like: str | None) -> str:
    indent = _indent_of(like) if like else 2
    return json.dumps(data, indent=indent, ensure_ascii=False) + "\n"


def _indent_of(text: str) -> int:
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" ")
        if stripped and len(line) != len(stripped):
            return len(line) - len(stripped)
    return 2
