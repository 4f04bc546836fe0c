"""causantic: long-term memory for Claude Code.

Reads Claude Code transcripts, stores redacted chunks and their causal chains in one SQLite
file, and answers search / recall / predict / reconstruct from the shell, hooks and MCP.
"""

__version__ = "0.1.0"
