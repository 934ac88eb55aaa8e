"""The doit task graph: cases x patches -> trees -> cells/runs -> gate results -> verdicts
-> per-case folds -> grade. dodo.py asks this module for each kind of task.

Every action that can meet a broken harness writes a `harness_error` result instead of
failing the task, so one fault never loses the rest of a batch; such results are never
considered up to date, so the next run retries them.
"""

from __future__ import annotations

import json
import shutil
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from doit import get_var
from doit.tools import config_changed

from gates import codehash, identity, registry, report
from gates.case import Case, load_case
from gates.cell import CellResult, CellSpec
from gates.cell import build as build_cell
from gates.cell import result_path as cell_result
from gates.envelope import Envelopes
from gates.gate import Context, Outputs, Plan
from gates.layout import Layout
from gates.result import GateResult
from gates.rows import Orphan, Row, batch_rows, case_rows
from gates.run import RunResult, RunSpec
from gates.run import execute as execute_run
from gates.run import result_path as run_result
from gates.tree import Stamp, materialise
from gates.verdict import HARNESS_ERROR, Reference, Verdict, fold, reference_problems
from gates.yamlfile import InputError

PROJECT = Path(__file__).resolve().parent.parent
Task = dict[str, Any]


@dataclass(frozen=True)
class Settings:
    """What `doit grade name=value ...` selects; read once, in dodo.py."""

    library: Path
    out: Path
    only: frozenset[str]
    batch: Path | None
    report_only: bool

    @classmethod
    def from_doit_vars(cls) -> Settings:
        only = get_var("case", "") or ""
        batch = get_var("patches", "") or ""
        return cls(
            library=Path(get_var("cases", "") or PROJECT / "cases").resolve(),
            out=Path(get_var("out", "") or PROJECT / ".grade").resolve(),
            only=frozenset(c for c in only.split(",") if c),
            batch=Path(batch).resolve() if batch else None,
            report_only=(get_var("report_only", "") or "") in {"1", "yes", "true"},
        )


class Pipeline:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.layout = Layout(settings.out)
        try:
            self.layout.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            msg = f"out={settings.out}: cannot create the build folder: {exc.strerror}"
            raise SystemExit(msg) from exc
        self.errors: list[str] = []  # input errors: named in the table, fail the grade
        self.cases: dict[str, Case] = {}
        self.rows: list[Row] = []
        self.orphans: list[Orphan] = []
        self.tree_keys: dict[str, str] = {}  # row id -> tree key
        # (case, tree key, gate) -> plan. Two cases may share a tree (same base, same patch)
        # but not a plan: the plan follows each case's own configuration.
        self.plans: dict[tuple[str, str, str], Plan] = {}
        self.identity: dict[str, dict[str, object]] = {}
        self._load()

    # ---- loading -------------------------------------------------------------------

    def _load(self) -> None:
        lib = self.settings.library
        manifest = lib / "envelopes.yaml"
        if not manifest.exists():
            manifest = PROJECT / "cases" / "envelopes.yaml"
        try:
            self.envelopes = Envelopes(manifest)
        except InputError as exc:
            self.errors.append(str(exc))
            return
        if not lib.is_dir():
            self.errors.append(f"{lib}: the case library folder does not exist")
            return
        dirs = sorted(p for p in lib.iterdir() if p.is_dir())
        for name in sorted(self.settings.only - {d.name for d in dirs}):
            self.errors.append(f"case={name}: no such case in {lib}")
        for case_dir in dirs:
            if self.settings.only and case_dir.name not in self.settings.only:
                continue
            if not (case_dir / "case.yaml").exists():
                self.errors.append(f"{case_dir}: a folder in the case library without case.yaml")
                continue
            try:
                case = load_case(case_dir)
                rows = case_rows(case, with_known=self.settings.batch is None)
                self._plan_rows(case, rows[:2])  # reference state first: its errors are the case's
            except InputError as exc:
                self.errors.append(str(exc))
                continue
            self.cases[case.id] = case
            self.identity[case.id] = identity.stamp(case, self.envelopes)
            self.rows += rows
        if self.settings.batch is not None:
            try:
                batch, self.orphans = batch_rows(self.settings.batch, self.cases, self.layout)
            except OSError as exc:
                self.errors.append(f"patches={self.settings.batch}: cannot read: {exc}")
                batch = []
            self.rows += batch
        self.rows_of: dict[str, list[Row]] = {c: [] for c in self.cases}
        for row in self.rows:
            self.rows_of[row.case].append(row)
        self.references: dict[str, tuple[Row, Row | None]] = {}
        for case in list(self.cases.values()):
            rows = self.rows_of[case.id]
            try:
                self.plans.update(self._plan_rows(case, rows))
            except InputError as exc:
                self.errors.append(str(exc))
                del self.cases[case.id], self.rows_of[case.id]
                continue
            base = next((r for r in rows if r.role == "base"), None)
            self.references[case.id] = (rows[0], base)  # case_rows puts the reference first
        self.rows = [r for r in self.rows if r.case in self.cases]

    def _plan_rows(self, case: Case, rows: list[Row]) -> dict[tuple[str, str, str], Plan]:
        """Every gate's plan for these rows; all or nothing, so a case whose config fails
        in one gate leaves no half-planned tasks behind."""
        for row in rows:
            blob = json.dumps([case.tree_digest, case.spec.writable, row.sha])
            self.tree_keys[row.id] = codehash.of_text(blob)[:24]
        reference = self.tree_keys[f"{case.id}/reference"]
        plans: dict[tuple[str, str, str], Plan] = {}
        for row in rows:
            ctx = Context(case, self.tree_keys[row.id], self.envelopes, reference)
            for gate_name in case.enabled_gates():
                if (case.id, ctx.tree_key, gate_name) not in plans:
                    plans[case.id, ctx.tree_key, gate_name] = registry.GATES[gate_name].plan(ctx)
        return plans

    def _ctx(self, row: Row) -> Context:
        reference = self.tree_keys[f"{row.case}/reference"]
        return Context(self.cases[row.case], self.tree_keys[row.id], self.envelopes, reference)

    # ---- tasks ---------------------------------------------------------------------

    def doit_config(self) -> dict[str, Any]:
        return {
            "default_tasks": ["grade"],
            "backend": "sqlite3",
            "dep_file": str(self.layout.root / "doit.sqlite3"),
            "par_type": "thread",
            "continue": True,
        }

    def tree_tasks(self) -> Iterator[Task]:
        yield {"basename": "tree", "name": None, "doc": "apply each patch to its case's tree"}
        seen: set[str] = set()
        for row in self.rows:
            key = self.tree_keys[row.id]
            if key in seen:
                continue
            seen.add(key)
            case = self.cases[row.case]
            stamp = self.layout.tree_stamp(key)
            yield {
                "basename": "tree",
                "name": row.id,
                "doc": f"{row.id}: {row.source}",
                "actions": [
                    _guarded(
                        stamp,
                        _stamp_error(key),
                        materialise,
                        case.tree,
                        row.file,
                        case.spec.writable,
                        key,
                        self.layout,
                    )
                ],
                "file_dep": [str(row.file)] if row.file else [],
                "targets": [str(stamp)],
                "uptodate": [config_changed({"key": key}), _no_harness_error(stamp)],
                "clean": [(_remove, [self.layout.tree(key), stamp])],
            }

    def cell_tasks(self) -> Iterator[Task]:
        yield {"basename": "cell", "name": None, "doc": "compile: the only place a compiler runs"}
        for key, (spec, row) in self._unique_cells().items():
            target = cell_result(self.layout, key)
            yield {
                "basename": "cell",
                "name": key,
                "doc": f"{row.id} {spec.label} [{spec.envelope.name}]",
                "actions": [
                    (_mkdir, [target.parent]),
                    _guarded(target, _cell_error(spec), build_cell, spec, self.layout),
                ],
                # A cell that builds on other cells' products (a consumer on its archive)
                # waits for their result files.
                "file_dep": [str(self.layout.tree_stamp(spec.tree_key))]
                + [str(cell_result(self.layout, k)) for k in spec.needs],
                "targets": [str(target)],
                "uptodate": [_no_harness_error(target)],
                "clean": [(_remove, [target.parent])],
            }

    def run_tasks(self) -> Iterator[Task]:
        yield {"basename": "exec", "name": None, "doc": "execute a built binary, bounded"}
        seen: set[str] = set()
        for plan in self.plans.values():
            for spec in plan.runs.values():
                if spec.key in seen:
                    continue
                seen.add(spec.key)
                target = run_result(self.layout, spec.key)
                yield {
                    "basename": "exec",
                    "name": spec.key,
                    "doc": spec.label,
                    "actions": [
                        (_mkdir, [target.parent]),
                        _guarded(target, _run_error(spec), execute_run, spec, self.layout),
                    ],
                    "file_dep": [str(cell_result(self.layout, k)) for k in spec.cell_keys],
                    "targets": [str(target)],
                    "uptodate": [_no_harness_error(target)],
                    "clean": [(_remove, [target.parent])],
                }

    def gate_tasks(self) -> Iterator[Task]:
        for name in registry.GATES:
            yield {"basename": name, "name": None, "doc": registry.GATES[name].doc}
        # What a gate's verdict depends on besides its cells: its code and its config.
        signature = {
            (case.id, gate_name): {
                "code": codehash.of_modules(gate_name, "gate", "result", "diagnostics", "lanes"),
                "templates": codehash.of_templates(),
                "config": case.gate_config(gate_name).model_dump(mode="json"),
                "limits": case.spec.limits.model_dump(mode="json"),
            }
            for case in self.cases.values()
            for gate_name in case.enabled_gates()
        }
        for row in self.rows:
            case = self.cases[row.case]
            key = self.tree_keys[row.id]
            stamp = self.layout.tree_stamp(key)
            for gate_name in case.enabled_gates():
                plan = self.plans[row.case, key, gate_name]
                target = self.layout.gate_result(row.case, row.name, gate_name)
                deps = [stamp] + [cell_result(self.layout, c.key) for c in plan.cells.values()]
                deps += [run_result(self.layout, r.key) for r in plan.runs.values()]
                yield {
                    "basename": gate_name,
                    "name": row.id,
                    "doc": f"{gate_name} on {row.id}",
                    "actions": [
                        _guarded(
                            target, _gate_error(gate_name), self._classify, row, gate_name, target
                        )
                    ],
                    "file_dep": [str(d) for d in deps],
                    "targets": [str(target)],
                    "uptodate": [
                        config_changed(signature[case.id, gate_name]),
                        _no_harness_error(target),
                    ],
                    "clean": True,
                }

    def verdict_tasks(self) -> Iterator[Task]:
        yield {"basename": "verdict", "name": None, "doc": "fold a row's gates with its reference"}
        for row in self.rows:
            case = self.cases[row.case]
            ref, base = self.references[row.case]
            deps = {self.layout.tree_stamp(self.tree_keys[r.id]) for r in (row, ref, base) if r}
            for r in (row, ref, base):
                if r is not None:
                    deps.update(
                        self.layout.gate_result(r.case, r.name, g) for g in case.enabled_gates()
                    )
            target = self.layout.verdict(row.case, row.name)
            yield {
                "basename": "verdict",
                "name": row.id,
                "doc": f"verdict for {row.id}",
                "actions": [(self._fold_row, [row, target])],
                "file_dep": sorted(str(d) for d in deps),
                "targets": [str(target)],
                "uptodate": [
                    config_changed(
                        {
                            "identity": self.identity[row.case],
                            "row": [row.role, row.sha, row.source, row.model],
                            "expect": row.expect.model_dump(mode="json", by_alias=True)
                            if row.expect
                            else None,
                        }
                    )
                ],
                "clean": True,
            }

    def fold_tasks(self) -> Iterator[Task]:
        yield {"basename": "fold", "name": None, "doc": "collect one case's verdicts"}
        for case_id in self.cases:
            rows = self.rows_of[case_id]
            target = self.layout.fold(case_id)
            yield {
                "basename": "fold",
                "name": case_id,
                "doc": f"{len(rows)} verdicts of {case_id}",
                "actions": [(_fold_case, [rows, self.layout, target])],
                "file_dep": [str(self.layout.verdict(r.case, r.name)) for r in rows],
                "targets": [str(target)],
                "clean": True,
            }

    def grade_task(self) -> Task:
        return {
            "actions": [(self._grade, [])],
            "file_dep": [str(self.layout.fold(c)) for c in self.cases],
            "uptodate": [False],
            "verbosity": 2,
            "doc": "grade the case library (or a batch): table, verdicts.jsonl, exit status",
        }

    # ---- actions -------------------------------------------------------------------

    def _unique_cells(self) -> dict[str, tuple[CellSpec, Row]]:
        by_tree = {self.tree_keys[r.id]: r for r in reversed(self.rows)}
        cells: dict[str, tuple[CellSpec, Row]] = {}
        for (_, tree_key, _), plan in self.plans.items():
            for spec in plan.cells.values():
                cells.setdefault(spec.key, (spec, by_tree[tree_key]))
        return cells

    def _classify(self, row: Row, gate_name: str, target: Path) -> None:
        key = self.tree_keys[row.id]
        stamp = Stamp.load(self.layout.tree_stamp(key))
        plan = self.plans[row.case, key, gate_name]
        if not stamp.applied:
            GateResult(
                gate_name,
                "not_applicable",
                stamp.status,
                "not graded: the patch was stopped at intake",
            ).write(target)
            return
        outputs = Outputs(
            cells={
                n: CellResult.load(cell_result(self.layout, c.key)) for n, c in plan.cells.items()
            },
            runs={n: RunResult.load(run_result(self.layout, r.key)) for n, r in plan.runs.items()},
        )
        records = _records(row, gate_name, outputs)
        broken = [c.label for c in outputs.cells.values() if c.status == HARNESS_ERROR]
        broken += [r.label for r in outputs.runs.values() if r.status == HARNESS_ERROR]
        if broken:
            result = GateResult(
                gate_name,
                "incomplete",
                HARNESS_ERROR,
                f"{broken[0]}: harness error (see its result.json)",
            )
        else:
            result = registry.GATES[gate_name].classify(self._ctx(row), plan, outputs)
        # A gate's own record lines (e.g. one per header probed) get the row's name too.
        result.cells[:] = [f"{row.id} {gate_name} {line}" for line in result.cells] + records
        # Evidence paths are relative to the build folder, so a row can be replayed from them.
        result.evidence.extend(
            str(self.layout.cell(c.key).relative_to(self.layout.root)) for c in plan.cells.values()
        )
        result.evidence.extend(
            str(self.layout.run(r.key).relative_to(self.layout.root)) for r in plan.runs.values()
        )
        result.write(target)

    def _fold_row(self, row: Row, target: Path) -> None:
        case = self.cases[row.case]
        gates = case.enabled_gates()

        def results_of(r: Row) -> tuple[Stamp, dict[str, GateResult]]:
            stamp = Stamp.load(self.layout.tree_stamp(self.tree_keys[r.id]))
            return stamp, {
                g: GateResult.load(self.layout.gate_result(r.case, r.name, g)) for g in gates
            }

        ref_row, base_row = self.references[row.case]
        ref_stamp, ref_results = results_of(ref_row)
        base_stamp, base_results = results_of(base_row) if base_row else (None, None)
        broken = reference_problems(
            gates, Reference(ref_stamp, ref_results, base_stamp, base_results)
        )
        stamp, results = results_of(row)
        fold(row, stamp, results, broken, self.identity[row.case]).write(target)

    def _grade(self) -> Any:
        verdicts: list[Verdict] = []
        for case_id in self.cases:
            data = json.loads(self.layout.fold(case_id).read_text())
            verdicts += [Verdict.from_json(v) for v in data]
        return report.grade(
            verdicts,
            self.orphans,
            self.errors,
            self.layout,
            registry_order=list(registry.GATES),
            report_only=self.settings.report_only,
        )


def _records(row: Row, gate: str, outputs: Outputs) -> list[str]:
    lines = []
    for name, cell in outputs.cells.items():
        lines.append(
            f"{row.id} {gate} {name} {cell.kind} {cell.envelope} {cell.status}"
            f"{report.cell_note(cell)}"
        )
    for name, run in outputs.runs.items():
        lines.append(
            f"{row.id} {gate} {name} run {run.status} exit={run.exit} stdout={run.stdout_sha[:12]}"
        )
    return lines


def _fold_case(rows: list[Row], layout: Layout, target: Path) -> None:
    data = [json.loads(layout.verdict(r.case, r.name).read_text()) for r in rows]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data, sort_keys=True) + "\n")


def _guarded(
    target: Path, fallback: Callable[[str], dict[str, Any]], fn: Callable[..., Any], *args: Any
) -> tuple[Callable[[], None], list[Any]]:
    """Run fn; on an exception, write a harness_error result in place of its output."""

    def action() -> None:
        try:
            fn(*args)
        except Exception:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(fallback(traceback.format_exc()), indent=1) + "\n")

    return (action, [])


def _no_harness_error(target: Path) -> Callable[..., bool]:
    def check(task: Any, values: Any) -> bool:
        try:
            return bool(json.loads(target.read_text()).get("status") != HARNESS_ERROR)
        except (OSError, ValueError):
            return False

    return check


def _stamp_error(key: str) -> Callable[[str], dict[str, Any]]:
    return lambda tb: {
        "key": key,
        "status": HARNESS_ERROR,
        "detail": tb,
        "changed": [],
        "applied": False,
    }


def _cell_error(spec: CellSpec) -> Callable[[str], dict[str, Any]]:
    return lambda tb: {
        "key": spec.key,
        "kind": spec.kind,
        "label": spec.label,
        "status": HARNESS_ERROR,
        "detail": tb,
        "envelope": spec.envelope.name,
        "toolchain": spec.envelope.toolchain.name,
        "tree_root": "",
        "steps": [],
        "binary": None,
    }


def _run_error(spec: RunSpec) -> Callable[[str], dict[str, Any]]:
    return lambda tb: {
        "key": spec.key,
        "label": spec.label,
        "status": HARNESS_ERROR,
        "exit": None,
        "signal": None,
        "stdout_sha": "",
        "wall_seconds": 0.0,
        "cpu_seconds": 0.0,
        "max_rss_kib": 0,
        "stray_processes": False,
        "sandbox": tb,
        "argv": [],
        "stdout_path": "",
        "stderr_path": "",
    }


def _gate_error(gate: str) -> Callable[[str], dict[str, Any]]:
    return lambda tb: GateResult(
        gate, "incomplete", HARNESS_ERROR, tb.strip().splitlines()[-1], evidence=[tb]
    ).to_json()


def _mkdir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)


def _remove(*paths: Path) -> None:
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
