"""Faults of the machine, not of the candidate.

A compiler that cannot be executed, or a disk that is full, says nothing about a patch. If
such a failure were recorded as the candidate's `compile_error` it would be cached, and the
wrong verdict would outlive the fault. So a tool that cannot run raises `ToolUnavailable`
(cxxgate/verdicts/harness_error.py turns it into a `harness_error` result, which the next
run retries), and a full disk stops the whole grade with one message: every later task
would meet it too, and doit, told to `continue`, would print a traceback for each of them.

A compiler missing when the grade is planned is another matter: its cells are
`toolchain_missing`, and that is kept, because the toolchain's identity ("not installed")
is part of every cell key and verdict identity; when the compiler returns, its identity
changes and every row is graded afresh (tests/store/test_faults.py checks it).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import sys
import threading
from collections.abc import Callable, Iterable
from functools import wraps
from pathlib import Path
from typing import Any, NoReturn, TypeVar

_DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
_NO_SPACE = "No space left on device"
# Below this much free space a tool's "No space left on device" is believed. Above it, the
# words came from somewhere else: a candidate may write `#error No space left on device`.
SHORT_BYTES = 64 << 20
# As few free inodes: a file system out of them says "No space left on device" too.
SHORT_INODES = 4096
# Exit status of a grade stopped by a full disk (doit's own: 1 failed, 2 error, 3 setup).
DISK_FULL_EXIT = 2


class ToolUnavailable(RuntimeError):
    """A compiler, linker or tool could not be executed: the harness's fault."""


def check_executable(tool: str, path: str) -> None:
    """Raise unless `tool` (argv[0]) can be executed now: a compiler found when the grade
    was planned may have been removed since."""
    found = tool if os.path.isabs(tool) else shutil.which(tool, path=path)
    if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise ToolUnavailable(f"{tool}: not found or not executable (removed after planning?)")


def check_folders(folders: Iterable[Path]) -> None:
    """Raise unless each data folder a cell's key names (a case's build.data) is still a
    folder: one removed or unmounted since planning would fail the build or the tests."""
    for folder in folders:
        if not folder.is_dir():
            raise ToolUnavailable(f"{folder}: data folder gone (removed after planning?)")


# A line that starts with a program's name (no slash, no space) comes from a driver or from
# bubblewrap; a candidate's diagnostics start with an absolute path, or are GCC's JSON.
_DRIVER = r"^[\w.+-]+: "
_QUOTED = "['\u2018][^'\u2019]+['\u2019]"  # GCC quotes with ' in the C locale, else typographically


def infrastructure(argv: list[str], output: str, cwd: Path) -> str:
    """Why a failed tool call was the machine's fault, or "" when it may be the candidate's."""
    tool = argv[0]
    signatures = [
        rf"^bwrap: execvp {re.escape(tool)}: .*$",  # the tool itself could not be started
        _DRIVER + "(fatal )?error: cannot execute " + _QUOTED + ": execvp?: .*$",
        # clang's driver when a program it runs cannot be started (not when it crashed,
        # which a candidate's code can cause: that stays the candidate's compile error)
        _DRIVER + r"error: unable to execute command: "
        r"(Executable \".*\" doesn't exist!|posix_spawn failed|Couldn't execute program).*$",
        "^collect2: fatal error: cannot find " + _QUOTED + ".*$",
        r"^ccache: error: .*$",  # the launcher (cxxgate/toolchain/ccache.py) itself failed
    ]
    # A tool that is a script, gone between its start and the shell's open of it (dash:
    # `/bin/sh: 0: cannot open X: No such file`; bash: `/bin/bash: X: No such file ...`).
    shell = r"^(/usr)?/bin/(sh|dash|bash): (\d+: cannot open )?"
    signatures += [shell + re.escape(a) + ": .*$" for a in dict.fromkeys(argv) if a[:1] == "/"]
    for pattern in signatures:
        found = re.search(pattern, output, re.MULTILINE)
        if found:
            return found.group(0).strip()
    if _NO_SPACE in output and disk_short(cwd):
        said = re.search(r'"message": "([^"]*' + _NO_SPACE + ")", output)  # GCC's JSON
        line = said.group(1) if said else next(ln for ln in output.splitlines() if _NO_SPACE in ln)
        return line.strip()[:300]
    return ""


def raise_if_infrastructure(argv: list[str], output: str, cwd: Path) -> None:
    """After a failed call: raise when the failure was the machine's. A full disk raises
    ENOSPC, which stops the grade (`stop_if_disk_full`); anything else ToolUnavailable."""
    why = infrastructure(argv, output, cwd)
    if not why:
        return
    if _NO_SPACE in why:
        raise OSError(errno.ENOSPC, f"{argv[0]}: {why}", str(cwd))
    raise ToolUnavailable(f"{Path(argv[0]).name} could not run: {why}")


def disk_full_said(why: str) -> bool:
    """Whether an infrastructure reason is the disk's (the harness checked it is full)."""
    return _NO_SPACE in why


def raise_if_disk_full_said(output: str, folder: Path) -> None:
    """Raise ENOSPC when a tool's failure says the disk is full, and it is."""
    if _NO_SPACE in output and disk_short(folder):
        raise OSError(errno.ENOSPC, output.strip()[:300], str(folder))


def disk_short(folder: Path) -> bool:
    """Whether the file system holding `folder` is (nearly) full: in bytes, or in inodes
    where it counts them (btrfs reports none)."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return True  # cannot even look: not the candidate's doing either
    if st.f_bavail * st.f_frsize < SHORT_BYTES:
        return True
    return st.f_files > 0 and st.f_favail < SHORT_INODES


def oom_kills() -> int:
    """How many processes the kernel's OOM killer has ended since boot (/proc/vmstat
    oom_kill; 0 where the kernel does not say). A run killed while it moved was killed
    for the machine's memory, not for its own: another run may hold memory no cap counts
    (README, "Not contained")."""
    try:
        for line in Path("/proc/vmstat").read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def disk_full(exc: BaseException) -> bool:
    """Whether an exception (or what caused it) is a full disk or an exceeded quota."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in _DISK_FULL:
            return True
        if isinstance(seen, shutil.Error) and _NO_SPACE in str(seen):  # copytree's summary
            return True
        seen = seen.__cause__ or seen.__context__
    return False


_STOPPING = threading.Lock()


def stop_if_disk_full(exc: BaseException, target: Path | None, task: str = "") -> None:
    """On a full disk, end the grade now with one line; otherwise return.

    Neither an exception nor SystemExit will do: under `continue: True` doit runs every
    remaining task after an exception (each fails the same way, each prints its traceback),
    and after a SystemExit it still saves its dependency database, which fails on the full
    disk with a traceback of its own. Everything written so far is whole (cxxgate/util/atomic.py)
    and content-keyed, so the next run, with space, picks up from here."""
    if not disk_full(exc):
        return
    where = getattr(exc, "filename", None) or target or "?"
    task = task_of(Path(target or where)) or task
    _stop(
        f"cxxgate: stopped: no space left on device writing {where}"
        f"{f' (task {task})' if task else ''}; free space and run the grade again\n"
    )


def _stop(message: str) -> NoReturn:
    with _STOPPING:  # several threads may meet the full disk at once: one message
        for stream in (sys.__stdout__, sys.__stderr__):
            try:
                if stream is not None:
                    stream.flush()
            except OSError:
                pass
        os.write(2, message.encode())
        os._exit(DISK_FULL_EXIT)


F = TypeVar("F", bound=Callable[..., Any])


def stops_on_full_disk(task: str) -> Callable[[F], F]:
    """For actions that are not guarded (verdicts, folds, the grade): a full disk stops
    the grade as it does in a guarded action."""

    def wrap(fn: F) -> F:
        @wraps(fn)
        def action(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except OSError as exc:
                stop_if_disk_full(exc, None, task)
                raise

        return action  # type: ignore[return-value]

    return wrap


def task_of(target: Path) -> str:
    """The doit task that writes a result file, as `doit list --all` names it, or ""."""
    parts = target.parts
    if len(parts) >= 4 and parts[-4] in ("cells", "runs") and parts[-1] == "result.json":
        return f"{'cell' if parts[-4] == 'cells' else 'exec'}:{parts[-2]}"
    if len(parts) >= 4 and parts[-4] == "results":
        return f"{parts[-1].removesuffix('.json')}:{parts[-3]}/{parts[-2]}"
    if len(parts) >= 2 and parts[-2] == "folds":
        return f"fold:{parts[-1].removesuffix('.json')}"
    if len(parts) >= 2 and parts[-2] == "trees":
        return f"tree (key {parts[-1].removesuffix('.json')})"
    return ""
