"""Settings: defaults < config file < environment < command-line flags.

`load_settings` is the only place that reads `os.environ`, `~` or the config file; everything
else receives a frozen `Settings` (or the values it needs) as arguments.

The config file is TOML at `<home>/config.toml` (home = `CAUSANTIC_HOME`, default
`~/.causantic`). Every key it may hold is one row of `KEYS` below: its section, name, type,
default, allowed values, what to do with a bad value, and a one-line description. The file
is checked against that table once, when settings load, into typed read-only sections
(`settings.search.max_tokens`, `settings.topics.threshold`, `settings.hooks`,
`settings.ingest`, `settings.redaction`, `settings.memory`, `settings.lessons`); nothing
else reads the parsed file. The README's configuration table is `reference()` (a test keeps
the two equal).
Unknown keys are ignored.

A bad value is, per key, what it has always been: most are a one-line `UsageError` (exit
code 2) naming the key; the `[memory]` options fall back to their default when of the wrong
type; `[lessons]` switches are read as true/false whatever they hold; the answer budget and
the hook caps treat 0 as "default" and are held under `HARD_INJECTION_CAP`. Errors are
raised when settings load, so a bad value stops every command (and every hook records it),
not only the ones that read its section.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from causantic.errors import UsageError
from causantic.records import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    from typing import Any, Self

HARD_INJECTION_CAP = 9_500  # Claude Code truncates injected context over 10,000 characters.
#: Default answer budget (tokens) of search, recall, predict and reconstruct.
ANSWER_TOKENS = 4000
#: Default caps (characters, marker included) of the session-start briefing and prompt recall.
SESSION_START_CHARS = 6000
PROMPT_CHARS = 1500
#: Environment variable that points at a built model directory (else the packaged one).
MODEL_DIR_ENV = "CAUSANTIC_MODEL_DIR"
#: Observation types and their default base importance (Engram's table plus `procedure`).
DEFAULT_IMPORTANCE: dict[str, float] = {
    "instruction": 10,
    "error": 9,
    "decision": 8,
    "code_change": 7,
    "insight": 7,
    "procedure": 7,
    "test_result": 6,
    "general": 5,
    "tool_output": 3,
}


class Key:
    """One key of config.toml (a row of `KEYS`; not changed after import).

    `kind`: bool (true/false), flag (any value, read as true/false), int (whole number),
    number, str, path (a string; ~ expanded), regexes (table of kind = regex), importance
    (table of type = number), globs (list of strings). `low`/`high` bound numbers
    inclusively, `above` exclusively; `choices` lists the strings allowed. `on_bad` says
    what a bad value does: "error" (a UsageError), "type" (wrong type: the default; out of
    range: an error), "default" (the default), "bound" (wrong type: an error; below `low`:
    the default; above `high`: `high`).
    A plain class, not a `Record`: every hook builds this table, and `Record`'s checked
    initialisation made that 140 µs instead of 8.
    """

    __slots__ = ("section", "name", "kind", "default", "doc", "low", "high", "above", "choices",
                 "on_bad")
    section: str  # "" = the top level
    name: str
    kind: str
    default: Any
    doc: str
    low: float | None
    high: float | None
    above: float | None
    choices: tuple[str, ...]
    on_bad: str

    def __init__(self, section: str, name: str, kind: str, default: Any, doc: str,
                 low: float | None = None, high: float | None = None,
                 above: float | None = None, choices: tuple[str, ...] = (),
                 on_bad: str = "error") -> None:
        self.section, self.name, self.kind, self.default, self.doc = section, name, kind, default, doc
        self.low, self.high, self.above, self.choices, self.on_bad = low, high, above, choices, on_bad

    @property
    def path(self) -> str:
        """`section.name` as written in messages (just `name` at the top level)."""
        return f"{self.section}.{self.name}" if self.section else self.name


#: Every key of config.toml, in the README's order.
KEYS: tuple[Key, ...] = (
    Key("", "db", "path", None, "the database file (default <home>/memory.db; CAUSANTIC_DB "
        "and --db win)"),
    Key("", "claude_dir", "path", None, "where Claude Code keeps projects/ (default ~/.claude; "
        "CLAUDE_CONFIG_DIR wins)"),
    Key("redaction", "patterns", "regexes", {}, "your own secret formats: kind = regex "
        "(see Privacy)"),
    Key("ingest", "exclude", "globs", (), "folders (absolute or ~/ globs) and project names "
        "kept out of memory, like a `.nocausantic` file (see Privacy)"),
    Key("ingest", "readers", "int", 0, "processes that read transcripts while a large ingest "
        "writes (0: one per core, up to 4; 1: the ingest process alone; Linux only)", low=0,
        on_bad="bound"),
    Key("search", "max_tokens", "int", ANSWER_TOKENS, "default answer budget in tokens",
        low=1, on_bad="bound"),
    Key("search", "cluster_expansion", "bool", False, "add topic siblings of the best hits "
        "(measured worse: off)"),
    Key("topics", "threshold", "number", 0.10, "angular distance within which a new chunk "
        "joins a topic", above=0, high=1),
    Key("topics", "min_cluster_size", "int", 4, "HDBSCAN's smallest topic", low=2),
    Key("topics", "min_samples", "int", 4, "HDBSCAN's density (the point itself included)",
        low=1),
    Key("topics", "auto_rebuild", "int", 20000, "after embedding, rebuild topics when there "
        "are none or memory grew by a quarter since, up to this many chunks (0: never)", low=0),
    Key("hooks", "user_prompt_submit", "bool", False, "prompt recall on every prompt (run "
        "`causantic install` again after changing)"),
    Key("hooks", "subagent_recall", "bool", False, "recall for a sub-agent's task, injected as "
        "it starts (run `causantic install` again after changing)"),
    Key("hooks", "session_start_chars", "int", SESSION_START_CHARS, "briefing cap in "
        "characters, marker included", low=1, high=HARD_INJECTION_CAP, on_bad="bound"),
    Key("hooks", "prompt_chars", "int", PROMPT_CHARS, "prompt recall cap in characters",
        low=1, high=HARD_INJECTION_CAP, on_bad="bound"),
    Key("hooks", "session_start_output", "str", "json", '"text" for Claude Code versions that '
        "show a hook error on SessionStart JSON", choices=("json", "text"), on_bad="default"),
    Key("hooks", "prompt_min_coverage", "number", 0.5, "share of the prompt's IDF-weighted "
        "terms a recalled chunk must contain"),
    Key("memory", "scope", "str", "all", 'what a Claude Code session can see: every project\'s '
        'memory ("all"), only its own ("project": MCP tools and hooks; memories remembered '
        'for every project stay shared), or only its own worktree of it and the main checkout '
        '("worktree")', choices=("all", "project", "worktree")),
    Key("memory", "auto", "bool", True, "automatic observations at ingest", on_bad="type"),
    Key("memory", "in_search", "bool", True, "memories beside search/recall results",
        on_bad="type"),
    Key("memory", "relevance_weight", "number", 0.4, "ranking weight of relevance", low=0,
        on_bad="type"),
    Key("memory", "importance_weight", "number", 0.3, "ranking weight of importance", low=0,
        on_bad="type"),
    Key("memory", "recency_weight", "number", 0.3, "ranking weight of recency", low=0,
        on_bad="type"),
    Key("memory", "recency", "str", "logical", "recency in sessions since, or in days",
        choices=("logical", "wall"), on_bad="type"),
    Key("memory", "near_days", "number", 7.0, "near duplicates are looked for this far back",
        on_bad="type"),
    Key("memory", "ttl_days", "number", 0.0, "> 0: prune old low-importance automatic "
        "observations after ingest", on_bad="type"),
    Key("memory", "prune_below", "number", 4.0, "importance under which pruning applies",
        on_bad="type"),
    Key("memory", "importance", "importance", DEFAULT_IMPORTANCE, "base importance of an "
        "observation type", low=1, high=10),
    Key("lessons", "hook", "flag", True, "the lesson lookup on failed tool calls (on: "
        "measured precise, bench/lessons.py; run `causantic install` again after changing)"),
    Key("lessons", "bash_output", "flag", False, "also after Bash calls that exit 0 but print "
        "an error line"),
    Key("lessons", "match", "str", "exact", '"message": also when another program printed '
        "the same message", choices=("exact", "message"), on_bad="default"),
    Key("lessons", "unresolved", "flag", False, 'also offer "seen, never solved"'),
    Key("lessons", "builtin_tools", "flag", False, "also for Read/Edit/Write/... errors"),
)


class Section(Record):
    """The typed values of one config.toml table; omitted fields take `KEYS`' defaults."""

    __slots__ = ()
    SECTION = ""

    def __init__(self, *args: Any, **values: Any) -> None:
        names: tuple[str, ...] = self.__slots__
        if args:
            if len(args) > len(names):
                raise TypeError(f"{type(self).__name__} takes at most {len(names)} values")
            values = {**dict(zip(names, args)), **values}
        defaults = _DEFAULTS[self.SECTION]
        unknown = values.keys() - defaults.keys()
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(sorted(unknown))}")
        put = object.__setattr__
        for name in names:
            put(self, name, values[name] if name in values else defaults[name])

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> Self:
        """This section of a parsed config file (defaults for the keys it omits).

        Raises
        ------
        UsageError : the table is not a table, or a key's value is bad (see `Key.on_bad`).
        """
        return cls(**_values(cfg, cls.SECTION)) if cfg else cls()


class SearchSettings(Section):
    """`[search]`."""

    __slots__ = ("max_tokens", "cluster_expansion")
    SECTION = "search"
    max_tokens: int
    cluster_expansion: bool


class TopicSettings(Section):
    """`[topics]`."""

    __slots__ = ("threshold", "min_cluster_size", "min_samples", "auto_rebuild")
    SECTION = "topics"
    threshold: float
    min_cluster_size: int
    min_samples: int
    auto_rebuild: int


class HookSettings(Section):
    """`[hooks]`."""

    __slots__ = ("user_prompt_submit", "subagent_recall", "session_start_chars", "prompt_chars",
                 "session_start_output", "prompt_min_coverage")
    SECTION = "hooks"
    user_prompt_submit: bool
    subagent_recall: bool
    session_start_chars: int
    prompt_chars: int
    session_start_output: str
    prompt_min_coverage: float


class IngestSettings(Section):
    """`[ingest]` (patterns with ``~`` expanded by `load_settings`)."""

    __slots__ = ("exclude", "readers")
    SECTION = "ingest"
    exclude: tuple[str, ...]
    readers: int


class RedactionSettings(Section):
    """`[redaction]`."""

    __slots__ = ("patterns",)
    SECTION = "redaction"
    patterns: Mapping[str, str]


class MemorySettings(Section):
    """`[memory]` and `[memory.importance]` (the full table: defaults with the file's values)."""

    __slots__ = ("scope", "auto", "in_search", "relevance_weight", "importance_weight",
                 "recency_weight", "recency", "near_days", "ttl_days", "prune_below", "importance")
    SECTION = "memory"
    scope: str
    auto: bool
    in_search: bool
    relevance_weight: float
    importance_weight: float
    recency_weight: float
    recency: str
    near_days: float
    ttl_days: float
    prune_below: float
    importance: Mapping[str, float]

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> Self:  # noqa: D102 - as Section's
        memory = super().from_config(cfg)
        if memory.relevance_weight + memory.importance_weight + memory.recency_weight <= 0:
            raise UsageError("config: [memory] weights must be non-negative and not all zero")
        return memory

    @property
    def own_project(self) -> bool:
        """Whether a Claude Code session sees only its own project (scope "project", or
        "worktree", which narrows that to its worktree: `retrieval.scope`)."""
        return self.scope in ("project", "worktree")


class LessonSettings(Section):
    """`[lessons]`."""

    __slots__ = ("hook", "bash_output", "match", "unresolved", "builtin_tools")
    SECTION = "lessons"
    hook: bool
    bash_output: bool
    match: str
    unresolved: bool
    builtin_tools: bool


#: The section classes, in Settings' order.
SECTIONS: tuple[type[Section], ...] = (SearchSettings, TopicSettings, HookSettings,
                                       IngestSettings, RedactionSettings, MemorySettings,
                                       LessonSettings)
_KEYS_OF: dict[str, list[Key]] = {}  # KEYS by section
_DEFAULTS: dict[str, dict[str, Any]] = {}
for _key in KEYS:
    _KEYS_OF.setdefault(_key.section, []).append(_key)
    _DEFAULTS.setdefault(_key.section, {})[_key.name] = _key.default
del _key


class Settings(Record):
    """Everything the rest of causantic needs to know about its environment (read-only).

    A `Record` rather than a frozen dataclass: every hook loads settings, and importing
    dataclasses and generating the class would cost each hook run several milliseconds.
    """

    __slots__ = ("home", "db_path", "claude_dir", "config_path", "model_dir", "claude_json_path",
                 "search", "topics", "hooks", "ingest", "redaction", "memory", "lessons")
    home: Path
    db_path: Path
    claude_dir: Path
    config_path: Path
    model_dir: Path | None  # None: causantic.model.model_dir() decides (the packaged model)
    # Claude Code's user state file (user-scope MCP servers): ~/.claude.json, or
    # $CLAUDE_CONFIG_DIR/.claude.json when that variable is set. None = beside claude_dir.
    claude_json_path: Path | None
    search: SearchSettings
    topics: TopicSettings
    hooks: HookSettings
    ingest: IngestSettings
    redaction: RedactionSettings
    memory: MemorySettings
    lessons: LessonSettings

    def __init__(
        self,
        home: Path,
        db_path: Path,
        claude_dir: Path,
        config_path: Path,
        model_dir: Path | None = None,
        claude_json_path: Path | None = None,
        search: SearchSettings | None = None,
        topics: TopicSettings | None = None,
        hooks: HookSettings | None = None,
        ingest: IngestSettings | None = None,
        redaction: RedactionSettings | None = None,
        memory: MemorySettings | None = None,
        lessons: LessonSettings | None = None,
    ) -> None:
        self._init(
            home=home, db_path=db_path, claude_dir=claude_dir, config_path=config_path,
            model_dir=model_dir, claude_json_path=claude_json_path,
            search=search or SearchSettings(), topics=topics or TopicSettings(),
            hooks=hooks or HookSettings(), ingest=ingest or IngestSettings(),
            redaction=redaction or RedactionSettings(),
            memory=memory or MemorySettings(), lessons=lessons or LessonSettings(),
        )

    @property
    def projects_dir(self) -> Path:
        """The folder Claude Code writes session transcripts under."""
        return self.claude_dir / "projects"


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
    UsageError : the config file is not valid TOML or has a bad value (see `KEYS`).
    """
    env = os.environ if env is None else env
    user_home = Path(env.get("HOME") or os.path.expanduser("~"))
    home = _expand(env.get("CAUSANTIC_HOME"), user_home) or user_home / ".causantic"
    config_path = home / "config.toml"
    cfg = _read_config(config_path)
    top = _values(cfg, "")

    db_path = (
        _expand(db, user_home)
        or _expand(env.get("CAUSANTIC_DB"), user_home)
        or _expand(top["db"], user_home)
        or home / "memory.db"
    )
    claude_dir = (
        _expand(env.get("CLAUDE_CONFIG_DIR"), user_home)
        or _expand(top["claude_dir"], user_home)
        or user_home / ".claude"
    )
    return Settings(
        home=home,
        db_path=db_path,
        claude_dir=claude_dir,
        config_path=config_path,
        model_dir=_expand(env.get(MODEL_DIR_ENV), user_home),
        claude_json_path=(
            claude_dir / ".claude.json" if env.get("CLAUDE_CONFIG_DIR") else user_home / ".claude.json"
        ),
        search=SearchSettings.from_config(cfg),
        topics=TopicSettings.from_config(cfg),
        hooks=HookSettings.from_config(cfg),
        ingest=_ingest_settings(cfg, user_home),
        redaction=RedactionSettings.from_config(cfg),
        memory=MemorySettings.from_config(cfg),
        lessons=LessonSettings.from_config(cfg),
    )


def _ingest_settings(cfg: Mapping[str, Any], user_home: Path) -> IngestSettings:
    """`[ingest]` with ``~`` expanded in its path patterns, which must be absolute."""
    given = IngestSettings.from_config(cfg)
    exclude = []
    for pattern in given.exclude:
        if pattern == "~" or pattern.startswith("~/"):
            pattern = str(user_home) + pattern[1:]
        if "/" in pattern and not pattern.startswith("/"):
            raise UsageError(f"config: ingest.exclude {pattern!r} must be an absolute path "
                             "(or start with ~/), or a project name without a /")
        exclude.append(pattern)
    return IngestSettings(exclude=tuple(exclude), readers=given.readers)


def with_overrides(settings: Settings, **changes: Any) -> Settings:
    """A copy of `settings` with some fields replaced (flags applied after loading).

    Raises
    ------
    TypeError : a name that is not a field of Settings.
    """
    unknown = set(changes) - set(Settings.__slots__)
    if unknown:
        raise TypeError(f"Settings has no field {', '.join(sorted(unknown))}")
    return settings.replace(**changes)


def reference() -> str:
    """The README's table of config.toml keys, made from `KEYS`."""
    rows = ["| key | type | default | allowed | what it does |", "|---|---|---|---|---|"]
    for key in KEYS:
        where = f"[{key.section}] {key.name}" if key.section else key.name
        if key.kind == "importance":
            where = "[memory.importance] <type>"
            default = ", ".join(f"{kind} {value:g}" for kind, value in key.default.items())
        elif key.kind in ("regexes", "globs") or key.default is None:
            default = "-"
        else:
            default = _toml(key.default)
        rows.append(f"| `{where}` | {_KIND_WORDS[key.kind]} | {default} | {_range(key) or '-'} "
                    f"| {key.doc} |")
    return "\n".join(rows) + "\n"


# -- checking one table ----------------------------------------------------------------------

_KIND_WORDS = {
    "bool": "true or false", "flag": "true or false", "int": "whole number", "number": "number",
    "str": "string", "path": "path", "regexes": "table of kind = regex",
    "importance": "number", "globs": "list of strings",
}


def _values(cfg: Mapping[str, Any], section: str) -> dict[str, Any]:
    """The checked values of one table's keys (absent keys: their defaults)."""
    table: Any = cfg
    if section:
        table = cfg.get(section)
        if table is None:
            table = {}
        elif not isinstance(table, Mapping):
            raise UsageError(f"config: [{section}] must be a table, not {table!r}")
    out = {}
    for key in _KEYS_OF[section]:
        value = table.get(key.name)
        out[key.name] = key.default if value is None else _check(key, value)
    return out


def _check(key: Key, value: Any) -> Any:
    kind = key.kind
    if kind == "flag":
        return bool(value)
    if kind == "regexes":
        return _regexes(key, value)
    if kind == "importance":
        return _importance(key, value)
    if kind == "globs":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"config: {key.path} must be a list of strings, not {value!r}")
        return tuple(value)
    right_type = (
        isinstance(value, bool) if kind == "bool"
        else isinstance(value, str) if kind in ("str", "path")
        else not isinstance(value, bool) and isinstance(value, int if kind == "int" else int | float)
    )
    if not right_type:
        if key.on_bad in ("type", "default"):
            return key.default
        raise UsageError(f"config: {key.path} must be {_expected(key)}, not {value!r}")
    if _in_range(key, value):
        return float(value) if kind == "number" else value
    if key.on_bad == "default" or key.on_bad == "bound" and key.low is not None and value < key.low:
        return key.default
    if key.on_bad == "bound":
        return key.high
    raise UsageError(f"config: {key.path} must be {_expected(key)}, not {value!r}")


def _in_range(key: Key, value: Any) -> bool:
    if key.choices:
        return value in key.choices
    return ((key.low is None or value >= key.low) and (key.high is None or value <= key.high)
            and (key.above is None or value > key.above))


def _regexes(key: Key, value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise UsageError(f"config: {key.path} must be a table of kind = regex, not {value!r}")
    for kind, regex in value.items():
        if not isinstance(regex, str):
            raise UsageError(f"config: {key.path}.{kind} must be a string regex, not {regex!r}")
    return dict(value)


def _importance(key: Key, value: Any) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise UsageError("config: [memory.importance] must be a table of type = number")
    table = dict(key.default)
    for kind, number in value.items():
        if kind not in table:
            raise UsageError(f"config: [memory.importance] has unknown type {kind!r}; "
                             f"types: {', '.join(DEFAULT_IMPORTANCE)}")
        if isinstance(number, bool) or not isinstance(number, int | float) \
                or not _in_range(key, number):
            raise UsageError(f"config: [memory.importance] {kind} must be a number from "
                             f"{key.low:g} to {key.high:g}")
        table[kind] = float(number)
    return table


def _expected(key: Key) -> str:
    if key.choices:
        return _range(key)
    words = _KIND_WORDS[key.kind]
    words = words if key.kind == "bool" else "a " + words
    return f"{words} {_range(key)}".rstrip()


def _range(key: Key) -> str:
    if key.choices:
        return " or ".join(_toml(c) for c in key.choices)
    low = f"({key.above:g}" if key.above is not None else f"[{key.low:g}" if key.low is not None \
        else None
    if low is not None and key.high is not None:
        return f"in {low}, {key.high:g}]"
    if key.low is not None:
        return f">= {key.low:g}"
    if key.above is not None:
        return f"> {key.above:g}"
    return ""


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return f"{value:g}" if isinstance(value, float) else str(value)


# -- files and paths -------------------------------------------------------------------------


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
