"""No user namespace for a candidate's code (cxxgate/runs/run.py, cxxgate/cells/ctest.py):
in one of its own it may mount a tmpfs of any size, or fill one with millions of empty
files, memory outside every cap, whatever the sandbox's /tmp is."""

from __future__ import annotations

import os
import platform
import struct
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

from cxxgate.host import sandbox


@contextmanager
def closed(dropped: bool) -> Iterator[tuple[list[str], tuple[int, ...]]]:
    """bwrap arguments, and the descriptors they name (pass them to the child), that keep
    a candidate from making a user namespace of its own: in one it may mount a tmpfs of
    any size (or millions of empty files), memory outside every cap, whatever /tmp is.
    In bwrap's own user namespace bwrap closes them (--disable-userns); a dropped uid
    has none, so a seccomp filter refuses unshare and clone with CLONE_NEWUSER (clone3,
    whose flags a filter cannot read, says ENOSYS: glibc falls back to clone). A machine
    other than x86_64 or aarch64, or a bwrap without --disable-userns (before 0.8, or
    setuid), gets neither."""
    if not dropped:
        yield (["--unshare-user", "--disable-userns"] if _disables_userns() else []), ()
        return
    program = _no_userns_filter()
    if program is None:
        yield [], ()
        return
    read, write = os.pipe()
    try:
        os.write(write, program)  # a few hundred bytes: within a pipe's buffer
        os.close(write)
        yield ["--seccomp", str(read)], (read,)
    finally:
        os.close(read)


@cache
def _disables_userns() -> bool:
    """Whether this bwrap closes user namespaces inside its own (probed once)."""
    argv = ["bwrap", "--unshare-all", "--unshare-user", "--disable-userns"]
    argv += ["--ro-bind", "/", "/", "true"]
    if not sandbox.available():
        return False
    return subprocess.run(argv, capture_output=True, check=False, timeout=30).returncode == 0


# (audit arch, clone3, unshare, clone, first x32 number or 0) per machine.
_SYSCALLS = {
    "x86_64": (0xC000003E, 435, 272, 56, 0x40000000),
    "aarch64": (0xC00000B7, 435, 97, 220, 0),
}
_CLONE_NEWUSER = 0x10000000


@cache
def _no_userns_filter() -> bytes | None:
    """The classic BPF program of `closed`: another architecture's calls (i386,
    arm32 compat) kill the process; x32 calls are refused."""
    if platform.machine() not in _SYSCALLS:
        return None
    arch, clone3, unshare, clone, x32 = _SYSCALLS[platform.machine()]
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, kill, errno_ = 0x7FFF0000, 0x80000000, 0x00050000
    # (code, k, jump if true, jump if false): jumps name the instruction they go to.
    code: list[tuple[int, int, str, str] | str] = [
        (ld, 4, "", ""), (jeq, arch, "nr", "kill"),
        "kill", (ret, kill, "", ""),
        "nr", (ld, 0, "", ""),
        *([(jge, x32, "deny", "native")] if x32 else []), "native",
        (jeq, clone3, "nosys", "unshare"),
        "unshare", (jeq, unshare, "flags", "clone"),
        "clone", (jeq, clone, "flags", "allow"),
        "flags", (ld, 16, "", ""), (jset, _CLONE_NEWUSER, "deny", "allow"),
        "allow", (ret, allow, "", ""),
        "deny", (ret, errno_ | 1, "", ""),  # EPERM
        "nosys", (ret, errno_ | 38, "", ""),  # ENOSYS
    ]  # fmt: skip
    at: dict[str, int] = {}  # label -> the step it names
    steps: list[tuple[int, int, str, str]] = []
    for item in code:
        if isinstance(item, str):
            at[item] = len(steps)
        else:
            steps.append(item)
    out = b""
    for n, (op, k, yes, no) in enumerate(steps):
        jt = at[yes] - n - 1 if yes else 0  # forward only: how many steps to skip
        jf = at[no] - n - 1 if no else 0
        out += struct.pack("=HBBI", op, jt, jf, k)
    return out
