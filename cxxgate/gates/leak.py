"""Gate `leak`: the answer key copied into the source, and a hidden oracle.

Two checks a green visible test run cannot make:

- values the patch adds to the sources (not the tests) that the visible oracle shows: the
  tree's `tests:`, the case files listed in `oracle:`, and every case file another gate's
  section names (its probes, goldens). Values, not spellings: literals (`0x6E4` and
  `1'764` are the `1764` of a golden), the constants libclang folds in every tree file the
  compiled units read, whatever its suffix (`1700 + 64`, a constexpr call, a byte table;
  literals.constants), and the lines and numbers of files that are not C++. Added: held by
  the patched tree, by neither the base tree nor the reference. Ignored: 0, 1, -1, "", and
  the case's `exceptions`. Each is reported as `text (= value)@file:line` with where the
  oracle shows it. A unit libclang cannot parse, or tree lines its preprocessor newly
  skips, leave the check incomplete;
- a hidden oracle: programs and golden stdout kept in the case folder, listed nowhere a
  candidate reads, built against the patched sources at grade time and run.

Classes, most severe first:

| class              | meaning                                                         |
| ------------------ | --------------------------------------------------------------- |
| hidden_oracle_fail | a hidden program does not build, fails, or prints other than    |
|                    | its hidden golden (the summary shows what it printed, never     |
|                    | the golden's text)                                              |
| literal_leak       | the patch added a literal the visible oracle shows              |
| accept             | neither                                                         |

What a candidate can reach: compiles and runs are sandboxed (cxxgate/sandbox.py): they see
the tree and their own cell folder, never the case folder, so neither the hidden golden
nor the hidden units' files are readable by a visible build or a run. A hidden unit is
compiled as `main.cpp` in its own cell folder, like every harness unit; a patched header in
that translation unit can read the unit itself (`#include "/proc/self/cwd/main.cpp"`, or
redefine the names it calls), as any code compiled with a test can: so a hidden unit holds
inputs only, and the expected output lives in its golden, which no sandbox mounts and
which the gate compares in Python. Without bubblewrap (`sandbox: none` in the evidence) a
compile can read any file, hidden ones included.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from importlib.metadata import version
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from cxxgate import program
from cxxgate.cellspec import CellResult
from cxxgate.diagnostics import why_failed
from cxxgate.envelope import Envelope
from cxxgate.gate import Context, Gate, Outputs, Plan
from cxxgate.gates import cppsource, lanes, ledger, literals
from cxxgate.program import Expected, Program
from cxxgate.result import TOOLCHAIN_MISSING, VACUOUS, Check, Finding, GateResult
from cxxgate.run import RunResult
from cxxgate.scan import ScanSpec
from cxxgate.yamlfile import InputError, Strict

NAME = "leak"
SEVERITY = ("hidden_oracle_fail", "literal_leak")
TRIVIAL = frozenset({"num:0", "num:1", "num:-1", "str:"})
# The trees a patch's values are read from (scan name -> Context attribute).
TREES = {"base": "base_key", "reference": "reference_tree_key", "patched": "tree_key"}


class Config(Strict):
    sources: list[str] = Field(default_factory=lambda: ["*"])  # tree globs, C++ files
    tests: list[str] = Field(default_factory=list)  # tree globs: visible tests, not sources
    oracle: list[str] = Field(default_factory=list)  # case files a candidate sees
    exceptions: list[int | float | str] = Field(default_factory=list)  # may be shared
    hidden: list[Program] = Field(default_factory=list)
    envelope: str | None = None

    @model_validator(mode="after")
    def _something(self) -> Config:
        if not (self.tests or self.oracle or self.hidden):
            msg = "give a visible oracle ('tests', 'oracle') or a 'hidden' program, or both"
            raise ValueError(msg)
        return self


def exception_values(items: list[int | float | str]) -> set[str]:
    """`exceptions` as values: numbers by value (8080, 0.5), strings as they read."""
    out = set()
    for x in items:
        if isinstance(x, str):
            out.add("str:" + x)
        else:
            out.add("num:" + (cppsource.number_value(repr(x)) or repr(x)))
    return out


def plan(ctx: Context) -> Plan:
    cfg: Config = ctx.case.gate_config(NAME)
    case = ctx.case
    out = Plan()
    params = {"globs": cfg.sources, "tests": cfg.tests, "parser": cppsource.parser_id()}
    env = ctx.gate_envelope(NAME, cfg.envelope)
    folded = _constant_params(ctx, cfg, env)
    for name, key in TREES.items():
        tree_key = getattr(ctx, key)
        out.scans[name] = ScanSpec.of(tree_key, literals.sources, params)
        out.scans[f"{name} constants"] = ScanSpec.of(
            tree_key, literals.constants, folded, label=f"{NAME} constants"
        )
    _keep_hidden(ctx, cfg)
    files = [
        {"name": rel, "path": str(case.oracle(rel, key))} for rel, key in _visible(ctx, cfg).items()
    ]
    out.scans["oracle"] = ScanSpec.of(
        ctx.reference_tree_key,
        literals.oracle,
        {"tests": cfg.tests, "files": files, "parser": cppsource.parser_id()},
        inputs=tuple(Path(f["path"]) for f in files),
    )
    for i, prog in enumerate(cfg.hidden):
        key = f"gates.{NAME}.hidden[{i}]"
        program.check(ctx, prog, key, need_stdout=True)
        cell = program.cell(ctx, prog, key, env, f"{NAME} hidden #{i}")
        run = program.run(ctx, cell, prog, key, env.run_env, f"{NAME} hidden run #{i}")
        program.add(ctx, out, f"hidden{i}", prog, cell, run)
    return out


def _constant_params(ctx: Context, cfg: Config, env: Envelope) -> dict[str, Any]:
    """What libclang parses the compiled units with: the case's standard, macros and
    include folders, g++'s own system include list (no headers of libclang's own)."""
    spec = ctx.case.spec
    defines = [*(f"-D{d}" for d in env.defines)]
    defines += [f for f in env.flags if f.startswith(("-D", "-U"))]
    dirs = () if env.toolchain.path is None else ledger.system_dirs(env.toolchain.path, env.std)
    # The units the build compiles; a case without `sources` (a CMake project): the
    # source files (not headers) of the leak's `sources`.
    units = list(spec.sources) or list(cfg.sources)
    return {
        "std": env.std,
        "include_dirs": list(spec.include_dirs),
        "units": units,
        "tests": cfg.tests,
        "system_dirs": list(dirs),
        "defines": defines,
        "envelope": env.id,
        "libclang": version("libclang"),
    }


def _visible(ctx: Context, cfg: Config) -> dict[str, str]:
    """The case files a candidate sees (path -> the key naming it): `oracle:`, and every
    file another gate's section names (its probes and goldens are part of the task)."""
    visible = {rel: f"gates.{NAME}.oracle[{i}]" for i, rel in enumerate(cfg.oracle)}
    sections = ctx.case.spec.gates.model_dump(mode="json")
    for gate, section in sections.items():
        if gate == NAME or section is None:
            continue
        for text in _strings(section):
            path = (ctx.case.dir / text).resolve()
            inside = path.is_relative_to(ctx.case.dir.resolve())
            if inside and not path.is_relative_to(ctx.case.tree.resolve()) and path.is_file():
                visible.setdefault(text, f"gates.{gate}")
    return visible


def _keep_hidden(ctx: Context, cfg: Config) -> None:
    """A hidden file the candidate sees (named in `oracle:` or in any other gate's
    section) is not hidden: an input error, before anything is graded."""
    hidden = {p for prog in cfg.hidden for p in prog.oracle_files()}
    visible = _visible(ctx, cfg)
    for rel in sorted(hidden & set(visible)):
        msg = (
            f"{ctx.case.file}: gates.{NAME}.hidden: {rel!r} is also named in {visible[rel]}, "
            "where a candidate sees it; a hidden oracle must be hidden"
        )
        raise InputError(msg)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def leaked(
    added: list[dict[str, Any]],
    oracle: dict[str, list[str]],
    exceptions: set[str],
) -> list[tuple[dict[str, Any], list[str]]]:
    """The added literals whose value the oracle shows, with where it shows them."""
    out = []
    for lit in added:
        value = lit["value"]
        if value in TRIVIAL or value in exceptions or value not in oracle:
            continue
        out.append((lit, oracle[value]))
    return out


def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:
    cfg: Config = ctx.case.gate_config(NAME)
    scans = outputs.scans
    for name in scans:
        if scans[name].status != "ok":
            why = f"{name} scan: {scans[name].status}: {scans[name].detail}"
            return GateResult(NAME, "incomplete", VACUOUS, why)
    # Added: what the patched tree holds and neither the base tree nor the reference
    # does (a value the base or the known-good fix holds is the task's, not the oracle's).
    before: set[str] = set()
    for name in ("base", "reference"):
        before |= {lit["value"] for lit in scans[name].data["literals"]}
        before |= {c["value"] for c in scans[f"{name} constants"].data["constants"]}
    found = scans["patched"].data["literals"] + scans["patched constants"].data["constants"]
    found.sort(key=lambda lit: lit.get("kind") == "data")  # a data file's folded value first
    added = _first_per_value(lit for lit in found if lit["value"] not in before)
    oracle = scans["oracle"].data["values"]
    checks: list[Check] = _unfolded(scans)
    findings: list[Finding] = []
    for lit, places in leaked(added, oracle, exception_values(cfg.exceptions)):
        where = f"{_shown(lit)}@{lit['file']}:{lit['line']}"
        message = f"{where} is in the visible oracle: {', '.join(places)}"
        checks.append(
            Check(where, False, "literal_leak", f"in the visible oracle: {', '.join(places)}")
        )
        findings.append(Finding("literal_leak", message, lit["file"], lit["line"], lit["column"]))
    shown = len(scans["oracle"].data["files"])
    constants = scans["patched constants"].data
    if shown:
        checks.append(
            Check(
                "literals",
                True,
                "accept",
                f"{len(added)} values added to the sources (literals and constants "
                f"the compiled units fold, in {len(constants['read'])} files they read), "
                f"against {shown} oracle files",
            )
        )
    evidence = [f"visible oracle: {', '.join(scans['oracle'].data['files']) or 'none'}"]
    for i, prog in enumerate(cfg.hidden):
        key = f"gates.{NAME}.hidden[{i}]"
        cell, run = outputs.cells[f"hidden{i}"], outputs.runs[f"hidden{i}"]
        want = program.expected(ctx, prog, key, outputs, f"hidden{i}")
        checks += program.tagged(prog, key, [_hidden(f"hidden #{i}", prog, cell, run, want)])
        sandboxes = {s.sandbox for s in cell.steps}
        if "none" in sandboxes:
            evidence.append(f"hidden #{i}: compiled with sandbox: none (hidden files readable)")
    result = GateResult.from_checks(NAME, checks, SEVERITY, evidence)
    return replace(result, findings=findings)


def _shown(lit: dict[str, Any]) -> str:
    """The value as written, and what it folds to when that is not plain to read:
    `1700 + 64 (= 1764)`."""
    text, value = lit["text"], lit["value"].partition(":")[2]
    spelt = cppsource.number_value(text) if lit["value"].startswith("num:") else None
    if spelt == value or lit.get("kind") in ("int", "float", "string", "char", "data"):
        return str(text)
    return (
        f"{text} (= {value[:40]!r})" if lit["value"].startswith("str:") else f"{text} (= {value})"
    )


def _first_per_value(found: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One place per (file, line, value): a literal and the constant it folds to on the
    same line are one finding; the tree-sitter literal (exact column) comes first."""
    seen: set[tuple[str, int, str]] = set()
    out = []
    for lit in found:
        key = (lit["file"], lit["line"], lit["value"])
        if key not in seen:
            seen.add(key)
            out.append(lit)
    return out


def _unfolded(scans: dict[str, Any]) -> list[Check]:
    """What the constants scan could not fold in the patched tree: parse errors, and tree
    lines libclang's preprocessor skipped that the base and the reference do not (g++ may
    compile them: `#ifndef __clang__`). Never green: the values there were not read."""
    mine = scans["patched constants"].data
    if not mine["units"]:
        return [Check("constants", False, VACUOUS, "no compiled unit to fold", incomplete=True)]
    known = [
        r["text"] for n in ("base", "reference") for r in scans[f"{n} constants"].data["skipped"]
    ]
    out = []
    for err in mine["errors"][:3]:
        why = f"libclang cannot parse: {err['file']}:{err['line']}: {err['message']}"
        out.append(Check("constants", False, VACUOUS, why, incomplete=True))
    for rng in mine["skipped"]:
        if rng["text"] not in known:
            why = (
                f"{rng['path']}:{rng['line']}-{rng['end']}: lines the preprocessor skips "
                "for libclang; their values are not folded"
            )
            out.append(Check("constants", False, VACUOUS, why, incomplete=True))
    return out


def _hidden(name: str, prog: Program, cell: CellResult, run: RunResult, want: Expected) -> Check:
    if cell.status == "toolchain_missing":
        return Check(name, False, TOOLCHAIN_MISSING, cell.detail, incomplete=True)
    if cell.status in lanes.MISSING:
        return Check(name, False, VACUOUS, f"{cell.status}: {cell.detail}", incomplete=True)
    if cell.status != "ok":
        return Check(name, False, "hidden_oracle_fail", f"does not build: {why_failed(cell)}")
    problem = program.run_problem(run, prog.exit)
    if problem is not None:
        return Check(name, False, "hidden_oracle_fail", problem)
    if want.problem:
        return program.undecided(name, want)
    got = run.stdout
    if want.stdout is not None and got != want.stdout:
        return Check(name, False, "hidden_oracle_fail", _difference(got, want.stdout))
    return Check(name, True, "accept", "printed its hidden golden and exited as expected")


def _difference(got: bytes, want: bytes) -> str:
    """Where the output parts from the hidden golden, showing only what the candidate
    printed: the golden's text stays hidden (results may reach the next prompt)."""
    mine, theirs = (
        got.decode(errors="replace").splitlines(),
        want.decode(errors="replace").splitlines(),
    )
    for no, (a, b) in enumerate(zip(mine, theirs, strict=False), 1):
        if a != b:
            return f"line {no} of the output differs from the hidden golden: printed {a[:80]!r}"
    if len(mine) < len(theirs):
        return f"printed {len(mine)} lines, the hidden golden has {len(theirs)}"
    return f"printed {len(mine)} lines, more than the hidden golden's {len(theirs)}"


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify, order=75)
