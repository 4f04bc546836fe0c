"""Reading a chunk's rendered text back as its labelled blocks.

`ingest.chunking.render_block` writes what a chunk holds as blocks separated by blank lines,
each opened by its label::

    [User]\\n<prompt>          [Assistant]\\n<text>        [Summary]\\n<compaction summary>
    [Command expansion]\\n...  [Tool:Bash] <command>      [Result:Bash]\\n<output>

`blocks(text)` returns them as (label, body) pairs: the one reader of that format, for the
session state and the automatic observations. The pattern is compiled on first use: the
session-start hook imports modules that use it without ever calling it.
"""

from __future__ import annotations

import re

#: A label; it opens a block only at the start of the text or after a blank line. Matching
#: the bracket first and checking what precedes it is 4x faster than `(?:^|\n\n)\[...`,
#: which tries the alternation at every character (ingest reads every chunk back twice: the
#: session state and the lessons). A label holds no newline, so a bracket that does not open
#: a block can never hide one that does.
_LABEL = r"\[(User|Assistant|Summary|Command expansion|Tool:[^\]\n]+|Result:[^\]\n]+)\]"
_label_re: re.Pattern[str] | None = None


def blocks(text: str) -> list[tuple[str, str]]:
    """(label, body) of each rendered block of a chunk's text, in order ('' before the first
    label is not a block). A `Tool:` label keeps its name (`Tool:Bash`), a result its name and
    ` error` when it failed (`Result:Bash error`)."""
    global _label_re
    if _label_re is None:
        _label_re = re.compile(_LABEL)
    marks = [m for m in _label_re.finditer(text)
             if m.start() == 0 or text.startswith("\n\n", m.start() - 2)]
    out = []
    for m, nxt in zip(marks, marks[1:] + [None]):
        body = text[m.end() : nxt.start() - 2 if nxt else len(text)]  # up to the blank line
        out.append((m.group(1), body.lstrip(" ").removeprefix("\n")))
    return out
