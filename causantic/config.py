"""Settings: defaults < config file < environment < command-line flags.

`load_settings` is the only place that reads `os.environ`, `~` or the config file; everything
else receives a frozen `Settings` (or the values it needs) as arguments.

The config file is TOML at `<home>/config.toml` (home = `CAUSANTIC_HOME`, default
`~/.causantic`). Recognised keys::

    db = "/path/to/memory.db"          # default <home>/memory.db
    claude_dir = "~/.claude"           # where Claude Code keeps projects/ (CLAUDE_CONFIG_DIR)

    [redaction]
    patterns = { internal-token = "itk_[A-Za-z0-9]{32}" }

    [search]
    max_tokens = 4000                  # default answer budget
    cluster_expansion = false          # topic siblings of top hits (measured worse: off)

    [topics]
    threshold = 0.10                   # angular distance for a new chunk to join a topic
    min_cluster_size = 4
    min_samples = 4

    [hooks]
    user_prompt_submit = false         # keyword recall on every prompt (off by default)
    session_start_chars = 6000         # briefing cap (never above 9,500)
    prompt_chars = 1500

    [lessons]                          # read by causantic.claude.lesson_hook (Settings.raw)
    hook = true                        # the PostToolUseFailure lesson lookup
    bash_output = false                # also PostToolUse on Bash (exit 0, error printed)
    match = "exact"                    # or "message"
    unresolved = false
    builtin_tools = false
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from causantic.errors import UsageError
from causantic.records import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    from typing import Any

HARD_INJECTION_CAP = 9_500  # Claude Code truncates injected context over 10,000 characters.


class Settings(Record):
    """Everything the rest of causantic needs to know about its environment (read-only).

    A `Record` rather than a frozen dataclass: every hook loads settings, and importing
    dataclasses and generating the class would cost each hook run several milliseconds.
    """

    __slots__ = ("home", "db_path", "claude_dir", "config_path", "redaction_patterns",
                 "max_tokens", "hook_prompt_recall", "session_start_chars", "prompt_chars",
                 "model_dir", "raw", "claude_json_path")
    home: Path
    db_path: Path
    claude_dir: Path
    config_path: Path
    redaction_patterns: Mapping[str, str]
    max_tokens: int
    hook_prompt_recall: bool
    session_start_chars: int
    prompt_chars: int
    model_dir: Path | None
    raw: Mapping[str, Any]
    # Claude Code's user state file (user-scope MCP servers): ~/.claude.json, or
    # $CLAUDE_CONFIG_DIR/.claude.json when that variable is set. None = beside claude_dir.
    claude_json_path: Path | None

    def __init__(
        self,
        home: Path,
        db_path: Path,
        claude_dir: Path,
        config_path: Path,
        redaction_patterns: Mapping[str, str] | None = None,
        max_tokens: int = 4000,
        hook_prompt_recall: bool = False,
        session_start_chars: int = 6000,
        prompt_chars: int = 1500,
        model_dir: Path | None = None,
        raw: Mapping[str, Any] | None = None,
        claude_json_path: Path | None = None,
    ) -> None:
        init = object.__setattr__
        init(self, "home", home)
        init(self, "db_path", db_path)
        init(self, "claude_dir", claude_dir)
        init(self, "config_path", config_path)
        init(self, "redaction_patterns", {} if redaction_patterns is None else redaction_patterns)
        init(self, "max_tokens", max_tokens)
        init(self, "hook_prompt_recall", hook_prompt_recall)
        init(self, "session_start_chars", session_start_chars)
        init(self, "prompt_chars", prompt_chars)
        init(self, "model_dir", model_dir)
        init(self, "raw", {} if raw is None else raw)
        init(self, "claude_json_path", claude_json_path)

    @property
    def projects_dir(self) -> Path:
        """The folder Claude Code writes session transcripts under."""
        return self.claude_dir / "projects"

    @property
    def state_dir(self) -> Path:
        """Where hook status, locks and logs live (beside the database by default)."""
        return self.home


def load_settings(
    db: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Resolve settings from defaults, the config file, the environment and flags.

    Parameters
    ----------
    db : an explicit `--db PATH` flag, which wins over everything else.
    env : the environment to read (default `os.environ`); tests pass their own.

    Raises
    ------
    UsageError : the config file is not valid TOML or has a value of the wrong type.
    """
    env = os.environ if env is None else env
    user_home = Path(env.get("HOME") or os.path.expanduser("~"))
    home = _expand(env.get("CAUSANTIC_HOME"), user_home) or user_home / ".causantic"
    config_path = home / "config.toml"
    cfg = _read_config(config_path)

    db_path = (
        _expand(db, user_home)
        or _expand(env.get("CAUSANTIC_DB"), user_home)
        or _expand(_get(cfg, "db", str), user_home)
        or home / "memory.db"
    )
    claude_dir = (
        _expand(env.get("CLAUDE_CONFIG_DIR"), user_home)
        or _expand(_get(cfg, "claude_dir", str), user_home)
        or user_home / ".claude"
    )
    redaction = _get(cfg, "redaction", dict) or {}
    patterns = _get(redaction, "patterns", dict, "redaction.patterns") or {}
    for kind, regex in patterns.items():
        if not isinstance(regex, str):
            raise UsageError(f"{config_path}: redaction.patterns.{kind} must be a string regex")
    search = _get(cfg, "search", dict) or {}
    hooks = _get(cfg, "hooks", dict) or {}
    model_dir = _expand(env.get("CAUSANTIC_MODEL_DIR"), user_home)

    return Settings(
        home=home,
        db_path=db_path,
        claude_dir=claude_dir,
        config_path=config_path,
        redaction_patterns=dict(patterns),
        max_tokens=_get(search, "max_tokens", int, "search.max_tokens") or 4000,
        hook_prompt_recall=bool(_get(hooks, "user_prompt_submit", bool, "hooks.user_prompt_submit")),
        session_start_chars=min(
            HARD_INJECTION_CAP,
            _get(hooks, "session_start_chars", int, "hooks.session_start_chars") or 6000,
        ),
        prompt_chars=min(
            HARD_INJECTION_CAP, _get(hooks, "prompt_chars", int, "hooks.prompt_chars") or 1500
        ),
        model_dir=model_dir,
        raw=cfg,
        claude_json_path=(
            claude_dir / ".claude.json" if env.get("CLAUDE_CONFIG_DIR") else user_home / ".claude.json"
        ),
    )


def with_overrides(settings: Settings, **changes: Any) -> Settings:
    """A copy of `settings` with some fields replaced (flags applied after loading).

    Raises
    ------
    TypeError : a name that is not a field of Settings.
    """
    unknown = set(changes) - set(Settings.__slots__)
    if unknown:
        raise TypeError(f"Settings has no field {', '.join(sorted(unknown))}")
    values = {name: getattr(settings, name) for name in Settings.__slots__}
    return Settings(**{**values, **changes})


def _read_config(path: Path) -> dict[str, Any]:
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    import tomllib  # only when there is a file: hooks of users without one skip ~5 ms

    try:
        with f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path} is not valid TOML ({exc}); fix or remove it") from exc
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc


def _get(table: Mapping[str, Any], key: str, kind: type, name: str | None = None) -> Any:
    value = table.get(key)
    if value is None:
        return None
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise UsageError(f"config: {name or key} must be a {kind.__name__}, not {value!r}")
    return value


def _expand(value: str | os.PathLike[str] | None, user_home: Path) -> Path | None:
    if value is None or str(value) == "":
        return None
    text = str(value)
    if text == "~" or text.startswith("~/"):
        text = str(user_home) + text[1:]
    return Path(text).absolute()


def peer_store_path(tool: str, env: Mapping[str, str] | None = None) -> Path:
    """Where another memory tool keeps its data by default (for `causantic import --from`):
    claude-mem's database, or episodic-memory's conversation archive."""
    env = os.environ if env is None else env
    user_home = Path(env.get("HOME") or os.path.expanduser("~"))
    if tool == "claude-mem":
        base = _expand(env.get("CLAUDE_MEM_DATA_DIR"), user_home) or user_home / ".claude-mem"
        return base / "claude-mem.db"
    base = (_expand(env.get("EPISODIC_MEMORY_CONFIG_DIR"), user_home)
            or _expand(env.get("PERSONAL_SUPERPOWERS_DIR"), user_home)
            or (_expand(env.get("XDG_CONFIG_HOME"), user_home) or user_home / ".config")
            / "superpowers")
    return base / "conversation-archive"
