"""install / uninstall / doctor on a temporary HOME with someone else's settings already there."""

from __future__ import annotations

import copy
import json
import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from causantic.claude.install import is_ours

from .conftest import PYTHON, SAMPLES

THEIR_SETTINGS = {
    "permissions": {"allow": ["Bash(git status)"]},
    "cleanupPeriodDays": 60,
    "hooks": {
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "~/bin/greet.sh"}]}
        ],
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit-bash", "timeout": 5}]}
        ],
        "SessionEnd": [{"hooks": [{"type": "command", "command": "notify-send bye"}]}],
    },
    "model": "opus",
}
THEIR_CLAUDE_JSON = {
    "numStartups": 42,
    "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": [], "env": {}}},
    "projects": {"/home/me/repo": {"mcpServers": {}, "allowedTools": []}},
}


def _causantic(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([PYTHON, "-m", "causantic", *args], capture_output=True, text=True,
                          timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture
def claude_home(private_home: Path) -> dict[str, Path]:
    """CLAUDE_CONFIG_DIR with a settings.json and a .claude.json that belong to the user."""
    claude = private_home / ".claude"
    claude.mkdir()
    settings = claude / "settings.json"
    settings.write_text(json.dumps(THEIR_SETTINGS, indent=4) + "\n")
    state = claude / ".claude.json"  # $CLAUDE_CONFIG_DIR/.claude.json: the variable is set
    state.write_text(json.dumps(THEIR_CLAUDE_JSON, indent=2) + "\n")
    return {"settings": settings, "state": state, "home": private_home}


def _strip_ours(settings: dict) -> dict:
    out = copy.deepcopy(settings)
    for event, groups in list(out.get("hooks", {}).items()):
        kept = []
        for g in groups:
            rest = [h for h in g["hooks"] if not is_ours(h.get("command"))]
            if rest:
                kept.append({**g, "hooks": rest})
        if kept:
            out["hooks"][event] = kept
        else:
            del out["hooks"][event]
    return out


def _ours(settings: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for event, groups in settings.get("hooks", {}).items():
        for g in groups:
            for h in g["hooks"]:
                if is_ours(h.get("command")):
                    found.setdefault(event, []).append({**h, "matcher": g.get("matcher")})
    return found


def test_install_merges_without_touching_other_entries(claude_home: dict[str, Path]):
    """The failure users of other tools report: an installer that rewrote settings.json."""
    out = _causantic("install").stdout
    settings = json.loads(claude_home["settings"].read_text())
    assert _strip_ours(settings) == THEIR_SETTINGS
    ours = _ours(settings)
    assert sorted(ours) == ["PostToolUseFailure", "PreCompact", "SessionEnd", "SessionStart",
                            "SubagentStop"]  # prompt recall and Bash-output lessons are off
    for event, timeout in (("SessionStart", 10), ("PreCompact", 30), ("SessionEnd", 10),
                           ("SubagentStop", 10)):
        (handler,) = ours[event]
        argv = shlex.split(handler["command"])
        assert os.path.isabs(argv[0]) and argv[0] == os.path.abspath(PYTHON)
        assert argv[1:3] == ["-m", "causantic"] and argv[-2] == "hook"
        assert handler["type"] == "command" and handler["timeout"] == timeout
    assert ours["SessionStart"][0]["matcher"] == "startup|resume|clear|compact|fork"
    assert ours["PreCompact"][0]["matcher"] is None  # manual and auto
    state = json.loads(claude_home["state"].read_text())
    assert state["mcpServers"]["github"] == THEIR_CLAUDE_JSON["mcpServers"]["github"]
    assert state["projects"] == THEIR_CLAUDE_JSON["projects"] and state["numStartups"] == 42
    server = state["mcpServers"]["causantic"]
    assert server["type"] == "stdio" and server["command"] == os.path.abspath(PYTHON)
    assert server["args"] == ["-m", "causantic", "serve-mcp"]
    # Backups of both files, private, identical to what was there before.
    backups = sorted((claude_home["home"] / ".causantic" / "backups").iterdir())
    assert len(backups) == 2
    for b in backups:
        assert b.stat().st_mode & 0o777 == 0o600
        assert json.loads(b.read_text()) in (THEIR_SETTINGS, THEIR_CLAUDE_JSON)
    assert "backup:" in out
    assert ".nocausantic" in out and "<private>" in out  # the privacy controls, named once


def test_install_twice_changes_nothing(claude_home: dict[str, Path]):
    """Idempotent: the second run writes no file and makes no backup."""
    _causantic("install")
    first = {k: (p.read_bytes(), p.stat().st_mtime_ns) for k, p in claude_home.items() if p.is_file()}
    backups = len(list((claude_home["home"] / ".causantic" / "backups").iterdir()))
    out = _causantic("install").stdout
    assert "already up to date" in out
    assert {k: (p.read_bytes(), p.stat().st_mtime_ns)
            for k, p in claude_home.items() if p.is_file()} == first
    assert len(list((claude_home["home"] / ".causantic" / "backups").iterdir())) == backups


def test_uninstall_removes_exactly_what_install_added(claude_home: dict[str, Path]):
    """Other hooks in the same events (SessionStart, SessionEnd) and other servers survive."""
    _causantic("install")
    _causantic("uninstall")
    assert json.loads(claude_home["settings"].read_text()) == THEIR_SETTINGS
    assert json.loads(claude_home["state"].read_text()) == THEIR_CLAUDE_JSON
    assert "already up to date" in _causantic("uninstall").stdout


def test_install_replaces_an_older_causantic_entry(claude_home: dict[str, Path]):
    """An upgrade or a moved archive must not leave the old hook beside the new one."""
    data = copy.deepcopy(THEIR_SETTINGS)
    old = {"type": "command", "command": "/old/python3 -S /old/causantic.pyz hook session-start",
           "timeout": 60}
    data["hooks"]["SessionStart"][0]["hooks"].append(old)
    claude_home["settings"].write_text(json.dumps(data))
    _causantic("install")
    settings = json.loads(claude_home["settings"].read_text())
    assert len(_ours(settings)["SessionStart"]) == 1
    assert "/old/" not in json.dumps(settings)
    assert _strip_ours(settings) == THEIR_SETTINGS  # their group kept, only our handler moved


def test_dry_run_shows_a_diff_and_writes_nothing(claude_home: dict[str, Path]):
    before = {p: p.read_bytes() for p in (claude_home["settings"], claude_home["state"])}
    out = _causantic("install", "--dry-run").stdout
    assert "+++" in out and "hook session-start" in out and '"causantic"' in out
    assert "nothing was written" in out
    assert {p: p.read_bytes() for p in before} == before
    assert not (claude_home["home"] / ".causantic" / "backups").exists()


def test_install_creates_missing_files(private_home: Path):
    """No settings.json yet (a fresh Claude Code): create it rather than skip the hooks."""
    _causantic("install")
    settings = private_home / ".claude" / "settings.json"
    assert sorted(_ours(json.loads(settings.read_text()))) == [
        "PostToolUseFailure", "PreCompact", "SessionEnd", "SessionStart", "SubagentStop"]
    assert settings.stat().st_mode & 0o777 == 0o600
    state = json.loads((private_home / ".claude" / ".claude.json").read_text())
    assert list(state["mcpServers"]) == ["causantic"]


def test_invalid_json_is_never_overwritten(claude_home: dict[str, Path]):
    claude_home["settings"].write_text('{"hooks": {')
    proc = _causantic("install", check=False)
    assert proc.returncode == 1 and "not valid JSON" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert claude_home["settings"].read_text() == '{"hooks": {'


def test_print_gives_the_claude_mcp_add_line_instead(claude_home: dict[str, Path]):
    before = claude_home["state"].read_bytes()
    out = _causantic("install", "--print").stdout
    line = next(ln.strip() for ln in out.splitlines() if ln.strip().startswith("claude mcp add"))
    assert shlex.split(line)[:7] == ["claude", "mcp", "add", "--scope", "user", "causantic", "--"]
    assert shlex.split(line)[-1] == "serve-mcp"
    assert claude_home["state"].read_bytes() == before
    assert _ours(json.loads(claude_home["settings"].read_text()))  # hooks still installed


def test_prompt_hook_follows_the_config_switch(claude_home: dict[str, Path]):
    """UserPromptSubmit costs a process per prompt: registered only when switched on."""
    config = claude_home["home"] / ".causantic" / "config.toml"
    config.parent.mkdir(mode=0o700, exist_ok=True)
    config.write_text("[hooks]\nuser_prompt_submit = true\n")
    _causantic("install")
    assert "UserPromptSubmit" in _ours(json.loads(claude_home["settings"].read_text()))
    config.write_text("[hooks]\nuser_prompt_submit = false\n")
    _causantic("install")
    settings = json.loads(claude_home["settings"].read_text())
    assert "UserPromptSubmit" not in _ours(settings)
    assert _strip_ours(settings) == THEIR_SETTINGS


def test_sub_agent_recall_hooks_follow_the_config_switch(claude_home: dict[str, Path]):
    """PreToolUse on Agent/Task and SubagentStart: registered only with subagent_recall, and
    doctor asks for them then."""
    config = claude_home["home"] / ".causantic" / "config.toml"
    config.parent.mkdir(mode=0o700, exist_ok=True)
    _causantic("install")
    assert not {"PreToolUse", "SubagentStart"} & set(_ours(json.loads(
        claude_home["settings"].read_text())))
    config.write_text("[hooks]\nsubagent_recall = true\n")
    doctor = _causantic("doctor", check=False).stdout
    assert "not registered" in doctor and "PreToolUse, SubagentStart" in doctor, doctor
    _causantic("install")
    ours = _ours(json.loads(claude_home["settings"].read_text()))
    assert [h["matcher"] for h in ours["PreToolUse"]] == ["Agent|Task"]
    assert ours["PreToolUse"][0]["command"].endswith("hook pre-tool-use")
    assert ours["SubagentStart"][0]["command"].endswith("hook subagent-start")
    config.write_text("")
    _causantic("install")
    settings = json.loads(claude_home["settings"].read_text())
    assert not {"PreToolUse", "SubagentStart"} & set(_ours(settings))
    assert _strip_ours(settings) == THEIR_SETTINGS


def test_installed_command_runs_as_claude_code_would(claude_home: dict[str, Path]):
    """Claude Code runs the command string with `sh -c` and the hook JSON on stdin."""
    _causantic("install")
    command = _ours(json.loads(claude_home["settings"].read_text()))["SessionStart"][0]["command"]
    proc = subprocess.run(["sh", "-c", command], input='{"cwd": "/tmp", "source": "startup"}',
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == ""


@pytest.mark.parametrize(
    ("command", "ours"),
    [
        ("/usr/bin/python3.11 -S /opt/causantic.pyz hook session-start", True),
        ("/home/me/.venv/bin/python -m causantic --db /x.db hook pre-compact", True),
        ("'/path with space/causantic' hook session-end", True),
        ("~/bin/greet.sh", False),
        ("other-tool hook session-start", False),
        ("causantic-fan-club --say hook", False),
        (None, False),
    ],
)
def test_is_ours(command: object, ours: bool):
    assert is_ours(command) is ours


def test_doctor_reports_problems_then_health(claude_home: dict[str, Path]):
    """Before ingest and install doctor fails with one line per problem; after, it passes."""
    projects = claude_home["home"] / ".claude" / "projects"
    source = SAMPLES / "-home-dev-acme-api"
    target = projects / source.name
    shutil.copytree(source, target)
    old = time.time() - 58 * 86400  # cleanupPeriodDays is 60 in their settings
    for path in target.rglob("*.jsonl"):
        os.utime(path, (old, old))
    claude_home["state"].write_text(json.dumps(THEIR_CLAUDE_JSON))

    sick = _causantic("doctor", check=False)
    assert sick.returncode == 1
    problems = [ln for ln in sick.stdout.splitlines() if ln.startswith("problem")]
    assert any("database" in p and "causantic ingest" in p for p in problems)
    assert any("hooks" in p and "causantic install" in p for p in problems)
    assert any(p.startswith("problem  mcp") for p in problems)
    assert any("cleanupPeriodDays" in p and "60 days" in p for p in problems)

    _causantic("ingest", "--no-embed")
    _causantic("install")
    well = _causantic("doctor", "--json", check=False)
    report = json.loads(well.stdout)
    levels = {c["name"]: c["level"] for c in report["checks"]}
    assert levels["database"] == levels["hooks"] == levels["mcp"] == "ok", report["text"]
    assert levels["transcripts"] == "ok"
    assert (well.returncode == 0) is report["healthy"]


def test_doctor_notices_a_moved_archive_and_disabled_hooks(claude_home: dict[str, Path]):
    """Hooks that point at an archive that is gone fail silently in Claude Code: say so."""
    data = copy.deepcopy(THEIR_SETTINGS)
    data["disableAllHooks"] = True
    for event, name in (("SessionStart", "session-start"), ("PreCompact", "pre-compact"),
                        ("SessionEnd", "session-end")):
        data["hooks"].setdefault(event, []).append({"hooks": [{
            "type": "command", "timeout": 10,
            "command": f"{PYTHON} -S /gone/causantic.pyz hook {name}"}]})
    claude_home["settings"].write_text(json.dumps(data))
    report = json.loads(_causantic("doctor", "--json", check=False).stdout)
    hooks = [c["message"] for c in report["checks"] if c["name"] == "hooks"]
    assert any("disableAllHooks" in m for m in hooks)
    assert sum("/gone/causantic.pyz does not exist" in m for m in hooks) == 3
    assert report["healthy"] is False


def test_doctor_asks_to_reinstall_when_a_matcher_is_outdated(claude_home: dict[str, Path]):
    """Claude Code 2.1.214 gave forked sessions their own SessionStart source ("fork", before
    "resume"); an install from before it briefs no fork until `install` runs again."""
    _causantic("install")
    data = json.loads(claude_home["settings"].read_text())
    (group,) = [g for g in data["hooks"]["SessionStart"] if "causantic" in json.dumps(g)]
    group["matcher"] = "startup|resume|clear|compact"
    claude_home["settings"].write_text(json.dumps(data))
    report = json.loads(_causantic("doctor", "--json", check=False).stdout)
    hooks = [c for c in report["checks"] if c["name"] == "hooks"]
    assert [c["level"] for c in hooks] == ["problem"]
    assert "SessionStart: matcher 'startup|resume|clear|compact', this version registers" \
        " 'startup|resume|clear|compact|fork'; run `causantic install` again" in hooks[0]["message"]
    assert "updated SessionStart hook" in _causantic("install").stdout
    report = json.loads(_causantic("doctor", "--json", check=False).stdout)
    assert [c["level"] for c in report["checks"] if c["name"] == "hooks"] == ["ok"]


def test_user_mcp_servers_live_where_claude_code_keeps_them(tmp_path: Path):
    """~/.claude.json normally; inside CLAUDE_CONFIG_DIR when that is set (Claude Code's rule)."""
    from causantic.claude.install import claude_json_path
    from causantic.config import load_settings

    plain = load_settings(env={"HOME": str(tmp_path)})
    assert claude_json_path(plain) == tmp_path / ".claude.json"
    moved = load_settings(env={"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "cc")})
    assert claude_json_path(moved) == tmp_path / "cc" / ".claude.json"
    assert moved.claude_dir == tmp_path / "cc"


def test_the_plugin_registers_the_hooks_of_the_one_event_table():
    """plugin/hooks/hooks.json is written by hand: it must name the same events, commands,
    matchers and timeouts as `causantic.claude.events.HOOKS` (PostToolUse on Bash is left
    out there: it is off by default and a plugin cannot make it conditional)."""
    from causantic.claude.events import HOOKS

    plugin = json.loads((Path(__file__).parent.parent / "plugin/hooks/hooks.json").read_text())
    found = sorted(
        (event, h["command"].rsplit(" hook ", 1)[1], group.get("matcher"), h["timeout"])
        for event, groups in plugin["hooks"].items() for group in groups for h in group["hooks"])
    assert found == sorted(row for row in HOOKS if row[0] != "PostToolUse")
