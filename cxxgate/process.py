"""Bounded execution of one child process: time limit, output cap, own resource accounting.

Both the compiler (gates/cell.py) and candidate binaries (gates/run.py) go through
`bounded`, so a template that recurses forever and a binary that prints gigabytes are
stopped the same way: the whole process group is killed.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# How long a process that already exited may keep its pipes open through a child it left
# behind before we stop reading and kill the group.
_LINGER_SECONDS = 0.2


@dataclass(frozen=True)
class Outcome:
    exit: int | None  # None when killed by a signal
    signal: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool
    overflowed: bool
    wall_seconds: float
    cpu_seconds: float
    max_rss_kib: int
    stray_processes: bool  # the group still had members after the main process ended


def bounded(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    stdin: bytes = b"",
    timeout: float,
    output_cap: int,
    pass_fds: tuple[int, ...] = (),
) -> Outcome:
    """Run argv in its own session; kill the group on timeout or when output passes the cap.

    Peak RSS and CPU come from wait4 on this child alone, not an aggregate over every
    child the harness ever waited for (which is what RUSAGE_CHILDREN would give). Note that
    ru_maxrss survives exec: a child forked from this Python process reports at least
    Python's own resident size, and under bubblewrap it is bwrap's, not the program's.
    Runs that measure go through the meter launcher (gates/run.py), which reports over
    one of `pass_fds`.
    """
    with tempfile.TemporaryFile() as stdin_file:
        stdin_file.write(stdin)
        stdin_file.seek(0)
        start = time.monotonic()
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=stdin_file,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    total = 0
    timed_out = overflowed = False
    exited: tuple[int, os.struct_rusage] | None = None  # type: ignore[name-defined]
    exited_at = 0.0
    deadline = start + timeout
    with selectors.DefaultSelector() as sel:
        for fd in (out_fd, err_fd):
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        nap = 0.001
        while True:
            now = time.monotonic()
            if now >= deadline:
                timed_out = exited is None
                break
            if sel.get_map():
                for key, _ in sel.select(timeout=min(deadline - now, 0.05)):
                    data = os.read(int(key.fd), 65536)
                    if data:
                        chunks[int(key.fd)].append(data)
                        total += len(data)
                    else:
                        sel.unregister(key.fd)
                if total > output_cap:
                    overflowed = True
                    break
            else:
                time.sleep(nap)
                nap = min(nap * 2, 0.05)
            if exited is None:
                pid, code, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    exited, exited_at = (code, usage), time.monotonic()
            if exited is not None and (
                not sel.get_map() or time.monotonic() - exited_at > _LINGER_SECONDS
            ):
                break
    stray = _kill_group(proc.pid)
    if exited is None:
        _, code, usage = os.wait4(proc.pid, 0)
        exited = (code, usage)
    code, usage = exited
    proc.returncode = code  # Popen must not try to reap it again
    proc.stdout.close()
    proc.stderr.close()
    return Outcome(
        exit=os.WEXITSTATUS(code) if os.WIFEXITED(code) else None,
        signal=os.WTERMSIG(code) if os.WIFSIGNALED(code) else None,
        stdout=b"".join(chunks[out_fd])[: output_cap + 1],
        stderr=b"".join(chunks[err_fd])[: output_cap + 1],
        timed_out=timed_out,
        overflowed=overflowed,
        wall_seconds=time.monotonic() - start if exited_at == 0.0 else exited_at - start,
        cpu_seconds=usage.ru_utime + usage.ru_stime,
        max_rss_kib=usage.ru_maxrss,
        stray_processes=stray,
    )


def _kill_group(pgid: int) -> bool:
    """SIGKILL whatever is left of the process group; say whether anything was."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True
