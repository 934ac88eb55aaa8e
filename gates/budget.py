"""Gate `budget`: a resource contract; same stdout is not the same program.

A contract per case: a program (cxxgate/contract/program.py: units linked with the case's sources,
argv and stdin in the case, so a candidate cannot shrink the workload, the expected stdout
and exit status), warm-up and timed rounds, and caps on peak RSS
and wall time. Caps are relative by default, because absolute figures do not survive a
noisy or different machine: the reference build is measured in the same task, rounds
interleaved (reference, candidate, reference, ...), and the candidate's median must stay
within `relative` x the reference's median (default: RSS 1.25x, wall 2x). An `absolute`
cap is in KiB for RSS (Linux ru_maxrss units) and seconds for wall.

Figures come from the meter launcher (templates/budget/meter.cpp): wait4 on the program
alone, so peak RSS is the program's own and not the harness's (see cxxgate/runs/run.py).
Classes, most severe first:

| class           | meaning                                                          |
| --------------- | ---------------------------------------------------------------- |
| build_fail      | the program does not build in the contract's envelope            |
| hang            | a run passed its time limit (the series stops there)             |
| output_overflow | a run passed its output cap                                      |
| exit_mismatch   | a run exited with another status, or died                        |
| stray_process   | a run left a process behind after it ended                       |
| unstable_stdout | the runs did not all print the same bytes                        |
| stdout_mismatch | they agree, but not with the golden stdout                       |
| over_rss        | median peak RSS above the cap                                    |
| over_wall       | median wall time above the cap                                   |
| accept          | within the contract                                              |
"""

from __future__ import annotations

import hashlib
import statistics
from typing import Any

from pydantic import Field, model_validator

from cxxgate.api import (
    CellSpec,
    Check,
    Context,
    Gate,
    GateResult,
    Outputs,
    Plan,
    Program,
    RunSpec,
    Strict,
    Unit,
    probe,
    program,
    why_failed,
)
from cxxgate.gates.shared import lanes

NAME = "budget"
SEVERITY = (
    "build_fail",
    "hang",
    "output_overflow",
    "exit_mismatch",
    "stray_process",
    "unstable_stdout",
    "stdout_mismatch",
    "over_rss",
    "over_wall",
)
METER = "budget/meter.cpp"


class Cap(Strict):
    relative: float | None = Field(default=None, gt=1.0)  # x the reference's median
    absolute: float | None = Field(default=None, gt=0)  # KiB (rss) or seconds (wall)

    @model_validator(mode="after")
    def _one(self) -> Cap:
        if (self.relative is None) == (self.absolute is None):
            msg = "give exactly one of 'relative' (x reference) or 'absolute'"
            raise ValueError(msg)
        return self


class Caps(Strict):
    rss: Cap = Cap(relative=1.25)
    wall: Cap = Cap(relative=2.0)


class Config(Strict):
    program: Program
    envelope: str = "rel"
    warmup: int = Field(default=1, ge=0, le=10)
    runs: int = Field(default=5, ge=1, le=50)
    timeout: float | None = Field(default=None, gt=0, le=600)  # per run; default limits
    memory_mib: int = Field(default=2048, ge=0)  # address-space limit on the program
    caps: Caps = Caps()


def plan(ctx: Context) -> Plan:
    cfg: Config = ctx.case.gate_config(NAME)
    key = f"gates.{NAME}"
    prog = cfg.program
    program.check(ctx, prog, f"{key}.program", need_stdout=True)
    env = ctx.envelope(cfg.envelope, f"{key}.envelope")
    label = f"{NAME} {prog.name}"
    candidate = program.cell(ctx, prog, f"{key}.program", env, label)
    # `stdout_of: reference` needs no run of its own: the series runs the reference.
    reference = program.cell(ctx, prog, f"{key}.program", env, label, ctx.reference_tree_key)
    # The meter does not depend on the tree; keying it on the reference tree builds it
    # once per case (it must hang off some tree, and that one always exists).
    meter = CellSpec(
        kind="exe",
        tree_key=ctx.reference_tree_key,
        units=(Unit("meter.cpp", probe.render(METER)),),
        tree_sources=(),
        include_dirs=(),
        envelope=ctx.envelope("meter", f"{key} (the meter launcher's envelope)"),
        compile_seconds=ctx.case.spec.limits.compile_seconds,
        label=f"{NAME} meter",
    )
    limits = ctx.case.spec.limits
    series = RunSpec(
        cell_key=candidate.key,
        args=tuple(prog.args),
        stdin=program.stdin(ctx, prog, f"{key}.program"),
        env=env.run_env,
        timeout=cfg.timeout or limits.run_seconds,
        output_cap=limits.output_bytes,
        # The meter's own `memory_mib` limit sits under the case's cap: the tighter holds.
        caps=limits.caps(env.flags),
        label=f"{NAME} series {prog.name}",
        meter=meter.key,
        memory_mib=cfg.memory_mib,
        reference=reference.key,
        warmup=cfg.warmup,
        rounds=cfg.runs,
    )
    return Plan(
        cells={"candidate": candidate, "reference": reference, "meter": meter},
        runs={"series": series},
    )


def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:
    cfg: Config = ctx.case.gate_config(NAME)
    prog = cfg.program
    for name in ("meter", "reference", "candidate"):
        cell = outputs.cells[name]
        if cell.status in lanes.MISSING or (name != "candidate" and cell.status != "ok"):
            why = f"{name} cell: {cell.status}: {cell.detail or why_failed(cell)}"
            return GateResult.from_checks(
                NAME, [Check(name, False, "incomplete", why, incomplete=True)], SEVERITY, []
            )
    cand_cell = outputs.cells["candidate"]
    if cand_cell.status != "ok":
        check = Check(prog.name, False, "build_fail", why_failed(cand_cell))
        return _result(prog, [check], [])
    series = outputs.runs["series"]
    samples = series.samples
    evidence = [_sample_line(i, s) for i, s in enumerate(samples)]
    cand = [s for s in samples if s["side"] == "candidate"]
    ref = [s for s in samples if s["side"] == "reference"]
    want_sha, shown = _want(ctx, prog, ref)
    if want_sha is None:
        why = f"{shown}: the reference's runs in this series did not all print the same bytes"
        return _result(prog, [Check("reference", False, "incomplete", why, incomplete=True)], [])
    checks = _contract(prog, cand, want_sha, shown)
    ref_problem = _reference_problem(prog, ref, want_sha, cfg)
    if ref_problem is not None:
        checks.append(Check("reference", False, "incomplete", ref_problem, incomplete=True))
    elif all(c.ok for c in checks):
        checks += _caps(cfg, cand, ref, evidence)
    return _result(prog, checks, evidence)


def _result(prog: Program, checks: list[Check], evidence: list[str]) -> GateResult:
    checks = program.tagged(prog, f"gates.{NAME}.program", checks)
    return GateResult.from_checks(NAME, checks, SEVERITY, evidence)


def _want(ctx: Context, prog: Program, ref: list[dict[str, Any]]) -> tuple[str | None, str]:
    """The sha of the stdout the contract wants, and how messages name it. The reference's
    own stdout comes from its runs in this series (they must agree)."""
    if prog.stdout_of == "reference":
        shas = {s["stdout_sha"] for s in ref}
        return (shas.pop() if len(shas) == 1 else None), "the reference's stdout"
    want = program.expected(ctx, prog, f"gates.{NAME}.program", Outputs({}, {}), "")
    return hashlib.sha256(want.stdout or b"").hexdigest(), want.shown


def _contract(prog: Program, cand: list[dict[str, Any]], want_sha: str, shown: str) -> list[Check]:
    if not cand:
        return [Check("runs", False, "incomplete", "no candidate run was made", incomplete=True)]
    for s in cand:
        if s["status"] in {"hang", "output_overflow"}:
            what = "the time limit" if s["status"] == "hang" else "the output cap"
            return [Check(f"{s['phase']} run", False, s["status"], f"killed at {what}")]
    checks: list[Check] = []
    bad_exit = [s for s in cand if s["status"] != "exited" or s["exit"] != prog.exit]
    # The program is linked with the harness entry: an exit that skipped the end of its
    # main (a static initialiser calling _exit) is not the exit the contract asks for.
    early = [s for s in cand if s.get("returned") is False]
    if bad_exit or early:
        failed = bad_exit or early
        s = failed[0]
        how = f"signal {s['signal']}" if s["signal"] else f"exit {s['exit']}"
        if not bad_exit:
            how += " before main returned"
        detail = f"{len(failed)}/{len(cand)} runs ended with {how}, expected exit {prog.exit}"
        checks.append(Check("exit", False, "exit_mismatch", detail))
    else:
        checks.append(Check("exit", True, "accept", f"{len(cand)} runs exited {prog.exit}"))
    stray = [s for s in cand if s["stray_processes"]]
    if stray:
        detail = f"{len(stray)}/{len(cand)} runs left a process behind (killed by the harness)"
        checks.append(Check("processes", False, "stray_process", detail))
    shas = {s["stdout_sha"] for s in cand}
    if len(shas) > 1:
        detail = f"{len(shas)} different stdouts over {len(cand)} runs with the same input"
        checks.append(Check("stdout", False, "unstable_stdout", detail))
    elif shas != {want_sha}:
        detail = f"stdout sha {next(iter(shas))[:12]}, {shown} is {want_sha[:12]}"
        checks.append(Check("stdout", False, "stdout_mismatch", detail))
    else:
        checks.append(Check("stdout", True, "accept", f"{shown} on all {len(cand)} runs"))
    return checks


def _reference_problem(
    prog: Program, ref: list[dict[str, Any]], want_sha: str, cfg: Config
) -> str | None:
    """The yardstick must itself be within its contract, or no relative cap means much."""
    relative = cfg.caps.rss.relative is not None or cfg.caps.wall.relative is not None
    if not ref:
        return "no reference run was made" if relative else None
    for s in ref:
        if (
            s["status"] != "exited"
            or s["exit"] != prog.exit
            or s["stdout_sha"] != want_sha
            or s.get("returned") is False
        ):
            return f"the reference run ended {s['status']} exit {s['exit']} in this series"
        if not s["metered"]:
            return "the meter did not report for a reference run"
    return None


def _caps(
    cfg: Config, cand: list[dict[str, Any]], ref: list[dict[str, Any]], evidence: list[str]
) -> list[Check]:
    timed_c = [s for s in cand if s["phase"] == "timed"]
    timed_r = [s for s in ref if s["phase"] == "timed"]
    if not all(s["metered"] for s in timed_c):
        return [Check("meter", False, "incomplete", "the meter did not report", incomplete=True)]
    checks = []
    for what, field, klass, unit in (
        ("rss", "max_rss_kib", "over_rss", "KiB"),
        ("wall", "wall_seconds", "over_wall", "s"),
    ):
        cap: Cap = getattr(cfg.caps, what)
        got = statistics.median(float(s[field]) for s in timed_c)
        if cap.relative is not None:
            base = statistics.median(float(s[field]) for s in timed_r)
            limit = base * cap.relative
            rule = f"{cap.relative}x reference median {_fmt(base, unit)}"
        else:
            assert cap.absolute is not None
            limit = cap.absolute
            rule = f"absolute {_fmt(limit, unit)}"
        line = f"{what}: candidate median {_fmt(got, unit)}, cap {_fmt(limit, unit)} ({rule})"
        evidence.append(line)
        ok = got <= limit
        checks.append(Check(f"cap {what}", ok, "accept" if ok else klass, line))
    return checks


def _fmt(value: float, unit: str) -> str:
    return f"{value:.0f} KiB" if unit == "KiB" else f"{value * 1000:.1f} ms"


def _sample_line(i: int, s: dict[str, Any]) -> str:
    return (
        f"sample {i} {s['side']} {s['phase']}: {s['status']} exit={s['exit']} "
        f"signal={s['signal']} wall={s['wall_seconds']}s cpu={s['cpu_seconds']}s "
        f"rss={s['max_rss_kib']}KiB stdout={s['stdout_sha'][:12]} stray={s['stray_processes']} "
        f"metered={s['metered']}"
    )


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify)
