#!/usr/bin/env python3
"""Build ``dist/causantic.pyz``: causantic, its runtime dependencies and the model in one file.

Usage::

    python3 build_zipapp.py                      # for this interpreter and machine
    python3 build_zipapp.py --python-version 3.12 --platform manylinux_2_28_aarch64
    python3 build_zipapp.py --wheels ./wheels    # offline, from a folder of wheels

Standard library only. pip is run as a subprocess to pick and download wheels (from PyPI or the
indexes pip is configured with, or only from ``--wheels DIR``); nothing else is fetched.

The archive (see ``causantic/_bootstrap.py`` for the run-time half)::

    #!/usr/bin/env python3
    __main__.py     the bootstrap, with the build info and the payload hash baked in
    __main__.pyc    the same, compiled (zipimport prefers it; saves compiling it every run)
    payload.zip     stored (not compressed again): a zip of the import root, namely causantic/,
                    every dependency (unpacked wheels, pruned), byte-compiled UNCHECKED_HASH
                    pycs, and causantic/_build_info.json

The bootstrap extracts the payload once into a per-user cache directory named after the
payload's sha256 and runs from there. One inner zip keeps the outer central directory at three
entries, so a warm start parses almost nothing.

Dependencies come from ``[project].dependencies`` in pyproject.toml. ``onnxruntime`` and
``tokenizers`` are taken without their declared dependencies (protobuf, flatbuffers, packaging,
sympy, huggingface-hub): inference from a local file needs none of them. The rest (apsw,
sqlite-vec, numpy, mcp and its closure) is resolved by pip for the target.

Reproducible: entries are sorted, timestamps are ``SOURCE_DATE_EPOCH`` (else the last commit's
time, else 1980-01-01), permissions fixed, pycs hash-based and compiled with a fixed hash
seed, so two builds of one tree from the same wheels give the same bytes. The wheel cache
(``~/.cache/causantic-build/wheels-<target>``) is the lock: later builds resolve from it
offline; ``--refresh`` asks the index again.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

REPO = Path(__file__).resolve().parent
PACKAGE = "causantic"
BOOTSTRAP = REPO / PACKAGE / "_bootstrap.py"
BUILD_INFO_NAME = "_build_info.json"
BUILD_MARKER = "BUILD: dict = {}  # replaced by build_zipapp.py"
SHEBANG = b"#!/usr/bin/env python3\n"

#: Installed without their declared dependencies (see the module docstring).
NO_DEPS = ("onnxruntime", "tokenizers")
#: The oldest glibc any of our native wheels accept today (apsw, numpy, onnxruntime). A default
#: build targets it, so the archive runs on every machine those wheels run on.
DEFAULT_GLIBC = (2, 28)

#: Directories dropped from the payload, relative to the import root. Test suites are dropped
#: wherever they are (see `_is_test_dir`).
PRUNE_DIRS = (
    "onnxruntime/tools",  # model conversion/optimisation scripts
    "onnxruntime/transformers",  # transformer graph optimiser (imports torch/onnx)
    "onnxruntime/quantization",  # quantisation tooling (needs onnx); we ship a quantised model
    "onnxruntime/datasets",  # sample models
    "numpy/f2py",  # Fortran wrapper generator
    "numpy/_pyinstaller",  # PyInstaller hooks
    "numpy/_core/include",  # C headers
    "numpy/_core/lib",  # static npymath + pkg-config
    "numpy/random/lib",  # static npyrandom
    "numpy/random/_examples",  # cython/numba examples
    "numpy/doc",
    "tokenizers/tools",  # HTML visualiser for notebooks
    "mcp/cli",  # `mcp` developer CLI (needs typer, not shipped)
)
#: File suffixes dropped: type stubs, C/Cython sources and headers, static libraries.
PRUNE_SUFFIXES = (".pyi", ".pxd", ".pyx", ".h", ".c", ".cpp", ".hpp", ".a")
#: Files dropped from every .dist-info (install bookkeeping; licences and METADATA stay, because
#: importlib.metadata (pydantic plugins, version lookups) reads them).
PRUNE_DIST_INFO = ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")
#: Our own tree: build-time only or editor noise.
SKIP_OWN = ("__pycache__",)


class BuildError(Exception):
    """A build step failed; str(exc) is printed as one line."""


@dataclass(frozen=True)
class Target:
    """What the archive is built for: one CPython minor version on one platform."""

    python: tuple[int, int]
    platform: str  # as requested, e.g. manylinux_2_28_x86_64
    arch: str
    glibc: tuple[int, int]

    @property
    def python_tag(self) -> str:
        return f"cp{self.python[0]}{self.python[1]}"

    @property
    def key(self) -> str:
        return f"{self.python_tag}-{self.platform}"

    def pip_platforms(self) -> list[str]:
        """Every platform tag a wheel for this target may carry (pip does not expand
        ``manylinux_2_X`` to older glibc tags by itself)."""
        tags = [f"manylinux_2_{minor}_{self.arch}" for minor in range(self.glibc[1], 4, -1)]
        legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
        tags += [f"{name}_{self.arch}" for minor, name in legacy.items() if minor <= self.glibc[1]]
        return tags


@dataclass(frozen=True)
class Wheel:
    """One wheel file and what its name says."""

    path: Path
    name: str  # normalised project name
    version: str
    platforms: tuple[str, ...]

    @classmethod
    def parse(cls, path: Path) -> Wheel:
        parts = path.name[: -len(".whl")].split("-")
        if len(parts) not in (5, 6):
            raise BuildError(f"{path.name} is not a wheel file name")
        return cls(path, normalise(parts[0]), parts[1], tuple(parts[-1].split(".")))

    def glibc_floor(self) -> tuple[int, int] | None:
        """The oldest glibc this wheel runs on, or None for a pure/any-platform wheel."""
        floors = []
        for tag in self.platforms:
            m = re.fullmatch(r"manylinux_(\d+)_(\d+)_\w+", tag)
            if m:
                floors.append((int(m.group(1)), int(m.group(2))))
            legacy = {"manylinux2014": (2, 17), "manylinux2010": (2, 12), "manylinux1": (2, 5)}
            for name, floor in legacy.items():
                if tag.startswith(name + "_"):
                    floors.append(floor)
        return min(floors) if floors else None


def normalise(name: str) -> str:
    """PEP 503 normalised project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def log(message: str) -> None:
    print(f"build_zipapp: {message}", flush=True)


# -- target ---------------------------------------------------------------------------------


def resolve_target(python_version: str | None, platform: str | None) -> Target:
    """The target from the flags, defaulting to this interpreter and this machine's arch."""
    if python_version:
        m = re.fullmatch(r"3\.(\d+)", python_version)
        if not m:
            raise BuildError(f"--python-version {python_version!r}: expected 3.N, e.g. 3.11")
        python = (3, int(m.group(1)))
    else:
        python = sys.version_info[:2]
    if python < (3, 11):
        raise BuildError(f"causantic needs Python >= 3.11, not {python[0]}.{python[1]}")
    if platform is None:
        if not sys.platform.startswith("linux"):
            raise BuildError(f"no default target for {sys.platform}; pass --platform manylinux_2_28_<arch>")
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
        m = re.fullmatch(r"glibc (\d+)\.(\d+)", libc)
        if not m:
            raise BuildError(f"this machine's C library is {libc or 'unknown'}, not glibc; "
                             "pass --platform manylinux_2_28_<arch>")
        if (int(m.group(1)), int(m.group(2))) < DEFAULT_GLIBC:
            raise BuildError(f"this machine has {libc}; causantic's native wheels need glibc >= 2.28")
        platform = f"manylinux_{DEFAULT_GLIBC[0]}_{DEFAULT_GLIBC[1]}_{os.uname().machine}"
    legacy = {"manylinux2014": "manylinux_2_17", "manylinux2010": "manylinux_2_12",
              "manylinux1": "manylinux_2_5"}
    for old, new in legacy.items():
        if platform.startswith(old + "_"):
            platform = new + platform[len(old):]
    m = re.fullmatch(r"manylinux_2_(\d+)_(x86_64|aarch64|i686|ppc64le|s390x|armv7l)", platform)
    if not m:
        raise BuildError(f"--platform {platform!r}: expected manylinux_2_N_<arch>, "
                         "e.g. manylinux_2_28_x86_64 or manylinux_2_28_aarch64")
    return Target(python, platform, m.group(2), (2, int(m.group(1))))


# -- project facts --------------------------------------------------------------------------


def project_dependencies() -> list[str]:
    """The runtime requirements from pyproject.toml."""
    with open(REPO / "pyproject.toml", "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    return [str(d) for d in deps]


def requirement_name(req: str) -> str:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    if not m:
        raise BuildError(f"cannot read the requirement {req!r} in pyproject.toml")
    return normalise(m.group(1))


def git(*args: str) -> str:
    """Output of a git command in the repo, or '' when git or the repo is missing."""
    try:
        out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return ""
    return out.stdout.strip()


def source_date_epoch() -> int:
    """Timestamp for every zip entry: SOURCE_DATE_EPOCH, else the last commit, else 1980."""
    value = os.environ.get("SOURCE_DATE_EPOCH") or git("log", "-1", "--format=%ct")
    try:
        return max(int(value), 315532800)  # zip cannot store dates before 1980
    except ValueError:
        return 315532800


# -- model ----------------------------------------------------------------------------------


def ensure_model(python: str | None) -> dict:
    """Check the built model against its manifest, building it first if it is missing.

    Returns the manifest. The model is built with ``python -m causantic.model.build`` by an
    interpreter that has numpy, onnx and onnxruntime: ``--model-python``, else this one, else
    a build venv ``.build/venv`` created on demand.
    """
    files = REPO / PACKAGE / "model" / "files"
    problem = _model_problem(files)
    if problem is None:
        return json.loads((files / "manifest.json").read_bytes())
    log(f"model: {problem}; building it")
    builder = python or _model_python()
    env = dict(os.environ, ORT_DISABLE_TELEMETRY="1", PYTHONPATH=str(REPO))
    env.pop("CAUSANTIC_MODEL_DIR", None)
    run([builder, "-m", "causantic.model.build", "--out", str(files)], env=env)
    problem = _model_problem(files)
    if problem:
        raise BuildError(f"the model build finished but {problem}")
    return json.loads((files / "manifest.json").read_bytes())


def _model_problem(files: Path) -> str | None:
    try:
        manifest = json.loads((files / "manifest.json").read_bytes())
        for name, digest in manifest["files"].items():
            if hashlib.sha256((files / name).read_bytes()).hexdigest() != digest:
                return f"{files / name} does not match manifest.json"
    except FileNotFoundError as exc:
        return f"{exc.filename} is missing"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"{files / 'manifest.json'} is unreadable ({exc})"
    return None


def _model_python() -> str:
    probe = "import numpy, onnx, onnxruntime"
    if subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0:
        return sys.executable
    venv = REPO / ".build" / "venv"
    python = venv / "bin" / "python"
    if not python.exists():
        log(f"model: creating the build venv {venv}")
        run([sys.executable, "-m", "venv", str(venv)])
    if subprocess.run([str(python), "-c", probe], capture_output=True).returncode != 0:
        run([str(python), "-m", "pip", "install", "-q", "numpy", "onnx", "onnxruntime"])
    return str(python)


# -- wheels ---------------------------------------------------------------------------------


def collect_wheels(target: Target, into: Path, wheels_dir: Path | None, cache: Path,
                   refresh: bool) -> list[Wheel]:
    """Resolve the runtime wheels for ``target``; return them sorted by name.

    From ``wheels_dir`` only, if given (pip resolves offline from that folder). Otherwise from
    the wheel cache: a lock file there records what pip resolved for these requirements and
    this target, and a later build reuses exactly those files without running pip. Without a
    usable lock, or with ``refresh``, pip resolves against its configured index, and the wheels
    and the lock are saved into the cache. ``into`` is scratch space for pip.
    """
    reqs = project_dependencies()
    bare = [r for r in reqs if requirement_name(r) in NO_DEPS]
    full = [r for r in reqs if requirement_name(r) not in NO_DEPS]
    if wheels_dir is not None:
        if not wheels_dir.is_dir():
            raise BuildError(f"--wheels {wheels_dir}: not a directory")
        _pip_download(target, full, bare, into, source=wheels_dir)
        log(f"wheels: resolved from {wheels_dir}")
        return _wheels(sorted(into.glob("*.whl")))
    key = hashlib.sha256(json.dumps([target.key, full, bare, sorted(NO_DEPS)]).encode()).hexdigest()
    lock = cache / f"lock-{key[:16]}.json"
    if not refresh:
        try:
            names = json.loads(lock.read_text())["wheels"]
            paths = [cache / n for n in names]
            if names and all(p.is_file() for p in paths):
                log(f"wheels: as locked in {lock}")
                return _wheels(paths)
        except (OSError, ValueError, KeyError, TypeError):
            pass
    log(f"wheels: resolving for {target.key} with pip")
    _pip_download(target, full, bare, into, source=None)
    cache.mkdir(parents=True, exist_ok=True)
    got = sorted(into.glob("*.whl"))
    for w in got:
        if not (cache / w.name).exists():
            tmp = cache / (w.name + ".part")
            shutil.copyfile(w, tmp)
            os.replace(tmp, cache / w.name)
    wheels = _wheels([cache / w.name for w in got])
    doc = {"target": target.key, "requirements": full, "no_deps": bare,
           "wheels": [w.path.name for w in wheels]}
    tmp = lock.with_name(lock.name + ".part")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, lock)
    log(f"wheels: cached and locked in {lock}")
    return wheels


def _wheels(paths: list[Path]) -> list[Wheel]:
    wheels = sorted((Wheel.parse(p) for p in paths), key=lambda w: w.name)
    names = [w.name for w in wheels]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise BuildError(f"more than one wheel resolved for {', '.join(sorted(dupes))}")
    return wheels


def _pip_download(target: Target, full: list[str], bare: list[str], into: Path,
                  source: Path | None) -> None:
    base = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
            "--only-binary=:all:", "--implementation", "cp",
            "--python-version", f"{target.python[0]}.{target.python[1]}",
            "--abi", target.python_tag, "--abi", "abi3", "--abi", "none", "-d", str(into)]
    for tag in target.pip_platforms():
        base += ["--platform", tag]
    if source is not None:
        # --isolated: ignore pip's config files and PIP_* variables, so nothing but `source`
        # is consulted.
        base[4:4] = ["--isolated", "--no-index", "--find-links", str(source)]
    for reqs, extra in ((full, []), (bare, ["--no-deps"])):
        if not reqs:
            continue
        proc = subprocess.run([*base, *extra, *reqs], capture_output=True, text=True)
        if proc.returncode != 0:
            lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
            errors = [ln for ln in lines if ln.startswith("ERROR")]
            where = f"from {source}" if source else "from the package index"
            detail = (errors or lines or ["no output"])[-1]
            msg = f"pip could not get wheels for {target.key} {where}: {detail}"
            if "No module named pip" in proc.stderr:
                msg = f"{sys.executable} has no pip; install it (python3 -m ensurepip) or run with a venv's python"
            raise BuildError(msg)


# -- staging --------------------------------------------------------------------------------


def unpack_wheel(wheel: Wheel, root: Path) -> None:
    """Install a wheel's files under ``root`` as pip --target would (no scripts, no RECORD)."""
    with zipfile.ZipFile(wheel.path) as zf:
        for info in zf.infolist():
            name = info.filename
            if info.is_dir():
                continue
            parts = name.split("/")
            if parts[0].endswith(".data"):
                # purelib/platlib go to the import root; scripts, headers, data are not needed.
                if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
                    continue
                parts = parts[2:]
            if any(p in ("", ".", "..") for p in parts) or name.startswith("/"):
                raise BuildError(f"{wheel.path.name}: unsafe path {name!r}")
            dest = root.joinpath(*parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out)


def copy_own_package(root: Path, version: str) -> None:
    """Copy causantic/ from the working tree (models included) and give it a dist-info."""
    src = REPO / PACKAGE
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if any(part in SKIP_OWN for part in rel.parts) or path.suffix in (".pyc", ".pyo"):
            continue
        if rel.name == BUILD_INFO_NAME:
            continue
        dest = root / PACKAGE / rel
        if path.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
        elif path.is_file():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
    info = root / f"{PACKAGE}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("[console_scripts]\ncausantic = causantic.cli:main\n")


def _is_test_dir(rel: Path) -> bool:
    # A package's test suite: a directory named tests/ (or test/ inside a package) below the
    # top level. Top-level names are real packages and stay.
    return len(rel.parts) > 1 and rel.name in ("tests", "test", "testing_data")


def prune(root: Path) -> tuple[int, int]:
    """Drop what the runtime never imports; return (files, bytes) removed."""
    removed = [0, 0]

    def drop(path: Path) -> None:
        if path.is_dir() and not path.is_symlink():
            for f in path.rglob("*"):
                if f.is_file():
                    removed[0] += 1
                    removed[1] += f.stat().st_size
            shutil.rmtree(path)
        elif path.exists():
            removed[0] += 1
            removed[1] += path.stat().st_size
            path.unlink()

    for rel in PRUNE_DIRS:
        drop(root / rel)
    for path in sorted(root.rglob("*"), reverse=True):
        rel = path.relative_to(root)
        if path.is_dir():
            if path.name == "__pycache__" or (_is_test_dir(rel) and not rel.parts[0].endswith(".dist-info")
                                              and rel.parts[0] != PACKAGE):
                drop(path)
        elif rel.parts[0].endswith(".dist-info") and path.name in PRUNE_DIST_INFO:
            drop(path)
        elif path.suffix in PRUNE_SUFFIXES and rel.parts[0] != PACKAGE:
            drop(path)
    return removed[0], removed[1]


def compile_python(target: Target, python: str | None) -> str | None:
    """An interpreter of the target's minor version to byte-compile with, or None."""
    want = f"{target.python[0]}.{target.python[1]}"
    for exe in [python] if python else [sys.executable, shutil.which(f"python{want}")]:
        if not exe:
            continue
        probe = subprocess.run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == want:
            return exe
    if python:
        raise BuildError(f"--compile-python {python} is not a working Python {want}")
    return None


def _compile_env() -> dict[str, str]:
    # A fixed hash seed keeps frozenset constants in one order, so pycs are reproducible.
    env = dict(os.environ, PYTHONHASHSEED="0")
    env.pop("PYTHONPYCACHEPREFIX", None)
    return env


def compile_tree(root: Path, exe: str) -> str:
    """Byte-compile every module under ``root`` into UNCHECKED_HASH pycs; say what was done.

    Hash-based pycs stay valid after extraction resets file times, so the first run after
    extraction imports without compiling anything.
    """
    code = (
        "import compileall, py_compile, sys\n"
        "ok = compileall.compile_dir(sys.argv[1], stripdir=sys.argv[1], quiet=1, workers=0,\n"
        "    invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)\n"
    )
    proc = subprocess.run([exe, "-I", "-c", code, str(root)], env=_compile_env(),
                          capture_output=True, text=True)
    failed = [ln for ln in proc.stdout.splitlines() if ln.startswith("***")]
    note = f" ({len(failed)} files did not compile; they stay source only)" if failed else ""
    return f"compiled with {exe}{note}"


def compile_bootstrap(source: str, exe: str) -> bytes:
    """``__main__.pyc`` for the outer zip: zipimport tries it before ``__main__.py`` and so
    skips compiling the bootstrap on every run. Another Python rejects its magic number and
    falls back to the source, whose version check then speaks."""
    code = (
        "import importlib.util as u, importlib._bootstrap_external as e, sys\n"
        "src = sys.stdin.buffer.read()\n"
        "pyc = e._code_to_hash_pyc(compile(src, '__main__.py', 'exec'), u.source_hash(src), False)\n"
        "sys.stdout.buffer.write(pyc)\n"
    )
    proc = subprocess.run([exe, "-I", "-c", code], input=source.encode(), env=_compile_env(),
                          capture_output=True)
    if proc.returncode != 0:
        raise BuildError(f"cannot compile the bootstrap: {proc.stderr.decode().strip()[-300:]}")
    return proc.stdout


# -- zips -----------------------------------------------------------------------------------


def _dos_time(epoch: int) -> tuple[int, int]:
    y, mo, d, h, mi, sec = time.gmtime(epoch)[:6]
    return (h << 11) | (mi << 5) | (sec // 2), ((y - 1980) << 9) | (mo << 5) | d


def _deflate(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def write_zip(out: BinaryIO, entries: list[tuple[str, bytes]], epoch: int, deflate: bool) -> None:
    """Write a zip of ``entries`` (in the given order) at ``out``'s current position.

    Written by hand rather than with zipfile so that members compress on all cores (zlib
    drops the GIL) and every header byte is fixed: one timestamp, mode 0644, no extra fields.
    Offsets are absolute, so a prefix written before (the shebang) is fine.
    """
    mtime, mdate = _dos_time(epoch)
    base = out.tell()
    if deflate:
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            packed = list(pool.map(_deflate, (data for _, data in entries), chunksize=8))
    else:
        packed = [data for _, data in entries]
    central = bytearray()
    offset = base
    for (name, data), body in zip(entries, packed, strict=True):
        raw = name.encode()
        flags = 0 if raw.isascii() else 0x800  # bit 11: the name is UTF-8
        method = 8 if deflate else 0
        crc = zlib.crc32(data)
        if len(data) >= 0xFFFFFFFF or offset >= 0xFFFFFFFF:
            raise BuildError("the payload outgrew the zip format without zip64")
        out.write(struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, flags, method, mtime, mdate,
                              crc, len(body), len(data), len(raw), 0))
        out.write(raw)
        out.write(body)
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", (3 << 8) | 20, 20, flags,
                               method, mtime, mdate, crc, len(body), len(data), len(raw), 0, 0,
                               0, 0, 0o100644 << 16, offset)
        central += raw
        offset += 30 + len(raw) + len(body)
    out.write(central)
    out.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(entries), len(entries),
                          len(central), offset, 0))


def zip_tree(root: Path, epoch: int) -> bytes:
    """The payload: every file under ``root``, sorted by path, deflated."""
    files = sorted((p.relative_to(root).as_posix(), p) for p in root.rglob("*") if p.is_file())
    if len(files) >= 0xFFFF:
        raise BuildError("the payload has too many files for the zip format without zip64")
    buf = io.BytesIO()
    write_zip(buf, [(name, path.read_bytes()) for name, path in files], epoch, deflate=True)
    return buf.getvalue()


def write_archive(path: Path, bootstrap: str, payload: bytes, epoch: int,
                  bootstrap_pyc: bytes | None = None) -> None:
    """Shebang + outer zip (bootstrap source, its pyc, the payload; all stored), written
    atomically, mode 0755."""
    entries = [("__main__.py", bootstrap.encode())]
    if bootstrap_pyc:
        entries.append(("__main__.pyc", bootstrap_pyc))
    entries.append(("payload.zip", payload))
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(SHEBANG)
        write_zip(f, entries, epoch, deflate=False)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)


def render_bootstrap(build: dict) -> str:
    source = BOOTSTRAP.read_text()
    if source.count(BUILD_MARKER) != 1:
        raise BuildError(f"{BOOTSTRAP} must contain the line {BUILD_MARKER!r} exactly once")
    return source.replace(BUILD_MARKER, "BUILD = " + repr(build))


# -- the build ------------------------------------------------------------------------------


def run(cmd: list[str], **kwargs) -> None:  # type: ignore[no-untyped-def]
    try:
        subprocess.run(cmd, check=True, **kwargs)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise BuildError(f"{' '.join(cmd[:4])} … failed: {exc}") from None


def default_cache() -> Path:
    """Build cache shared with the model build: $XDG_CACHE_HOME or ~/.cache, /causantic-build."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "causantic-build"


@dataclass(frozen=True)
class Built:
    """What a build produced."""

    archive: Path
    named_copy: Path
    size: int
    payload_hash: str
    entries: int
    unpacked_bytes: int
    pruned_files: int
    pruned_bytes: int
    seconds: float


def build(out_dir: Path, target: Target, wheels_dir: Path | None = None,
          cache: Path | None = None, refresh: bool = False, compile_with: str | None = None,
          model_python: str | None = None) -> Built:
    """Build the archive for ``target`` into ``out_dir``; see the module docstring."""
    started = time.monotonic()
    sys.dont_write_bytecode = True  # importing causantic below must not litter the tree
    sys.path.insert(0, str(REPO))
    from causantic import __version__ as version
    from causantic.model import MODEL_ID

    manifest = ensure_model(model_python)
    if manifest.get("model_id") != MODEL_ID:
        raise BuildError(f"the built model is {manifest.get('model_id')!r}, causantic uses {MODEL_ID!r}; "
                         "rebuild it: python -m causantic.model.build --force")
    log(f"model: {MODEL_ID} ok")
    cache = cache or default_cache()
    epoch = source_date_epoch()
    with tempfile.TemporaryDirectory(prefix="causantic-build-") as work:
        scratch = Path(work) / "wheels"
        scratch.mkdir()
        wheels = collect_wheels(target, scratch, wheels_dir, cache / f"wheels-{target.key}", refresh)
        floors = [f for f in (w.glibc_floor() for w in wheels) if f]
        glibc = max(floors) if floors else target.glibc
        platform = f"manylinux_{glibc[0]}_{glibc[1]}_{target.arch}"
        log(f"wheels: {len(wheels)} ({', '.join(f'{w.name} {w.version}' for w in wheels)})")

        root = Path(work) / "root"
        root.mkdir()
        for w in wheels:
            unpack_wheel(w, root)
        copy_own_package(root, version)
        pruned_files, pruned_bytes = prune(root)
        log(f"pruned {pruned_files} files ({pruned_bytes / 1e6:.1f} MB)")

        commit = git("rev-parse", "--short=12", "HEAD")
        dirty = bool(git("status", "--porcelain", "--", PACKAGE, "pyproject.toml"))
        tag = f"{target.python_tag}-{platform}"
        ident = commit + ("+dirty" if dirty else "") if commit else "no git"
        info = {
            "version": version,
            "python": list(target.python),
            "python_tag": target.python_tag,
            "platform": platform,
            "os": "linux",
            "arch": target.arch,
            "glibc": list(glibc),
            "model_id": MODEL_ID,
            "model_sha256": manifest["files"],
            "commit": ident,
            "wheels": [f"{w.name}=={w.version}" for w in wheels],
            "version_line": f"causantic {version} (archive {tag}, model {MODEL_ID}, commit {ident})",
        }
        (root / PACKAGE / BUILD_INFO_NAME).write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
        exe = compile_python(target, compile_with)
        if exe:
            log(f"compile: {compile_tree(root, exe)}")
        else:
            log(f"compile: skipped (no python{target.python[0]}.{target.python[1]} here; "
                "the first run compiles instead; see --compile-python)")

        unpacked = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        entries = sum(1 for p in root.rglob("*") if p.is_file())
        payload = zip_tree(root, epoch)
    digest = hashlib.sha256(payload).hexdigest()[:16]
    build_consts = {k: info[k] for k in ("version", "python", "platform", "os", "arch", "glibc",
                                         "version_line")}
    build_consts["hash"] = digest
    out_dir.mkdir(parents=True, exist_ok=True)
    archive = out_dir / f"{PACKAGE}.pyz"
    bootstrap = render_bootstrap(build_consts)
    write_archive(archive, bootstrap, payload, epoch,
                  compile_bootstrap(bootstrap, exe) if exe else None)
    named = out_dir / f"{PACKAGE}-{version}-{tag}.pyz"
    tmp = named.with_name(named.name + ".tmp")
    shutil.copyfile(archive, tmp)
    os.chmod(tmp, 0o755)
    os.replace(tmp, named)
    return Built(archive, named, archive.stat().st_size, digest, entries, unpacked,
                 pruned_files, pruned_bytes, time.monotonic() - started)


def main(argv: list[str] | None = None) -> int:
    """``python3 build_zipapp.py``: build dist/causantic.pyz; one line on failure, exit 1."""
    parser = argparse.ArgumentParser(
        prog="build_zipapp.py",
        description="Build dist/causantic.pyz: causantic, its dependencies and the model in one file.",
        epilog="example: python3 build_zipapp.py --python-version 3.11 --platform manylinux_2_28_x86_64",
    )
    parser.add_argument("--python-version", metavar="3.N",
                        help="CPython minor version to build for (default: this interpreter's)")
    parser.add_argument("--platform", metavar="TAG",
                        help="manylinux_2_N_<arch> (default: manylinux_2_28_<this machine's arch>)")
    parser.add_argument("--wheels", type=Path, metavar="DIR",
                        help="take every wheel from this folder only (offline)")
    parser.add_argument("--out", type=Path, default=REPO / "dist", help="output folder (default dist/)")
    parser.add_argument("--cache-dir", type=Path,
                        help=f"build cache (default {default_cache()}); wheels go to wheels-<target>/")
    parser.add_argument("--refresh", action="store_true",
                        help="resolve wheels against the index again instead of the cache")
    parser.add_argument("--compile-python", metavar="PYTHON",
                        help="interpreter of the target version to byte-compile with "
                        "(default: this one, or python3.N on PATH)")
    parser.add_argument("--model-python", metavar="PYTHON",
                        help="interpreter with numpy+onnx+onnxruntime to build a missing model "
                        "(default: this one, else .build/venv)")
    args = parser.parse_args(argv)
    try:
        target = resolve_target(args.python_version, args.platform)
        log(f"target: {target.key}")
        built = build(args.out.absolute(), target, args.wheels, args.cache_dir, args.refresh,
                      args.compile_python, args.model_python)
    except BuildError as exc:
        print(f"build_zipapp: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("build_zipapp: interrupted", file=sys.stderr)
        return 130
    log(f"wrote {built.archive} and {built.named_copy.name}: {built.size / 1e6:.1f} MB, "
        f"{built.entries} files ({built.unpacked_bytes / 1e6:.0f} MB unpacked), payload "
        f"{built.payload_hash}, in {built.seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
