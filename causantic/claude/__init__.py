"""Claude Code integration: hook handlers, the hook status file, install/uninstall, doctor.

Hook processes import this package: it must stay stdlib-only at import time (no apsw until a
handler needs the database, never numpy, onnxruntime or mcp).
"""
