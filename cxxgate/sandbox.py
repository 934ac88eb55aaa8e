"""bubblewrap: what a compiler or a candidate binary is allowed to see.

Both see the system's read-only directories and nothing of the project: not the case
library (goldens, probes, other patches), not the build folder beyond what they are
given. A compiler gets its tree read-only and its cell folder writable, bound at the
same paths so argv and diagnostics stay as they are; a candidate binary gets its work
folder. No network. Where bubblewrap cannot run (some containers forbid user
namespaces) commands run bare, and every result says which.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable
from functools import cache
from pathlib import Path

_SYSTEM_TOPS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives")


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


def base_args() -> list[str]:
    """A fresh namespace with the system directories read-only, /proc, /dev, a private /tmp."""
    args = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session"]
    for top in _SYSTEM_TOPS:
        path = Path("/") / top
        if path.is_symlink():
            args += ["--symlink", str(path.readlink()), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for extra in _SYSTEM_FILES:
        if Path(extra).exists():
            args += ["--ro-bind", extra, extra]
    return [*args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]


def confine(
    argv: list[str], *, cwd: Path, read: Iterable[Path] = (), write: Iterable[Path] = ()
) -> tuple[list[str], str]:
    """argv wrapped so it sees only the system, `read` (read-only) and `write`, at their own
    paths; and the name of the sandbox used ("bwrap" or "none")."""
    if not available():
        return argv, "none"
    args = base_args()
    tool = Path(argv[0])
    if tool.is_absolute() and not tool.resolve().is_relative_to("/usr"):
        # A toolchain installed outside /usr (e.g. /opt/gcc-14/bin/g++): its whole prefix.
        prefix = tool.resolve().parents[1]
        args += ["--ro-bind", str(prefix), str(prefix)]
    for path in read:
        args += ["--ro-bind", str(path), str(path)]
    for path in write:
        args += ["--bind", str(path), str(path)]
    return [*args, "--chdir", str(cwd), "--", *argv], "bwrap"
