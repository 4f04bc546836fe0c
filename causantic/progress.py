"""Progress of long work (ingest, embed) on stderr.

On a terminal one line is redrawn in place. Anywhere else (a log file, a pipe, CI) a plain line
is written when the work starts and then at most every ``interval`` seconds, so a long run shows
it is alive without flooding the log with carriage returns and escape codes.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

DEFAULT_INTERVAL = 5.0


class ProgressLine:
    """Show ``update(text)`` calls as one redrawn line (terminal) or throttled lines."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        interval: float = DEFAULT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        terminal: bool | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = _isatty(self.stream) if terminal is None else terminal
        self.interval = interval
        self.clock = clock
        self._last: float | None = None
        self._drawn = False

    def update(self, text: str) -> None:
        """Show ``text`` as the current state of the work."""
        if self.terminal:
            self.stream.write("\r\033[K" + text)
            self._drawn = True
        else:
            now = self.clock()
            if self._last is not None and now - self._last < self.interval:
                return
            self._last = now
            self.stream.write(text + "\n")
        self.stream.flush()

    def clear(self) -> None:
        """Erase the redrawn line (terminal only; plain lines stay in the log)."""
        if self.terminal and self._drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._drawn = False


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
