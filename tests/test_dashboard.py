"""`causantic dashboard`: the server's refusals, and the page in a real headless Chromium.

The browser is Debian's `chromium` (installed by scripts/setup), driven over the Chrome
DevTools protocol on a pipe (`--remote-debugging-pipe`: NUL-separated JSON on fds 3 and 4), so
no websocket library, Playwright or browser download is needed. Without the browser the
browser test is skipped, except in CI (`CI=true`), where it fails.

The store is the shared transcripts (keyword index), a few dozen of their chunks embedded
and clustered so the topic map has topics, plus one transcript whose prompt is an XSS
attempt: the page must show it as text and never run it.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from causantic.config import load_settings
from causantic.dashboard.server import _loopback, static_file
from causantic.ingest.run import run_embed, run_ingest
from causantic.retrieval.search import search
from causantic.store import open_store
from causantic.topics.maintain import TopicSettings, rebuild

from .conftest import PYTHON, REPO

XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2"> pwned-marker-7731'
XSS_SESSION = "99999999-aaaa-4bbb-8ccc-000000000009"
SHOTS = Path(os.environ.get("CAUSANTIC_SCREENSHOTS", "")) if os.environ.get(
    "CAUSANTIC_SCREENSHOTS") else None
WAIT_S = 20.0


def _xss_transcript(folder: Path) -> Path:
    folder.mkdir(parents=True)
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/xss-demo",
            "sessionId": XSS_SESSION, "version": "2.1.29", "gitBranch": "main"}
    records = [
        {**base, "parentUuid": None, "type": "user", "uuid": "x1",
         "timestamp": "2026-02-16T09:00:00.000Z", "message": {"role": "user", "content": XSS}},
        {**base, "parentUuid": "x1", "type": "assistant", "uuid": "x2",
         "timestamp": "2026-02-16T09:00:20.000Z",
         "message": {"id": "m1", "role": "assistant",
                     "content": [{"type": "text", "text": "That is an <b>HTML</b> injection test."}]}},
    ]
    path = folder / f"{XSS_SESSION}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


@pytest.fixture(scope="module")
def dashboard_db(shared_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Shared transcripts + the XSS transcript, 40 chunks embedded, topics built."""
    folder = tmp_path_factory.mktemp("dashboard")
    db = folder / "memory.db"
    shutil.copy2(shared_db, db)
    settings = load_settings(db=db, env={"HOME": str(folder)})
    run_ingest(settings, [_xss_transcript(folder / "xss")])
    run_embed(settings, limit=40)
    with open_store(db) as store:
        rebuild(store, settings=TopicSettings(min_cluster_size=2, min_samples=2))
    return db


class Server:
    """`causantic dashboard --no-open` in a subprocess; stopped with SIGINT like Ctrl-C."""

    def __init__(self, db: Path, home: Path) -> None:
        self.db = db
        env = {**os.environ, "CAUSANTIC_HOME": str(home), "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen([PYTHON, "-m", "causantic", "--db", str(db), "dashboard",
                                      "--no-open"], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("causantic dashboard: http://127.0.0.1:"), line + self.proc.stderr.read()
        self.url = line.split()[2]
        self.port = int(self.url.split(":")[2].split("/")[0])
        self.token = self.url.split("token=")[1]

    def get(self, path: str, host: str | None = None, method: str = "GET",
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.putrequest(method, path, skip_host=True)
            conn.putheader("Host", host or f"127.0.0.1:{self.port}")
            for k, v in (headers or {}).items():
                conn.putheader(k, v)
            conn.endheaders()
            resp = conn.getresponse()
            return resp.status, dict(resp.getheaders()), resp.read()
        finally:
            conn.close()

    def stop(self) -> tuple[int, str, str]:
        self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=10)
        return self.proc.returncode, out, err


@pytest.fixture(scope="module")
def server(dashboard_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("dash-home")
    (home / "hook-status.json").write_text(json.dumps({
        "session-start": {"last_run": "2026-02-16T10:00:00.000Z", "success": True,
                          "duration_ms": 41.0, "runs": 12, "failures": 0},
        "session-end": {"last_run": "2026-02-16T10:05:00.000Z", "success": False,
                        "error": "memory.db stayed locked for 5 s", "runs": 3, "failures": 1}}))
    srv = Server(dashboard_db, home)
    yield srv
    if srv.proc.poll() is None:
        srv.proc.kill()
        srv.proc.wait(timeout=10)
    for pipe in (srv.proc.stdout, srv.proc.stderr):  # open still if stop() timed out
        if pipe:
            pipe.close()


# -- the server's refusals -----------------------------------------------------------------


def test_requests_without_the_token_or_with_a_foreign_host_are_refused(server: Server):
    """DNS rebinding and other local pages cannot read memory: no token or a non-loopback
    Host header gets 403; writes get 405; only shipped static files are served."""
    token = server.token
    assert server.get("/")[0] == 403
    assert server.get("/api/overview")[0] == 403
    assert server.get("/api/overview?token=wrong")[0] == 403
    assert server.get(f"/api/overview?token={token}", host="evil.example")[0] == 403
    assert server.get(f"/api/overview?token={token}", host=f"evil.example:{server.port}")[0] == 403
    assert server.get(f"/?token={token}", host="127.0.0.1:1")[0] == 403
    assert server.get(f"/api/overview?token={token}", method="POST")[0] == 405
    assert server.get(f"/static/..%2fserver.py?token={token}")[0] == 404
    assert server.get(f"/static/../server.py?token={token}")[0] == 404
    code, headers, body = server.get(f"/?token={token}", host=f"localhost:{server.port}")
    assert code == 200 and b'<script src="/static/app.js"' in body
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert headers["Set-Cookie"].startswith(f"causantic_dashboard_{server.port}=")
    assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
    code, headers, body = server.get("/api/overview", headers={"Cookie": headers["Set-Cookie"].split(";")[0]})
    assert code == 200 and headers["Content-Type"].startswith("application/json")
    assert json.loads(body)["stats"]["chunks"] > 700
    assert not _loopback("10.1.2.3") and not _loopback("192.168.0.1") and _loopback("127.0.0.1")
    assert _loopback("::1")


def test_a_request_from_a_non_loopback_peer_is_refused_even_with_the_token(dashboard_db: Path,
                                                                           tmp_path: Path):
    """The server listens on 127.0.0.1 only; should a proxy or a bind change ever deliver a
    foreign peer, the handler itself refuses it."""
    import socket
    import threading

    from causantic.dashboard.server import DashboardServer, Handler

    settings = load_settings(db=dashboard_db, env={"HOME": str(tmp_path)})
    srv = DashboardServer(settings)
    try:
        assert srv.server_address[0] == "127.0.0.1"
        ours, theirs = socket.socketpair()
        request = (f"GET /api/overview?token={srv.token} HTTP/1.1\r\n"
                   f"Host: 127.0.0.1:{srv.server_address[1]}\r\n\r\n")
        ours.sendall(request.encode())
        worker = threading.Thread(target=Handler, args=(theirs, ("10.0.0.5", 40000), srv))
        worker.start()
        worker.join(timeout=10)
        theirs.close()
        reply = ours.recv(65536).decode()
        ours.close()
        assert reply.startswith("HTTP/1.0 403") and "only local connections" in reply
    finally:
        srv.server_close()


def test_the_api_answers_exactly_what_the_cli_answers(server: Server, dashboard_db: Path):
    code, _, body = server.get(f"/api/search?q=daytona+pty+log+streaming&mode=keyword&token={server.token}")
    assert code == 200
    with open_store(dashboard_db, readonly=True) as store:
        cli = search(store, "daytona pty log streaming", mode="keyword", limit=10)
    page = json.loads(body)
    assert [r["chunk_id"] for r in page["results"]] == [h.chunk_id for h in cli.results]
    assert page["text"] == cli.text
    code, _, body = server.get(f"/api/search?q=x&mode=bogus&token={server.token}")
    assert code == 400 and "unknown mode" in json.loads(body)["error"]


def test_static_files_load_through_importlib_resources():
    assert b"el(" in (static_file("app.js") or b"")
    assert static_file("../server.py") is None and static_file("nope.js") is None
    code = (static_file("app.js") or b"").decode()
    assert not re.search(r"\.(inner|outer)HTML\s*=|insertAdjacentHTML\(|document\.write|eval\(",
                         code), "the page inserts data as text nodes only"


# -- the page in Chromium ------------------------------------------------------------------


def _chromium() -> str:
    for name in (os.environ.get("CAUSANTIC_CHROMIUM"), "chromium", "chromium-browser",
                 "google-chrome", "google-chrome-stable"):
        if name and (found := shutil.which(name)):
            return found
    why = "no headless Chromium found (scripts/setup installs Debian's `chromium`)"
    if os.environ.get("CI") == "true":
        pytest.fail(why)
    pytest.skip(why)


class Browser:
    """Headless Chromium over the DevTools protocol on a pipe: one page, bounded waits."""

    def __init__(self, exe: str, profile: Path) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds() -> None:  # in the child: the protocol wants fds 3 (commands) and 4 (replies)
            os.dup2(to_chrome_r, 100)
            os.dup2(from_chrome_w, 101)
            os.dup2(100, 3)
            os.dup2(101, 4)

        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--disable-background-networking", "--disable-sync", "--mute-audio",
             f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, close_fds=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._id = 0
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Emulation.setDeviceMetricsOverride", width=1280, height=900,
                  deviceScaleFactor=1, mobile=False, session=True)

    def call(self, method: str, session: bool = False, **params: object) -> dict:
        self._id += 1
        message: dict[str, object] = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            while b"\0" not in self._buffer:
                chunk = os.read(self._from_chrome, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
        raise TimeoutError(method)

    def js(self, expression: str) -> object:
        result = self.call("Runtime.evaluate", session=True, expression=expression,
                           returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(str(result["exceptionDetails"]))
        return result["result"].get("value")

    def wait_for(self, view: str) -> None:
        """Until the page says the view has rendered (`data-state="ready"`), at most WAIT_S."""
        deadline = time.monotonic() + WAIT_S
        state = None
        while time.monotonic() < deadline:
            state = self.js("(() => { const v = document.getElementById('view');"
                            " return v ? v.dataset.view + ':' + v.dataset.state : null })()")
            if state == f"{view}:ready":
                return
            if state == f"{view}:error":
                raise AssertionError(self.js("document.getElementById('view').innerText"))
            time.sleep(0.05)
        raise TimeoutError(f"view {view} never rendered (last state {state})")

    def show(self, hash_: str, view: str) -> str:
        self.js(f"document.getElementById('view').dataset.state = 'stale';"
                f" location.hash = {json.dumps(hash_)}")
        self.wait_for(view)
        return str(self.js("document.getElementById('view').innerText"))

    def screenshot(self, path: Path) -> bytes:
        data = base64.b64decode(self.call("Page.captureScreenshot", session=True,
                                          format="png")["data"])
        path.write_bytes(data)
        if SHOTS is not None:
            SHOTS.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, SHOTS / path.name)
        return data

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, OSError, TimeoutError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.close(self._to_chrome)
        os.close(self._from_chrome)


def check_png(data: bytes) -> None:
    """A real 1280x900 screenshot with content: many distinct colours, not a blank page."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1280, 900)
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    pixels = zlib.decompress(idat)
    row = len(pixels) // height
    channels = (row - 1) // width
    # Rows are filtered (PNG predictors), so these are not colours, but a blank page gives
    # almost only zeros; a rendered one, hundreds of distinct values.
    samples = {pixels[r * row + 1 + c * channels: r * row + 1 + (c + 1) * channels]
               for r in range(0, height, 7) for c in range(0, width, 11)}
    assert len(samples) > 50, f"screenshot looks blank ({len(samples)} distinct samples)"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    exe = _chromium()
    with tempfile.TemporaryDirectory(prefix="causantic-chromium-") as profile:
        b = Browser(exe, Path(profile))
        try:
            yield b
        finally:
            b.close()


def test_every_view_renders_the_shared_transcripts_in_chromium(
        server: Server, browser: Browser, dashboard_db: Path, tmp_path: Path):
    """Load the page with the token, visit each view, check what it shows, keep screenshots."""
    browser.call("Page.navigate", session=True, url=server.url + "#overview")
    browser.wait_for("overview")
    text = str(browser.js("document.getElementById('view').innerText"))
    assert "Overview" in text and "napoli-matcha" in text and "session-end" in text
    assert "failing" in text and "memory.db stayed locked" in text
    assert browser.js("document.querySelectorAll('.chart rect.bar').length") > 3
    check_png(browser.screenshot(tmp_path / "dashboard-overview.png"))

    with open_store(dashboard_db, readonly=True) as store:
        session = store.conn.execute(
            "SELECT session_id FROM edges JOIN chunks ON chunks.id = edges.dst"
            " WHERE edges.kind = 'brief' LIMIT 1").fetchone()[0]
        expected = search(store, "daytona pty log streaming", mode="keyword", limit=10)
    text = browser.show(f"timeline/{session}", "timeline")
    assert {"cli", "napoli-matcha", "spotter"} <= set(text.split("\n")) or "napoli-matcha" in \
        str(browser.js("document.getElementById('lanes').textContent"))
    assert browser.js("document.querySelectorAll('#lanes rect.session').length") >= 26
    assert browser.js("document.querySelectorAll('#graph path.edge-next').length") > 5
    assert browser.js("document.querySelectorAll('#graph path.edge-brief').length") >= 1
    assert browser.js("document.querySelectorAll('#graph path.edge-debrief').length") >= 1
    browser.js("document.querySelectorAll('#graph .node-group')[1]"
               ".dispatchEvent(new MouseEvent('click', {bubbles: true}))")
    assert "[Assistant]" in str(browser.js("document.getElementById('chunk-detail').innerText")) \
        or "[User]" in str(browser.js("document.getElementById('chunk-detail').innerText"))
    check_png(browser.screenshot(tmp_path / "dashboard-timeline.png"))
    with open_store(dashboard_db, readonly=True) as store:
        continued = store.conn.execute(
            "SELECT c.session_id FROM edges e JOIN chunks c ON c.id = e.dst"
            " WHERE e.kind = 'continues' LIMIT 1").fetchone()[0]
    browser.show(f"timeline/{continued}", "timeline")
    assert browser.js("document.querySelectorAll('#graph path.edge-continues').length") == 1
    assert browser.js("document.querySelectorAll('#graph rect.outside').length") == 1

    browser.show("search?q=daytona+pty+log+streaming&kind=search&mode=keyword", "search")
    found = browser.js("[...document.querySelectorAll('#results .result')].map(r => r.dataset.session)")
    assert found and found[0] == expected.results[0].session_id
    assert found[0].startswith("74b8b136"), "the PTY log streaming session of napoli-matcha"
    assert "mode keyword" in str(browser.js("document.getElementById('answer-summary').innerText"))
    check_png(browser.screenshot(tmp_path / "dashboard-search.png"))

    text = browser.show("search?q=flaky+pty+streaming&kind=recall&mode=keyword", "search")
    assert "How we got here" in text and "mode chain" in text
    assert browser.js("document.querySelectorAll('#results .step').length") >= 2

    text = browser.show("topics", "topics")
    assert browser.js("document.querySelectorAll('#topic-list tr').length") > 2
    first = browser.js("document.querySelector('#topic-list a').getAttribute('href')")
    check_png(browser.screenshot(tmp_path / "dashboard-topics.png"))
    text = browser.show(str(first).lstrip("#"), "topics")
    assert browser.js("document.querySelectorAll('#topic-chunks tr').length") >= 3

    text = browser.show("memories", "memories")  # ingest's automatic observations
    conn = apsw.Connection(str(server.db), flags=apsw.SQLITE_OPEN_READONLY)
    count, sample = conn.execute(
        "SELECT count(*), (SELECT text FROM memories ORDER BY rowid LIMIT 1) FROM memories"
    ).fetchone()
    conn.close()
    assert count > 0 and f"{count} rows" in text and sample[:40] in text


def test_transcript_html_is_shown_as_text_and_never_runs(server: Server, browser: Browser,
                                                          tmp_path: Path):
    """A chunk holding <script> and an onerror handler, in search results and the session
    view: the markup is visible as text, nothing executed, no element was injected."""
    browser.call("Page.navigate", session=True, url=server.url + "#overview")
    browser.wait_for("overview")
    browser.show("search?q=pwned-marker-7731&kind=search&mode=keyword", "search")
    text = str(browser.js("document.getElementById('results').innerText"))
    assert "<script>window.__xss = 1</script>" in text
    browser.show(f"timeline/{XSS_SESSION}", "timeline")
    assert "<img src=x" in str(browser.js("document.getElementById('chunk-detail').innerText"))
    assert browser.js("typeof window.__xss") == "undefined"
    assert browser.js("document.scripts.length") == 1
    assert browser.js("document.querySelectorAll('main img, main b').length") == 0
    check_png(browser.screenshot(tmp_path / "dashboard-xss.png"))


def test_lessons_view_lists_the_lessons_ingest_derived(server: Server, browser: Browser,
                                                       dashboard_db: Path):
    """The lessons table (issue 16) is filled by ingest: the view lists what it holds."""
    conn = apsw.Connection(str(dashboard_db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        count, signature = conn.execute(
            "SELECT count(*), (SELECT signature FROM lessons ORDER BY rowid LIMIT 1) FROM lessons"
        ).fetchone()
    finally:
        conn.close()
    assert count > 0
    browser.call("Page.navigate", session=True, url=server.url + "#lessons")
    browser.wait_for("lessons")
    assert browser.js("document.querySelectorAll('#lessons-table tr').length") >= 2
    assert signature[:30] in str(browser.js("document.getElementById('view').innerText"))


def test_no_memory_yet_is_one_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from causantic.cli import main

    assert main(["--db", str(tmp_path / "none.db"), "dashboard", "--no-open"]) == 1
    err = capsys.readouterr().err
    assert "no memory yet" in err and len(err.strip().splitlines()) == 1


def test_ctrl_c_stops_the_server_with_one_line(server: Server):
    code, out, err = server.stop()
    assert code == 0, err
    assert out.strip() == "causantic dashboard stopped." and err == ""
