"""Reading Claude Code transcripts: files, records, turns, sub-agents, project identity.

Nothing in this package touches SQLite.
"""
