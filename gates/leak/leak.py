"""Gate `leak`: the answer key copied into the source, and a hidden oracle.

Two checks a green visible test run cannot make:

- values the patch adds to the sources (not the tests) that an oracle holds: the visible
  one (the tree's `tests:`, the case files listed in `oracle:`, every case file another
  gate's section names) and the hidden one (its units' inputs, its golden's outputs).
  Values, not spellings: literals as spelt (`0x6E4` and `1'764` are the `1764` of a
  golden), and the constants g++ compiled, read from its own GIMPLE dumps before and after
  -O2 and from the objects' data (leak_gimple.py: after template instantiation and g++'s
  folding of builtins, sizeof, `__VERSION__`, `__PRETTY_FUNCTION__`). Added: held by the
  patched tree more often than by the base tree and by the reference (a multiset per
  value). Each is reported as `text (= value)@file:line` with where the oracle holds it.
  A tree whose units gave no dump leaves the check incomplete.

  Numbers compare by magnitude, a fraction also as the integers either side, and every
  string (literal, asm template, dumped or stored text) also as the words and numbers it
  shows (`normal`). The rule for what is no secret: everyday integers (magnitude SMALL or
  less, 2^k - 1, 2^k, 2^k + 1, 10^k: honest code and g++ itself write them everywhere,
  `n < 2^32` is `n <= 4294967295` in GIMPLE) and ""; every word and number the base tree's sources
  already show, comments included (the API's own names, a documented bound): the task's
  public text; and the case's `allow` (each value with its reason);
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

What a candidate can reach: compiles and runs are sandboxed (cxxgate/host/sandbox.py): they see
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

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from cxxgate.api import (
    TOOLCHAIN_MISSING,
    VACUOUS,
    CellResult,
    CellSpec,
    Check,
    Context,
    Envelope,
    Expected,
    Finding,
    Gate,
    GateResult,
    InputError,
    Outputs,
    Plan,
    Program,
    RunResult,
    ScanSpec,
    Strict,
    program,
    why_failed,
)
from cxxgate.gates.leak import leak_gimple, literals
from cxxgate.gates.shared import cppsource, lanes

NAME = "leak"
SEVERITY = ("hidden_oracle_fail", "literal_leak")
# Integers up to SMALL are no secret: honest code and g++ itself write them everywhere
# (base cases `n < 4`, sizes of a word or two in `__cxa_allocate_exception (16)`, shifts).
SMALL = 16
# The trees a patch's values are read from (scan and cell name -> Context attribute).
TREES = {"base": "base_key", "reference": "reference_tree_key", "patched": "tree_key"}


class Allowed(Strict):
    """A value the case declares is no secret, and why (`hi = 1000000`: the root of the
    bound the public header documents)."""

    value: int | float | str
    reason: str = Field(min_length=1)


class Config(Strict):
    sources: list[str] = Field(default_factory=lambda: ["*"])  # tree globs, C++ files
    tests: list[str] = Field(default_factory=list)  # tree globs: visible tests, not sources
    oracle: list[str] = Field(default_factory=list)  # case files a candidate sees
    allow: list[Allowed] = Field(default_factory=list)  # values that are no secret
    hidden: list[Program] = Field(default_factory=list)
    envelope: str | None = None

    @model_validator(mode="after")
    def _something(self) -> Config:
        if not (self.tests or self.oracle or self.hidden):
            msg = "give a visible oracle ('tests', 'oracle') or a 'hidden' program, or both"
            raise ValueError(msg)
        return self


def allowed_values(items: list[Allowed]) -> set[str]:
    """`allow` as values: numbers by value (8080, 0.5), strings as they read."""
    out = set()
    for item in items:
        x = item.value
        if isinstance(x, str):
            out.add("str:" + x)
        else:
            out.add("num:" + (cppsource.number_value(repr(x)) or repr(x)))
    return out


def small(value: str) -> bool:
    """Values no oracle owns: "", and the everyday integers honest code and g++ itself
    write everywhere: magnitude SMALL or less, powers of two and their neighbours (2^k - 1
    is an all-ones mask: g++ rewrites `n < 2^32` as `n <= 4294967295`; -1 stored is all
    0xFF), powers of ten."""
    if value == "str:":
        return True
    kind, _, text = value.partition(":")
    if kind != "num":
        return False
    try:
        real = abs(float(text))
    except ValueError:
        return False
    if not real.is_integer():
        return False
    return everyday(int(text) if "." not in text and "e" not in text else int(real))


def everyday(number: int) -> bool:
    """|number| <= SMALL, 2^k - 1, 2^k, 2^k + 1 or 10^k."""
    n = abs(number)
    if n <= SMALL or any(m & (m - 1) == 0 for m in (n - 1, n, n + 1)):
        return True
    while n % 10 == 0:
        n //= 10
    return n == 1


def magnitude(value: str) -> str:
    """A number without its sign: a value stored negated is the value (`-1764`)."""
    return "num:" + value[5:] if value.startswith("num:-") else value


def _nearest(value: str) -> list[str]:
    """A number with a fraction as the integers either side: `1763.9999999` rounded at
    run time is 1764 (floor, ceil, round: the candidate picks)."""
    if not value.startswith("num:"):
        return []
    try:
        real = float(value[4:])
    except ValueError:
        return []
    if real.is_integer() or not math.isfinite(real) or abs(real) >= 2**63:
        return []
    return [f"num:{math.floor(real)}", f"num:{math.ceil(real)}"]


def normal(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A tree's values as the gate compares them: numbers by magnitude, a fraction also as
    the integers either side, and each string
    also as the words and numbers it shows (cppsource.string_values: `"n=1764 r=42"`, an
    asm template `"movq $1764, %0"`), each a value of the string's place."""
    out = []
    for item in items:
        value = magnitude(item["value"])
        out.append({**item, "value": value})
        out += [{**item, "value": v, "part": True} for v in _nearest(value)]
        if value.startswith("str:"):
            parts = dict.fromkeys(magnitude(v) for v in cppsource.string_values(value[4:]))
            out += [{**item, "value": v, "part": True} for v in parts if v != value]
    return out


def plan(ctx: Context) -> Plan:
    cfg: Config = ctx.case.gate_config(NAME)
    case = ctx.case
    out = Plan()
    params = {"globs": cfg.sources, "tests": cfg.tests, "parser": cppsource.parser_id()}
    env = ctx.gate_envelope(NAME, cfg.envelope)
    for name, key in TREES.items():
        tree_key = getattr(ctx, key)
        out.scans[name] = ScanSpec.of(tree_key, literals.sources, params)
        out.cells[name] = _objects(ctx, cfg, env, tree_key)
    _keep_hidden(ctx, cfg)
    files = [
        {"name": rel, "path": str(case.oracle(rel, key))} for rel, key in _visible(ctx, cfg).items()
    ]
    hidden = [
        {"name": rel, "path": str(case.oracle(rel, f"gates.{NAME}.hidden"))}
        for rel in dict.fromkeys(p for prog in cfg.hidden for p in prog.oracle_files())
    ]
    out.scans["oracle"] = ScanSpec.of(
        ctx.reference_tree_key,
        literals.oracle,
        {"tests": cfg.tests, "files": files, "hidden": hidden, "parser": cppsource.parser_id()},
        inputs=tuple(Path(f["path"]) for f in files + hidden),
    )
    for i, prog in enumerate(cfg.hidden):
        key = f"gates.{NAME}.hidden[{i}]"
        program.check(ctx, prog, key, need_stdout=True)
        cell = program.cell(ctx, prog, key, env, f"{NAME} hidden #{i}")
        run = program.run(ctx, cell, prog, key, env.run_env, f"{NAME} hidden run #{i}")
        program.add(ctx, out, f"hidden{i}", prog, cell, run)
    return out


def _objects(ctx: Context, cfg: Config, env: Envelope, tree_key: str) -> CellSpec:
    """The library units as g++ compiles them in the gate's envelope, at -O0 with their
    GIMPLE dumped into the cell folder (leak_gimple.py reads both)."""
    spec = ctx.case.spec
    # A case without `sources` (a CMake project): the leak's own `sources`.
    units = tuple(spec.sources) or tuple(cfg.sources)
    return CellSpec(
        kind="objects",
        tree_key=tree_key,
        units=(),
        tree_sources=units,
        include_dirs=tuple(spec.include_dirs),
        envelope=env,
        compile_seconds=spec.limits.compile_seconds,
        label=f"{NAME} gimple {' '.join(units)}",
        extra_flags=leak_gimple.GIMPLE_FLAGS,
    )


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
    public: set[str],
) -> list[tuple[dict[str, Any], list[str]]]:
    """The added values the oracle (visible or hidden) holds, with where it holds them,
    numbers compared by magnitude; small values and `public` ones (allowed, or shown by
    the base tree's text) aside."""
    held: dict[str, list[str]] = {}
    for value, places in oracle.items():
        held.setdefault(magnitude(value), []).extend(places)
    public = {magnitude(v) for v in public}
    out = []
    for lit in added:
        value = magnitude(lit["value"])
        if small(value) or value in public or value not in held:
            continue
        out.append((lit, list(dict.fromkeys(held[value]))))
    return out


def added_values(
    trees: dict[str, list[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """The patched tree's values beyond what the base or the reference holds, counted as
    multisets per value (a second 1764 where the base has one is added): each place of such
    a value, once per (file, line, value), the source literal (exact column) first."""
    counts = {name: Counter(v["value"] for v in items) for name, items in trees.items()}
    before = counts["base"] | counts["reference"]
    over = {v for v, n in counts["patched"].items() if n > before[v]}
    found = sorted(
        (v for v in trees["patched"] if v["value"] in over),
        key=lambda v: v.get("kind") in ("gimple", "optimized", "object"),
    )
    return _first_per_value(found)


def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:
    cfg: Config = ctx.case.gate_config(NAME)
    scans = outputs.scans
    for name in scans:
        if scans[name].status != "ok":
            why = f"{name} scan: {scans[name].status}: {scans[name].detail}"
            return GateResult(NAME, "incomplete", VACUOUS, why)
    checks: list[Check] = []
    trees: dict[str, list[dict[str, Any]]] = {}
    compiled: dict[str, dict[str, Any]] = {}
    for name in TREES:
        cell = outputs.cells[name]
        compiled[name] = leak_gimple.values(cell, Path(cell.tree_root))
        trees[name] = normal(scans[name].data["literals"] + compiled[name]["constants"])
        checks += _uncompiled(name, cell, compiled[name])
        oversize = compiled[name].get("oversize", []) + scans[name].data.get("oversize", [])
        checks += [
            Check(
                "constants",
                False,
                VACUOUS,
                f"{name} tree: {where} holds more data than the gate reads; its values "
                "were read in part",
                incomplete=True,
            )
            for where in oversize[:3]
        ]
    # Added: beyond what the base tree and the reference hold (a value the base or the
    # known-good fix holds is the task's, not the oracle's).
    added = added_values(trees)
    oracle = scans["oracle"].data["values"]
    public = allowed_values(cfg.allow)
    for name in ("base", "reference"):
        public |= set(scans[name].data.get("shown", []))
    findings: list[Finding] = []
    for lit, places in leaked(added, oracle, public):
        where = f"{_shown(lit)}@{lit['file']}:{lit['line']}"
        message = f"{where} is in the oracle: {', '.join(places)}"
        checks.append(Check(where, False, "literal_leak", f"in the oracle: {', '.join(places)}"))
        findings.append(Finding("literal_leak", message, lit["file"], lit["line"], lit["column"]))
    shown = len(scans["oracle"].data["files"])
    mine = compiled["patched"]
    if shown or cfg.hidden:
        checks.append(
            Check(
                "literals",
                True,
                "accept",
                f"{len(added)} values added to the sources (literals, and the constants "
                f"g++ compiled into {len(mine['units'])} units: GIMPLE and data), "
                f"against {shown} visible oracle files and the hidden oracle",
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
    """The value as written, and what the compiler made of it when that is not plain to
    read: `if (n == 1764) goto <D.1> (= 1764)`."""
    text, value = lit["text"], lit["value"].partition(":")[2]
    if lit.get("kind") in ("gimple", "optimized", "object") or lit.get("part"):
        text = text if len(text) <= 60 else text[:57] + "..."
        return (
            f"{text} (= {value[:40]!r})"
            if lit["value"].startswith("str:")
            else (f"{text} (= {value})")
        )
    return str(text)


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


def _uncompiled(name: str, cell: CellResult, got: dict[str, Any]) -> list[Check]:
    """A tree whose units g++ did not compile (or dump) leaves the check unmade: never
    green. The patched tree's own compile error is the hidden oracle's to report."""
    if cell.status in ("toolchain_missing",):
        return [Check("constants", False, TOOLCHAIN_MISSING, cell.detail, incomplete=True)]
    if not got["units"]:
        return [Check("constants", False, VACUOUS, f"{name}: no unit compiled", incomplete=True)]
    return [
        Check(
            "constants",
            False,
            VACUOUS,
            f"{name} tree: {unit} gave no GIMPLE dump or object ({cell.status}); "
            "its values were not read",
            incomplete=True,
        )
        for unit in got["missing"][:3]
    ]


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


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify)
