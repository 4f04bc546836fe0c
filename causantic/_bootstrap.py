"""The ``__main__`` of causantic.pyz: extract the payload once, then run causantic from it.

``build_zipapp.py`` copies this file into the archive as ``__main__.py`` and replaces the
``BUILD`` line with the build's facts: target, version line and the payload's content hash.
It is never imported from the package itself.

Warm path (every run after the first): check the interpreter against the target, one
``stat`` of ``<cache>/<hash>/.complete``, put that directory first on ``sys.path``, run the
CLI. No zip is opened and nothing is hashed, so the bootstrap adds about a millisecond.

First run: the payload (one stored ``payload.zip`` inside the archive) is extracted into a
fresh ``<hash>.tmp-*`` directory beside the target, marked ``.complete``, then renamed into
place. The rename is atomic; an exclusive ``flock`` on ``<cache>/.lock`` makes concurrent first
runs wait for one extraction instead of all extracting. Afterwards, sibling versions unused for
``KEEP_DAYS`` and stale temporaries are removed (never the current one); a run touches its
``.complete`` at most once a day to mark the version as in use.

Cache location, first usable wins: ``$CAUSANTIC_CACHE_DIR`` (exclusive when set), else
``$XDG_CACHE_HOME/causantic``, else ``~/.cache/causantic``, else ``$TMPDIR/causantic-<uid>``
(default ``/tmp``), which must be a real directory owned by us with no group/other access.
A ``noexec`` filesystem is refused because the native libraries could not be loaded from it.

This file must stay cheap (only ``os`` and ``sys`` on the warm path) and must parse on any
Python 3.6+ (so that on the wrong interpreter the version check, not a SyntaxError, speaks).
"""

import os
import sys

BUILD: dict = {}  # replaced by build_zipapp.py

KEEP_DAYS = 7
TOUCH_EVERY = 86400
STALE_TMP = 3600
COMPLETE = ".complete"


class Unusable(Exception):
    """A cache location that cannot or must not be used; str() says why, in a few words."""


def fail(message):
    """Print one line and exit 1: the archive cannot run here."""
    sys.stderr.write("causantic: " + message + "\n")
    raise SystemExit(1)


def unsupported():
    """Why this interpreter cannot run the archive, or None."""
    want = tuple(BUILD["python"])
    impl = sys.implementation.name
    have = "{}.{}".format(*sys.version_info[:2])
    machine = os.uname().machine if hasattr(os, "uname") else "unknown"
    libc = ""
    if sys.platform.startswith("linux"):
        try:
            libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
        except (ValueError, OSError):
            libc = ""
    glibc = None
    parts = libc.split()
    if len(parts) == 2 and parts[0] == "glibc":
        try:
            glibc = tuple(int(x) for x in parts[1].split(".")[:2])
        except ValueError:
            glibc = None
    ok = (
        impl == "cpython"
        and sys.version_info[:2] == want
        and sys.platform.startswith(BUILD["os"])
        and machine == BUILD["arch"]
        and glibc is not None
        and glibc >= tuple(BUILD["glibc"])
    )
    if ok:
        return None
    built = "{}.{}".format(*want)
    floor = "{}.{}".format(*BUILD["glibc"])
    name = "CPython" if impl == "cpython" else impl
    libc = f" ({libc})" if libc else ""
    return (
        f"this causantic.pyz was built for CPython {built} on {BUILD['platform']} (Linux "
        f"{BUILD['arch']}, glibc >= {floor}); this is {name} {have} on {sys.platform} {machine}"
        f"{libc}. Run it with python{built}, or build one for this machine: python3 build_zipapp.py"
    )


def candidates():
    """Cache roots to try, in order, as (path, kind); kind is explicit, xdg, home or tmp."""
    explicit = os.environ.get("CAUSANTIC_CACHE_DIR")
    if explicit:
        return [(os.path.abspath(explicit), "explicit")]
    roots = []
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):  # the XDG spec says to ignore a relative value
        roots.append((os.path.join(xdg, "causantic"), "xdg"))
    home = os.environ.get("HOME")
    if home is None:
        try:
            # deferred: zipapp start: a warm run never unpacks, so it skips these
            import pwd

            home = pwd.getpwuid(os.getuid()).pw_dir
        except (ImportError, KeyError):
            home = None
    if home and os.path.isabs(home):
        roots.append((os.path.join(home, ".cache", "causantic"), "home"))
    tmp = os.environ.get("TMPDIR") or "/tmp"
    roots.append((os.path.join(tmp, f"causantic-{os.getuid()}"), "tmp"))
    return roots


def check_private(root):
    """Refuse a shared-temp cache root that another user could have planted or can write."""
    # deferred: zipapp start: a warm run never unpacks, so it skips these
    import stat

    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        raise Unusable(f"{root} is not a directory (a symlink or file was put there)")
    if st.st_uid != os.getuid():
        raise Unusable(f"{root} belongs to uid {st.st_uid}, not to us (uid {os.getuid()})")
    if st.st_mode & 0o077:
        raise Unusable(f"{root} has mode {stat.S_IMODE(st.st_mode):o}; it must be 700")


def find_extracted(digest):
    """The complete extracted directory for ``digest`` in any candidate root, or None."""
    for root, kind in candidates():
        target = os.path.join(root, digest)
        try:
            mtime = os.stat(os.path.join(target, COMPLETE)).st_mtime
        except OSError:
            continue
        if kind == "tmp":
            try:
                check_private(root)
                check_private(target)
            except Unusable:
                continue
        # deferred: zipapp start: a warm run never unpacks, so it skips these
        import time

        if time.time() - mtime > TOUCH_EVERY:
            mark_used(root, target, digest)
        return target
    return None


def mark_used(root, target, digest):
    """Touch ``.complete`` (this version is in use) and sweep old versions; best effort."""
    try:
        os.utime(os.path.join(target, COMPLETE))
        cleanup(root, digest)
    except OSError:
        pass


def prepare_root(root, kind):
    """Create ``root`` (0700) and check that it is safe and can hold native libraries."""
    private = kind == "tmp"
    if private:
        check_private(root)
    home = os.path.dirname(os.path.dirname(root))
    if kind == "home" and not os.path.isdir(home):
        raise Unusable(f"HOME {home} is not a directory")  # never create someone's HOME
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
    except OSError as exc:
        raise Unusable(f"cannot create {root} ({exc.strerror or exc})") from None
    if private:
        check_private(root)
    if not os.access(root, os.W_OK | os.X_OK):
        raise Unusable(f"{root} is not writable")
    try:
        if os.statvfs(root).f_flag & getattr(os, "ST_NOEXEC", 8):
            raise Unusable(f"{root} is on a noexec filesystem, where native libraries cannot load")
    except OSError:
        pass


def extract(archive, digest):
    """Extract the payload for ``digest``; return the directory. Exits with one line if no
    cache location can be used."""
    problems = []
    for root, kind in candidates():
        try:
            prepare_root(root, kind)
            return extract_into(root, archive, digest, kind == "tmp")
        except Unusable as exc:
            problems.append(str(exc))
        except OSError as exc:
            problems.append(f"{getattr(exc, 'filename', None) or root}: {exc.strerror or exc}")
        except Exception as exc:  # zipfile.BadZipFile, zlib.error, EOFError: a damaged copy
            fail(f"{archive} is damaged ({type(exc).__name__}: {exc}); copy or build it again")
    if os.environ.get("CAUSANTIC_CACHE_DIR"):
        hint = "point CAUSANTIC_CACHE_DIR at a writable directory on a filesystem that allows exec"
    else:
        hint = "set CAUSANTIC_CACHE_DIR to a writable directory on a filesystem that allows exec"
    fail("cannot unpack the archive: " + "; ".join(problems) + "; " + hint)


def extract_into(root, archive, digest, private):
    # deferred: zipapp start: a warm run never unpacks, so it skips these
    import shutil
    import tempfile
    import zipfile

    target = os.path.join(root, digest)
    lock = os.open(os.path.join(root, ".lock"), os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        try:
            # deferred: zipapp start: a warm run never unpacks, so it skips these
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        except (ImportError, OSError):
            pass  # no locking here (some network filesystems): the rename below still decides
        if os.path.exists(os.path.join(target, COMPLETE)):
            if private:
                check_private(target)
            return target  # another process finished it while we waited for the lock
        tmp = tempfile.mkdtemp(prefix=digest + ".tmp-", dir=root)
        try:
            with zipfile.ZipFile(archive) as outer:
                payload = outer.read("payload.zip")  # checks the payload's CRC
            unpack(payload, tmp)
            with open(os.path.join(tmp, COMPLETE), "w") as f:
                f.write(digest + "\n")
            if os.path.lexists(target):
                # An incomplete leftover (say, an interrupted cleanup): move it out of the way.
                aside = tempfile.mkdtemp(prefix=digest + ".tmp-", dir=root)
                os.rename(target, os.path.join(aside, "old"))
                shutil.rmtree(aside, ignore_errors=True)
            try:
                os.rename(tmp, target)
            except OSError:
                if not os.path.exists(os.path.join(target, COMPLETE)):
                    raise
                shutil.rmtree(tmp, ignore_errors=True)  # lost a race where locks do not work
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        cleanup(root, digest)
        return target
    finally:
        os.close(lock)


def unpack(payload, dest):
    """Write every member of the payload zip under ``dest``. (Threads were tried: no gain on
    two cores, where the write-back of ~200 MB dominates.)"""
    # deferred: zipapp start: a warm run never unpacks, so it skips these
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(payload)) as inner:
        for name in inner.namelist():
            parts = name.split("/")
            if name.startswith("/") or any(p in (".", "..") for p in parts):
                raise zipfile.BadZipFile(f"unsafe member name {name!r}")
        inner.extractall(dest)


def cleanup(root, current):
    """Remove other versions unused for KEEP_DAYS and temporaries older than an hour."""
    # deferred: zipapp start: a warm run never unpacks, so it skips these
    import shutil
    import time

    now = time.time()
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        path = os.path.join(root, name)
        base = name.split(".tmp-")[0]
        if name == current or len(base) != 16 or any(c not in "0123456789abcdef" for c in base):
            continue  # not ours, or in use by this run
        try:
            if ".tmp-" in name:
                if now - os.lstat(path).st_mtime > STALE_TMP:
                    shutil.rmtree(path, ignore_errors=True)
                continue
            marker = os.path.join(path, COMPLETE)
            used = os.stat(marker).st_mtime if os.path.exists(marker) else os.lstat(path).st_mtime
            if now - used > KEEP_DAYS * 86400:
                # Rename first, so a half-deleted tree never looks like a complete version.
                grave = os.path.join(root, f"{base}.tmp-old-{os.getpid()}")
                os.rename(path, grave)
                shutil.rmtree(grave, ignore_errors=True)
        except OSError:
            continue


def hook_event(argv):
    """The event of a `[--db PATH] hook EVENT` command line (Claude Code's hooks), or None."""
    rest = argv[2:] if argv[:1] == ["--db"] else argv[1:] if argv[:1] and argv[0].startswith(
        "--db=") else argv
    return rest[1] if len(rest) >= 2 and rest[0] == "hook" else None


def log_hook_problem(event, message):
    """One line in the hook log (`<causantic home>/logs/hooks.log`); never raises.

    A hook must exit 0 whatever happens (a failing hook shows up as an error in Claude Code),
    so a hook started by an interpreter this archive cannot use says why here instead.
    """
    # deferred: zipapp start: a warm run never unpacks, so it skips these
    import time

    home = os.environ.get("CAUSANTIC_HOME") or os.path.join(os.path.expanduser("~"), ".causantic")
    home = os.path.expanduser(home)
    logs = os.path.join(home, "logs")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        # one level at a time: makedirs gives the folders above the last the default mode
        os.makedirs(home, mode=0o700, exist_ok=True)
        os.makedirs(logs, mode=0o700, exist_ok=True)
        fd = os.open(os.path.join(logs, "hooks.log"), os.O_CREAT | os.O_WRONLY | os.O_APPEND,
                     0o600)
        try:
            os.write(fd, f"{stamp} hook {event} not run: {message}\n".encode())
        finally:
            os.close(fd)
    except OSError:
        pass


def main():
    """Check the interpreter, find or extract the payload, run the causantic CLI from it."""
    problem = unsupported()
    if problem:
        event = hook_event(sys.argv[1:])
        if event is not None:
            log_hook_problem(event, problem)
            return 0
        fail(problem)
    archive = os.path.dirname(os.path.abspath(__file__))
    digest = BUILD["hash"]
    target = find_extracted(digest) or extract(archive, digest)
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == archive:
        sys.path[0] = target
    else:
        sys.path.insert(0, target)
    # Absolute, so that re-launching ourselves (hook workers, install) works after a chdir.
    sys.argv[0] = archive
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"  # onnxruntime would write ~/.cache/Microsoft
    if sys.argv[1:] == ["--version"]:
        sys.stdout.write(BUILD["version_line"] + "\n")
        return 0
    # deferred: zipapp start: a warm run never unpacks, so it skips these
    from causantic.cli import main as cli_main

    return cli_main()


#: The archive's absolute path, for code that must start causantic again (``__main__`` is
#: this module while the archive runs; works whatever the file is named).
CAUSANTIC_ARCHIVE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.stderr.write("causantic: interrupted\n")
        sys.exit(130)
