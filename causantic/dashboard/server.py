"""`causantic dashboard`: a read-only local web page over memory, standard library only.

Security model (the page shows transcript text, which can hold anything):
- The server listens on 127.0.0.1 only, on a free port chosen by the OS.
- Every request needs the random token of this run: `?token=` in the URL (the address the
  command prints), or the cookie the page sets on first load (HttpOnly, SameSite=Strict).
  Without it: 403.
- A request from a non-loopback peer, or whose Host header is not a loopback name with this
  port, is refused (403): a web page elsewhere cannot reach the server by DNS rebinding.
- Only GET and HEAD; the store is opened read-only per request.
- Pages are static files; data arrives as JSON and the script only ever inserts it as text
  nodes (never as HTML), under a Content-Security-Policy that allows no inline script.

The JSON endpoints call the same functions as the CLI (`search`, `walk`, `list_topics`,
`show_topic`, `stats`), so the page shows the same answers.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import secrets
import sys
import threading
import webbrowser
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from causantic.claude.status import read_status
from causantic.config import Settings
from causantic.errors import CausanticError, UsageError
from causantic.retrieval.browse import list_projects, stats
from causantic.retrieval.chains import walk
from causantic.retrieval.search import search
from causantic.store import dashboard as queries
from causantic.store import open_store
from causantic.topics import maps

COOKIE = "causantic_dashboard"
STATIC_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png"}
#: Tables other features add; the page shows them only when they exist.
OPTIONAL_TABLES = ("memories", "memory_feedback", "lessons")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def static_file(name: str) -> bytes | None:
    """A file shipped in `causantic/dashboard/static` (works from the zipapp), or None."""
    if "/" in name or name.startswith("."):
        return None
    item = resources.files("causantic.dashboard").joinpath("static", name)
    try:
        return item.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


class Api:
    """The JSON endpoints: each opens the store read-only and calls a retrieval function."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.routes: dict[str, Callable[[dict[str, str]], dict[str, Any]]] = {
            "overview": self.overview, "timeline": self.timeline, "session": self.session,
            "chunk": self.chunk, "search": self.search, "recall": self.recall,
            "predict": self.predict, "topics": self.topics, "topic": self.topic,
            "table": self.table, "projects": self.projects,
        }

    def _store(self):

        return open_store(self.settings.db_path, readonly=True)

    def overview(self, q: dict[str, str]) -> dict[str, Any]:

        with self._store() as store:
            counts = stats(store.conn)
            growth = queries.weekly_growth(store.conn)
            redactions = queries.redactions_by_project(store.conn)
            tables = {name: found["total"] for name in OPTIONAL_TABLES
                      if (found := queries.optional_table(store.conn, name))["available"]}
        return {"db": str(self.settings.db_path), "stats": counts, "growth": growth,
                "redactions": redactions, "hooks": read_status(self.settings.home),
                "optional": tables}

    def projects(self, q: dict[str, str]) -> dict[str, Any]:

        with self._store() as store:
            return {"projects": [p.as_dict() for p in list_projects(store.conn)]}

    def timeline(self, q: dict[str, str]) -> dict[str, Any]:

        with self._store() as store:
            return {"sessions": queries.session_lanes(store.conn, q.get("project") or None)}

    def session(self, q: dict[str, str]) -> dict[str, Any]:

        with self._store() as store:
            return queries.session_graph(store.conn, _required(q, "id"))

    def chunk(self, q: dict[str, str]) -> dict[str, Any]:

        with self._store() as store:
            found = queries.chunk_meta(store.conn, _required(q, "id"))
        if found is None:
            raise UsageError("no such chunk")
        return found

    def search(self, q: dict[str, str]) -> dict[str, Any]:

        mode = q.get("mode") or "hybrid"
        if mode not in ("hybrid", "keyword", "vector"):
            raise UsageError(f"unknown mode {mode!r}")
        with self._store() as store:  # the CLI's defaults, config included
            return search(store, _required(q, "q"), project=q.get("project") or None,
                          limit=_int(q, "limit", 10), mode=mode,
                          max_tokens=self.settings.search.max_tokens,
                          cluster_expansion=self.settings.search.cluster_expansion).as_dict()

    def recall(self, q: dict[str, str]) -> dict[str, Any]:
        return self._walk(q, "backward")

    def predict(self, q: dict[str, str]) -> dict[str, Any]:
        return self._walk(q, "forward")

    def _walk(self, q: dict[str, str], direction: str) -> dict[str, Any]:

        with self._store() as store:
            return walk(store, _required(q, "q"), direction, project=q.get("project") or None,
                        limit=_int(q, "limit", 10), max_tokens=self.settings.search.max_tokens).as_dict()

    def topics(self, q: dict[str, str]) -> dict[str, Any]:

        with self._store() as store:
            found = maps.list_topics(store.conn, project=q.get("project") or None,
                                     sort=q.get("sort") or "size")
            return {**found.as_dict(), "reason": maps.no_topics_reason(store.conn)}

    def topic(self, q: dict[str, str]) -> dict[str, Any]:

        with self._store() as store:
            return maps.show_topic(store.conn, _int(q, "id", 0), project=q.get("project") or None,
                                   limit=_int(q, "limit", 100)).as_dict()

    def table(self, q: dict[str, str]) -> dict[str, Any]:

        name = q.get("name", "")
        if name not in OPTIONAL_TABLES:
            raise UsageError(f"unknown table {name!r}")
        with self._store() as store:
            return queries.optional_table(store.conn, name)


def _required(q: dict[str, str], key: str) -> str:
    value = q.get(key, "").strip()
    if not value:
        raise UsageError(f"missing parameter {key!r}")
    return value


def _int(q: dict[str, str], key: str, default: int) -> int:
    try:
        value = int(q.get(key) or default)
    except ValueError:
        raise UsageError(f"{key} must be a whole number") from None
    if value < 1:
        raise UsageError(f"{key} must be at least 1")
    return min(value, 500)


def _loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.split("%")[0]).is_loopback
    except ValueError:
        return False


class Handler(BaseHTTPRequestHandler):
    """Checks peer, Host and token, then serves a static file or one API call."""

    server: DashboardServer
    server_version = "causantic-dashboard"
    sys_version = ""

    def do_HEAD(self) -> None:  # noqa: N802
        self._handle(head=True)

    def do_GET(self) -> None:  # noqa: N802
        self._handle(head=False)

    def _deny(self, code: int, why: str, allow: str | None = None) -> None:
        self._send(code, json.dumps({"error": why}).encode(), "application/json",
                   extra={"Allow": allow} if allow else None)

    def do_POST(self) -> None:  # noqa: N802
        self._deny(405, "read-only", allow="GET, HEAD")

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_POST  # noqa: N815

    def _handle(self, head: bool) -> None:
        self.head = head
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        if not _loopback(self.client_address[0]):
            return self._deny(403, "only local connections are served")
        if self.headers.get("Host", "").lower() not in self.server.hosts:
            return self._deny(403, "unexpected Host header")
        if not self._authorised(query.get("token")):
            return self._deny(403, "missing or wrong token: open the address "
                                   "`causantic dashboard` printed")
        path = url.path
        if path in ("/", "/index.html"):
            return self._static("index.html", cookie=True)
        if path.startswith("/static/"):
            return self._static(path[len("/static/"):])
        if path.startswith("/api/"):
            return self._api(path[len("/api/"):], query)
        self._deny(404, "not found")

    def _authorised(self, token: str | None) -> bool:
        expected = self.server.token
        if token is not None and hmac.compare_digest(token.encode(), expected.encode()):
            return True
        for part in self.headers.get("Cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == self.server.cookie and hmac.compare_digest(value.encode(),
                                                                  expected.encode()):
                return True
        return False

    def _static(self, name: str, cookie: bool = False) -> None:
        body = static_file(name)
        kind = STATIC_TYPES.get(Path(name).suffix)
        if body is None or kind is None:
            return self._deny(404, "not found")
        extra = {"Set-Cookie": f"{self.server.cookie}={self.server.token}; Path=/; HttpOnly; "
                               "SameSite=Strict"} if cookie else None
        self._send(200, body, kind, extra=extra)

    def _api(self, name: str, query: dict[str, str]) -> None:
        route = self.server.api.routes.get(name)
        if route is None:
            return self._deny(404, f"no endpoint {name!r}")
        try:
            payload = route(query)
            code = 200
        except CausanticError as exc:
            payload, code = {"error": str(exc)}, 400
        except Exception as exc:  # the edge: one line for the page, never a traceback
            payload, code = {"error": f"unexpected {type(exc).__name__}: {exc}"}, 500
        self._send(code, json.dumps(payload, ensure_ascii=False, default=str).encode(),
                   "application/json; charset=utf-8")

    def _send(self, code: int, body: bytes, kind: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Content-Security-Policy", CSP)
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if not getattr(self, "head", False):
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # no access log: the terminal shows the address and the stop line only


class DashboardServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer on 127.0.0.1 with this run's token and API."""

    daemon_threads = True

    def __init__(self, settings: Settings, port: int = 0, token: str | None = None) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.token = token or secrets.token_urlsafe(24)
        self.api = Api(settings)
        bound = self.server_address[1]
        self.hosts = {f"127.0.0.1:{bound}", f"localhost:{bound}", f"[::1]:{bound}"}
        self.cookie = f"{COOKIE}_{bound}"  # cookies ignore ports: one per running dashboard

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/?token={self.token}"


def can_open_browser() -> bool:
    """Whether a graphical browser can be opened (never start a console browser in the
    terminal the server prints to)."""

    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY")
                                                 or os.environ.get("WAYLAND_DISPLAY")):
        return False
    try:
        webbrowser.get()
    except webbrowser.Error:
        return False
    return True


def serve(settings: Settings, *, port: int = 0, open_browser: bool = True,
          ready: Callable[[str], None] | None = None) -> None:
    """Run the dashboard until Ctrl-C (KeyboardInterrupt is left to the caller).

    Raises
    ------
    CausanticError : there is no memory yet, or the port cannot be bound.
    """
    if not Path(settings.db_path).exists():
        raise CausanticError(f"no memory yet at {settings.db_path}; run `causantic ingest` first")
    try:
        server = DashboardServer(settings, port)
    except OSError as exc:
        raise CausanticError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from exc
    with server:
        (ready or print)(server.url)
        if open_browser and can_open_browser():

            threading.Thread(target=webbrowser.open, args=(server.url,), daemon=True).start()
        server.serve_forever(poll_interval=0.2)
