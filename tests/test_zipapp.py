"""causantic.pyz, built by build_zipapp.py and run the way users and Claude Code run it.

The archive is built once per session from a snapshot of the tree (so concurrent edits cannot
change it between two builds), with the wheels from the shared build cache: the first build on a
machine downloads them, later ones are offline. Every run uses `python -S` unless the test is
about something else, so nothing can come from the test venv's site-packages. Extraction tests
point the cache at fresh directories; everything else shares one warm cache.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from causantic.markers import MEMORY_CLOSE, MEMORY_OPEN
from causantic.model import MODEL_ID

from .conftest import PYTHON, REPO, SAMPLES
from .helpers import mcp_client

#: Resolved at import, before the per-test HOME is swapped in: the machine's build cache.
BUILD_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "causantic-build"
TAG = f"cp{sys.version_info[0]}{sys.version_info[1]}"
SPOTTER_CWD = "/home/marco/projects/spotter"
SESSION_1 = "11111111-aaaa-4bbb-8ccc-000000000001"
BUILD_TIMEOUT = 900


def _snapshot(dest: Path) -> Path:
    """Copy what the build reads (build_zipapp.py, pyproject.toml, causantic/) to ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / "build_zipapp.py", dest)
    shutil.copy2(REPO / "pyproject.toml", dest)
    shutil.copytree(REPO / "causantic", dest / "causantic",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "_build_info.json"))
    return dest


def _build(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([PYTHON, str(source / "build_zipapp.py"), "--out", str(out),
                           "--cache-dir", str(BUILD_CACHE)],
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.fixture(scope="session")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _snapshot(tmp_path_factory.mktemp("pyz-src") / "tree")


@pytest.fixture(scope="session")
def archive(snapshot: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """dist/causantic.pyz built once for this interpreter and machine."""
    out = tmp_path_factory.mktemp("pyz-dist")
    _build(snapshot, out)
    return out / "causantic.pyz"


@pytest.fixture(scope="session")
def warm(archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache directory where the archive is already extracted."""
    cache = tmp_path_factory.mktemp("pyz-cache")
    proc = run_pyz(archive, "--version", cache=cache)
    assert proc.returncode == 0, proc.stderr
    return cache


def payload_hash(archive: Path) -> str:
    with zipfile.ZipFile(archive) as zf:
        main = zf.read("__main__.py").decode()
    m = re.search(r"'hash': '([0-9a-f]{16})'", main)
    assert m, "the bootstrap has no payload hash baked in"
    return m.group(1)


def env_for(cache: Path | None, **changes: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "CAUSANTIC_CACHE", "CAUSANTIC_MODEL", "XDG_CACHE"))}
    if cache is not None:
        env["CAUSANTIC_CACHE_DIR"] = str(cache)
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run_pyz(archive: Path, *args: str, cache: Path | None, flags: tuple[str, ...] = ("-S",),
            python: str = PYTHON, env: dict[str, str] | None = None, input: str | None = None,
            **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, *flags, str(archive), *args], input=input,
                          env=env if env is not None else env_for(cache), capture_output=True,
                          text=True, timeout=300, **kwargs)  # type: ignore[call-overload]


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("causantic: ")
    return lines[0]


# -- the file -------------------------------------------------------------------------------


def test_archive_is_one_executable_file_with_a_shebang_and_three_entries(archive: Path):
    data = archive.read_bytes()
    assert data.startswith(b"#!/usr/bin/env python3\n")
    assert archive.stat().st_mode & 0o111 == 0o111
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
    assert [i.filename for i in infos] == ["__main__.py", "__main__.pyc", "payload.zip"]
    assert all(i.compress_type == zipfile.ZIP_STORED for i in infos)
    named = list(archive.parent.glob(f"causantic-*-{TAG}-manylinux_2_*_*.pyz"))
    assert len(named) == 1 and named[0].read_bytes() == data
    assert re.fullmatch(rf"causantic-\d+\.\d+\.\d+-{TAG}-manylinux_2_\d+_\w+\.pyz", named[0].name)


def test_payload_is_pruned_precompiled_and_carries_the_checked_model(archive: Path):
    with zipfile.ZipFile(archive) as zf:
        inner = zipfile.ZipFile(io.BytesIO(zf.read("payload.zip")))
    names = inner.namelist()
    assert names == sorted(names)
    tops = {n.split("/")[0] for n in names}
    assert {"causantic", "apsw", "sqlite_vec", "onnxruntime", "tokenizers", "numpy", "mcp",
            "cryptography", "pydantic"} <= tops
    # Declared but unneeded dependencies are not shipped at all.
    for absent in ("huggingface_hub", "google", "flatbuffers", "sympy", "packaging"):
        assert absent not in tops, absent
    pruned = ("onnxruntime/tools/", "onnxruntime/transformers/", "onnxruntime/quantization/",
              "numpy/f2py/", "numpy/_core/include/")
    assert not [n for n in names if n.startswith(pruned)]
    assert not [n for n in names if "/tests/" in n and not n.startswith("causantic/")]
    assert not [n for n in names if n.endswith(".pyi")]
    assert any(n.startswith("pydantic-") and n.endswith(".dist-info/METADATA") for n in names)

    # Every module has a hash-based pyc that is never checked against its source, so a pyc
    # stays valid after extraction resets file times.
    sources = [n for n in names if n.endswith(".py")]
    pycs = {n for n in names if n.endswith(".pyc")}
    missing = [s for s in sources
               if f"{s.rsplit('/', 1)[0] + '/' if '/' in s else ''}__pycache__/"
               f"{s.rsplit('/', 1)[-1][:-3]}.cpython-{TAG[2:]}.pyc" not in pycs]
    assert len(missing) <= 0.01 * len(sources), missing[:10]
    flags = {int.from_bytes(inner.read(n)[4:8], "little") for n in pycs}
    assert flags == {1}  # hash-based (bit 0), check_source off (bit 1)

    manifest = json.loads(inner.read("causantic/model/files/manifest.json"))
    assert manifest["model_id"] == MODEL_ID
    for name, digest in manifest["files"].items():
        assert hashlib.sha256(inner.read(f"causantic/model/files/{name}")).hexdigest() == digest
    info = json.loads(inner.read("causantic/_build_info.json"))
    assert info["model_id"] == MODEL_ID and info["python_tag"] == TAG
    assert info["model_sha256"] == manifest["files"]


def test_a_rebuild_of_the_same_tree_is_byte_identical(archive: Path, snapshot: Path,
                                                      tmp_path: Path):
    """Same sources and wheels, same bytes: what is shipped can be checked against a build."""
    _build(snapshot, tmp_path / "again")
    assert (tmp_path / "again" / "causantic.pyz").read_bytes() == archive.read_bytes()


# -- running it -----------------------------------------------------------------------------


def test_version_names_version_target_and_model_on_both_paths(archive: Path, warm: Path):
    fast = run_pyz(archive, "--version", cache=warm)  # answered by the bootstrap
    full = run_pyz(archive, "--db", "/nowhere.db", "--version", cache=warm)  # by the CLI
    assert fast.returncode == 0 and full.returncode == 0, (fast.stderr, full.stderr)
    assert fast.stdout == full.stdout
    line = fast.stdout.strip()
    from causantic import __version__

    assert line.startswith(f"causantic {__version__} (archive {TAG}-manylinux_2_")
    assert f"model {MODEL_ID}" in line


def test_samples_ingest_embed_and_search_from_the_archive(archive: Path, warm: Path,
                                                          tmp_path: Path, private_home: Path):
    """The native parts (apsw, sqlite-vec, onnxruntime, tokenizers, numpy) and the model all
    load from the extracted payload under -S, and onnxruntime writes no telemetry."""
    db = str(tmp_path / "memory.db")
    proc = run_pyz(archive, "--db", db, "ingest", str(SAMPLES), "--json", cache=warm)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["files"] == 4  # ingest embeds the new chunks as well
    stats = json.loads(run_pyz(archive, "--db", db, "stats", "--json", cache=warm).stdout)
    assert stats["vectors"] >= stats["chunks"] > 0
    found = run_pyz(archive, "--db", db, "search", "telemetry exporter shutdown", "--mode",
                    "vector", "--json", cache=warm)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"], found.stdout
    assert not (private_home / ".cache" / "Microsoft").exists()


def test_shared_transcripts_give_the_memory_the_installed_package_gives(
        archive: Path, warm: Path, shared_transcripts: Path, shared_db: Path, tmp_path: Path):
    db = str(tmp_path / "memory.db")
    proc = run_pyz(archive, "--db", db, "ingest", str(shared_transcripts), "--no-embed",
                   cache=warm)
    assert proc.returncode == 0, proc.stderr

    def counts(out: str) -> dict[str, int]:
        doc = json.loads(out)
        return {k: doc[k] for k in ("sessions", "chunks", "edges", "projects")}

    ours = run_pyz(archive, "--db", db, "stats", "--json", cache=warm)
    theirs = subprocess.run([PYTHON, "-m", "causantic", "--db", str(shared_db), "stats", "--json"],
                            capture_output=True, text=True, timeout=120)
    assert counts(ours.stdout) == counts(theirs.stdout) and counts(ours.stdout)["sessions"] >= 25

    query = ["search", "daytona pty streaming", "--mode", "keyword", "--json"]
    ours = run_pyz(archive, "--db", db, *query, cache=warm)
    theirs = subprocess.run([PYTHON, "-m", "causantic", "--db", str(shared_db), *query],
                            capture_output=True, text=True, timeout=120)
    ids = [r["chunk_id"] for r in json.loads(ours.stdout)["results"]]
    assert ids and ids == [r["chunk_id"] for r in json.loads(theirs.stdout)["results"]]


@pytest.mark.parametrize("flags", [("-I",), ("-I", "-S"), ()])
def test_runs_isolated_without_site_and_plain(archive: Path, warm: Path, shared_db: Path,
                                              flags: tuple[str, ...]):
    """-I and -S runs work; a plain run imports causantic from the payload, not from the
    venv's (editable) install that site.py would offer."""
    proc = run_pyz(archive, "--db", str(shared_db), "list-projects", cache=warm,
                   flags=(*flags, "-v"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "spotter" in proc.stdout
    loads = [ln for ln in proc.stderr.splitlines()
             if ln.startswith("# code object from") and "/causantic/__pycache__/cli." in ln]
    assert loads and all(str(warm) in ln for ln in loads), loads


def test_runs_as_an_executable_through_its_shebang(archive: Path, warm: Path):
    env = env_for(warm, PATH=f"{Path(PYTHON).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run(["./causantic.pyz", "--version"], cwd=archive.parent, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("causantic "), proc.stderr


# -- first runs and the cache -----------------------------------------------------------------


def test_six_concurrent_first_runs_extract_once(archive: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    procs = [subprocess.Popen([PYTHON, "-S", str(archive), "--version"], env=env_for(cache),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(6)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, [err for _, err in outs]
    assert len({out for out, _ in outs}) == 1
    digest = payload_hash(archive)
    assert sorted(os.listdir(cache)) == [".lock", digest]  # one copy, no temporaries
    assert (cache / digest / ".complete").is_file()
    assert stat.S_IMODE((cache / digest).stat().st_mode) == 0o700


def test_cache_goes_to_xdg_then_home(archive: Path, private_home: Path, tmp_path: Path):
    xdg = tmp_path / "xdg"
    proc = run_pyz(archive, "--version", cache=None, env=env_for(None, XDG_CACHE_HOME=str(xdg)))
    assert proc.returncode == 0, proc.stderr
    assert (xdg / "causantic" / payload_hash(archive) / ".complete").is_file()

    proc = run_pyz(archive, "--version", cache=None, env=env_for(None))
    assert proc.returncode == 0, proc.stderr
    home_cache = private_home / ".cache" / "causantic"
    assert (home_cache / payload_hash(archive) / ".complete").is_file()
    assert stat.S_IMODE(home_cache.stat().st_mode) == 0o700


def test_an_unusable_cache_dir_setting_is_one_clear_line(archive: Path, tmp_path: Path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    proc = run_pyz(archive, "--version", cache=blocker / "cache")
    line = one_line_error(proc)
    assert str(blocker / "cache") in line and "CAUSANTIC_CACHE_DIR" in line


def test_a_damaged_copy_is_one_clear_line_and_leaves_nothing_behind(archive: Path,
                                                                   tmp_path: Path):
    """A truncated download or a flipped bit must not become a half-extracted version."""
    data = bytearray(archive.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside the stored payload
    bad = tmp_path / "causantic.pyz"
    bad.write_bytes(bytes(data))
    cache = tmp_path / "cache"
    line = one_line_error(run_pyz(bad, "--version", cache=cache))
    assert "damaged" in line and str(bad) in line
    assert sorted(os.listdir(cache)) == [".lock"]


def _nobody_python() -> str | None:
    """An interpreter of our minor version that uid 65534 can execute, if any."""
    for exe in (f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}", "/usr/bin/python3",
                "/usr/local/bin/python3"):
        if os.path.exists(exe):
            probe = subprocess.run([exe, "-S", "-c", "import sys; print(sys.version_info[:2])"],
                                   capture_output=True, text=True)
            if probe.stdout.strip() == str(tuple(sys.version_info[:2])):
                return exe
    return None


@pytest.fixture
def world_readable(archive: Path) -> Iterator[Path]:
    """A copy of the archive another user can read (pytest's tmp dirs are 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="causantic-pyz-"))
    try:
        folder.chmod(0o755)
        shutil.copy2(archive, folder / "causantic.pyz")
        (folder / "causantic.pyz").chmod(0o755)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_read_only_or_missing_home_falls_back_to_a_private_temp_dir(archive: Path,
                                                                   world_readable: Path):
    """As root, run as `nobody` (root ignores file modes); otherwise make HOME read-only."""
    home = world_readable / "home"
    home.mkdir()
    tmp = world_readable / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)
    if os.geteuid() == 0:
        python = _nobody_python()
        if python is None:
            pytest.skip("no system python of this minor version that uid 65534 can run")
        uid = 65534
        home.chmod(0o755)  # owned by root: read-only for nobody

        def become() -> None:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
        preexec = become
    else:
        python, uid, preexec = PYTHON, os.getuid(), None
        home.chmod(0o500)
    pyz = world_readable / "causantic.pyz"
    try:
        for env in (env_for(None, HOME=str(home), TMPDIR=str(tmp)),
                    env_for(None, HOME=None, TMPDIR=str(tmp))):  # nobody's home: /nonexistent
            proc = run_pyz(pyz, "--version", cache=None, python=python, env=env,
                           preexec_fn=preexec, cwd="/")
            assert proc.returncode == 0, proc.stderr
            root = tmp / f"causantic-{uid}"
            st = root.stat()
            assert st.st_uid == uid and stat.S_IMODE(st.st_mode) == 0o700
            assert (root / payload_hash(archive) / ".complete").is_file()
        assert not (home / ".cache").exists()
    finally:
        home.chmod(0o755)


@pytest.mark.parametrize("plant", ["open-mode", "symlink", "other-owner"])
def test_an_unsafe_temp_cache_dir_is_refused(archive: Path, tmp_path: Path, plant: str):
    """Another user may pre-create /tmp/causantic-<uid>: never run code from it."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    root = tmp / f"causantic-{os.getuid()}"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    if plant == "open-mode":
        root.mkdir()
        root.chmod(0o777)
    elif plant == "symlink":
        root.symlink_to(elsewhere)
    else:
        if os.geteuid() != 0:
            pytest.skip("needs root to create a directory owned by another user")
        root.mkdir(mode=0o700)
        os.chown(root, 65534, 65534)
    not_a_home = tmp_path / "home-is-a-file"
    not_a_home.write_text("")
    env = env_for(None, HOME=str(not_a_home), TMPDIR=str(tmp))
    line = one_line_error(run_pyz(archive, "--version", cache=None, env=env))
    assert str(root) in line and "CAUSANTIC_CACHE_DIR" in line
    assert not list(elsewhere.iterdir())
    if root.is_dir() and not root.is_symlink():
        assert not [n for n in os.listdir(root) if n != ".lock"]


def test_a_noexec_cache_is_refused_with_the_fix(archive: Path, tmp_path: Path):
    """Native libraries cannot be loaded from a noexec mount (a common /tmp setting): say so
    before extracting, and name the setting that fixes it."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a noexec filesystem")
    mount = tmp_path / "noexec"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "noexec,size=1m", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        line = one_line_error(run_pyz(archive, "--version", cache=mount / "cache"))
        assert "noexec" in line and "CAUSANTIC_CACHE_DIR" in line
        assert not [n for n in os.listdir(mount / "cache") if n != ".lock"]
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def test_old_versions_and_stale_temporaries_are_cleaned_never_the_current(archive: Path,
                                                                         tmp_path: Path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    digest = payload_hash(archive)
    month_ago = time.time() - 30 * 86400
    two_hours_ago = time.time() - 7200

    def version_dir(name: str, used: float | None) -> Path:
        path = cache / name
        path.mkdir()
        (path / "payload-file").write_text("x")
        if used is not None:
            (path / ".complete").write_text(name)
            os.utime(path / ".complete", (used, used))
        return path

    old = version_dir("a" * 16, month_ago)
    recent = version_dir("b" * 16, time.time() - 86400)
    stale_tmp = version_dir("c" * 16 + ".tmp-x1", None)
    os.utime(stale_tmp, (two_hours_ago, two_hours_ago))
    fresh_tmp = version_dir("d" * 16 + ".tmp-x2", None)
    leftover = version_dir(digest, None)  # an interrupted earlier attempt: no .complete
    (cache / "notes.txt").write_text("not ours")

    proc = run_pyz(archive, "--version", cache=cache)
    assert proc.returncode == 0, proc.stderr
    assert not old.exists() and not stale_tmp.exists()
    assert recent.exists() and fresh_tmp.exists() and (cache / "notes.txt").exists()
    assert (leftover / ".complete").is_file() and not (leftover / "payload-file").exists()


# -- the guard ------------------------------------------------------------------------------


def _other_minor_python() -> str | None:
    mine = sys.version_info[:2]
    for minor in (12, 13, 14, 10, 11):
        if (3, minor) == mine:
            continue
        found = shutil.which(f"python3.{minor}")
        roots = sorted(Path.home().glob(f".pyenv/versions/3.{minor}.*/bin/python3.{minor}"))
        for exe in ([found] if found else []) + [str(p) for p in roots]:
            probe = subprocess.run([exe, "-S", "-c", "import sys; print(sys.version_info[:2])"],
                                   capture_output=True, text=True, env=env_for(None))
            if probe.returncode == 0 and probe.stdout.strip() == str((3, minor)):
                return exe
    return None


def _tampered(archive: Path, snapshot: Path, dest: Path, old: str, new: str) -> Path:
    """A copy of the archive whose baked-in build facts say something else (source only:
    the compiled bootstrap would win over an edited source)."""
    spec = importlib.util.spec_from_file_location("build_zipapp_under_test",
                                                  snapshot / "build_zipapp.py")
    assert spec and spec.loader
    builder = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = builder  # dataclasses look their module up while exec runs
    spec.loader.exec_module(builder)
    with zipfile.ZipFile(archive) as zf:
        main = zf.read("__main__.py").decode()
        payload = zf.read("payload.zip")
    assert main.count(old) == 1
    builder.write_archive(dest, main.replace(old, new), payload, 315532800)
    return dest


def test_another_python_version_gets_one_line_naming_the_build(archive: Path, warm: Path,
                                                               snapshot: Path, tmp_path: Path):
    want = f"built for CPython {sys.version_info[0]}.{sys.version_info[1]} on manylinux_2_"
    other = _other_minor_python()
    if other is not None:
        line = one_line_error(run_pyz(archive, "--version", cache=warm, python=other))
        assert want in line and "build_zipapp.py" in line
    # Whatever interpreters this machine has: the archive claims another minor version.
    mine = f"'python': [{sys.version_info[0]}, {sys.version_info[1]}]"
    fake = _tampered(archive, snapshot, tmp_path / "causantic.pyz", mine, "'python': [3, 99]")
    line = one_line_error(run_pyz(fake, "--version", cache=warm))
    assert "built for CPython 3.99" in line and "python3.99" in line


def test_a_hook_on_the_wrong_interpreter_exits_0_with_one_line_in_the_hook_log(
        archive: Path, warm: Path, snapshot: Path, tmp_path: Path):
    """A hook must never fail Claude Code: the version check speaks in the hook log instead."""
    mine = f"'python': [{sys.version_info[0]}, {sys.version_info[1]}]"
    fake = _tampered(archive, snapshot, tmp_path / "causantic.pyz", mine, "'python': [3, 99]")
    home = tmp_path / "causantic-home"
    env = env_for(warm, CAUSANTIC_HOME=str(home))
    for args in (["hook", "session-start"], ["--db", str(tmp_path / "m.db"), "hook", "session-end"]):
        proc = run_pyz(fake, *args, cache=warm, env=env, input='{"session_id": "s"}')
        assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    lines = (home / "logs" / "hooks.log").read_text().splitlines()
    assert len(lines) == 2 and "hook session-start not run: " in lines[0]
    assert "hook session-end not run: " in lines[1] and "built for CPython 3.99" in lines[1]
    assert (home / "logs" / "hooks.log").stat().st_mode & 0o777 == 0o600
    assert all(f.stat().st_mode & 0o777 == 0o700 for f in (home, home / "logs"))
    line = one_line_error(run_pyz(fake, "stats", cache=warm, env=env))  # not a hook: exit 1
    assert "built for CPython 3.99" in line


def test_another_platform_gets_one_line_naming_the_build(archive: Path, warm: Path,
                                                         snapshot: Path, tmp_path: Path):
    arch = os.uname().machine
    fake = _tampered(archive, snapshot, tmp_path / "causantic.pyz", f"'arch': '{arch}'",
                     "'arch': 'riscv64'")
    line = one_line_error(run_pyz(fake, "--version", cache=warm))
    assert "(Linux riscv64" in line and arch in line


# -- Claude Code's way in: install, hooks, MCP -------------------------------------------------


def test_install_from_the_archive_writes_hooks_that_run_it(archive: Path, warm: Path,
                                                           shared_db: Path, private_home: Path):
    """The hook command names the archive and the interpreter by absolute path, with -S, and
    runs under sh -c as Claude Code runs it."""
    proc = run_pyz(archive, "--db", str(shared_db), "install", cache=warm)
    assert proc.returncode == 0, proc.stderr
    settings = json.loads((private_home / ".claude" / "settings.json").read_text())
    commands = [h["command"] for group in settings["hooks"]["SessionStart"]
                for h in group["hooks"]]
    ours = [c for c in commands if str(archive) in c]
    assert len(ours) == 1 and " -S " in ours[0] and ours[0].startswith("/")
    payload = {"session_id": "00000000-0000-4000-8000-000000000000", "cwd": SPOTTER_CWD,
               "hook_event_name": "SessionStart", "source": "startup"}
    hook = subprocess.run(["sh", "-c", ours[0]], input=json.dumps(payload), env=env_for(warm),
                          capture_output=True, text=True, timeout=120)
    assert hook.returncode == 0 and hook.stderr == "", hook.stderr
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith(MEMORY_OPEN) and context.rstrip().endswith(MEMORY_CLOSE)
    assert "spotter" in context

    state = json.loads((private_home / ".claude" / ".claude.json").read_text()) \
        if (private_home / ".claude" / ".claude.json").exists() \
        else json.loads((private_home / ".claude.json").read_text())
    server = state["mcpServers"]["causantic"]
    assert Path(server["command"]).is_absolute() and str(archive) in server["args"]


def test_session_end_hook_ingests_in_the_background_through_the_archive(
        archive: Path, warm: Path, tmp_path: Path, private_home: Path):
    """The detached worker the hook starts is the archive again, found from sys.argv[0]."""
    path = SAMPLES / "-home-dev-acme-api" / f"{SESSION_1}.jsonl"
    db = tmp_path / "memory.db"
    payload = {"session_id": SESSION_1, "transcript_path": str(path), "cwd": "/home/dev/acme-api",
               "hook_event_name": "SessionEnd", "reason": "exit"}
    proc = run_pyz(archive, "--db", str(db), "hook", "session-end", cache=warm,
                   input=json.dumps(payload))
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == "", proc.stderr
    deadline = time.monotonic() + 120
    chunks = 0
    while time.monotonic() < deadline:
        stats = run_pyz(archive, "--db", str(db), "stats", "--json", cache=warm)
        if stats.returncode == 0:
            chunks = json.loads(stats.stdout)["chunks"]
            if chunks:
                break
        time.sleep(0.5)
    assert chunks > 0


@pytest.mark.anyio
async def test_serve_mcp_from_the_archive_answers_initialize_list_and_a_call(
        archive: Path, warm: Path, shared_db: Path, tmp_path: Path):
    async with mcp_client(["-S", str(archive), "--db", str(shared_db), "serve-mcp"],
                          tmp_path / "server.log", env=env_for(warm)) as session:
        init = await session.initialize()
        assert init.server_info.name == "causantic"
        tools = {t.name for t in (await session.list_tools()).tools}
        assert {"search", "recall"} <= tools
        result = await session.call_tool("search", {"query": "daytona pty streaming",
                                                    "limit": 3})
    assert not result.is_error
    assert "daytona" in result.content[0].text.lower()


def test_export_import_peer_import_and_dashboard_run_from_the_archive(
        archive: Path, warm: Path, shared_db: Path, tmp_path: Path):
    """Issue 18's commands from the archive: the export round trip, both peer importers, and
    the dashboard serving its static files (package data read with importlib.resources)."""
    import http.client
    import signal

    from .test_import_peers import make_archive, make_claude_mem

    dump = tmp_path / "memory.jsonl.gz"
    proc = run_pyz(archive, "--db", str(shared_db), "export", str(dump), "--json", cache=warm)
    assert proc.returncode == 0, proc.stderr
    exported = json.loads(proc.stdout)["rows"]
    db = tmp_path / "memory.db"
    proc = run_pyz(archive, "--db", str(db), "import", str(dump), "--json", cache=warm)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tables"]["chunks"]["added"] == exported["chunks"] > 700
    for source, path in (("claude-mem", make_claude_mem(tmp_path / "claude-mem.db")),
                         ("episodic-memory", make_archive(tmp_path / "em"))):
        proc = run_pyz(archive, "--db", str(db), "import", "--from", source, str(path), "--json",
                       cache=warm)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["chunks_added"] > 0

    server = subprocess.Popen([PYTHON, "-S", str(archive), "--db", str(db), "dashboard",
                               "--no-open"], env=env_for(warm), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().split()[2]
        port, token = int(url.split(":")[2].split("/")[0]), url.split("token=")[1]
        for path, needle in (("/", b"/static/app.js"), ("/static/app.js", b"function el("),
                             ("/static/style.css", b"--accent"), ("/api/overview", b'"chunks"')):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", f"{path}?token={token}")
            resp = conn.getresponse()
            body = resp.read()
            conn.close()
            assert resp.status == 200 and needle in body, (path, resp.status, body[:200])
    finally:
        server.send_signal(signal.SIGINT)
        try:
            out, err = server.communicate(timeout=30)
        finally:  # a server that did not stop must not leak its pipes into later tests
            if server.poll() is None:
                server.kill()
                server.wait(timeout=10)
            for pipe in (server.stdout, server.stderr):
                if pipe:
                    pipe.close()
    assert server.returncode == 0 and out.strip() == "causantic dashboard stopped.", (out, err)
