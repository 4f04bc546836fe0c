"""The one SQLite file: connection, schema and migrations, one module per table family.

Nothing in this package knows about Claude Code.
"""

from causantic.store.db import Store, open_store

__all__ = ["Store", "open_store"]
