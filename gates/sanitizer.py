"""Gate `sanitizer`: a matching print is one sample; run it twice and under ASan/UBSan.

Each program (a grader-owned driver linked with the case's sources) is built three ways
from the same sources: functional (`dbg`: warnings are errors), perturbed (`dbg_pattern`:
stack variables pattern-filled, heap blocks filled by MALLOC_PERTURB_) and sanitized
(`asan`: AddressSanitizer + UndefinedBehaviorSanitizer, debug info, frame pointers; halt
on the first error, leak detection on unless the case opts out with a reason). Three
bits, kept side by side in the result:

- functional: run 1 (functional build, LC_ALL=C) matches the golden stdout and exit;
- twin: run 2 (perturbed build and heap, same argv) matches run 1 byte for byte. An
  identical twin rarely sees an uninitialised read; a perturbed one sees it every time;
- sanitizer: the sanitized run exits as expected with no sanitizer report on stderr. Its
  stdout is ignored (a crash may have flushed the golden line first).

Classes, most severe first:

| class               | meaning                                                        |
| ------------------- | -------------------------------------------------------------- |
| build_fail          | a build failed (no behaviour bit is scored)                    |
| hang                | a run passed its time limit                                    |
| output_overflow     | a run passed its output cap                                    |
| functional_mismatch | run 1's stdout or exit is not the golden one                   |
| sanitizer_fault     | the sanitized run reported (summary: kind and top frame)       |
| twin_drift          | run 2 printed or exited differently from run 1                 |
| accept              | all three bits set                                             |
"""

from __future__ import annotations

from pydantic import Field, model_validator

from cxxgate.api import (
    Check,
    Context,
    Expected,
    Gate,
    GateResult,
    Outputs,
    Plan,
    Program,
    RunResult,
    Strict,
    program,
    why_failed,
)
from cxxgate.gates.shared import lanes

NAME = "sanitizer"
SEVERITY = (
    "build_fail",
    "hang",
    "output_overflow",
    "functional_mismatch",
    "sanitizer_fault",
    "twin_drift",
)
LANES = ("functional", "perturbed", "sanitized")


class Leaks(Strict):
    detect: bool = True
    reason: str = ""  # required to turn detection off: the opt-out must say why

    @model_validator(mode="after")
    def _reasoned(self) -> Leaks:
        if not self.detect and len(self.reason.strip()) < 10:
            msg = "detect: false needs a 'reason' saying why this case may leak"
            raise ValueError(msg)
        return self


class Config(Strict):
    programs: list[Program] = Field(min_length=1)
    functional: str = "dbg"
    perturbed: str = "dbg_pattern"
    sanitized: str = "asan"
    leaks: Leaks = Leaks()


def plan(ctx: Context) -> Plan:
    cfg: Config = ctx.case.gate_config(NAME)
    out = Plan()
    envs = {lane: ctx.envelope(getattr(cfg, lane), f"gates.{NAME}.{lane}") for lane in LANES}
    for i, prog in enumerate(cfg.programs):
        key = f"gates.{NAME}.programs[{i}]"
        program.check(ctx, prog, key, need_stdout=True)
        for lane, env in envs.items():
            cell = program.cell(ctx, prog, key, env, f"{NAME} {lane} {prog.name}")
            run_env = env.run_env
            if lane == "sanitized" and not cfg.leaks.detect:
                run_env = _without_leaks(run_env)
            run = program.run(ctx, cell, prog, key, run_env, f"{NAME} {lane} run {prog.name}")
            if lane == "functional":
                # Only the functional run is compared with the expected stdout.
                program.add(ctx, out, f"{lane}{i}", prog, cell, run)
            else:
                out.cells[f"{lane}{i}"] = cell
                out.runs[f"{lane}{i}"] = run
    return out


def _without_leaks(env: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    # ASan reads its options left to right, so an appended setting wins.
    found = dict(env)
    found["ASAN_OPTIONS"] = ":".join(x for x in (found.get("ASAN_OPTIONS"), "detect_leaks=0") if x)
    return tuple(sorted(found.items()))


def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:
    cfg: Config = ctx.case.gate_config(NAME)
    checks: list[Check] = []
    evidence: list[str] = []
    for i, prog in enumerate(cfg.programs):
        key = f"gates.{NAME}.programs[{i}]"
        mine, line = _program(ctx, prog, key, i, outputs)
        checks += program.tagged(prog, key, mine)
        evidence.append(line)
    return GateResult.from_checks(NAME, checks, SEVERITY, evidence)


def _program(
    ctx: Context, prog: Program, key: str, i: int, outputs: Outputs
) -> tuple[list[Check], str]:
    """One program's checks (its build, or its three bits) and its evidence line."""
    cells = {lane: outputs.cells[f"{lane}{i}"] for lane in LANES}
    runs = {lane: outputs.runs[f"{lane}{i}"] for lane in LANES}
    missing = [lane for lane, c in cells.items() if c.status in lanes.MISSING]
    if missing:
        c = cells[missing[0]]
        detail = f"{missing[0]} build: {c.status}: {c.detail}"
        check = Check(f"build {prog.name}", False, "incomplete", detail, incomplete=True)
        return [check], f"{prog.name}: {missing[0]} build {c.status}"
    broken = [lane for lane, c in cells.items() if c.status != "ok"]
    if broken:
        c = cells[broken[0]]
        detail = f"{broken[0]} build ({c.envelope}): {why_failed(c)}"
        check = Check(f"build {prog.name}", False, "build_fail", detail)
        return [check], f"{prog.name}: bits not scored: {', '.join(broken)} build failed"
    want = program.expected(ctx, prog, key, outputs, f"functional{i}")
    bits = [
        _functional(prog, runs["functional"], want),
        _twin(prog, runs["functional"], runs["perturbed"]),
        _sanitized(prog, runs["sanitized"], cells["sanitized"].tree_root),
    ]
    shown = " ".join(
        f"{lane}={'pass' if b.ok else 'fail'}"
        for lane, b in zip(("functional", "twin", "sanitizer"), bits, strict=True)
    )
    return bits, f"{prog.name}: {shown}"


def _runaway(name: str, run: RunResult) -> Check | None:
    if run.status == "hang":
        return Check(name, False, "hang", "killed at the time limit")
    if run.status == "output_overflow":
        return Check(name, False, "output_overflow", "killed at the output cap")
    return None


def _functional(prog: Program, run: RunResult, want: Expected) -> Check:
    name = f"functional {prog.name}"
    if (stop := _runaway(name, run)) is not None:
        return stop
    if want.problem:
        return program.undecided(name, want)
    problem = program.run_problem(run, prog.exit)
    if problem is not None:
        return Check(name, False, "functional_mismatch", f"run 1: {problem}")
    problem = program.stdout_problem(run.stdout, want)
    if problem is not None:
        return Check(name, False, "functional_mismatch", f"run 1 {problem}")
    return Check(name, True, "accept", f"run 1 matches {want.shown} and exit")


def _twin(prog: Program, first: RunResult, second: RunResult) -> Check:
    name = f"twin {prog.name}"
    if (stop := _runaway(name, second)) is not None:
        return stop
    if (first.status, first.exit, first.signal) != (second.status, second.exit, second.signal):
        what = f"run 1 {first.status} {first.exit}, run 2 {second.status} {second.exit}"
        return Check(name, False, "twin_drift", f"the perturbed twin ended differently: {what}")
    if first.stdout != second.stdout:
        return Check(
            name,
            False,
            "twin_drift",
            f"the perturbed twin printed {program.excerpt(second.stdout)}, "
            f"run 1 {program.excerpt(first.stdout)}",
        )
    return Check(name, True, "accept", "the perturbed twin printed the same bytes")


def _sanitized(prog: Program, run: RunResult, tree_root: str) -> Check:
    name = f"sanitizer {prog.name}"
    if (stop := _runaway(name, run)) is not None:
        return stop
    report = lanes.sanitizer_report(run.stderr, tree_root)
    if report is not None:
        return Check(name, False, "sanitizer_fault", report.brief())
    problem = program.run_problem(run, prog.exit)
    if problem is not None:
        return Check(name, False, "sanitizer_fault", f"no report, but {problem}")
    return Check(name, True, "accept", "quiet under ASan+UBSan")


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify)
