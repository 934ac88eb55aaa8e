"""Gate `consumer`: build the patch as a stranger would, then link and run a client.

The case's library sources become a static archive; its consumer program, which includes
only the public headers, is compiled in a fresh folder holding just those headers and the
archive (`-Iinclude`, `-l<library>`, no tree, no prefix header, a pinned environment), then
linked and run against its expected exit status and stdout (cxxgate/contract/program.py; its units
are files beside the tree). Classes, most severe first:

| class                  | meaning                                                         |
| ---------------------- | --------------------------------------------------------------- |
| library_broken         | the library sources themselves no longer compile into an archive |
| header_missing         | the consumer cannot include a public header (or one it pulls in)  |
|                        | with the published include path                                   |
| consumer_compile_error | any other compile error of the consumer against the public headers |
| link_undefined         | it compiles, but the archive lacks a symbol the headers promise    |
| odr_or_duplicate       | the link sees two definitions of one symbol (e.g. a non-inline     |
|                        | function defined in a header that several units include)           |
| link_failed            | the link failed in some other way                                  |
| hang                   | the consumer ran past its time limit                               |
| behavior_mismatch      | exit status or stdout differ from the golden (or it crashed)       |
| accept                 | built as a stranger, linked, ran as the golden says                |

The consumer is checked before anything is built: if it declares the library's own
symbols (opens one of its namespaces, or declares a qualified name of one), it would
hide a missing declaration, and the case is in error.
"""

from __future__ import annotations

import re

from pydantic import Field

from cxxgate.api import (
    TOOLCHAIN_MISSING,
    CellResult,
    CellSpec,
    Check,
    Context,
    Diagnostic,
    Expected,
    Gate,
    GateResult,
    InputError,
    Outputs,
    Plan,
    Program,
    RunResult,
    Strict,
    TreePath,
    Unit,
    first_error,
    parse,
    program,
)
from cxxgate.gates.shared import surface

NAME = "consumer"
SEVERITY = (
    "library_broken",
    "header_missing",
    "consumer_compile_error",
    "link_undefined",
    "odr_or_duplicate",
    "link_failed",
    "hang",
    "behavior_mismatch",
)


class Config(Strict):
    # The consumer: its units are files of the case outside tree/ (a stranger has no tree).
    program: Program
    namespaces: list[str] = Field(
        min_length=1
    )  # the library's own; the consumer must not open them
    library: str | None = None  # archive base name; default: the case id
    # library sources (globs in the tree); default: the case's `sources`
    sources: list[TreePath] | None = None
    envelope: str | None = None


KEY = f"gates.{NAME}.program"


def plan(ctx: Context) -> Plan:
    case = ctx.case
    cfg: Config = case.gate_config(NAME)
    prog = cfg.program
    units = _units(ctx, cfg)
    program.check(ctx, prog, KEY, need_stdout=True)
    out = Plan()
    trees = [("", ctx.tree_key)]
    if prog.stdout_of == "reference":  # the reference row's own cells and run
        trees.append((program.REFERENCE, ctx.reference_tree_key))
    for suffix, tree_key in trees:
        archive, consumer = _cells(ctx, cfg, units, tree_key)
        out.cells["archive" + suffix] = archive
        out.cells["consumer" + suffix] = consumer
        env = consumer.envelope
        out.runs["run" + suffix] = program.run(
            ctx, consumer, prog, KEY, env.run_env, f"{NAME} run {prog.name}"
        )
    return out


def _units(ctx: Context, cfg: Config) -> tuple[Unit, ...]:
    """The consumer's units under their own file names, checked for what would hide a
    missing declaration."""
    units: list[Unit] = []
    for j, ref in enumerate(cfg.program.units):
        where = f"{KEY}.units[{j}]"
        if ref.oracle is None:
            msg = (
                f"{ctx.case.file}: {where}.tree: a consumer is built as a stranger, without "
                "the tree: its units are files beside tree/"
            )
            raise InputError(msg)
        path = ctx.case.oracle(ref.oracle, f"{where}.oracle")
        if any(u.name == path.name for u in units):
            msg = f"{ctx.case.file}: {where}.oracle: a second unit named {path.name!r}"
            raise InputError(msg)
        text = ctx.case.oracle_text(ref.oracle, f"{where}.oracle")
        check_program(ctx, cfg, ref.oracle, text)
        units.append(Unit(path.name, text))
    return tuple(units)


def _cells(
    ctx: Context, cfg: Config, units: tuple[Unit, ...], tree_key: str
) -> tuple[CellSpec, CellSpec]:
    case = ctx.case
    env = ctx.gate_envelope(NAME, cfg.envelope)
    product = surface.library_name(ctx, NAME, cfg.library)
    sources = surface.library_sources(ctx, NAME, cfg.sources)
    limits = case.spec.limits
    archive = CellSpec(
        kind="archive",
        tree_key=tree_key,
        units=(),
        tree_sources=sources,
        include_dirs=tuple(case.spec.include_dirs),
        envelope=env,
        compile_seconds=limits.compile_seconds,
        label=f"{NAME} archive lib{product}.a",
        product=product,
    )
    consumer = CellSpec(
        kind="consumer",
        tree_key=tree_key,
        units=units,
        tree_sources=(),
        include_dirs=(),  # the stranger sees only the published headers
        envelope=env,
        compile_seconds=limits.compile_seconds,
        label=f"{NAME} stranger build {cfg.program.name}",
        needs=(archive.key,),
        publish=tuple((h, case.header_include(h)) for h in case.spec.public_headers),
        product=product,
    )
    return archive, consumer


def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:
    cfg: Config = ctx.case.gate_config(NAME)
    prog = cfg.program
    want = program.expected(ctx, prog, KEY, outputs, "run")
    check = _check(
        prog, want, outputs.cells["archive"], outputs.cells["consumer"], outputs.runs["run"]
    )
    # The pipeline adds every planned cell's and run's folder as evidence.
    return GateResult.from_checks(NAME, program.tagged(prog, KEY, [check]), SEVERITY, [])


def _check(
    prog: Program, want: Expected, archive: CellResult, consumer: CellResult, run: RunResult
) -> Check:
    name = f"stranger {prog.name}"
    for cell in (archive, consumer):
        if cell.status == TOOLCHAIN_MISSING:
            return Check(name, False, TOOLCHAIN_MISSING, cell.detail, incomplete=True)
    if archive.status != "ok":
        return Check(name, False, "library_broken", f"archive: {_first_problem(archive)}")
    if consumer.status in {"compile_error", "timeout"}:
        diags = [d for s in consumer.compile_steps() for d in parse(s, consumer.tree_root)]
        missing = next((d for d in diags if _is_missing_header(d)), None)
        if missing is not None:
            return Check(name, False, "header_missing", _with_detail(missing.brief(), consumer))
        return Check(name, False, "consumer_compile_error", _first_problem(consumer))
    if consumer.status == "link_error":
        link = consumer.steps[-1].output
        undefined = _linker_symbols(link, "undefined reference to")
        if undefined:
            where = _defined_in_archive(archive, undefined)
            return Check(name, False, "link_undefined", f"undefined: {', '.join(undefined)}{where}")
        duplicate = _linker_symbols(link, "multiple definition of")
        if duplicate:
            return Check(name, False, "odr_or_duplicate", f"defined twice: {', '.join(duplicate)}")
        return Check(name, False, "link_failed", consumer.detail or "the link failed")
    if consumer.status != "ok":
        return Check(name, False, "link_failed", f"{consumer.status}: {consumer.detail}")
    if run.status == "hang":
        return Check(name, False, "hang", "killed at the time limit")
    if run.status == "output_overflow":
        return Check(name, False, "behavior_mismatch", "killed at the output cap")
    if run.status == "signaled":
        return Check(name, False, "behavior_mismatch", f"killed by signal {run.signal}")
    if run.status != "exited":
        return Check(name, False, "behavior_mismatch", f"did not run: {run.status}")
    if want.problem:
        return program.undecided(name, want)
    if run.exit != prog.exit or program.stdout_problem(run.stdout, want) is not None:
        stdout = run.stdout.decode(errors="replace")
        golden = (want.stdout or b"").decode(errors="replace")
        return Check(
            name,
            False,
            "behavior_mismatch",
            f"exit {run.exit} (golden {prog.exit}), stdout {stdout[:80]!r} (golden {golden!r})",
        )
    return Check(name, True, "accept", "compiled, linked and ran as a stranger")


def check_program(ctx: Context, cfg: Config, rel: str, text: str) -> None:
    """Refuse a consumer that could hide the very failures this gate exists to see."""
    key = f"{ctx.case.file}: {KEY} ({rel})"
    code = _strip_comments_and_strings(text)
    scope = _file_scope(code)
    for ns in cfg.namespaces:
        first = re.escape(ns.split("::")[0])
        found = re.search(rf"\bnamespace\s+{first}\b", code)
        # At file scope, `ns::f(` outside an initialiser can only be a declaration.
        for m in re.finditer(rf"[^;{{}}]*\b{re.escape(ns)}::\w+\s*\([^;{{}}]*", scope):
            if found is None and "=" not in m.group(0):
                found = m
        if found is not None:
            line = code.count("\n", 0, found.start()) + 1
            msg = (
                f"{key}: line {line} declares the library's own namespace {ns!r} "
                f"({found.group(0).strip()!r}); a consumer may only include the public "
                "headers, or a missing declaration would go unseen"
            )
            raise InputError(msg)
    published = {ctx.case.header_include(h) for h in ctx.case.spec.public_headers}
    for m in re.finditer(r'^\s*#\s*include\s*"([^"]+)"', text, re.MULTILINE):
        if m.group(1) not in published:
            line = text.count("\n", 0, m.start()) + 1
            msg = (
                f"{key}: line {line} includes {m.group(1)!r}, which is not a public header; "
                f"a consumer may include only {sorted(published)}"
            )
            raise InputError(msg)


def _strip_comments_and_strings(text: str) -> str:
    # Keep newlines so line numbers in messages stay right.
    pattern = r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
    return re.sub(pattern, lambda m: "\n" * m.group(0).count("\n") + " ", text, flags=re.DOTALL)


def _file_scope(code: str) -> str:
    """The code with every brace-enclosed body blanked (newlines kept): file scope only."""
    out = []
    depth = 0
    for ch in code:
        if ch == "}":
            depth = max(depth - 1, 0)
        out.append(ch if depth == 0 or ch == "\n" else " ")
        if ch == "{":
            depth += 1
    return "".join(out)


def _is_missing_header(d: Diagnostic) -> bool:
    # GCC: "fatal error: x.hpp: No such file or directory"; clang: "'x.hpp' file not found".
    return d.is_error and (
        "No such file or directory" in d.message or d.message.endswith("file not found")
    )


def _with_detail(text: str, cell: CellResult) -> str:
    return f"{text} ({cell.detail})" if cell.detail else text


# The linker runs under LC_ALL=C: symbols are quoted `like this'.
_QUOTED = re.compile(r"[`']([^`']+)'")


def _linker_symbols(output: str, phrase: str) -> list[str]:
    found: list[str] = []
    for line in output.splitlines():
        if phrase in line:
            m = _QUOTED.search(line[line.index(phrase) + len(phrase) :])
            if m and m.group(1) not in found:
                found.append(m.group(1))
    return found


def _defined_in_archive(archive: CellResult, undefined: list[str]) -> str:
    """Say what the archive does define under the missing names: nm is the tie-breaker."""
    listing = next((s.output for s in archive.steps if s.phase == "inspect"), "")
    near = []
    for sym in undefined:
        stem = sym.split("(")[0].replace("[abi:cxx11]", "")
        for line in listing.splitlines():
            shown = line.split(" ", 2)[-1] if line.count(" ") >= 2 else ""
            if shown.startswith(stem) and shown not in near and shown not in undefined:
                near.append(shown)
    return f"; the archive defines instead: {', '.join(near)}" if near else "; not in the archive"


def _first_problem(cell: CellResult) -> str:
    if cell.status == "timeout":
        return "the compiler ran past its time limit"
    first = first_error([d for s in cell.compile_steps() for d in parse(s, cell.tree_root)])
    if first is not None:
        return first.brief()
    return f"{cell.status}: {cell.detail or 'no diagnostic'}"


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify)
