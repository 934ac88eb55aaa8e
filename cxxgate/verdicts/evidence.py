"""What the reports read besides verdicts.jsonl: each row's gate results and the cells and
runs they name, loaded from the build folder, trimmed to what a reader opens.

A candidate controls compiler output and program output, so every text is capped here
(lines and characters) before any report sees it; escaping is each format's job.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cxxgate.results.result import Check, Finding, GateResult
from cxxgate.runs.run import RunResult
from cxxgate.toolchain.cellspec import CellResult
from cxxgate.toolchain.diagnostics import parse, why_failed

MAX_LINES = 40  # per stdout diff, notes
MAX_DIAGNOSTICS = 20  # lines per cell
MAX_OPENED = 8  # cells, and runs, shown per gate
MAX_CHARS = 4000  # per stderr, per line list joined
MAX_LINE = 300  # one line
_DIFF_BYTES = 64 * 1024


def clip(text: str, limit: int = MAX_CHARS) -> str:
    """`text` cut to `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n... ({len(text) - limit} more characters)"


def clip_lines(lines: list[str], limit: int = MAX_LINES) -> list[str]:
    shown = [ln if len(ln) <= MAX_LINE else ln[:MAX_LINE] + " ..." for ln in lines[:limit]]
    if len(lines) > limit:
        shown.append(f"... ({len(lines) - limit} more lines)")
    return shown


@dataclass(frozen=True)
class CellView:
    """A cell that did not build: its label and compiler diagnostics."""

    label: str
    status: str
    envelope: str
    diagnostics: list[str]


@dataclass(frozen=True)
class RunView:
    """A run worth opening: it failed, wrote to stderr (a sanitizer report), or printed
    other bytes than the run of the same label on the case's reference."""

    label: str
    status: str
    exit: int | None
    detail: str
    stdout_diff: list[str]
    stderr: str


@dataclass(frozen=True)
class GateView:
    name: str
    status: str
    klass: str
    summary: str
    failed: list[Check] = field(default_factory=list)
    ok_checks: int = 0
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    cells: list[CellView] = field(default_factory=list)
    runs: list[RunView] = field(default_factory=list)
    not_shown: int = 0  # cells and runs past MAX_OPENED


class Evidence:
    """Loads result files under a build folder once each (cells and runs are shared
    between rows and gates)."""

    def __init__(self, *roots: Path) -> None:
        self.roots = roots  # a merged grade reads its shards' folders, in order
        self._cells: dict[str, CellResult | None] = {}
        self._runs: dict[str, RunResult | None] = {}
        self._refs: dict[str, tuple[dict[str, CellResult], dict[str, RunResult]]] = {}
        self._results: dict[tuple[str, str, str], GateResult | None] = {}
        self._whys: dict[str, str] = {}

    def _find(self, rel: str) -> Path:
        """The first root holding `rel` (the first root's path when none does)."""
        paths = [root / rel for root in self.roots]
        return next((p for p in paths if p.exists()), paths[0])

    def result(self, row: dict[str, Any], gate: str) -> GateResult | None:
        key = (row["case"], row["patch"], gate)
        if key not in self._results:
            path = self._find(f"results/{row['case']}/{row['patch']}/{gate}.json")
            try:
                self._results[key] = GateResult.load(path)
            except (OSError, ValueError, TypeError, KeyError):
                self._results[key] = None  # an orphan row, or a result of an older harness
        return self._results[key]

    def findings(self, row: dict[str, Any]) -> list[tuple[str, Finding]]:
        """(gate, finding) of every gate of the row, gate by gate."""
        out = []
        for gate in row.get("gates", {}):
            res = self.result(row, gate)
            if res is not None:
                out += [(gate, f) for f in res.findings]
        return out

    def cell(self, rel: str) -> CellResult | None:
        if rel not in self._cells:
            try:
                self._cells[rel] = CellResult.load(self._find(f"{rel}/result.json"))
            except (OSError, ValueError, TypeError, KeyError):
                self._cells[rel] = None
        return self._cells[rel]

    def run(self, rel: str) -> RunResult | None:
        if rel not in self._runs:
            try:
                self._runs[rel] = RunResult.load(self._find(f"{rel}/result.json"))
            except (OSError, ValueError, TypeError, KeyError):
                self._runs[rel] = None
        return self._runs[rel]

    def reference(
        self, reference: dict[str, Any] | None
    ) -> tuple[dict[str, CellResult], dict[str, RunResult]]:
        """The reference row's cells and runs by label: what a row's are compared with."""
        if reference is None:
            return {}, {}
        key = f"{reference['case']}/{reference['patch']}"
        if key not in self._refs:
            cells: dict[str, CellResult] = {}
            runs: dict[str, RunResult] = {}
            for gate in reference.get("gates", {}):
                res = self.result(reference, gate)
                for rel in res.evidence if res else []:
                    cell = self.cell(rel) if rel.startswith("cells/") else None
                    run = self.run(rel) if rel.startswith("runs/") else None
                    if cell is not None:
                        cells.setdefault(cell.label, cell)
                    if run is not None:
                        runs.setdefault(run.label, run)
            self._refs[key] = (cells, runs)
        return self._refs[key]

    def _why(self, cell: CellResult) -> str:
        if cell.key not in self._whys:
            self._whys[cell.key] = why_failed(cell)
        return self._whys[cell.key]

    def _differs(self, cell: CellResult, ref: CellResult | None) -> bool:
        """A cell that did not build, unless the reference's cell of the same label failed
        the same way (a must-fail unit's expected error is not this row's news)."""
        if cell.status == "ok":
            return False
        if ref is None or ref.status != cell.status:
            return True
        return self._why(ref) != self._why(cell)

    def gate_views(self, row: dict[str, Any], reference: dict[str, Any] | None) -> list[GateView]:
        """Each gate of the row with what to open: failed checks, findings, notes, the
        cells that did not build and the runs worth reading."""
        views = []
        ref_cells, ref_runs = self.reference(reference)
        for gate, shown in row.get("gates", {}).items():
            res = self.result(row, gate)
            if res is None:
                views.append(GateView(gate, shown["status"], shown["class"], shown["summary"]))
                continue
            cells, runs, notes = [], [], []
            # A passing gate's failed cells are the expected ones (a must-fail unit that
            # fails): only a gate that did not pass opens its cells and runs.
            opened = shown["status"] not in {"pass", "not_applicable"}
            for rel in res.evidence:
                if rel.startswith(("cells/", "runs/")) and not opened:
                    continue
                if rel.startswith("cells/"):
                    cell = self.cell(rel)
                    if cell is not None and self._differs(cell, ref_cells.get(cell.label)):
                        cells.append(_cell_view(cell))
                elif rel.startswith("runs/"):
                    run = self.run(rel)
                    view = _run_view(run, ref_runs.get(run.label)) if run else None
                    if view is not None:
                        runs.append(view)
                elif not rel.startswith("scans/"):
                    notes.append(rel)
            views.append(
                GateView(
                    gate,
                    shown["status"],  # the row's view: baseline_red replaces the gate's own
                    shown["class"],
                    shown["summary"],
                    failed=[c for c in res.checks if not c.ok],
                    ok_checks=sum(c.ok for c in res.checks),
                    findings=res.findings,
                    notes=clip_lines(notes),
                    cells=cells[:MAX_OPENED],
                    runs=runs[:MAX_OPENED],
                    not_shown=max(0, len(cells) - MAX_OPENED) + max(0, len(runs) - MAX_OPENED),
                )
            )
        return views


def _cell_view(cell: CellResult) -> CellView:
    lines = []
    for step in cell.steps:
        diags = parse(step, cell.tree_root) if step.phase == "compile" else []
        if diags:
            lines += [d.brief() for d in diags]
        elif step.exit != 0:
            lines += [ln for ln in step.output.splitlines() if ln.strip()]
    if not lines and cell.detail:
        lines = cell.detail.splitlines()
    return CellView(cell.label, cell.status, cell.envelope, clip_lines(lines, MAX_DIAGNOSTICS))


def _run_view(run: RunResult, ref: RunResult | None) -> RunView | None:
    try:
        stderr = run.stderr
        diff: list[str] = []
        if ref is not None and ref.stdout_sha != run.stdout_sha:
            # Only the head of each: a flood of output is capped at the run's output cap,
            # and difflib is quadratic at worst.
            diff = list(
                difflib.unified_diff(
                    ref.stdout[:_DIFF_BYTES].decode(errors="replace").splitlines(),
                    run.stdout[:_DIFF_BYTES].decode(errors="replace").splitlines(),
                    "reference stdout",
                    "this row's stdout",
                    lineterm="",
                )
            )
        ref_stderr = ref.stderr if ref is not None else ""
    except OSError:
        return RunView(run.label, run.status, run.exit, "output files missing", [], "")
    failed = run.status != "exited" or run.exit != 0
    if not (failed or diff or (stderr.strip() and stderr != ref_stderr)):
        return None
    return RunView(run.label, run.status, run.exit, run.detail, clip_lines(diff), clip(stderr))


def rows_by_case_reference(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The reference row of each case."""
    return {r["case"]: r for r in rows if r.get("role") == "reference"}
