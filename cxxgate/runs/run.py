"""Runs: the one place a candidate binary is executed.

Pinned argv, stdin and environment; a time limit and an output cap with the process
group killed; peak RSS and CPU from this child's own accounting; a bubblewrap sandbox
where the machine allows one (no network, no view of the case's oracles).

A spec that names a `meter` cell runs the binary through that launcher (templates/budget/
meter.cpp), which forks it and reports its wait4 accounting: the only honest peak RSS,
because ru_maxrss survives exec (a child of this Python process reports Python's size)
and under bubblewrap the harness only ever sees bwrap's. A spec that names a `reference`
cell is a paired series: warm-up and timed rounds alternate reference, candidate,
reference, ... in one task, so both sides meet the same machine weather; every sample is
kept in `samples`. A series may hold `lanes`, named inputs run one after another, each
with its own rounds; it ends after the first lane that already decides against the
candidate (it hung, failed, printed other results than the reference, or took over
`stop_ratio` times the reference's best time), so a runaway costs one lane, not all.
There the limits follow the reference (_limit): a loaded machine slows both sides.

Every run is capped (cxxgate/host/process.py Caps, from the case's `limits:`): address space or,
for sanitizer builds, resident memory; file size; processes, which need a uid of the run's
own (a root harness gives each concurrent run one inside the sandbox). A run stopped at a
cap says which in its `detail`. Its work folder is deleted once its evidence (the capped
stdout and stderr) is written.

A binary linked with the harness entry (templates/entry/entry.cpp; its cell says `entry`)
must prove it returned from its own main: each execution hands it a fresh random nonce on
one pipe, and the entry copies it to another only after main returned. The nonce is never
stored; a result records `returned` (yes or no), so results stay cacheable.

A spec with `report` gives the program a report channel its stdout cannot forge (a
grader-owned driver's verdict lines, templates/metamorphic/report.cpp): a fresh
nonce waits in one inherited pipe, and a file opened by the harness outside /work is
inherited as another descriptor. Only the lines written there that begin with the nonce
are kept, without it, in `report_path`: anything the program prints, however spelt, is
not a report line.

Where the nonces are: at fixed descriptor numbers (RETURN_FDS, REPORT_FDS), never named
in the environment or the arguments. The harness's own objects read each nonce pipe in a
`.preinit_array` hook, the first code of the program to run, and close it; the candidate's
objects may not hold code that runs earlier or alongside (cxxgate/cells/premain.py, checked
before the link), so by the time any of its code runs the pipe is gone.
"""

from __future__ import annotations

import errno
import fnmatch
import json
import os
import secrets
import signal
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from cxxgate.host import sandbox, userns
from cxxgate.host.process import Caps, Outcome, bounded
from cxxgate.results import faults
from cxxgate.store import codehash
from cxxgate.store.layout import Layout
from cxxgate.toolchain.cellspec import CellResult
from cxxgate.toolchain.cellspec import result_path as cell_result_path
from cxxgate.util import atomic, removal

RunStatus = Literal["exited", "signaled", "hang", "output_overflow", "not_built", "harness_error"]

BASE_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "LANG": "C", "HOME": "/nonexistent"}
# (nonce pipe's read end, write end) as the program sees them. The numbers are also
# spelt in the templates that read them (a test holds them equal).
RETURN_FDS = (1000, 1001)  # templates/entry/entry.cpp: the nonce goes back after main
REPORT_FDS = (1002, 1003)  # templates/metamorphic/report.cpp: the report file


@dataclass(frozen=True)
class RunSpec:
    cell_key: str
    args: tuple[str, ...] = ()
    stdin: str = ""
    env: tuple[tuple[str, str], ...] = ()
    timeout: float = 5.0
    output_cap: int = 1 << 20
    label: str = field(default="", compare=False)
    caps: Caps = field(default_factory=Caps)  # the case's limits (Limits.caps)
    # Measured runs (gates/budget.py); the defaults keep a plain run's key as it was.
    meter: str | None = None  # key of the meter launcher's cell: measure through it
    memory_mib: int = 0  # address-space limit the meter sets on the program (0: none)
    reference: str | None = None  # key of a cell run interleaved with this one
    warmup: int = 0  # unmeasured-for-caps rounds first (still recorded)
    rounds: int = 1  # timed rounds
    # Tool runs (gates/slope.py, coverage.py); the defaults keep a plain run's key.
    wrapper: tuple[str, ...] = ()  # a system tool put in front of the binary (valgrind ...)
    keep: tuple[str, ...] = ()  # names (globs) of files the run leaves in its work folder
    # that are kept in `kept/` (callgrind profiles, .gcda counts) before the folder goes
    report: bool = False  # give the program a report channel (see the module doc)
    # A paired series over several inputs (gates/slope.py): (name, stdin) run in order,
    # each with the warm-up and timed rounds; `stdin` is then unused.
    lanes: tuple[tuple[str, str], ...] = ()
    stop_ratio: float | None = None  # see the module doc; None: only a runaway stops

    @cached_property  # specs are frozen; thousands of rows ask for the same key
    def key(self) -> str:
        blob: dict[str, Any] = {
            "cell": self.cell_key,
            "args": self.args,
            "stdin": codehash.of_text(self.stdin),
            "env": self.env,
            "timeout": self.timeout,
            "output_cap": self.output_cap,
            "caps": asdict(self.caps),
            "code": codehash.of_modules("runs.run", "host.process", "host.sandbox"),
        }
        if self.report:
            blob["report"] = True
        if self.measured:
            blob["measure"] = [
                self.meter,
                self.memory_mib,
                self.reference,
                self.warmup,
                self.rounds,
            ]
        if self.wrapper or self.keep:
            blob["tool"] = [self.wrapper, self.keep]
        if self.lanes:
            blob["lanes"] = [[n, codehash.of_text(t)] for n, t in self.lanes]
            blob["stop_ratio"] = self.stop_ratio
        return codehash.of_text(json.dumps(blob, sort_keys=True))[:24]

    @property
    def measured(self) -> bool:
        return (self.meter, self.reference, self.warmup, self.rounds) != (None, None, 0, 1)

    @property
    def cell_keys(self) -> tuple[str, ...]:
        """Every cell whose product this run executes (its task's dependencies)."""
        return tuple(k for k in (self.cell_key, self.reference, self.meter) if k is not None)


@dataclass(frozen=True)
class RunResult:
    key: str
    label: str
    status: RunStatus
    exit: int | None
    signal: int | None
    stdout_sha: str
    wall_seconds: float
    cpu_seconds: float
    max_rss_kib: int | None  # measured through the meter only (see the module doc)
    stray_processes: bool
    sandbox: str
    argv: list[str]
    stdout_path: str
    stderr_path: str
    # A measured run: one entry per execution, in the order they ran (see Sample).
    samples: list[dict[str, Any]] = field(default_factory=list)
    # Why nothing ran (for a harness_error: the traceback), or which cap stopped the run.
    detail: str = ""
    # Built with the harness entry: did the program return from its main (and not exit 0
    # after main returned a failure: the entry hands back main's status)? None: not asked.
    returned: bool | None = None
    kept: str = ""  # the folder holding the files RunSpec.keep named (a single run only)
    # The report channel's lines, nonce removed (RunSpec.report); "" when none was asked.
    report_path: str = ""

    @classmethod
    def without_run(cls, key: str, label: str, status: RunStatus, detail: str = "") -> RunResult:
        return cls(
            key, label, status, None, None, "", 0.0, 0.0, None, False, "", [], "", "", detail=detail
        )

    @classmethod
    def load(cls, path: Path) -> RunResult:
        return cls(**json.loads(path.read_text()))

    @property
    def stdout(self) -> bytes:
        return Path(self.stdout_path).read_bytes() if self.stdout_path else b""

    @property
    def stderr(self) -> str:
        return Path(self.stderr_path).read_text(errors="replace") if self.stderr_path else ""

    @property
    def report(self) -> str:
        return Path(self.report_path).read_text(errors="replace") if self.report_path else ""

    def output_tail(self) -> str:
        """The last line of the stream that carried a failure: stderr, else stdout (where
        GoogleTest and many test drivers report)."""
        streams = (("stderr", self.stderr), ("stdout", self.stdout.decode(errors="replace")))
        for name, data in streams:
            lines = [ln for ln in data.strip().splitlines() if ln.strip()]
            if lines:
                return f"{lines[-1].strip()[:200]} ({name})"
        return "(no output)"

    @property
    def passed(self) -> bool:
        return self.status == "exited" and self.exit == 0


def result_path(layout: Layout, key: str) -> Path:
    return layout.run_result(key)


def execute(spec: RunSpec, layout: Layout) -> RunResult:
    key = spec.key
    out = layout.run(key)
    out.mkdir(parents=True, exist_ok=True)
    # Run again (after a kill, `doit forget`): no old result beside half-written outputs.
    result_path(layout, key).unlink(missing_ok=True)
    cell = CellResult.load(cell_result_path(layout, spec.cell_key))
    binaries = {"candidate": cell.binary}
    if spec.reference is not None:
        binaries["reference"] = CellResult.load(cell_result_path(layout, spec.reference)).binary
    meter: Path | None = None
    if spec.meter is not None:
        built = CellResult.load(cell_result_path(layout, spec.meter)).binary
        if built is None:
            msg = f"the meter launcher (cell {spec.meter}) did not build: see its result.json"
            raise RuntimeError(msg)
        meter = Path(built)
    if spec.reference is not None and binaries["reference"] is None:
        # The reference did not build: the gate sees that cell and calls the result
        # incomplete; the candidate's own figures are still worth keeping.
        del binaries["reference"]
    candidate = binaries["candidate"]
    if candidate is None:
        return _write(layout, RunResult.without_run(key, spec.label, "not_built"))
    if not spec.measured:
        sample = _execute_one(Path(candidate), spec, out, "", meter, entry=cell.entry)
        kept = str(out / "kept") if spec.keep else ""
        return _write(layout, replace(_result(key, spec.label, sample), kept=kept))
    samples: list[Sample] = []
    first: Sample | None = None
    for lane, stdin in spec.lanes or (("", spec.stdin),):
        order = [
            (phase, side)
            for phase, count in (("warmup", spec.warmup), ("timed", spec.rounds))
            for _ in range(count)
            for side in ("reference", "candidate")
            if side in binaries
        ]
        ran: list[Sample] = []
        for phase, side in order:
            binary = binaries[side]
            assert binary is not None
            sample = _execute_one(
                Path(binary),
                spec,
                out,
                f".{len(samples)}",
                meter,
                phase=phase,
                side=side,
                entry=cell.entry,
                stdin=stdin,
                lane=lane,
                timeout=_limit(spec, side, ran),
            )
            samples.append(sample)
            ran.append(sample)
            if side == "candidate":
                first = first or sample
                if sample.status in {"hang", "output_overflow"}:
                    break  # a runaway is decided; running it again only burns the batch's time
        if _decided(ran, spec.stop_ratio):
            break
    assert first is not None
    worst = next((s for s in samples if s.side == "candidate" and s.status != "exited"), first)
    result = _result(key, spec.label, worst)
    return _write(layout, replace(result, samples=[asdict(s) for s in samples]))


def _limit(spec: RunSpec, side: str, ran: list[Sample]) -> float:
    """A run's time limit in a series with `stop_ratio`: the machine's weather counts, not
    the clock. The reference may take up to stop_ratio times the limit (on a loaded
    machine it took 3.6 s of a 4 s limit), and a candidate the limit or stop_ratio times
    the reference's best so far in the lane, whichever is more: past that it is decided
    anyway (_decided), and an honest candidate as fast as a slowed reference is no hang."""
    if spec.stop_ratio is None:
        return spec.timeout
    if side == "reference":
        return spec.timeout * spec.stop_ratio
    best = [s.wall_seconds for s in ran if s.side == "reference" and s.status == "exited"]
    return max(spec.timeout, spec.stop_ratio * min(best)) if best else spec.timeout


def _decided(ran: list[Sample], stop_ratio: float | None) -> bool:
    """Whether one lane's samples already decide the series: a side that did not exit 0,
    results other than the reference's, or (with `stop_ratio`) a candidate slower than
    that many times the reference, best timed round against best."""
    if any(s.status != "exited" or s.exit != 0 for s in ran):
        return True
    sides = {side: [s for s in ran if s.side == side] for side in ("reference", "candidate")}
    if not sides["reference"]:
        return False
    if {s.stdout_sha for s in ran} != {sides["reference"][0].stdout_sha}:
        return True
    timed = {k: [s.wall_seconds for s in v if s.phase == "timed"] for k, v in sides.items()}
    if stop_ratio is None or not all(timed.values()):
        return False
    return min(timed["candidate"]) > stop_ratio * max(min(timed["reference"]), 1e-4)


@dataclass(frozen=True)
class Sample:
    """One execution: the figures a measured run keeps for every round."""

    side: str  # candidate | reference
    phase: str  # warmup | timed | single
    status: RunStatus
    exit: int | None
    signal: int | None
    stdout_sha: str
    wall_seconds: float
    cpu_seconds: float
    max_rss_kib: int | None
    stray_processes: bool
    metered: bool  # figures from the meter (the program's own) rather than the launcher
    sandbox: str
    argv: list[str]
    stdout_path: str
    stderr_path: str
    detail: str = ""  # the cap that stopped the run, if one did
    returned: bool | None = None  # see RunResult.returned
    report_path: str = ""  # see RunResult.report_path
    lane: str = ""  # the series' lane (RunSpec.lanes) it ran in


def execute_built(binary: Path, spec: RunSpec, layout: Layout) -> Sample:
    """One run of a binary a scan built (not a cell's product: the census's marked test
    program), with the same sandbox, caps and report channel as every other run. Its
    evidence lies in `layout.run(spec.key)`."""
    out = layout.run(spec.key)
    out.mkdir(parents=True, exist_ok=True)
    return _execute_one(binary, spec, out, "", None)


def _execute_one(
    binary: Path,
    spec: RunSpec,
    out: Path,
    suffix: str,
    meter: Path | None,
    phase: str = "single",
    side: str = "candidate",
    *,
    entry: bool = False,
    stdin: str | None = None,
    lane: str = "",
    timeout: float | None = None,
) -> Sample:
    work = out / f"work{suffix}"
    remove_work(work)  # what a run killed mid-way (with the harness) left
    with Layout(out.parents[2]).run_log.open("a") as log:  # out is <root>/runs/<xx>/<key>
        log.write(f"{time.time():.3f} {spec.key} {side} {phase}\n")
    work.mkdir()
    tmp = out / f"tmp{suffix}"
    report_r, report_w = os.pipe() if meter is not None else (-1, -1)
    nonce = _Nonce() if entry else None
    channel = _Report(out / f"report{suffix}") if spec.report else None
    ooms = faults.oom_kills()
    try:
        with run_uid() as uid:
            if uid is not None:
                os.chown(work, uid, uid)  # the only place the run may write
            launch: tuple[Path, tuple[str, ...]] | None = None
            if meter is not None:
                launch = (meter, (str(report_w), str(spec.memory_mib)))
            fresh_folder(tmp, uid)
            with userns.closed(uid is not None) as (closed, closed_fds):
                argv, sandbox = _sandboxed(binary, work, tmp, spec, launch, uid, closed)
                outcome = bounded(
                    argv,
                    cwd=work,
                    env={**BASE_ENV, **dict(spec.env)},
                    stdin=(spec.stdin if stdin is None else stdin).encode(),
                    timeout=spec.timeout if timeout is None else timeout,
                    output_cap=spec.output_cap,
                    pass_fds=((report_w,) if meter is not None else ()) + closed_fds,
                    fixed_fds=(nonce.fds if nonce else ()) + (channel.fds if channel else ()),
                    caps=spec.caps,
                    disk=out,
                )
    finally:
        if meter is not None:
            os.close(report_w)
        if nonce is not None:
            nonce.close_child_ends()
        if channel is not None:
            channel.close_child_ends()
    report = _read_report(report_r) if meter is not None else {}
    killed = _died_of(outcome, report, sandbox) == signal.SIGKILL
    oom = killed and not outcome.stopped_by_harness and faults.oom_kills() > ooms
    if outcome.disk_short or oom:
        # Not the program's doing, whatever it met: nothing is recorded, this run's files
        # are removed. A full disk stops the grade (cxxgate/results/faults.py); the OOM
        # killer's kill is a harness fault, retried.
        remove_work(work)
        remove_work(tmp)
        if outcome.disk_short:
            why = "the disk ran (nearly) full while the program ran"
            raise OSError(errno.ENOSPC, why, str(out))
        msg = "the kernel's OOM killer ran while this run was killed: the machine's memory ran out"
        raise RuntimeError(f"{msg}, not a verdict on the candidate (retried by the next grade)")
    main_status = nonce.came_back() if nonce is not None else None
    report_path = channel.keep(spec.output_cap) if channel is not None else ""
    (out / f"stdout{suffix}").write_bytes(outcome.stdout)
    (out / f"stderr{suffix}").write_bytes(outcome.stderr)
    # The evidence is written: what the run left in its folder (up to file_mib per file)
    # is not kept, but for the files its spec names.
    _keep(work, out / f"kept{suffix}", spec.keep)
    remove_work(work)
    remove_work(tmp)
    status: RunStatus
    if outcome.timed_out:
        status = "hang"
    elif outcome.overflowed:
        status = "output_overflow"
    elif outcome.signal is not None or report.get("signal", 0):
        status = "signaled"
    else:
        status = "exited"
    metered = bool(report)
    exit_code = int(report["exit"]) if metered and report["exit"] >= 0 else outcome.exit
    returned: bool | None = None
    if nonce is not None:
        # main returned, and no code after it (an atexit handler, a destructor calling
        # _exit(0)) turned a failing status into a clean exit.
        returned = main_status is not None and not (main_status != 0 and exit_code == 0)
    return Sample(
        side=side,
        phase=phase,
        status=status,
        exit=exit_code,
        signal=int(report["signal"]) if metered and report["signal"] else outcome.signal,
        stdout_sha=codehash.of_text(outcome.stdout),
        wall_seconds=round(report["wall"] if metered else outcome.wall_seconds, 4),
        cpu_seconds=round(report["utime"] + report["stime"] if metered else outcome.cpu_seconds, 4),
        # Without the meter ru_maxrss is the launcher's, floored at this Python process's
        # size (it survives fork and exec): not a figure about the program, so none.
        max_rss_kib=int(report["maxrss_kib"]) if metered else None,
        stray_processes=bool(report.get("stray", 0)) or outcome.stray_processes,
        metered=metered,
        sandbox=sandbox,
        argv=argv,
        stdout_path=str(out / f"stdout{suffix}"),
        stderr_path=str(out / f"stderr{suffix}"),
        detail=_cap_detail(outcome, report, spec.caps, sandbox),
        returned=returned,
        report_path=report_path,
        lane=lane,
    )


# Signs on stderr that an allocation failed: the C++ runtime's, glibc's, the sanitizers'.
_ALLOCATION_FAILED = ("std::bad_alloc", "Cannot allocate memory", "out of memory", "ReserveShadow")


def _died_of(outcome: Outcome, report: dict[str, float], sandbox: str) -> int:
    """The signal the program died of, 0 if none. bubblewrap exits 128+N when its program
    dies of signal N; the meter reports N itself."""
    died_of = outcome.signal or int(report.get("signal", 0))
    if not died_of and sandbox == "bwrap" and outcome.exit is not None and outcome.exit > 128:
        died_of = outcome.exit - 128
    return died_of


def _cap_detail(outcome: Outcome, report: dict[str, float], caps: Caps, sandbox: str) -> str:
    """Which cap stopped the run, when the evidence says one did; "" otherwise."""
    if outcome.over_memory:
        return f"killed: resident memory over {caps.memory_mib} MiB"
    died_of = _died_of(outcome, report, sandbox)
    if outcome.exit == 0 and not died_of:
        return ""  # whatever it met, it coped
    stderr = outcome.stderr.decode(errors="replace")
    if died_of == signal.SIGXFSZ or "File too large" in stderr:
        how = "SIGXFSZ" if died_of == signal.SIGXFSZ else "EFBIG"
        return f"file size limit ({how}): a file reached the {caps.file_mib} MiB cap"
    if not caps.resident and any(sign in stderr for sign in _ALLOCATION_FAILED):
        return f"address-space limit: an allocation failed under the {caps.memory_mib} MiB cap"
    if "fork" in stderr and "Resource temporarily unavailable" in stderr:
        return f"process limit: a fork failed at the cap of {caps.processes} processes"
    return ""


_UID_BASE = 0x60000000  # far above any account a system hands out (and below 2**31)
_uid_lock = threading.Lock()
_uids_busy: set[int] = set()


@contextmanager
def run_uid() -> Iterator[int | None]:
    """A uid no other concurrent run of this harness uses (RLIMIT_NPROC counts per uid, so
    a shared one would let one run's fork bomb fail another's forks); None when runs do
    not drop privileges (cxxgate/host/sandbox.py drop_uid)."""
    if not sandbox.drop_uid():
        yield None
        return
    with _uid_lock:
        slot = next(i for i in range(len(_uids_busy) + 1) if i not in _uids_busy)
        _uids_busy.add(slot)
    try:
        # The pid keeps two harnesses on one machine apart (mostly: a clash only means
        # two runs share one count).
        yield _UID_BASE + (os.getpid() % 0x10000) * 0x100 + slot % 0x100
    finally:
        with _uid_lock:
            _uids_busy.discard(slot)


def _keep(work: Path, dest: Path, names: tuple[str, ...]) -> None:
    """Copy the regular files at the top of `work` whose names match `names` into `dest`.
    The program wrote them and may have left links or devices there instead: a file is
    opened without following a link and copied only when it is a regular file."""
    if not names:
        return
    remove_work(dest)
    dest.mkdir(parents=True)
    for entry in sorted(work.iterdir()):
        if not any(fnmatch.fnmatchcase(entry.name, n) for n in names):
            continue
        try:
            fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue  # a link, or gone: not a file the run produced
        with os.fdopen(fd, "rb") as src:
            if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):
                continue
            (dest / entry.name).write_bytes(src.read())


def fresh_folder(folder: Path, uid: int | None) -> Path:
    """`folder` made empty, owned by the uid a run drops to (when it drops one)."""
    remove_work(folder)
    folder.mkdir()
    if uid is not None:
        os.chown(folder, uid, uid)
    return folder


def remove_work(work: Path) -> None:
    """Delete a run's folder whatever the program left in it (cxxgate/util/removal.py: any
    depth, any modes, never through a link)."""
    if not os.path.lexists(work):
        return
    try:
        removal.remove_tree(work)
    except OSError:
        # A process of the run may still be dying (its pid namespace ends asynchronously)
        # and writing: once more, after it had the time to.
        time.sleep(0.2)
        removal.remove_tree(work)


class _Nonce:
    """One execution's proof of return: a random nonce waits in one pipe (the child's read
    end, at RETURN_FDS[0]), and the entry copies it into another (the child's write end, at
    RETURN_FDS[1]) after main returned. Both ends are inherited (the meter forks the program
    without closing them)."""

    def __init__(self) -> None:
        self.value = secrets.token_hex(16).encode()
        self._in_r, in_w = os.pipe()
        self._out_r, self._out_w = os.pipe()
        os.write(in_w, self.value)
        os.close(in_w)
        self.fds = ((RETURN_FDS[0], self._in_r), (RETURN_FDS[1], self._out_w))

    def close_child_ends(self) -> None:
        os.close(self._in_r)
        os.close(self._out_w)

    def came_back(self) -> int | None:
        """The status main returned (mod 256), as the entry wrote it after the nonce; None
        when the nonce did not come back (main never returned)."""
        os.set_blocking(self._out_r, False)
        data = b""
        try:
            while len(data) <= len(self.value) + 1 and (chunk := os.read(self._out_r, 256)):
                data += chunk
        except BlockingIOError:
            pass  # a process left behind still holds the pipe: take what is there
        finally:
            os.close(self._out_r)
        if len(data) != len(self.value) + 1 or data[:-1] != self.value:
            return None
        return data[-1]


class _Report:
    """One execution's report channel (RunSpec.report): the nonce in a pipe, as for the
    entry, and a file the program appends its lines to through an inherited descriptor.
    The file lives in the run's folder, outside the sandbox's view: the program knows it
    only by that descriptor."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.raw = path.with_name(path.name + ".raw")
        self.value = secrets.token_hex(16)
        self._in_r, in_w = os.pipe()
        os.write(in_w, self.value.encode())
        os.close(in_w)
        self._file = os.open(self.raw, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        self.fds = ((REPORT_FDS[0], self._in_r), (REPORT_FDS[1], self._file))

    def close_child_ends(self) -> None:
        os.close(self._in_r)
        os.close(self._file)

    def keep(self, cap: int) -> str:
        """Write the lines that carry the nonce, without it, to `path`; drop the raw file.
        The nonce is never stored, so the result is the same from one execution to the
        next."""
        with self.raw.open("rb") as raw:
            data = raw.read(cap).decode(errors="replace")
        self.raw.unlink()
        mark = self.value + " "
        kept = [ln[len(mark) :] for ln in data.splitlines() if ln.startswith(mark)]
        self.path.write_text("".join(f"{ln}\n" for ln in kept))
        return str(self.path)


def _read_report(fd: int) -> dict[str, float]:
    """The meter's one line `exit=.. signal=.. ...`; empty when it never wrote (killed)."""
    os.set_blocking(fd, False)
    data = b""
    try:
        while chunk := os.read(fd, 4096):
            data += chunk
    except BlockingIOError:
        pass  # a process that escaped the group still holds the pipe: take what is there
    finally:
        os.close(fd)
    fields: dict[str, float] = {}
    for item in data.decode(errors="replace").split():
        name, _, value = item.partition("=")
        try:
            fields[name] = float(value)
        except ValueError:
            continue
    return fields if "maxrss_kib" in fields and "exit" in fields else {}


def _result(key: str, label: str, sample: Sample) -> RunResult:
    """The run's figures are those of one sample (the first, or the first that failed)."""
    shared = {f.name for f in fields(RunResult)} & {f.name for f in fields(Sample)}
    return RunResult(key=key, label=label, **{n: getattr(sample, n) for n in shared})


def _write(layout: Layout, result: RunResult) -> RunResult:
    atomic.write_text(result_path(layout, result.key), json.dumps(asdict(result), indent=1) + "\n")
    return result


def _sandboxed(
    binary: Path,
    work: Path,
    tmp: Path,
    spec: RunSpec,
    launch: tuple[Path, tuple[str, ...]] | None = None,
    uid: int | None = None,
    closed: list[str] | None = None,
) -> tuple[list[str], str]:
    """argv for the sandbox; `launch` is a launcher (the meter) and its own arguments,
    put in front of the binary inside the sandbox. The program sees the system, its
    work folder as /work, `tmp` as /tmp and itself as /candidate: nothing of the case or
    the build. With `uid`, it runs as that uid with no capabilities (see
    cxxgate/host/sandbox.py); `closed` are userns.closed's arguments."""
    args = spec.args
    if not sandbox.available():
        front = [str(launch[0]), *launch[1]] if launch else []
        return [*front, *_wrapper(spec), str(binary), *args], "none"
    prelude, drop = sandbox.base_args(tmp), []
    if uid is not None:
        prelude, drop = sandbox.run_args(tmp), sandbox.drop_args(uid)
        for program in (binary, *(launch[:1] if launch else ())):
            mode = program.stat().st_mode
            if mode & 0o005 != 0o005:  # the run's uid is "other" to the build's files
                program.chmod(mode | 0o005)
    argv = [*prelude, "--bind", str(work), "/work"]
    argv += ["--ro-bind", str(binary), "/candidate"]
    head: list[str] = []
    if launch is not None:
        argv += ["--ro-bind", str(launch[0]), "/meter"]
        head = ["/meter", *launch[1]]
    head += _wrapper(spec)
    argv += [*(closed or []), *sandbox.sealed()]
    return [*argv, "--chdir", "/work", *drop, *head, "/candidate", *args], "bwrap"


def _wrapper(spec: RunSpec) -> list[str]:
    """The spec's tool, which must be one the sandbox shows (a system path)."""
    if spec.wrapper and not sandbox.is_system(Path(spec.wrapper[0])):
        msg = f"run wrapper {spec.wrapper[0]!r} is not under a system directory"
        raise RuntimeError(msg)
    return list(spec.wrapper)
