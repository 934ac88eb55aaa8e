"""Gate `slope`: a correct patch that grows steeper than the reference is rejected.

The case pins a function signature in a frozen header (outside the writable set). The
harness renders the driver (templates/slope/driver.cpp.j2) from the case's size
table, a seed and a probe name the candidate never sees: it calls the function once per
size on seeded input and prints a checksum of each full result. The driver is a harness
unit, never in the tree, and everything in it has internal linkage: a patch that defines
`main` or names the driver's size table does not link (`build_fail`).

Sizes: the case's table, plus `beyond` sizes drawn from the batch's seed above its largest
M (one in each equal log-scale slice of (1.5 M, `reach` M]). What to call reaches the
driver on stdin, never its command line: both lanes run the same binary with the same
(empty) argv, so no word tells a patch which lane it is in; a new seed reruns, never
recompiles. Inputs span the whole 32-bit range (fresh values, repeats, a cluster around a
base, in proportions drawn from the seed): no property such as "every value below n"
holds for them.

Counting: valgrind's callgrind runs the whole process with collection on, every thread in
one count (`--separate-threads=no`), exec'd children traced (`--trace-children=yes`), and
dumps its counters each time the driver calls its marker (`--dump-before`), which brackets
each call: a size's count is every instruction of every thread between the two markers,
plus whatever the candidate's threads went on to do before the next marker beyond what
the reference does there (work left running after the call is the call's), and a forked
child's whole count is charged to the largest size (nothing places it; it makes a patch
look steeper, never flatter). The growth exponent is the least-squares slope of
log(instructions) over log(n) on the table (its fit must reach `min_r2`), and again on the
tail (the table's largest size and the drawn ones) against the reference's tail with
`tail_margin`.

Callgrind writes its profiles from inside the candidate's process: the candidate can
rewrite them, or tell valgrind from a native run (LD_PRELOAD, /proc/self/maps, timing) and
behave. Two cross-checks: each profile's `totals:` must equal the sum of its own cost
lines, and the same binary runs natively (no valgrind) on the seed's native schedule: a
number of calls drawn from `native_calls` (64-2048) at sizes from M/4 to M, with
`native_big` calls of 16 M to `native_reach` M (32 M) spread through it (the last past two
thirds of the calls). Timed by the harness from outside, interleaved with the reference,
minimum of `wall_rounds`: every call's result must be the reference's
(`checksum_mismatch`), and the run must finish within `wall_timeout` and take at most
`tamper_ratio` times the reference's time, else `measurement_tamper`. That bar is the
reference's native time alone: no counted exponent or margin moves it. Every entry
carries an input shape drawn from the seed (as drawn, sorted, reversed, all equal, all
distinct, low 12 bits zero; one big call of each). Two more native processes of E =
~`scale` M elements under the same bar: `first`, one call of E (a process's only call),
and `small`, calls of M/4..M summing to E; the candidate's native time per element from
`small` to `first`, over the reference's, as an exponent over the span, may not pass
`margin` (`steep`: a cost that grows only past the counted sizes). A fourth, `shapes`,
makes one call of E / 6 per shape, in a drawn order, under the same bar. The four native
processes are one paired series (`native`, `first`, `small`, `shapes`), which ends after
the first that already rejects: a steep patch pays for one, not four.

| class             | meaning                                                            |
| ----------------- | ------------------------------------------------------------------ |
| build_fail        | the driver does not build with the tree (a `main` of its own, ...)  |
| measurement_tamper| the tree's code (not its comments) names valgrind or callgrind, or  |
|                   | carries the client-request instruction sequence; a profile's totals |
|                   | are not the sum of its cost lines (rewritten); the count accepts  |
|                   | but the native run passes its limit or takes over `tamper_ratio`   |
|                   | times the reference's native time (same schedule)                  |
| hang              | the profiled run passed its time limit                             |
| checksum_mismatch | a result (counted or native) differs from the reference's, or a   |
|                   | run died                                                           |
| steep             | exponent above the reference's + margin (table), or + tail_margin  |
|                   | (the table's largest size and the drawn ones), or the native cost  |
|                   | per element grows from `small` to `first` faster by + margin       |
| inconclusive      | the candidate's log-log fit is too poor to decide                  |
| accept            | same results, exponent within the margin                           |
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
import shutil
import statistics
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pathspec
from pydantic import Field, field_validator
from pygments.lexers import CppLexer

from cxxgate.api import (
    UNIT_NAME,
    Check,
    Context,
    Finding,
    Gate,
    GateResult,
    InputError,
    Outputs,
    Plan,
    RunResult,
    RunSpec,
    ScanSpec,
    Strict,
    Unit,
    probe,
    toolquery,
    why_failed,
)
from cxxgate.gates.shared import hunks, lanes

NAME = "slope"
SEVERITY = (
    "build_fail",
    "measurement_tamper",
    "hang",
    "checksum_mismatch",
    "steep",
    "inconclusive",
)
DRIVER = "slope/driver.cpp.j2"
PROFILE = "cg"  # callgrind writes cg.<pid>.<part> at each marker, cg.<pid> at exit


class Config(Strict):
    header: str  # tree path of the frozen header declaring the function
    function: str  # the pinned function, called as function(const std::vector<uint32_t>&)
    sizes: list[int] = Field(default=[256, 512, 1024, 2048, 4096], min_length=4)
    seed: int = Field(default=1, ge=0, lt=1 << 64)
    margin: float = Field(default=0.25, gt=0)  # exponent excess over the reference allowed
    min_r2: float = Field(default=0.98, gt=0, lt=1)
    envelope: str = "rel"
    timeout: float | None = Field(default=None, gt=0, le=600)  # per profiled run
    beyond: int = Field(default=2, ge=1, le=4)  # counted sizes drawn from the seed above the table
    # ... up to this many times the table's max: a quadratic patch's profiled run must end
    # well inside `timeout` on a loaded machine (6x hung at 15 s); the native lane reaches far.
    reach: float = Field(default=3.0, ge=1.6, le=64)
    tail_margin: float = Field(default=0.5, gt=0)  # exponent excess allowed on the tail
    wall_rounds: int = Field(default=3, ge=1, le=20)  # the native lane's timed rounds
    wall_timeout: float = Field(default=4.0, gt=0, le=600)  # per native run
    # The native schedule: a number of calls drawn from the seed in this range, at sizes
    # from a quarter of the table's max to its max, and `native_big` calls among them at
    # sizes from 16x to `native_reach` x the max.
    native_calls: tuple[int, int] = (64, 2048)
    # One big call per input shape (SHAPES), in an order drawn from the seed.
    native_big: int = Field(default=6, ge=1, le=8)
    native_reach: float = Field(default=32.0, ge=16, le=1024)
    # Native run time (minimum over rounds) over the reference's, same schedule: above
    # this the candidate is not what the count measured, whatever the count's exponent.
    # Honest rewrites measured under 2x; `after_513` measured 9.4x, and 5.0x on a run
    # where the reference's three rounds were all twice as slow as usual (6 let it pass).
    tamper_ratio: float = Field(default=4.0, gt=1)
    # Two more native processes, each of some `scale` x M elements (drawn from the seed in
    # [0.75 scale, scale] x M): `first`, one call of all of them (its process's only
    # call), and `small`, calls of M/4 to M summing to as many. The candidate's native
    # cost per element from `small` to `first` may grow by at most n^`margin` more than
    # the reference's (its exponent over the same span), else `steep`.
    scale: float = Field(default=512.0, ge=16, le=4096)

    @field_validator("sizes")
    @classmethod
    def _increasing(cls, sizes: list[int]) -> list[int]:
        if any(b <= a for a, b in itertools.pairwise(sizes)) or sizes[0] < 2:
            msg = f"sizes must be increasing and at least 2, got {sizes}"
            raise ValueError(msg)
        return sizes

    @field_validator("native_calls")
    @classmethod
    def _calls(cls, calls: tuple[int, int]) -> tuple[int, int]:
        if not 1 <= calls[0] <= calls[1] <= 4000:
            msg = f"native_calls must be [least, most] with 1 <= least <= most <= 4000, got {calls}"
            raise ValueError(msg)
        return calls

    @field_validator("function")
    @classmethod
    def _name(cls, name: str) -> str:
        if not re.fullmatch(r"(::)?[A-Za-z_]\w*(::[A-Za-z_]\w*)*", name):
            msg = f"function must be a (qualified) C++ name, got {name!r}"
            raise ValueError(msg)
        return name


@cache
def valgrind() -> tuple[str, str] | None:
    """valgrind's path and version text, or None when it is not installed."""
    path = shutil.which("valgrind", path="/usr/bin:/bin")
    if path is None:
        return None
    version = toolquery.version(path).strip()
    return path, version


def probe_name(cfg: Config, case_id: str, kind: str = "probe") -> str:
    """A name of the harness's, from the seed: a patch cannot define or call it."""
    digest = hashlib.sha256(f"{case_id}:{cfg.seed}".encode()).hexdigest()[:12]
    return f"cxxgate_{kind}_{digest}"


def _uniform(key: str) -> float:
    """A number in [0, 1) from the key alone."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64


def _log_band(low: float, high: float, k: int, bands: int, key: str) -> int:
    """A size in the k-th of `bands` equal slices of [low, high] on a log scale."""
    width = math.log(high / low) / bands
    return int(low * math.exp(width * (k + _uniform(key))))


def drawn_sizes(cfg: Config, case_id: str, seed: int) -> list[int]:
    """`beyond` counted sizes above the table's largest M, from the batch's seed: one in
    each of `beyond` equal log-scale slices of (1.5 M, `reach` M]. A patch compiled before
    the seed was drawn cannot know them."""
    top = cfg.sizes[-1]
    return [
        _log_band(1.5 * top, cfg.reach * top, k, cfg.beyond, f"slope:{case_id}:{seed}:{k}") + 1
        for k in range(cfg.beyond)
    ]


# The driver's input shapes (templates/slope/driver.cpp.j2 `Shape`): as drawn, sorted,
# reversed, all equal, all distinct, low 12 bits zero.
SHAPES = 6
Entry = tuple[int, int]  # a call: (size, shape)
LANES = ("native", "first", "small", "shapes")  # the native series' lanes, in run order


def _shape(key: str) -> int:
    return int(_uniform(key) * SHAPES)


def native_schedule(cfg: Config, case_id: str, seed: int) -> list[Entry]:
    """The native lane's calls, in order, from the batch's seed: a number of calls drawn
    from `native_calls` (a patch that changes after its k-th call meets k), at sizes from
    M/4 to M, and `native_big` calls from 16 M to `native_reach` M, one in each equal
    slice of the schedule (so the last lies past two thirds of it, and past any call count
    below two thirds of the least number drawn). Every call's input shape is drawn; the
    big calls take the shapes in an order drawn from the seed, so with `native_big` >=
    SHAPES each shape has a big call."""
    top = cfg.sizes[-1]
    low, high = cfg.native_calls
    calls = low + int(_uniform(f"native:{case_id}:{seed}:calls") * (high - low + 1))
    out = [
        (
            _log_band(max(2, top // 4), top, 0, 1, f"native:{case_id}:{seed}:{i}"),
            _shape(f"native:{case_id}:{seed}:shape{i}"),
        )
        for i in range(calls)
    ]
    shapes = sorted(range(SHAPES), key=lambda k: _uniform(f"native:{case_id}:{seed}:order{k}"))
    span = calls / cfg.native_big
    for j in range(cfg.native_big):
        at = int(span * (j + _uniform(f"native:{case_id}:{seed}:at{j}")))
        key = f"native:{case_id}:{seed}:big{j}"
        size = _log_band(16 * top, cfg.native_reach * top, j, cfg.native_big, key)
        out[at] = (size, shapes[j % SHAPES])
    return out


def shapes_schedule(total: int, case_id: str, seed: int) -> list[Entry]:
    """The `shapes` process: one call per input shape, in an order drawn from the seed, of
    ~`scale` M / SHAPES elements each (`total`: the `first` process's call): a cost that
    explodes on one shape only (sorted, all equal, ...) meets it at a size where it
    cannot hide under `tamper_ratio`."""
    order = sorted(range(SHAPES), key=lambda k: _uniform(f"shapes:{case_id}:{seed}:{k}"))
    return [(total // SHAPES, shape) for shape in order]


def scale_schedules(cfg: Config, case_id: str, seed: int) -> tuple[list[Entry], list[Entry]]:
    """The `first` process (one call of E elements: its process's first and only call)
    and the `small` one (calls of M/4 to M summing to E), E drawn in [0.75, 1] `scale`
    x M. Both as drawn (shape 0): the two differ in call size alone."""
    top = cfg.sizes[-1]
    total = int(top * cfg.scale * (0.75 + 0.25 * _uniform(f"scale:{case_id}:{seed}")))
    small: list[Entry] = []
    drawn = 0  # a running sum: the schedule is drawn at every library load (thousands of calls)
    while drawn < total:
        n = _log_band(max(2, top // 4), top, 0, 1, f"scale:{case_id}:{seed}:{len(small)}")
        small.append((n, 0))
        drawn += n
    return [(total, 0)], small


def lane_schedules(cfg: Config, case_id: str, seed: int) -> dict[str, list[Entry]]:
    """Each native lane's calls, by name, in LANES order."""
    first, small = scale_schedules(cfg, case_id, seed)
    return {
        "native": native_schedule(cfg, case_id, seed),
        "first": first,
        "small": small,
        "shapes": shapes_schedule(first[0][0], case_id, seed),
    }


def driver(ctx: Context, cfg: Config) -> Unit:
    key = f"gates.{NAME}.header"
    spec = ctx.case.spec
    header = cfg.header
    if not (ctx.case.tree / header).is_file():
        msg = f"{ctx.case.file}: {key}: {header!r} is not a file of the case's tree"
        raise InputError(msg)
    if _writable(ctx, header):
        msg = (
            f"{ctx.case.file}: {key}: {header!r} is writable (matches `writable`): the "
            "pinned signature must be frozen"
        )
        raise InputError(msg)
    include = next(
        (
            Path(header).relative_to(d).as_posix()
            for d in spec.include_dirs
            if Path(header).is_relative_to(d)
        ),
        None,
    )
    if include is None:
        msg = (
            f"{ctx.case.file}: {key}: {header!r} is under none of include_dirs {spec.include_dirs}"
        )
        raise InputError(msg)
    text = probe.render(
        DRIVER,
        header_include=f'"{include}"',
        sizes=cfg.sizes,
        seed=cfg.seed,
        probe=probe_name(cfg, ctx.case.id),
        marker=probe_name(cfg, ctx.case.id, "mark"),
        function=cfg.function,
    )
    return Unit(UNIT_NAME, text)


def _writable(ctx: Context, path: str) -> bool:
    return pathspec.GitIgnoreSpec.from_lines(ctx.case.spec.writable).match_file(path)


def plan(ctx: Context) -> Plan:
    cfg: Config = ctx.case.gate_config(NAME)
    env = ctx.envelope(cfg.envelope, f"gates.{NAME}.envelope")
    unit = driver(ctx, cfg)
    label = f"{NAME} driver"
    candidate = lanes.program_cell(ctx, ctx.tree_key, unit, env, label)
    reference = lanes.program_cell(ctx, ctx.reference_tree_key, unit, env, label)
    limits = ctx.case.spec.limits
    drawn = drawn_sizes(cfg, ctx.case.id, ctx.seed)
    runs: dict[str, RunSpec] = {}
    # Native, interleaved with the reference, the same binary and argv as the count: only
    # the schedule on stdin differs. The lanes run in LANES order in one series, which
    # ends after the first lane that rejects: a runaway stops at `wall_timeout` (a few
    # times what the reference takes) and no later lane or round runs.
    schedules = lane_schedules(cfg, ctx.case.id, ctx.seed)
    runs["native"] = RunSpec(
        cell_key=candidate.key,
        lanes=tuple((lane, _stdin(schedules[lane])) for lane in LANES),
        label=f"{NAME} native lanes ({', '.join(LANES)})",
        env=env.run_env,
        timeout=cfg.wall_timeout,
        output_cap=limits.output_bytes,
        caps=limits.caps(env.flags),
        reference=reference.key,
        rounds=cfg.wall_rounds,  # minima: no warm-up round needed
        stop_ratio=cfg.tamper_ratio,
    )
    tool = valgrind()
    if tool is not None:
        wrapper = (
            tool[0],
            "--tool=callgrind",
            # Collection on from the start, every thread in one count; a dump at each
            # marker (the driver brackets each call with two).
            f"--dump-before=*{probe_name(cfg, ctx.case.id, 'mark')}*",
            "--separate-threads=no",
            "--trace-children=yes",
            f"--callgrind-out-file={PROFILE}.%p",
            "--vgdb=no",
            "-q",
        )
        for side, cell in (("profile", candidate), ("reference_profile", reference)):
            runs[side] = RunSpec(
                cell_key=cell.key,
                stdin=_stdin([(n, 0) for n in (*cfg.sizes, *drawn)]),
                label=f"{NAME} callgrind",
                # valgrind's identity enters the run's key through its environment; its
                # temporary files go to the work folder, where it writes its profiles.
                env=(*env.run_env, ("CXXGATE_VALGRIND", tool[1]), ("TMPDIR", ".")),
                timeout=cfg.timeout or limits.run_seconds,
                output_cap=limits.output_bytes,
                caps=limits.caps(env.flags),
                wrapper=wrapper,
                keep=(f"{PROFILE}.*",),
            )
    scan = ScanSpec.of(ctx.tree_key, profiler_references, label=f"{NAME} profiler references")
    return Plan(
        cells={"candidate": candidate, "reference": reference},
        runs=runs,
        scans={"tamper": scan},
    )


def _stdin(entries: list[Entry]) -> str:
    return " ".join(f"{n}:{shape}" for n, shape in entries) + "\n"


# Client requests reach valgrind through its headers, or through their magic preamble
# (four rotates of a register by 3, 13, 61 and 51 bits on amd64) spelt by hand.
_PROFILER = re.compile(r"valgrind|callgrind|\brolq?\b|\bror[qw]?\b", re.I)


def profiler_references(tree: Path, params: dict[str, Any]) -> dict[str, Any]:
    """The scan: `{"found": [[path, line, text], ...]}`, code tokens only (an include
    counts, a comment does not)."""
    found: list[list[Any]] = []
    for path in sorted(p for p in tree.rglob("*") if p.is_file()):
        if path.suffix.lower() not in hunks.CODE_SUFFIXES:
            continue
        source = path.read_bytes().decode("utf-8", "replace")
        for index, ttype, value in CppLexer().get_tokens_unprocessed(source):
            if hunks.significant(ttype, value) and _PROFILER.search(value):
                line = source.count("\n", 0, index) + 1
                found.append([path.relative_to(tree).as_posix(), line, value.strip()[:80]])
    return {"found": found}


# ---- classification -----------------------------------------------------------------


def fit(sizes: list[int], counts: list[int] | list[float]) -> tuple[float, float]:
    """Least-squares slope of log(count) over log(n), and its r^2."""
    x = [math.log(n) for n in sizes]
    y = [math.log(c) for c in counts]
    slope = statistics.linear_regression(x, y).slope
    if len(set(y)) == 1:
        return slope, 1.0  # a flat line fits exactly
    return slope, statistics.correlation(x, y) ** 2


_CHECKSUM = re.compile(r"^n=(\d+) checksum=([0-9a-f]{16})$", re.M)
_TOTALS = re.compile(r"^totals: (\d+)$", re.M)
_NAME = re.compile(rf"^{PROFILE}\.(\d+)(?:\.(\d+))?$")


def checksums(stdout: bytes) -> dict[int, str]:
    return {int(n): c for n, c in _CHECKSUM.findall(stdout.decode(errors="replace"))}


class Forged(Exception):
    """A profile whose totals are not what its own cost lines add up to."""


def recount(text: str) -> int:
    """The sum of a profile's self costs (callgrind format, one event): every cost line but
    the one after `calls=`, which repeats the callee's inclusive cost."""
    total, after_call = 0, False
    for line in text.splitlines():
        if line.startswith("calls="):
            after_call = True
        elif line[:1].isdigit() or line[:1] in "+-*":
            parts = line.split()
            if not after_call and len(parts) > 1:
                total += int(parts[1])
            after_call = False
    return total


def _totals(path: Path) -> int:
    text = path.read_text(errors="replace")
    m = _TOTALS.search(text)
    if m is None:
        raise Forged(f"{path.name} has no totals line")
    if int(m[1]) != (summed := recount(text)):
        raise Forged(f"{path.name} says totals {m[1]}, its cost lines add up to {summed}")
    return int(m[1])


@dataclass
class Profile:
    parts: list[int]  # the main process's dumps in order: part 1, 2, ... and the exit's
    children: int  # instructions of every other process (forked or exec'd)


def profile_of(run: RunResult) -> Profile | None:
    """The run's dumps; None when there are none. Raises Forged on a rewritten one."""
    if not run.kept:
        return None
    by_pid: dict[int, dict[int, int]] = {}
    for path in Path(run.kept).iterdir():
        m = _NAME.match(path.name)
        if m is None:
            continue
        part = int(m[2]) if m[2] else 1 << 30  # the exit's dump comes last
        by_pid.setdefault(int(m[1]), {})[part] = _totals(path)
    if not by_pid:
        return None
    main = max(by_pid, key=lambda pid: len(by_pid[pid]))
    parts = [c for _, c in sorted(by_pid.pop(main).items())]
    return Profile(parts, sum(sum(d.values()) for d in by_pid.values()))


def charged(prof: Profile, ref: Profile, sizes: int) -> list[int] | None:
    """Each call's count: its window between the markers (part 2i+2), plus what ran after
    it up to the next marker beyond the reference's same window; a child's whole count on
    the largest size. None when the dumps are not one pair per size and the exit's."""
    if len(prof.parts) != 2 * sizes + 1 or len(ref.parts) != 2 * sizes + 1:
        return None
    out = [
        prof.parts[2 * i + 1] + max(0, prof.parts[2 * i + 2] - ref.parts[2 * i + 2])
        for i in range(sizes)
    ]
    out[-1] += prof.children
    return out


def _incomplete(why: str) -> GateResult:
    return GateResult.from_checks(
        NAME, [Check("slope", False, "incomplete", why, incomplete=True)], SEVERITY, []
    )


def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:
    cfg: Config = ctx.case.gate_config(NAME)
    if "profile" not in plan.runs:
        return GateResult(
            NAME, "incomplete", "toolchain_missing", "valgrind is not installed: no count"
        )
    ref_cell, cand_cell = outputs.cells["reference"], outputs.cells["candidate"]
    if ref_cell.status != "ok":
        return _incomplete(f"reference driver: {ref_cell.status}: {why_failed(ref_cell)}")
    if cand_cell.status in lanes.MISSING:
        return _incomplete(f"candidate driver: {cand_cell.status}: {cand_cell.detail}")
    if cand_cell.status != "ok":
        why = why_failed(cand_cell)
        text = " ".join(s.output for s in cand_cell.steps)
        if "multiple definition of `main'" in text:
            why = f"the tree defines main, which the harness's driver owns: {why}"
        elif "undefined reference" in text:
            why = f"the tree names something the driver does not export: {why}"
        return GateResult.from_checks(
            NAME, [Check("driver", False, "build_fail", why)], SEVERITY, []
        )
    scan = outputs.scans["tamper"]
    if scan.status != "ok":
        return _incomplete(f"profiler scan: {scan.status}: {scan.detail}")
    if scan.data["found"]:
        shown = ", ".join(f"{p}:{n} ({t})" for p, n, t in scan.data["found"][:5])
        check = Check(
            "profiler", False, "measurement_tamper", f"the tree reaches the profiler: {shown}"
        )
        result = GateResult.from_checks(NAME, [check], SEVERITY, [])
        result.findings.extend(
            Finding("measurement_tamper", f"code that reaches the profiler: {t}", p, n)
            for p, n, t in scan.data["found"]
        )
        return result
    sizes = [*cfg.sizes, *drawn_sizes(cfg, ctx.case.id, ctx.seed)]
    tail = sizes[len(cfg.sizes) - 1 :]
    ref_run, run = outputs.runs["reference_profile"], outputs.runs["profile"]
    problem = lanes.run_problem(ref_run, 0)
    want = checksums(ref_run.stdout)
    try:
        ref_prof = profile_of(ref_run)
    except Forged as e:
        return _incomplete(f"reference under callgrind: {e}")
    if problem or ref_prof is None or len(want) != len(sizes):
        why = problem or f"{len(want)} checksums for {len(sizes)} sizes"
        return _incomplete(f"reference under callgrind: {why}")
    evidence = [
        f"seed {ctx.seed}: counted sizes {sizes} (drawn beyond the table: "
        f"{sizes[len(cfg.sizes) :]})"
    ]
    if run.status == "hang":
        check = Check("profile", False, "hang", "killed at the time limit under callgrind")
        return GateResult.from_checks(NAME, [check], SEVERITY, evidence)
    got = checksums(run.stdout)
    wrong = [n for n in sizes if got.get(n) != want[n]]
    problem = lanes.run_problem(run, 0)
    if problem or wrong:
        detail = problem or (
            f"results differ from the reference at n={', '.join(map(str, wrong))} "
            f"({len(sizes) - len(wrong)}/{len(sizes)} sizes agree)"
        )
        check = Check("checksums", False, "checksum_mismatch", detail)
        return GateResult.from_checks(NAME, [check], SEVERITY, evidence)
    checks = [Check("checksums", True, "accept", f"{len(sizes)} sizes agree")]
    try:
        prof = profile_of(run)
    except Forged as e:
        why = f"a callgrind profile was rewritten after callgrind wrote it: {e}"
        checks.append(Check("profile", False, "measurement_tamper", why))
        return GateResult.from_checks(NAME, checks, SEVERITY, evidence)
    ref_counts = charged(ref_prof, ref_prof, len(sizes))
    counts = charged(prof, ref_prof, len(sizes)) if prof is not None else None
    if ref_counts is None or min(ref_counts) <= 0:
        return _incomplete(f"reference under callgrind: {len(ref_prof.parts)} dumps")
    evidence.append(f"reference instructions: {_pairs(sizes, ref_counts)}")
    if counts is None or min(counts) <= 0:
        many = "no" if prof is None else str(len(prof.parts))
        detail = f"{many} callgrind dumps for {len(sizes)} sizes (two each and the exit's)"
        checks.append(Check("fit", False, "inconclusive", detail))
        return GateResult.from_checks(NAME, checks, SEVERITY, evidence)
    evidence.append(f"candidate instructions: {_pairs(sizes, counts)}")
    table = len(cfg.sizes)
    ref_slope, ref_r2 = fit(cfg.sizes, ref_counts[:table])
    slope, r2 = fit(cfg.sizes, counts[:table])
    ref_tail, _ = fit(tail, ref_counts[table - 1 :])
    cand_tail, _ = fit(tail, counts[table - 1 :])
    line = (
        f"exponent {slope:.3f} (r^2 {r2:.4f}), reference {ref_slope:.3f} (r^2 {ref_r2:.4f}), "
        f"margin {cfg.margin}; tail {tail}: {cand_tail:.3f}, reference {ref_tail:.3f}, "
        f"tail_margin {cfg.tail_margin}"
    )
    evidence.append(line)
    if ref_r2 < cfg.min_r2:
        return _incomplete(f"the reference's fit is below min_r2 {cfg.min_r2}: {line}")
    if slope > ref_slope + cfg.margin or cand_tail > ref_tail + cfg.tail_margin:
        checks.append(Check("exponent", False, "steep", line))
        return GateResult.from_checks(NAME, checks, SEVERITY, evidence)
    if r2 < cfg.min_r2:
        checks.append(Check("fit", False, "inconclusive", f"r^2 below {cfg.min_r2}: {line}"))
        return GateResult.from_checks(NAME, checks, SEVERITY, evidence)
    checks.append(Check("exponent", True, "accept", line))
    schedules = lane_schedules(cfg, ctx.case.id, ctx.seed)
    best: dict[str, dict[str, float]] = {}
    for lane in LANES:
        check = _native(cfg, outputs, lane, schedules[lane], evidence, best)
        checks.append(check)
        if not check.ok:
            return GateResult.from_checks(NAME, checks, SEVERITY, evidence)
    checks.append(_scaling(cfg, best, schedules["first"], schedules["small"], evidence))
    return GateResult.from_checks(NAME, checks, SEVERITY, evidence)


def _scaling(
    cfg: Config,
    best: dict[str, dict[str, float]],
    first: list[Entry],
    small: list[Entry],
    evidence: list[str],
) -> Check:
    """Native cost per element from calls of M/4..M (`small`) to one call of E (`first`),
    the same number of elements each: the candidate's growth over the reference's, as an
    exponent over the span, may not pass `margin`. Timed from outside, both sides
    interleaved; what the driver adds (its input, process start) is the same for both and
    only flattens the ratio."""
    mean = sum(n for n, _ in small) / len(small)
    span = math.log(first[0][0] / mean)
    cand = best["first"]["candidate"] / max(best["small"]["candidate"], 1e-4)
    ref = best["first"]["reference"] / max(best["small"]["reference"], 1e-4)
    excess = math.log(max(cand, 1e-9) / max(ref, 1e-9)) / span
    line = (
        f"native per-element growth from {len(small)} calls of mean n={mean:.0f} to one call "
        f"of n={first[0][0]}: candidate x{cand:.2f}, reference x{ref:.2f}, exponent excess "
        f"{excess:.3f} (margin {cfg.margin})"
    )
    evidence.append(line)
    if excess > cfg.margin:
        return Check(
            "native scaling", False, "steep", f"natively steeper than the reference: {line}"
        )
    return Check("native scaling", True, "accept", line)


def _native(
    cfg: Config,
    outputs: Outputs,
    name: str,
    entries: list[Entry],
    evidence: list[str],
    times: dict[str, dict[str, float]],
) -> Check:
    """The count accepted: the same binary, natively, on one of the seed's schedules, must
    give the reference's results and take no more than `tamper_ratio` times the
    reference's time. This bar is the reference's native time alone: nothing the count said
    (its exponent, its margins) moves it. The minima go to `times[name]`."""
    series = outputs.runs["native"]
    timed = [s for s in series.samples if s["phase"] == "timed" and s["lane"] == name]
    schedule = [n for n, _ in entries]
    what = f"{name}: {len(schedule)} calls, {sum(schedule)} elements, up to n={max(schedule)}"
    best = times.setdefault(name, {})
    label = "native" if name == "native" else f"native {name}"
    outs: dict[str, set[bytes]] = {}
    for side in ("reference", "candidate"):
        runs = [s for s in timed if s["side"] == side]
        if side == "candidate" and any(s["status"] == "hang" for s in runs):
            ref = best["reference"]
            # Its limit was the larger of the timeout and tamper_ratio times the
            # reference's best so far (cxxgate/runs/run.py _limit): where it was stopped.
            stopped = max(float(s["wall_seconds"]) for s in runs if s["status"] == "hang")
            why = (
                f"natively ({what}) the candidate ran into its limit at {stopped:.1f} s (the "
                f"larger of {cfg.wall_timeout:g} s and {cfg.tamper_ratio:g}x the reference's "
                f"best; the reference took {ref:.3f} s) though the count grew no steeper than "
                "the reference's: the count was not of what runs natively"
            )
            return Check(label, False, "measurement_tamper", why)
        clean = [s for s in runs if s["status"] == "exited" and s["exit"] == 0]
        if not clean or len(clean) != len(runs):
            # Each round's own status: a reference round past its limit means the machine
            # was too loaded to time this lane (incomplete, never the candidate's fault).
            said = ", ".join(f"{s['status']} exit {s['exit']}" for s in runs) or series.detail
            why = f"native ({what}): no clean timed {side} run ({series.status}: {said})"
            if side == "candidate":
                return Check(label, False, "checksum_mismatch", why)
            return Check(label, False, "incomplete", why, incomplete=True)
        outs[side] = {Path(s["stdout_path"]).read_bytes() for s in clean}
        best[side] = min(float(s["wall_seconds"]) for s in clean)
    if len(outs["reference"]) != 1 or outs["candidate"] != outs["reference"]:
        ref_lines = next(iter(outs["reference"])).splitlines()
        bad = next(
            (
                f"call {i} (n={schedule[i]})"
                for out in outs["candidate"]
                for i, (a, b) in enumerate(itertools.zip_longest(out.splitlines(), ref_lines))
                if a != b and i < len(schedule)
            ),
            "its output",
        )
        why = f"natively ({what}) the results differ from the reference's at {bad}"
        return Check(label, False, "checksum_mismatch", why)
    ratio = best["candidate"] / max(best["reference"], 1e-4)
    line = (
        f"native ({what}; minimum of {cfg.wall_rounds} interleaved rounds): candidate "
        f"{best['candidate']:.3f} s, reference {best['reference']:.3f} s, ratio {ratio:.1f} "
        f"(tamper_ratio {cfg.tamper_ratio})"
    )
    evidence.append(line)
    if ratio > cfg.tamper_ratio:
        why = (
            f"natively the candidate takes far longer than the reference though the count "
            f"grew no steeper: {line}"
        )
        return Check(label, False, "measurement_tamper", why)
    return Check(label, True, "accept", line)


def _pairs(sizes: list[int], counts: list[int]) -> str:
    return " ".join(f"{n}:{c}" for n, c in zip(sizes, counts, strict=False))


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify)
