"""Bounded execution of one child process: time limit, output cap, own resource accounting.

Both the compiler (cxxgate/cells/cell.py) and candidate binaries (cxxgate/runs/run.py) go through
`bounded`, so a template that recurses forever and a binary that prints gigabytes are
stopped the same way: the whole process group is killed. Candidate runs also get `Caps`:
resource limits set at exec time by util-linux `prlimit` (not `preexec_fn`, which is unsafe
in doit's threads), and for sanitizer builds a resident-memory watch instead of an
address-space limit.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cxxgate.results import faults

# How long a process that already exited may keep its pipes open through a child it left
# behind before we stop reading and kill the group.
_LINGER_SECONDS = 0.2
# How often the resident-memory watch sums the run's process tree (each pass reads every
# /proc/<pid>/stat once and one smaps_rollup per member: a few ms).
_WATCH_SECONDS = 0.1
# Sanitizers whose runtime reserves terabytes of address space (shadow, allocator regions):
# an address-space limit would stop them at start-up, so their runs get the watch.
_RESERVING_SANITIZERS = frozenset({"address", "hwaddress", "thread", "memory", "leak"})
# Descriptors a child gets at fixed numbers (`fixed_fds`) are put there in this process
# just for the spawn: one spawn at a time, so two runs never share a number.
_fixed_lock = threading.Lock()


@dataclass(frozen=True)
class Caps:
    """Resource caps on one candidate run, from the case's `limits:` (cxxgate/library/case.py).

    - memory_mib: RLIMIT_AS (address space), or with `resident` a watch that kills the
      run's process tree when its summed proportional resident size (Pss) passes the cap;
    - file_mib: RLIMIT_FSIZE, the size any one file may grow to (SIGXFSZ, or EFBIG when the
      program ignores that signal). Pipes are not files: output has its own cap;
    - processes: RLIMIT_NPROC (threads count too). The kernel counts it per real uid and
      never holds uid 0 to it, so it only bites when the harness is root and the run drops
      to a uid of its own (cxxgate/runs/run.py does, inside bubblewrap). A harness that is not
      root does not set it:
      the count would include every other process of the harness's user, failing innocent
      runs on a busy desktop. There, a fork bomb is held only by the pid namespace, the
      time limit and the user's own limits.
    """

    memory_mib: int = 1024
    file_mib: int = 64
    processes: int = 64
    resident: bool = False  # watch resident memory instead of limiting address space

    @staticmethod
    def reserves_address_space(flags: tuple[str, ...] | list[str]) -> bool:
        """Whether a build with these compile flags carries a sanitizer runtime that maps
        far more address space than it uses (ASan's shadow alone is ~20 TiB)."""
        kinds = {k for f in flags if f.startswith("-fsanitize=") for k in f[11:].split(",")}
        return bool(_RESERVING_SANITIZERS & kinds)

    def prlimit(self) -> list[str]:
        """argv prefix that sets the caps on the process it then execs."""
        tool = shutil.which("prlimit", path="/usr/bin:/bin")
        if tool is None:
            msg = "util-linux prlimit is not installed: candidate runs cannot be capped"
            raise RuntimeError(msg)
        args = [tool, f"--fsize={self.file_mib << 20}", "--core=0"]
        if not self.resident:
            args.append(f"--as={self.memory_mib << 20}")
        if os.geteuid() == 0:
            args.append(f"--nproc={self.processes}")
        return [*args, "--"]


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
    over_memory: bool = False  # killed by the resident-memory watch (Caps.resident)
    disk_short: bool = False  # `disk`'s file system was (nearly) full at some point

    @property
    def stopped_by_harness(self) -> bool:
        """Killed by a limit of ours (wall, output cap, resident watch): its verdict, whatever
        else the machine's OOM killer did meanwhile."""
        return self.timed_out or self.overflowed or self.over_memory


def bounded(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    stdin: bytes = b"",
    timeout: float,
    output_cap: int,
    pass_fds: tuple[int, ...] = (),
    fixed_fds: tuple[tuple[int, int], ...] = (),
    caps: Caps | None = None,
    disk: Path | None = None,
) -> Outcome:
    """Run argv in its own session; kill the group on timeout or when output passes the cap.
    With `caps`, argv runs under those resource limits (see Caps).

    Peak RSS and CPU come from wait4 on this child alone, not an aggregate over every
    child the harness ever waited for (which is what RUSAGE_CHILDREN would give). Note that
    ru_maxrss survives exec: a child forked from this Python process reports at least
    Python's own resident size, and under bubblewrap it is bwrap's, not the program's.
    Runs that measure go through the meter launcher (cxxgate/runs/run.py), which reports over
    one of `pass_fds`.

    `fixed_fds` are (number in the child, descriptor here): the child finds each at that
    number whatever it is here, so a program can be told where to look without being told
    in its environment or arguments (cxxgate/runs/run.py: the harness's nonces).

    With `disk`, the file system holding it is looked at every _WATCH_SECONDS while argv
    runs and once at its end (`Outcome.disk_short`): a program that met a full disk, one
    that another run filled and emptied again before this one ended, did not fail of
    its own doing (cxxgate/results/faults.py).
    """
    if caps is not None:
        argv = [*caps.prlimit(), *argv]
    watch_kib = caps.memory_mib << 10 if caps is not None and caps.resident else 0
    with tempfile.TemporaryFile() as stdin_file, _at_fixed(fixed_fds) as numbers:
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
            pass_fds=pass_fds + numbers,
        )
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    total = 0
    timed_out = overflowed = over_memory = False
    exited: tuple[int, os.struct_rusage] | None = None  # type: ignore[name-defined]
    exited_at = 0.0
    deadline = start + timeout
    next_watch = start + _WATCH_SECONDS
    next_disk, disk_short = start, False
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
            if disk is not None and not disk_short and time.monotonic() >= next_disk:
                next_disk = time.monotonic() + _WATCH_SECONDS
                disk_short = faults.disk_short(disk)
            if watch_kib and exited is None and time.monotonic() >= next_watch:
                next_watch = time.monotonic() + _WATCH_SECONDS
                members = _tree(proc.pid)
                if _resident_kib(members) > watch_kib:
                    over_memory = True
                    _kill(members)
                    break
            if exited is None:
                pid, code, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    exited, exited_at = (code, usage), time.monotonic()
            if exited is not None and (
                not sel.get_map() or time.monotonic() - exited_at > _LINGER_SECONDS
            ):
                break
    stray = _kill_group(proc.pid)
    disk_short = disk_short or (disk is not None and faults.disk_short(disk))
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
        stray_processes=stray and not over_memory,  # the watch's kill, not leftovers
        over_memory=over_memory,
        disk_short=disk_short,
    )


@contextmanager
def _at_fixed(fixed: tuple[tuple[int, int], ...]) -> Iterator[tuple[int, ...]]:
    """Copies of the descriptors at their fixed numbers, for as long as the spawn takes
    (Popen returns once the child has exec'd). A number already open here is not taken
    over: that is a harness error, not something to close under another thread's feet."""
    if not fixed:
        yield ()
        return
    with _fixed_lock:
        made: list[int] = []
        try:
            for number, fd in fixed:
                try:
                    os.fstat(number)
                except OSError:
                    pass  # free: the usual case
                else:
                    msg = f"descriptor {number} is open in the harness: cannot hand it to a run"
                    raise RuntimeError(msg)
                os.dup2(fd, number, inheritable=True)
                made.append(number)
            yield tuple(made)
        finally:
            for number in made:
                os.close(number)


def _tree(root: int) -> list[int]:
    """root and its descendants, from every /proc/<pid>/stat (this kernel has no
    /proc/<pid>/task/<tid>/children); processes in a pid namespace appear under their
    outer pids, so a sandboxed program is found below its bubblewrap."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # ended meanwhile
        # The command name may hold spaces and parentheses: fields start after the last ')'.
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    members, todo = [], [root]
    while todo:
        pid = todo.pop()
        members.append(pid)
        todo += children.get(pid, [])
    return members


def _resident_kib(pids: list[int]) -> int:
    """Summed proportional resident size (Pss): pages a forked child still shares with its
    parent count once, not once per process, as a sum of VmRSS would."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
                for line in f:
                    if line.startswith(b"Pss:"):
                        total += int(line.split()[1])
                        break
        except (OSError, ValueError):
            continue  # ended meanwhile, or a kernel thread
    return total


def _kill(pids: list[int]) -> None:
    # The tree may have left the group (bubblewrap starts a new session): kill each member.
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue


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
