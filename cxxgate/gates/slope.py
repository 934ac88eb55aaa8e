"""Gate `slope`: a correct patch that grows steeper than the reference is rejected.

The case pins a function signature in a frozen header (outside the writable set). The
harness renders the driver (cxxgate/templates/slope/driver.cpp.j2) from the case's size
table, a seed and a probe name the candidate never sees: it calls the function once per
size on seeded input and prints a checksum of each full result. The driver is a harness
unit, never in the tree, and everything in it has internal linkage: a patch that defines
`main` or names the driver's size table does not link (`build_fail`).

Instructions executed inside the function are counted by valgrind's callgrind (counts do
not depend on the machine's load): collection is toggled on the probe's name and a
profile dumped each time it returns, one per size. The growth exponent is the least-
squares slope of log(instructions) over log(n), for candidate and reference alike; the
candidate is `steep` when its exponent exceeds the reference's by more than the case's
`margin`, and `inconclusive` when its fit is poorer than `min_r2` (a cost that is not a
power of n over the table says nothing either way: never a pass). Wall-clock medians of
interleaved native runs are a second lane, shown in the evidence, never deciding.

| class             | meaning                                                            |
| ----------------- | ------------------------------------------------------------------ |
| build_fail        | the driver does not build with the tree (a `main` of its own, ...)  |
| measurement_tamper| the tree's code (not its comments) names valgrind or callgrind, or  |
|                   | carries the client-request instruction sequence: it could switch   |
|                   | the count off or tell it is measured                               |
| hang              | the profiled run passed its time limit                             |
| checksum_mismatch | a size's result differs from the reference's, or the run died      |
| steep             | exponent above the reference's + margin                            |
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
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pathspec
from pydantic import Field, field_validator
from pygments.lexers import CppLexer

from cxxgate import probe
from cxxgate.cellspec import UNIT_NAME, Unit
from cxxgate.diagnostics import why_failed
from cxxgate.gate import Context, Gate, Outputs, Plan
from cxxgate.gates import hunks, lanes
from cxxgate.result import Check, Finding, GateResult
from cxxgate.run import RunResult, RunSpec
from cxxgate.scan import ScanSpec
from cxxgate.yamlfile import InputError, Strict

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
PROFILE = "cg.out"  # callgrind writes cg.out.1, cg.out.2, ... one per probe return


class Config(Strict):
    header: str  # tree path of the frozen header declaring the function
    function: str  # the pinned function, called as function(const std::vector<uint32_t>&)
    sizes: list[int] = Field(default=[256, 512, 1024, 2048, 4096], min_length=4)
    seed: int = Field(default=1, ge=0, lt=1 << 64)
    margin: float = Field(default=0.25, gt=0)  # exponent excess over the reference allowed
    min_r2: float = Field(default=0.98, gt=0, lt=1)
    envelope: str = "rel"
    timeout: float | None = Field(default=None, gt=0, le=600)  # per profiled run
    wall_rounds: int = Field(default=3, ge=1, le=20)  # the advisory lane's rounds
    wall_timeout: float = Field(default=2.0, gt=0, le=600)  # per native run of that lane

    @field_validator("sizes")
    @classmethod
    def _increasing(cls, sizes: list[int]) -> list[int]:
        if any(b <= a for a, b in itertools.pairwise(sizes)) or sizes[0] < 2:
            msg = f"sizes must be increasing and at least 2, got {sizes}"
            raise ValueError(msg)
        return sizes

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
    version = subprocess.run(
        [path, "--version"], capture_output=True, text=True, check=False, timeout=30
    ).stdout.strip()
    return path, version


def probe_name(cfg: Config, case_id: str) -> str:
    """A name of the harness's, from the seed: a patch cannot define or call it."""
    digest = hashlib.sha256(f"{case_id}:{cfg.seed}".encode()).hexdigest()[:12]
    return f"cxxgate_probe_{digest}"


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
    runs = {
        "wall": RunSpec(
            cell_key=candidate.key,
            label=f"{NAME} wall series",
            env=env.run_env,
            timeout=cfg.wall_timeout,
            output_cap=limits.output_bytes,
            caps=limits.caps(env.flags),
            reference=reference.key,
            warmup=1,
            rounds=cfg.wall_rounds,
        )
    }
    tool = valgrind()
    if tool is not None:
        name = probe_name(cfg, ctx.case.id)
        wrapper = (
            tool[0],
            "--tool=callgrind",
            # Two patterns: callgrind keeps one setting per pattern text.
            f"--toggle-collect={name}(*",
            f"--dump-after=*{name}*",
            f"--callgrind-out-file={PROFILE}",
            "--vgdb=no",
            "-q",
        )
        for side, cell in (("profile", candidate), ("reference_profile", reference)):
            runs[side] = RunSpec(
                cell_key=cell.key,
                label=f"{NAME} callgrind",
                # valgrind's identity enters the run's key through its environment; its
                # temporary files go to the work folder (the sandbox's /tmp is not the run's).
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


def fit(sizes: list[int], counts: list[int]) -> tuple[float, float]:
    """Least-squares slope of log(count) over log(n), and its r^2."""
    x = [math.log(n) for n in sizes]
    y = [math.log(c) for c in counts]
    slope = statistics.linear_regression(x, y).slope
    if len(set(y)) == 1:
        return slope, 1.0  # a flat line fits exactly
    return slope, statistics.correlation(x, y) ** 2


_CHECKSUM = re.compile(r"^n=(\d+) checksum=([0-9a-f]{16})$", re.M)
_TOTALS = re.compile(r"^(?:totals|summary): (\d+)", re.M)


def checksums(run: RunResult) -> dict[int, str]:
    return {int(n): c for n, c in _CHECKSUM.findall(run.stdout.decode(errors="replace"))}


def profile_counts(run: RunResult) -> list[int] | None:
    """Instructions per dump, in dump order; None when a dump has no totals line."""
    if not run.kept:
        return None
    dumps = sorted(
        (p for p in Path(run.kept).glob(f"{PROFILE}.*") if p.suffix[1:].isdigit()),
        key=lambda p: int(p.suffix[1:]),
    )
    counts = []
    for path in dumps:
        m = _TOTALS.search(path.read_text(errors="replace"))
        if m is None:
            return None
        counts.append(int(m[1]))
    return counts


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
    ref_run, run = outputs.runs["reference_profile"], outputs.runs["profile"]
    problem = lanes.run_problem(ref_run, 0)
    ref_counts = profile_counts(ref_run)
    want = checksums(ref_run)
    if (
        problem
        or ref_counts is None
        or len(ref_counts) != len(cfg.sizes)
        or len(want) != len(cfg.sizes)
    ):
        why = problem or f"{len(ref_counts or [])} profiles for {len(cfg.sizes)} sizes"
        return _incomplete(f"reference under callgrind: {why}")
    evidence = [f"reference instructions: {_pairs(cfg.sizes, ref_counts)}"]
    wall = _wall_lane(outputs.runs["wall"])
    evidence.append(wall)
    if run.status == "hang":
        check = Check("profile", False, "hang", "killed at the time limit under callgrind")
        return GateResult.from_checks(NAME, [check], SEVERITY, evidence)
    got = checksums(run)
    wrong = [n for n in cfg.sizes if got.get(n) != want[n]]
    problem = lanes.run_problem(run, 0)
    if problem or wrong:
        detail = problem or (
            f"results differ from the reference at n={', '.join(map(str, wrong))} "
            f"({len(cfg.sizes) - len(wrong)}/{len(cfg.sizes)} sizes agree)"
        )
        check = Check("checksums", False, "checksum_mismatch", detail)
        return GateResult.from_checks(NAME, [check], SEVERITY, evidence)
    checks = [Check("checksums", True, "accept", f"{len(cfg.sizes)} sizes agree")]
    counts = profile_counts(run)
    if counts is None or len(counts) != len(cfg.sizes) or min(counts) <= 0:
        many = "none" if counts is None else str(len(counts))
        detail = f"{many} callgrind profiles with counts for {len(cfg.sizes)} sizes"
        checks.append(Check("fit", False, "inconclusive", detail))
        return GateResult.from_checks(NAME, checks, SEVERITY, evidence)
    evidence.append(f"candidate instructions: {_pairs(cfg.sizes, counts)}")
    ref_slope, ref_r2 = fit(cfg.sizes, ref_counts)
    slope, r2 = fit(cfg.sizes, counts)
    line = (
        f"exponent {slope:.3f} (r^2 {r2:.4f}), reference {ref_slope:.3f} (r^2 {ref_r2:.4f}), "
        f"margin {cfg.margin}"
    )
    evidence.append(line)
    if ref_r2 < cfg.min_r2:
        return _incomplete(f"the reference's fit is below min_r2 {cfg.min_r2}: {line}")
    if r2 < cfg.min_r2:
        checks.append(Check("fit", False, "inconclusive", f"r^2 below {cfg.min_r2}: {line}"))
    elif slope > ref_slope + cfg.margin:
        checks.append(Check("exponent", False, "steep", line))
    else:
        checks.append(Check("exponent", True, "accept", f"{line}; {wall}"))
    return GateResult.from_checks(NAME, checks, SEVERITY, evidence)


def _pairs(sizes: list[int], counts: list[int]) -> str:
    return " ".join(f"{n}:{c}" for n, c in zip(sizes, counts, strict=False))


def _wall_lane(series: RunResult) -> str:
    """Advisory: median wall times of the interleaved native runs."""
    timed = [s for s in series.samples if s["phase"] == "timed" and s["status"] == "exited"]
    by_side = {
        side: [float(s["wall_seconds"]) for s in timed if s["side"] == side]
        for side in ("candidate", "reference")
    }
    if not by_side["candidate"] or not by_side["reference"]:
        return f"wall (advisory): no timed pair ({series.status})"
    cand = statistics.median(by_side["candidate"])
    ref = statistics.median(by_side["reference"])
    ratio = cand / ref if ref > 0 else float("inf")
    return (
        f"wall (advisory): candidate median {cand * 1000:.1f} ms, reference "
        f"{ref * 1000:.1f} ms, ratio {ratio:.2f}"
    )


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify, order=80)
