"""bubblewrap: what a compiler or a candidate binary is allowed to see.

Both see the system's read-only directories and nothing of the project: not the case
library (goldens, probes, other patches), not the build folder beyond what they are
given. A compiler gets its tree read-only, its cell folder writable, bound at the same
paths so argv and diagnostics stay as they are, and what its toolchain declares (see
cxxgate/toolchain/envelope.py: a `prefix:`, or the compiler's own file); a candidate binary gets its
work folder. No network. Where bubblewrap cannot run (some containers forbid user
namespaces) commands run bare, and every result says which.

A candidate run started by root also drops to an unprivileged uid of its own inside the
sandbox (`drop_uid`): the kernel never holds uid 0 to RLIMIT_NPROC, not even mapped to
another uid in a user namespace, so the process cap only bites on a real uid. That
sandbox is made without a user namespace (root needs none to mount) and keeps
CAP_SETUID/CAP_SETGID only until setpriv switches uid, which clears every capability.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable
from functools import cache
from pathlib import Path

# Where a compile sees the tree and the build folder when it sees them at neutral paths
# (-ffile-prefix-map in cxxgate/toolchain/toolcall.py; bind mounts for ccache and CMake builds).
NEUTRAL_TREE = "/src/project"
NEUTRAL_BUILD = "/src/build"

_SYSTEM_TOPS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives")
# Every namespace --unshare-all makes but the user namespace (root's candidate runs).
_UNSHARE_BUT_USER = ("--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts")
_SETPRIV = "/usr/bin/setpriv"
# What name lookup reads when a sandbox keeps the host's network (confine's share_net).
_NET_FILES = ("/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf", "/etc/host.conf")


@cache
def available() -> bool:
    """Probe once whether bwrap runs here."""
    if shutil.which("bwrap") is None:
        return False
    probe = subprocess.run(
        ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"],
        capture_output=True,
        check=False,
        timeout=30,
    )
    return probe.returncode == 0


def is_system(path: Path) -> bool:
    """Whether every sandbox already shows this absolute path: it lies under a system
    directory (spelt as given; /bin stays a symlink to usr/bin in the sandbox too)."""
    return len(path.parts) > 1 and path.parts[1] in _SYSTEM_TOPS


def _system_args(tmp: Path | None = None, proc: bool = True) -> list[str]:
    args: list[str] = []
    for top in _SYSTEM_TOPS:
        path = Path("/") / top
        if path.is_symlink():
            args += ["--symlink", str(path.readlink()), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    # bwrap would make /etc 0700 for the binds below: git, run by a dropped uid, then
    # stops at "unable to access '/etc/gitconfig': Permission denied".
    args += ["--perms", "0755", "--dir", "/etc"]
    for extra in _SYSTEM_FILES:
        if Path(extra).exists():
            args += ["--ro-bind", extra, extra]
    # A candidate run's /tmp is a folder of its own on disk, writable by its uid (old
    # GoogleTest's CaptureStderr crashed fmt's posix-test when mkstemp in /tmp failed): a
    # tmpfs there, even sized, let it pin kernel memory outside every cap with millions
    # of empty files (about 1 KiB each). Compiles keep a private tmpfs.
    tmp_args = ["--bind", str(tmp), "/tmp"] if tmp else ["--perms", "1777", "--tmpfs", "/tmp"]
    return [*args, *(["--proc", "/proc"] if proc else []), "--dev", "/dev", *tmp_args]


# What bubblewrap's `--dev` holds that opens without /proc (its stdin, fd and core links
# point into /proc; /dev/tty has no terminal behind it under --new-session).
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/ptmx")


def shown() -> list[tuple[str, Path]]:
    """What a compile's sandbox shows before its own binds: (path inside, path on the host)
    of each system directory (a top that is a symlink, as merged /usr makes /bin, names
    what it points to) and each system file of /etc; /dev holds DEVICES, and there is no
    /proc (`confine(proc=False)`: /proc/self/root would be another root for each). An
    analysis that cannot run in that sandbox (libclang, in-process:
    cxxgate/toolchain/clangview.py) is shown the same."""
    seen: list[tuple[str, Path]] = []
    for top in _SYSTEM_TOPS:
        path = Path("/") / top
        if path.exists():
            seen.append((str(path), path.resolve()))
    return seen + [(extra, Path(extra)) for extra in _SYSTEM_FILES if Path(extra).exists()]


def base_args(tmp: Path | None = None, proc: bool = True) -> list[str]:
    """A fresh namespace with the system directories read-only, /proc (unless not `proc`),
    /dev, and at /tmp the folder `tmp` (a private tmpfs without one)."""
    head = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session"]
    return [*head, *_system_args(tmp, proc)]


@cache
def drop_uid() -> bool:
    """Whether candidate runs switch to an unprivileged uid: only a root harness can, and
    only where bwrap runs without a user namespace and setpriv exists (probed once)."""
    if os.geteuid() != 0 or not available() or not Path(_SETPRIV).exists():
        return False
    argv = [*run_args(), *drop_args(65534), "true"]
    return subprocess.run(argv, capture_output=True, check=False, timeout=30).returncode == 0


def run_args(tmp: Path | None = None) -> list[str]:
    """The sandbox of a candidate run whose uid is dropped inside it (see drop_uid), the
    folder `tmp` at /tmp."""
    caps = ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    head = ["bwrap", *_UNSHARE_BUT_USER, "--unshare-cgroup-try", "--die-with-parent"]
    return [*head, "--new-session", *caps, *_system_args(tmp)]


def sealed() -> list[str]:
    """The last mount steps of a candidate's sandbox, after every folder it is given: the
    sandbox's own root and /dev read-only. Both are tmpfs that bwrap made (half the
    machine's memory each, no --size) and, in a user namespace (a harness that is not
    root, or root without setpriv), owned by the run's own uid: a run wrote gigabytes
    there, and pinned kernel memory with empty files, outside every cap. /tmp, /work and
    the other binds are mounts of their own and stay as they were; device nodes still
    open."""
    return ["--remount-ro", "/", "--remount-ro", "/dev"]


def drop_args(uid: int) -> list[str]:
    """In-sandbox argv prefix: become uid/gid `uid` with no groups and no capabilities."""
    return [
        _SETPRIV,
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]


def confine(
    argv: list[str],
    *,
    cwd: Path,
    read: Iterable[Path] = (),
    write: Iterable[Path] = (),
    binds: Iterable[tuple[str, str]] = (),
    mounts: Iterable[tuple[Path, str, bool]] = (),
    share_net: bool = False,
    proc: bool = True,
) -> tuple[list[str], str]:
    """argv wrapped so it sees only the system, `read` (read-only) and `write`, at their own
    paths, and `binds` (source, destination; read-only: a toolchain's, see
    cxxgate/toolchain/envelope.py); and the name of the sandbox used ("bwrap" or "none"). Nothing is
    guessed from argv: a tool outside the system directories is visible only if bound.

    `mounts` (source, destination, writable) show a folder at another path: ccache's
    launch (cxxgate/toolchain/ccache.py) puts the tree and the working folder at neutral paths, and
    `cwd` is then given as seen inside. `share_net` keeps the host's network (a remote
    compiler cache on another host or on loopback); the host's name files come with it.
    Without `proc` there is no /proc (a compile's view, which libclang is given too)."""
    if not available():
        return argv, "none"
    args = base_args(proc=proc)
    if share_net:
        args.insert(args.index("--unshare-all") + 1, "--share-net")
        args += [a for f in _NET_FILES if Path(f).exists() for a in ("--ro-bind", f, f)]
    for source, dest in binds:
        args += ["--ro-bind", source, dest]
    for path in read:
        args += ["--ro-bind", str(path), str(path)]
    for path in write:
        args += ["--bind", str(path), str(path)]
    for source_path, dest, writable in mounts:
        args += ["--bind" if writable else "--ro-bind", str(source_path), dest]
    return [*args, "--chdir", str(cwd), "--", *argv], "bwrap"
