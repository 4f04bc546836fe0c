"""The README matches the code: its commands are the CLI's subcommands (and every subcommand is
documented), and its layout section lists every module and package under causantic/ and
nothing that does not exist. Both sides are read, never hard-coded, so a rename fails here
until the README follows it."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from causantic.cli import build_parser

from .conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
PACKAGE = REPO / "causantic"
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
COMMAND = re.compile(r"(?<![\w./-])causantic((?: [a-z][a-z-]*)+)")
PATH_NAME = re.compile(r"(?<![\w./-])(\w+(?:\.py|/))(?![\w/])")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return {name: sub for action in parser._actions
            if isinstance(action, argparse._SubParsersAction)
            for name, sub in action.choices.items()}


def _readme_commands() -> set[tuple[str, ...]]:
    """`causantic WORD ...` in the README's code: fenced blocks and inline code spans."""
    prose = FENCE.sub("", README)
    code = FENCE.findall(README) + re.findall(r"`([^`\n]+)`", prose)
    return {tuple(m.group(1).split()) for text in code for m in COMMAND.finditer(text)}


def test_every_readme_command_is_a_cli_subcommand():
    commands = _readme_commands()
    assert len(commands) >= 20, commands
    top = _subcommands(build_parser())
    for words in sorted(commands):
        assert words[0] in top, f"README runs `causantic {' '.join(words)}`: no such subcommand"
        nested = _subcommands(top[words[0]])
        if nested and len(words) > 1:
            assert words[1] in nested, \
                f"README runs `causantic {' '.join(words[:2])}`: no such subcommand"


def test_every_cli_subcommand_is_in_the_readme():
    documented = {words[:n] for words in _readme_commands() for n in (1, 2)}
    for name, sub in _subcommands(build_parser()).items():
        assert (name,) in documented, f"`causantic {name}` is not in the README"
        for nested in _subcommands(sub):
            assert (name, nested) in documented, f"`causantic {name} {nested}` is not in the README"


def _layout() -> list[tuple[str, str]]:
    """The README's layout block (the code block that starts with `causantic/`): one
    (entry, text) per line indented directly under it, continuation lines joined to theirs."""
    block = next(b for b in FENCE.findall(README) if b.startswith("causantic/\n"))
    entries: list[tuple[str, str]] = []
    for line in block.splitlines()[1:]:
        if not line.startswith(" "):
            break  # the next top-level folder (bench/, tests/ ...)
        if line.startswith("  ") and not line.startswith("   "):
            name = line.split()[0].rstrip(",:")
            entries.append((name, line))
        else:
            entries[-1] = (entries[-1][0], entries[-1][1] + "\n" + line)
    return entries


def _listed() -> set[Path]:
    """Every path the layout names: entries and the files or folders their text mentions,
    resolved inside the entry's package when it is one, else inside causantic/."""
    found: set[Path] = set()
    for entry, text in _layout():
        for name in PATH_NAME.findall(text):
            inside = PACKAGE / entry if entry.endswith("/") and name != entry else PACKAGE
            found.add(inside / name if (inside / name).exists() or inside == PACKAGE
                      else PACKAGE / name)
    return found


def test_the_layout_section_lists_only_paths_that_exist():
    listed = _listed()
    assert len(listed) >= 20, listed
    missing = sorted(str(p.relative_to(REPO)) for p in listed if not p.exists())
    assert not missing, f"the README's layout lists paths that do not exist: {missing}"


def test_the_layout_section_lists_every_module_and_package():
    """Every module and package directly under causantic/ (the `__init__`/`__main__` dunders
    are Python's plumbing, not design)."""
    listed = _listed()
    children = {p for p in PACKAGE.iterdir()
                if (p.suffix == ".py" and not re.fullmatch(r"__\w+__\.py", p.name))
                or (p.is_dir() and any(p.glob("*.py")))}
    missing = sorted(p.name for p in children if p not in listed)
    assert not missing, f"the README's layout does not list: {missing}"
