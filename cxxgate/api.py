"""The gate API: everything a gate imports, from one module.

A gate module exports `GATE = Gate(name, doc, Config, SEVERITY, plan, classify)`: `plan`
names the cells (CellSpec), runs (RunSpec) and scans (ScanSpec) it needs for one tree,
and `classify` turns their stored results (Outputs) into a GateResult of Checks and
Findings, compiling and running nothing. `program` is the shared runtime-program model,
`render` / `render_from` render probe templates (the engine's, or a folder of the gate's
own), `diagnostics` reads what a compiler said. The built-in gates (gates/) import only
from here; their helper modules may use the engine directly.
"""

from __future__ import annotations

from cxxgate.contract import probe, program
from cxxgate.contract.gate import Context, Gate, Outputs, Plan
from cxxgate.contract.probe import render, render_from
from cxxgate.contract.program import Expected, Program
from cxxgate.host.sandbox import NEUTRAL_BUILD
from cxxgate.results.result import (
    BASELINE_RED,
    TOOLCHAIN_MISSING,
    VACUOUS,
    Check,
    Finding,
    GateResult,
)
from cxxgate.runs.run import RunResult, RunSpec
from cxxgate.runs.scan import ScanResult, ScanSpec
from cxxgate.store import codehash
from cxxgate.toolchain import diagnostics, elf, toolquery
from cxxgate.toolchain.cellspec import (
    COMPILE_CODE,
    ENTRY_UNIT,
    UNIT_NAME,
    CellResult,
    CellSpec,
    Step,
    Unit,
)
from cxxgate.toolchain.diagnostics import (
    Diagnostic,
    errors_with_notes,
    first_error,
    in_tree,
    of_cell,
    parse,
    why_failed,
)
from cxxgate.toolchain.envelope import Envelope, Family
from cxxgate.util.yamlfile import InputError, Strict, TreePath, key_path, load_model

__all__ = [
    "BASELINE_RED",
    "COMPILE_CODE",
    "ENTRY_UNIT",
    "NEUTRAL_BUILD",
    "TOOLCHAIN_MISSING",
    "UNIT_NAME",
    "VACUOUS",
    "CellResult",
    "CellSpec",
    "Check",
    "Context",
    "Diagnostic",
    "Envelope",
    "Expected",
    "Family",
    "Finding",
    "Gate",
    "GateResult",
    "InputError",
    "Outputs",
    "Plan",
    "Program",
    "RunResult",
    "RunSpec",
    "ScanResult",
    "ScanSpec",
    "Step",
    "Strict",
    "TreePath",
    "Unit",
    "codehash",
    "diagnostics",
    "elf",
    "errors_with_notes",
    "first_error",
    "in_tree",
    "key_path",
    "load_model",
    "of_cell",
    "parse",
    "probe",
    "program",
    "render",
    "render_from",
    "toolquery",
    "why_failed",
]
