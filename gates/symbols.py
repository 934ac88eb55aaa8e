"""Gate `symbols`: the shared object must keep exporting what its clients bound to.

The case's library is built as a shared object with pinned flags (`-fPIC`, hidden
visibility by default and for inline functions, the API's explicit default visibility
through the case's `defines`, a soname, the case's version script if any). Its dynamic
defined symbols are read with pyelftools; mangled names are the truth, demangled text is
for humans. The golden is a committed list of mangled names, or else the reference
build's own exports; either way it must match the reference before any patch is believed
(a golden the reference misses makes the reference red, so the case reads `baseline_red`).
Classes, most severe first:

| class                   | meaning                                                       |
| ----------------------- | ------------------------------------------------------------- |
| version_script_incident | the version script and the golden disagree: a golden name in    |
|                         | the script that the reference object lacks, or one the script   |
|                         | would hide. A harness incident, not a model failure             |
| library_broken          | the shared object does not build                               |
| abi_break               | golden symbols missing (a deletion and an addition with the same |
|                         | qualified name, or the same signature renamed, show as a pair)   |
| layout_change           | abidiff (optional lane) sees an exported type change size/layout |
| surface_growth          | new exports (a note instead, when the case sets allow_extra)    |
| accept                  | every golden symbol present, nothing else exported              |

The abidiff lane runs when the case sets `abidiff: true`; without `abidiff` installed
(Debian abigail-tools) it is `incomplete`, never silently green. Weak standard-library
template instantiations are not the library's surface (libstdc++ marks namespace std
visible, so hidden visibility cannot hide them) and are left out unless `keep_std`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from pydantic import Field

from cxxgate.api import (
    TOOLCHAIN_MISSING,
    CellResult,
    CellSpec,
    Check,
    Context,
    Gate,
    GateResult,
    Outputs,
    Plan,
    Strict,
    TreePath,
    Unit,
    elf,
    why_failed,
)
from cxxgate.gates.shared import surface
from cxxgate.gates.shared.project import configure_spec

NAME = "symbols"
SEVERITY = (
    "version_script_incident",
    "library_broken",
    "abi_break",
    "layout_change",
    "surface_growth",
)
# Pinned: two dumps are comparable only when built with the same visibility rules.
PINNED_FLAGS = ("-fPIC", "-fvisibility=hidden", "-fvisibility-inlines-hidden")
VERSION_SCRIPT = "exports.map"
_STD = re.compile(r"^_Z(?:GV|T[ISV])?Z?N?K?(?:St|Sa|Sb|Ss|Si|So|Sd|9__gnu_cxx)")


class Config(Strict):
    library: str | None = None  # shared object base name; default: the case id
    sources: list[TreePath] | None = None  # globs in the tree; default: the case's `sources`
    defines: list[str] = Field(default_factory=list)  # e.g. the API macro's "building" switch
    soname: str | None = None  # default: lib<library>.so.1
    golden: str | None = None  # committed mangled names, one a line; default: the reference's
    allow_extra: bool = False
    version_script: str | None = None  # a linker version script of the case, outside tree/
    abidiff: bool = False
    keep_std: bool = False
    envelope: str | None = None


def plan(ctx: Context) -> Plan:
    case = ctx.case
    cfg: Config = case.gate_config(NAME)
    if cfg.golden is not None:
        case.oracle(cfg.golden, f"gates.{NAME}.golden")
    out = Plan()
    for tree_key, name in (
        (ctx.tree_key, "cmake configure"),
        (ctx.reference_tree_key, "cmake ref"),
    ):
        # A CMake case's library compiles with the project's flags
        # (cxxgate/toolchain/projectflags.py).
        project = configure_spec(ctx, tree_key, ctx.gate_envelope(NAME, cfg.envelope), NAME)
        if project is not None:
            out.cells[name] = project
    out.cells["shared"] = _shared(ctx, cfg, ctx.tree_key)
    # The reference build: the derived golden, the version-script check, abidiff's baseline.
    out.cells["reference"] = _shared(ctx, cfg, ctx.reference_tree_key)
    if cfg.abidiff:
        out.cells["abidiff"] = CellSpec(
            kind="abidiff",
            tree_key=ctx.tree_key,
            units=(),
            tree_sources=(),
            include_dirs=(),
            envelope=out.cells["shared"].envelope,
            compile_seconds=case.spec.limits.compile_seconds,
            label=f"{NAME} abidiff reference..candidate",
            needs=(out.cells["reference"].key, out.cells["shared"].key),
        )
    return out


def _shared(ctx: Context, cfg: Config, tree_key: str) -> CellSpec:
    case = ctx.case
    product = surface.library_name(ctx, NAME, cfg.library)
    sources = surface.library_sources(ctx, NAME, cfg.sources)
    units: tuple[Unit, ...] = ()
    link_args = [f"-Wl,-soname,{cfg.soname or f'lib{product}.so.1'}"]
    if cfg.version_script is not None:
        script = case.oracle(cfg.version_script, f"gates.{NAME}.version_script")
        units = (Unit(VERSION_SCRIPT, script.read_text()),)
        link_args.append(f"-Wl,--version-script={VERSION_SCRIPT}")
    env = ctx.gate_envelope(NAME, cfg.envelope)
    project = configure_spec(ctx, tree_key, env, NAME)
    return CellSpec(
        kind="shared",
        tree_key=tree_key,
        units=units,
        tree_sources=sources,
        include_dirs=tuple(case.spec.include_dirs),
        envelope=ctx.gate_envelope(NAME, cfg.envelope),
        compile_seconds=case.spec.limits.compile_seconds,
        label=f"{NAME} shared lib{product}.so",
        extra_flags=(*PINNED_FLAGS, *(f"-D{d}" for d in cfg.defines)),
        link_args=tuple(link_args),
        product=product,
        needs=(project.key,) if project is not None else (),
    )


def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:
    cfg: Config = ctx.case.gate_config(NAME)
    # The pipeline adds every planned cell's and run's folder as evidence.
    cell, ref = outputs.cells["shared"], outputs.cells["reference"]
    if TOOLCHAIN_MISSING in (cell.status, ref.status):
        missing = Check("shared object", False, TOOLCHAIN_MISSING, cell.detail, incomplete=True)
        return GateResult.from_checks(NAME, [missing], SEVERITY, [])
    checks: list[Check] = []
    ref_exports = _exports(ref, cfg) if ref.status == "ok" else None
    golden = _golden(ctx, cfg, ref_exports)
    if golden is None:
        why = f"no golden: the reference shared object did not build ({ref.status})"
        checks.append(Check("golden", False, "reference_unbuilt", why, incomplete=True))
    elif cfg.version_script is not None:
        checks += _version_script_checks(ctx, cfg, golden, ref_exports)
    if cell.status != "ok":
        checks.append(Check("shared object", False, "library_broken", why_failed(cell)))
    elif golden is not None:
        checks += _golden_checks(cfg, golden, _exports(cell, cfg), ref_exports or {})
    if cfg.abidiff:
        checks.append(_abidiff_check(outputs.cells["abidiff"]))
    return GateResult.from_checks(NAME, checks, SEVERITY, [])


def _exports(cell: CellResult, cfg: Config) -> dict[str, elf.Export]:
    assert cell.binary is not None
    found = elf.load(Path(cell.binary).parent)
    return {
        e.name: e
        for e in found
        if cfg.keep_std or not (e.kind in {"W", "V", "u"} and _STD.match(e.name))
    }


def _golden(
    ctx: Context, cfg: Config, ref_exports: dict[str, elf.Export] | None
) -> list[str] | None:
    if cfg.golden is None:
        return sorted(ref_exports) if ref_exports is not None else None
    path = ctx.case.oracle(cfg.golden, f"gates.{NAME}.golden")
    lines = (ln.strip() for ln in path.read_text().splitlines())
    return sorted({ln for ln in lines if ln and not ln.startswith("#")})


def _golden_checks(
    cfg: Config,
    golden: list[str],
    exports: dict[str, elf.Export],
    ref_exports: dict[str, elf.Export],
) -> list[Check]:
    def shown(name: str) -> str:
        known = exports.get(name) or ref_exports.get(name)
        return known.shown if known else name

    checks = [Check(shown(n), True, "accept", "exported") for n in golden if n in exports]
    missing = [n for n in golden if n not in exports]
    extra = [n for n in exports if n not in set(golden)]
    for old, new, how in _pairs(missing, extra, shown):
        checks.append(
            Check(f"{shown(old)} -> {shown(new)}", False, "abi_break", f"{how}: {old} -> {new}")
        )
        missing.remove(old)
        extra.remove(new)
    checks += [Check(shown(n), False, "abi_break", f"no longer exported: {n}") for n in missing]
    for name in extra:
        if cfg.allow_extra:
            checks.append(Check(shown(name), True, "accept", f"note: new export {name}"))
        else:
            checks.append(Check(shown(name), False, "surface_growth", f"new export: {name}"))
    return checks


def _split(demangled: str) -> tuple[str, str, str]:
    """(scope, name, parameters-and-qualifiers) of a demangled function or object."""
    depth = 0
    for i, ch in enumerate(demangled):
        if ch in "<(":
            if ch == "(" and depth == 0:
                qualified, rest = demangled[:i], demangled[i:]
                scope, _, name = qualified.rpartition("::")
                return scope, name, rest
            depth += 1
        elif ch in ">)":
            depth -= 1
    scope, _, name = demangled.rpartition("::")
    return scope, name, ""


def _pairs(
    missing: list[str], extra: list[str], shown: Callable[[str], str]
) -> list[tuple[str, str, str]]:
    """Deletions and additions that are one change: same qualified name (a signature
    change), or same scope and parameters under a new name (a rename). One-to-one only."""
    pairs: list[tuple[str, str, str]] = []
    taken: set[str] = set()
    for old in missing:
        o_scope, o_name, o_rest = _split(shown(old))
        candidates = []
        for new in extra:
            if new in taken:
                continue
            n_scope, n_name, n_rest = _split(shown(new))
            if (o_scope, o_name) == (n_scope, n_name):
                candidates.append((new, "signature changed"))
            elif o_scope == n_scope and o_rest == n_rest and o_rest:
                candidates.append((new, "renamed"))
        if len(candidates) == 1:
            new, how = candidates[0]
            taken.add(new)
            pairs.append((old, new, how))
    return pairs


def _version_script_checks(
    ctx: Context, cfg: Config, golden: list[str], ref_exports: dict[str, elf.Export] | None
) -> list[Check]:
    assert cfg.version_script is not None
    path = ctx.case.oracle(cfg.version_script, f"gates.{NAME}.version_script")
    listed = _script_globals(path.read_text())
    checks = []
    where = f"{ctx.case.file}: gates.{NAME}.version_script ({cfg.version_script})"
    for name in golden:
        if name in listed and ref_exports is not None and name not in ref_exports:
            checks.append(
                Check(
                    f"version script {name}",
                    False,
                    "version_script_incident",
                    f"{where} lists golden {name}, which the reference object does not export",
                )
            )
        elif name not in listed and not any(p.endswith("*") for p in listed):
            checks.append(
                Check(
                    f"version script {name}",
                    False,
                    "version_script_incident",
                    f"{where} does not list golden {name}, so it would hide it",
                )
            )
    return checks


def _script_globals(text: str) -> set[str]:
    """Names under `global:` in a GNU ld version script (plain names and patterns)."""
    text = re.sub(r"/\*.*?\*/|#[^\n]*", " ", text, flags=re.DOTALL)
    names: set[str] = set()
    for block in re.findall(r"global\s*:(.*?)(?:local\s*:|})", text, flags=re.DOTALL):
        names.update(n.strip() for n in block.split(";") if n.strip())
    return names


def _abidiff_check(cell: CellResult) -> Check:
    name = "abidiff reference..candidate"
    if cell.status == TOOLCHAIN_MISSING:
        return Check(name, False, TOOLCHAIN_MISSING, cell.detail, incomplete=True)
    if cell.status != "ok" or not cell.steps:
        return Check(name, False, "abidiff_not_run", cell.detail or cell.status, incomplete=True)
    step = cell.steps[-1]
    report = step.output
    changed = bool(step.exit and step.exit & 12)
    report_lines = [ln.strip() for ln in report.splitlines()]
    lines = []
    for i, line in enumerate(report_lines):
        if re.search(r"size changed|data member|offset changed|layout", line):
            # "1 data member insertion:" says what only on the line after it.
            follow = report_lines[i + 1] if line.endswith(":") and i + 1 < len(report_lines) else ""
            lines.append(f"{line} {follow}".strip())
    if changed and lines:
        return Check(name, False, "layout_change", "; ".join(lines[:4]))
    return Check(name, True, "accept", "no layout or size change of an exported type")


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify)
