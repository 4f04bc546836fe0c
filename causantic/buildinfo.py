"""What build this causantic is: the zipapp's build info, or a source checkout.

``build_zipapp.py`` writes ``causantic/_build_info.json`` into the archive's payload (version,
target, model id, commit, wheel versions, and the exact ``--version`` line, which the archive's
bootstrap also prints on its fast path). Outside an archive the file does not exist.
Nothing here is read unless asked: ``--version`` stays off every other command's path.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from typing import Any

from causantic import __version__
from causantic.model import MODEL_ID

BUILD_INFO_NAME = "_build_info.json"


def build_info() -> dict[str, Any] | None:
    """The archive's build info, or None when not running from a built archive."""

    try:
        with open(os.path.join(os.path.dirname(__file__), BUILD_INFO_NAME), "rb") as f:
            return json.loads(f.read())
    except (OSError, ValueError):
        return None


def version_line() -> str:
    """``causantic VERSION (archive TARGET, model ID, commit C)`` or ``(source checkout, …)``."""
    info = build_info()
    if info and isinstance(info.get("version_line"), str):
        return info["version_line"]

    package = os.path.dirname(os.path.abspath(__file__))
    checkout = os.path.isfile(os.path.join(os.path.dirname(package), "pyproject.toml"))
    where = "source checkout" if checkout else "installed package"
    return f"causantic {__version__} ({where}, model {MODEL_ID})"


class VersionAction(argparse.Action):
    """``--version``: print :func:`version_line` and exit 0, computed only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0,
                         help=help or "print version, build target and model id, then exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        print(version_line())
        parser.exit(0)
