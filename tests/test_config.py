"""Settings: one table of config keys (`config.KEYS`), checked once when settings load."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from causantic import config
from causantic.config import (
    KEYS,
    SECTIONS,
    HookSettings,
    LessonSettings,
    MemorySettings,
    SearchSettings,
    Settings,
    TopicSettings,
    load_settings,
    with_overrides,
)
from causantic.errors import UsageError

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"


def _load(tmp_path: Path, text: str) -> Settings:
    home = tmp_path / "causantic"
    home.mkdir()
    (home / "config.toml").write_text(text)
    return load_settings(env={"HOME": str(tmp_path), "CAUSANTIC_HOME": str(home)})


def test_every_key_has_a_typed_field_and_every_field_a_key():
    in_table: dict[str, list[str]] = {}
    for key in KEYS:
        in_table.setdefault(key.section, []).append(key.name)
    assert in_table.pop("") == ["db", "claude_dir"]  # resolved with the environment and flags
    assert {cls.SECTION: list(cls.__slots__) for cls in SECTIONS} == in_table
    assert list(Settings.__slots__[-len(SECTIONS):]) == [cls.SECTION for cls in SECTIONS]


def test_the_readme_lists_the_keys_of_the_table():
    """The README's configuration table is `reference()`; every key in its toml examples exists."""
    text = README.read_text()
    assert config.reference() in text, (
        "README's configuration table differs from causantic.config.KEYS; paste the output of "
        "python -c 'from causantic.config import reference; print(reference())'")
    known = {(k.section, k.name) for k in KEYS}
    for block in re.findall(r"```toml\n(.*?)```", text, re.S):
        for section, table in tomllib.loads(block).items():
            if not isinstance(table, dict):
                assert ("", section) in known, section
                continue
            for name in table:
                assert (section, name) in known, f"README example: [{section}] {name}"


def test_without_a_config_file_every_section_has_its_defaults(tmp_path: Path):
    settings = load_settings(env={"HOME": str(tmp_path)})
    assert settings.search == SearchSettings(max_tokens=config.ANSWER_TOKENS,
                                             cluster_expansion=False)
    assert settings.hooks.session_start_chars == config.SESSION_START_CHARS
    assert settings.hooks.prompt_chars == config.PROMPT_CHARS
    assert settings.topics == TopicSettings(0.10, 4, 4)
    assert settings.memory.importance == config.DEFAULT_IMPORTANCE
    assert settings.lessons == LessonSettings(hook=True)
    assert settings.redaction.patterns == {}


def test_defaults_kept_elsewhere_agree_with_the_table():
    """Defaults of functions that other callers (bench/) use without settings."""
    import inspect

    from causantic.memory.rank import DEFAULT
    from causantic.memory.recall import weights_from
    from causantic.retrieval.prompt import prompt_recall

    assert weights_from(MemorySettings()) == DEFAULT
    coverage = inspect.signature(prompt_recall).parameters["min_coverage"].default
    assert coverage == HookSettings().prompt_min_coverage


def test_values_from_the_file_reach_their_sections(tmp_path: Path):
    settings = _load(tmp_path, """
        [search]
        max_tokens = 2000
        cluster_expansion = true
        [topics]
        threshold = 1
        [hooks]
        session_start_output = "text"
        prompt_min_coverage = 1
        [memory]
        recency = "wall"
        near_days = 3
        [memory.importance]
        general = 6.5
        [lessons]
        match = "message"
        bash_output = 1
        [redaction]
        patterns = { acme = "ACME-[0-9]{4}" }
    """)
    assert settings.search == SearchSettings(2000, True)
    assert settings.topics.threshold == 1.0 and isinstance(settings.topics.threshold, float)
    assert settings.hooks.session_start_output == "text"
    assert settings.hooks.prompt_min_coverage == 1.0
    assert (settings.memory.recency, settings.memory.near_days) == ("wall", 3.0)
    assert settings.memory.importance["general"] == 6.5
    assert settings.memory.importance["instruction"] == 10
    assert settings.lessons.match == "message" and settings.lessons.bash_output is True
    assert settings.redaction.patterns == {"acme": "ACME-[0-9]{4}"}


@pytest.mark.parametrize(("text", "message"), [
    ("db = 5", "config: db must be a path, not 5"),
    ("[search]\nmax_tokens = 'x'", "config: search.max_tokens must be a whole number >= 1"),
    ("[search]\ncluster_expansion = 1", "search.cluster_expansion must be true or false, not 1"),
    ("search = 3", r"config: \[search\] must be a table, not 3"),
    ("[topics]\nthreshold = 0", r"topics.threshold must be a number in \(0, 1\], not 0"),
    ("[topics]\nmin_samples = 0", "topics.min_samples must be a whole number >= 1, not 0"),
    ("[hooks]\nuser_prompt_submit = 'yes'", "hooks.user_prompt_submit must be true or false"),
    ("[hooks]\nprompt_min_coverage = 'half'", "hooks.prompt_min_coverage must be a number"),
    ("[memory]\nrecency = 'daily'", 'memory.recency must be "logical" or "wall"'),
    ("[memory]\nrelevance_weight = -1", "memory.relevance_weight must be a number >= 0"),
    ("[memory]\nrelevance_weight = 0\nimportance_weight = 0\nrecency_weight = 0",
     "weights must be non-negative and not all zero"),
    ("[memory.importance]\nwhim = 3", "unknown type 'whim'"),
    ("[memory.importance]\nerror = 11", "error must be a number from 1 to 10"),
    ("[redaction]\npatterns = { a = 1 }", "redaction.patterns.a must be a string regex"),
])
def test_a_bad_value_is_a_one_line_usage_error_naming_the_key(tmp_path: Path, text: str,
                                                               message: str):
    with pytest.raises(UsageError, match=message) as info:
        _load(tmp_path, text)
    assert "\n" not in str(info.value) and info.value.exit_code == 2


def test_lenient_keys_keep_their_fallbacks(tmp_path: Path):
    """What these keys always did with a bad value: the default, a cap, or true/false."""
    settings = _load(tmp_path, """
        [search]
        max_tokens = 0
        [hooks]
        session_start_chars = 0
        prompt_chars = 50000
        session_start_output = "xml"
        [memory]
        auto = 0
        ttl_days = "soon"
        recency = 7
        [lessons]
        hook = 0
        unresolved = "yes"
        match = "fuzzy"
    """)
    assert settings.search.max_tokens == config.ANSWER_TOKENS
    assert settings.hooks == HookSettings(session_start_chars=config.SESSION_START_CHARS,
                                          prompt_chars=config.HARD_INJECTION_CAP)
    assert (settings.memory.auto, settings.memory.ttl_days, settings.memory.recency) == (
        True, 0.0, "logical")
    assert settings.lessons == LessonSettings(hook=False, unresolved=True)


def test_sections_are_read_only_values():
    topics = TopicSettings(min_cluster_size=5)
    assert topics == TopicSettings(0.10, 5, 4) and topics.replace(min_samples=2).min_samples == 2
    assert pickle.loads(pickle.dumps(topics)) == topics
    with pytest.raises(AttributeError):
        topics.threshold = 0.5  # type: ignore[misc]
    with pytest.raises(TypeError, match="no field colour"):
        TopicSettings(colour="red")


def test_flags_replace_fields_after_loading(tmp_path: Path):
    settings = load_settings(env={"HOME": str(tmp_path)})
    changed = with_overrides(settings, search=SearchSettings(max_tokens=900))
    assert changed.search.max_tokens == 900 and changed.topics == settings.topics
    with pytest.raises(TypeError, match="no field max_tokens"):
        with_overrides(settings, max_tokens=900)


def test_the_cli_reports_a_bad_value_in_one_line(private_home: Path):
    (private_home / ".causantic").mkdir(mode=0o700)
    (private_home / ".causantic" / "config.toml").write_text("[topics]\nmin_cluster_size = 1\n")
    out = subprocess.run([sys.executable, "-m", "causantic", "stats"], capture_output=True,
                         text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().count("\n") == 0 and "topics.min_cluster_size" in out.stderr
