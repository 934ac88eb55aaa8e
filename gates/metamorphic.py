"""Gate `metamorphic`: snapshots are a floor; relations over inputs drawn from the batch's seed.

The case ships a relation driver (a grader-owned unit with `main`, linked with the case's
sources) and snapshot goldens, both beside the tree. One binary serves both stages, chosen
by its stdin:

- golden stage: one run per golden, stdin `golden\\n` + the golden's input; the merged
  result the driver reports must be the golden's output, line for line;
- relation stage: one run, stdin `relations <seed> <trials>\\n`. The seed is the batch's
  (cxxgate/library/settings.py: `seed=N`, else `<out>/seed`), never in a case or a prompt, and
  enters only this run's key: a new seed reruns this run, no compile. The trial count is
  the case's. The driver draws trial t's input, its size included, from (seed, t): sizes
  must span scales (the intervals driver draws 0..3, tens, hundreds and a few thousand
  elements, a quarter of the trials each), or a patch that special-cases small inputs
  (sorts only a dozen elements or fewer) passes every relation on small draws.

The driver reports through the harness's report channel (cxxgate/runs/run.py RunSpec.report,
templates/metamorphic/report.cpp), never stdout: every line carries a per-run
nonce, and the harness keeps only those, so nothing the candidate prints reads as a
verdict. The line protocol (`parse_report`):

    out <text>                          golden stage: one line of the result
    fail <relation> <trial> <text>      a relation broke; text: the counterexample
    held <relation> <checked>           a relation held on <checked> trials: must be
                                        every trial the harness sent, for every relation
    done <stage line>                   the stage ran to its end; the line is the stage
                                        as the driver parsed it (numbers printed back
                                        from the values it ran with), so a candidate that
                                        swapped the stage or bent the parse (its own
                                        strtoull: fewer trials, another seed) is caught

Classes, most severe first:

| class              | meaning                                                         |
| ------------------ | --------------------------------------------------------------- |
| build_fail         | the driver does not build with the patched sources              |
| crash              | a run died, exited wrong, ended before the driver's main        |
|                    | returned (the harness entry), or its report stopped short       |
| hang               | a run passed its time limit                                     |
| snapshot_mismatch  | a golden's result differs from its snapshot                     |
| relation:<name>    | a relation broke: its name, trial and counterexample in the     |
|                    | summary, the seed in front (`seed N: ...`)                      |
| accept             | every snapshot matched and every relation held on every trial   |

The gate result's `summary` starts with `seed N, T trials` (so the verdict row, which
keeps each gate's summary, records the seed used), and its evidence has `seed=N
trials=T`. `doit grade seed=N` replays a relation failure exactly: the driver draws trial
t's input from (seed, t) alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from pydantic import Field, field_validator

from cxxgate.api import (
    VACUOUS,
    CellResult,
    Check,
    Context,
    Gate,
    GateResult,
    InputError,
    Outputs,
    Plan,
    RunResult,
    RunSpec,
    Strict,
    Unit,
    codehash,
    why_failed,
)
from cxxgate.gates.shared import lanes

NAME = "metamorphic"
SEVERITY = ("build_fail", "crash", "hang", "snapshot_mismatch", "relation")
RELATION_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
REPORT_UNIT = Unit(
    "cxxgate_report.cpp", (codehash.TEMPLATES / "metamorphic" / "report.cpp").read_text()
)


class Golden(Strict):
    input: str  # fed to the driver after `golden\n`
    output: str  # the lines the driver must report (`out <line>`), in order


class Config(Strict):
    driver: str  # the relation driver: a unit with main, beside the tree
    relations: list[str] = Field(min_length=1)  # what the driver checks, in its order
    trials: int = Field(default=200, ge=1, le=100_000)
    goldens: list[Golden] = Field(min_length=1)
    envelope: str | None = None  # default: the case's

    @field_validator("relations")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        for name in v:
            if not RELATION_NAME.fullmatch(name):
                msg = f"relation names are lower-case words ([a-z][a-z0-9_]*), got {name!r}"
                raise ValueError(msg)
        if len(set(v)) != len(v):
            msg = f"a relation is named twice: {v}"
            raise ValueError(msg)
        return v


def plan(ctx: Context) -> Plan:
    cfg: Config = ctx.case.gate_config(NAME)
    _check_expected_relations(ctx, cfg)
    env = ctx.gate_envelope(NAME, cfg.envelope)
    unit = lanes.unit_of(ctx, cfg.driver, f"gates.{NAME}.driver")
    cell = replace(
        lanes.program_cell(ctx, ctx.tree_key, unit, env, f"{NAME} driver {cfg.driver}"),
        units=(unit, REPORT_UNIT),
    )
    out = Plan(cells={"driver": cell})
    for i, golden in enumerate(cfg.goldens):
        key = f"gates.{NAME}.goldens[{i}]"
        ctx.case.oracle(golden.output, f"{key}.output")
        stdin = "golden\n" + ctx.case.oracle_text(golden.input, f"{key}.input")
        out.runs[f"golden{i}"] = _run(ctx, cell.key, env.run_env, stdin, f"golden {golden.input}")
    stdin = f"relations {ctx.seed} {cfg.trials}\n"
    out.runs["relations"] = _run(ctx, cell.key, env.run_env, stdin, "relations")
    return out


def _run(
    ctx: Context, cell: str, env: tuple[tuple[str, str], ...], stdin: str, what: str
) -> RunSpec:
    limits = ctx.case.spec.limits
    return RunSpec(
        cell_key=cell,
        stdin=stdin,
        env=env,
        timeout=limits.run_seconds,
        output_cap=limits.output_bytes,
        caps=limits.caps(ctx.gate_envelope(NAME, ctx.case.gate_config(NAME).envelope).flags),
        label=f"{NAME} {what}",
        report=True,
    )


def _check_expected_relations(ctx: Context, cfg: Config) -> None:
    """`relation:<name>` in a shipped patch's expect must name a relation the case declares
    (cxxgate/library/case.py checks only the word before ':')."""
    for i, known in enumerate(ctx.case.spec.patches):
        want = known.expect.gate_classes().get(NAME)
        words = [want] if isinstance(want, str) else want or []
        for word in words:
            kind, _, name = str(word).partition(":")
            if kind == "relation" and name not in cfg.relations:
                msg = (
                    f"{ctx.case.file}: patches[{i}].expect.{NAME}: {word!r} names no relation "
                    f"of gates.{NAME}.relations; one of "
                    f"{[f'relation:{r}' for r in cfg.relations]}"
                )
                raise InputError(msg)


# ---- the driver's report ----------------------------------------------------------------


@dataclass(frozen=True)
class Failure:
    relation: str
    trial: int
    counterexample: str


@dataclass
class Report:
    out: list[str] = field(default_factory=list)
    held: dict[str, int] = field(default_factory=dict)
    fail: Failure | None = None
    done: str | None = None  # the stage line the driver read
    unreadable: list[str] = field(default_factory=list)  # lines outside the protocol


def parse_report(text: str) -> Report:
    """The driver's verdict lines (the harness kept only those that carried the nonce)."""
    rep = Report()
    for line in text.splitlines():
        word, _, rest = line.partition(" ")
        parts = rest.split(" ", 2)
        if word == "out":
            rep.out.append(rest)
        elif word == "fail" and len(parts) >= 2 and parts[1].isdecimal() and rep.fail is None:
            rep.fail = Failure(parts[0], int(parts[1]), parts[2] if len(parts) > 2 else "")
        elif word == "held" and len(parts) == 2 and parts[1].isdecimal():
            rep.held[parts[0]] = int(parts[1])
        elif word == "done" and rest:
            rep.done = rest
        else:
            rep.unreadable.append(line)
    return rep


# ---- classification -----------------------------------------------------------------------


def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:
    cfg: Config = ctx.case.gate_config(NAME)
    cell = outputs.cells["driver"]
    checks: list[Check] = []
    build = _build_check(cell)
    if build is not None:
        checks.append(build)
    else:
        for i, golden in enumerate(cfg.goldens):
            want = ctx.case.oracle_text(golden.output, f"gates.{NAME}.goldens[{i}].output")
            run = outputs.runs[f"golden{i}"]
            checks.append(_golden(golden, run, _stage(plan, f"golden{i}"), want))
        checks.append(_relations(cfg, outputs.runs["relations"], _stage(plan, "relations")))
    evidence = [f"seed={ctx.seed} trials={cfg.trials}"]
    evidence += [f"{c.name}: {'ok' if c.ok else c.klass}: {c.detail}" for c in checks]
    result = GateResult.from_checks(NAME, checks, SEVERITY, evidence)
    if result.klass == "relation":
        broke = next(c for c in checks if c.klass == "relation")
        result = replace(result, klass=f"relation:{broke.name.split(' ', 1)[1]}")
    return replace(result, summary=f"seed {ctx.seed}, {cfg.trials} trials: {result.summary}")


def _stage(plan: Plan, run: str) -> str:
    """The stage line the harness gave a run: what its driver's `done` must echo."""
    return plan.runs[run].stdin.partition("\n")[0]


def _unfinished(name: str, rep: Report, stage: str) -> Check | None:
    if rep.done is None:
        return Check(name, False, "crash", "the driver's report stopped before `done`")
    if rep.done != stage:
        why = f"the driver finished stage {rep.done!r}, not {stage!r}: its stdin was swapped"
        return Check(name, False, "crash", why)
    return None


def _build_check(cell: CellResult) -> Check | None:
    if cell.status in lanes.MISSING:
        why = f"driver build: {cell.status}" + (f": {cell.detail}" if cell.detail else "")
        return Check("build driver", False, "incomplete", why, incomplete=True)
    if cell.status != "ok":
        return Check("build driver", False, "build_fail", why_failed(cell))
    return None


def _ended_badly(name: str, run: RunResult, want_exit: int) -> Check | None:
    """A hang or a crash: the run did not end as a driver ends (its main returned)."""
    if run.status == "hang":
        return Check(name, False, "hang", "killed at the time limit")
    problem = lanes.run_problem(run, want_exit)
    if problem is not None:
        return Check(name, False, "crash", problem)
    return None


def _golden(golden: Golden, run: RunResult, stage: str, want: str) -> Check:
    name = f"snapshot {golden.input}"
    if (bad := _ended_badly(name, run, 0)) is not None:
        return bad
    rep = parse_report(run.report)
    if (bad := _unfinished(name, rep, stage)) is not None:
        return bad
    wanted = [ln.rstrip() for ln in want.splitlines() if ln.strip()]
    if rep.out != wanted:
        return Check(
            name,
            False,
            "snapshot_mismatch",
            f"result {_lines(rep.out)}, snapshot {golden.output} has {_lines(wanted)}",
        )
    return Check(name, True, "accept", f"{len(wanted)} line(s) as in {golden.output}")


def _relations(cfg: Config, run: RunResult, stage: str) -> Check:
    rep = parse_report(run.report)
    if rep.fail is not None:
        fail = rep.fail
        name = f"relation {fail.relation}"
        if fail.relation not in cfg.relations:
            why = f"the driver reported relation {fail.relation!r}, not one the case declares"
            return Check(name, False, VACUOUS, why, incomplete=True)
        # The failure is reported before the driver returns 1; a run that then died says so.
        after = lanes.run_problem(run, 1)
        tail = f" (then: {after})" if after else ""
        detail = f"broke at trial {fail.trial}: {fail.counterexample}{tail}"
        return Check(name, False, "relation", detail)
    name = "relations"
    if (bad := _ended_badly(name, run, 0)) is not None:
        return bad
    if (bad := _unfinished(name, rep, stage)) is not None:
        return bad
    missing = [r for r in cfg.relations if rep.held.get(r, 0) < 1]
    if missing or set(rep.held) - set(cfg.relations):
        why = (
            f"the driver reported relations {sorted(rep.held)} held; "
            f"the case declares {cfg.relations}"
        )
        return Check(name, False, VACUOUS, why, incomplete=True)
    # Every relation runs every trial: a count below the trials the harness sent means the
    # driver ran another stage than the one given (its parse bent by the tree).
    short = {r: rep.held[r] for r in cfg.relations if rep.held[r] != cfg.trials}
    if short:
        why = f"the driver ran {short} trials where the harness asked for {cfg.trials}"
        return Check(name, False, "crash", why)
    counts = ", ".join(f"{r} {rep.held[r]}" for r in cfg.relations)
    return Check(name, True, "accept", f"held on {cfg.trials} trials ({counts} checked)")


def _lines(lines: list[str]) -> str:
    text = " | ".join(lines) or "(nothing)"
    return repr(text if len(text) <= 80 else text[:77] + "...")


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify)
