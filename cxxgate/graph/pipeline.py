"""The doit task graph: cases x patches -> trees -> cells/runs -> gate results -> verdicts
-> per-case folds -> grade. dodo.py asks this module for each kind of task.

Every action that can meet a broken harness is wrapped by cxxgate/verdicts/guard.py, so one fault
never loses the rest of a batch. doit does not hash actions: what shapes a result (code,
configuration, keys) enters each task through its name, file_dep or config_changed.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from doit.exceptions import TaskFailed
from doit.tools import config_changed

from cxxgate.batch import merge
from cxxgate.cells import preprocessed
from cxxgate.cells.cell import build as build_cell
from cxxgate.contract import registry
from cxxgate.contract.gate import Outputs
from cxxgate.graph.library import Library
from cxxgate.graph.progress import GradeProgress
from cxxgate.intake.tree import Stamp, materialise
from cxxgate.library import lock
from cxxgate.library.rows import Orphan, Row
from cxxgate.library.settings import new_seed, read_seed, write_seed
from cxxgate.reports import report
from cxxgate.results.faults import stops_on_full_disk
from cxxgate.results.result import HARNESS_ERROR, PREMAIN_HOOK, GateResult
from cxxgate.runs.run import RunResult
from cxxgate.runs.run import execute as execute_run
from cxxgate.runs.run import result_path as run_result
from cxxgate.runs.scan import ScanResult, error_result
from cxxgate.runs.scan import execute as execute_scan
from cxxgate.runs.scan import result_path as scan_result
from cxxgate.store import codehash, history, prune
from cxxgate.store.layout import Layout
from cxxgate.toolchain.cellspec import CellResult, CellSpec
from cxxgate.toolchain.cellspec import result_path as cell_result
from cxxgate.util import atomic
from cxxgate.util.yamlfile import InputError
from cxxgate.verdicts.evidence import Evidence
from cxxgate.verdicts.guard import (
    cell_error,
    gate_error,
    guarded,
    no_harness_error,
    run_error,
    stamp_error,
    whole_json,
)
from cxxgate.verdicts.verdict import Reference, Verdict, fold, reference_problems

Task = dict[str, Any]
DEFAULT_KEEP = 5  # grades `doit prune` keeps when not told keep=N


class Pipeline:
    """Task builders over a loaded library; each method yields one kind of task."""

    def __init__(self, library: Library) -> None:
        self.lib = library
        self.layout = library.layout

    # ---- tasks ---------------------------------------------------------------------

    def doit_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            "default_tasks": ["grade"],
            "backend": "sqlite3",
            "dep_file": str(self.layout.root / "doit.sqlite3"),
            "par_type": "thread",
            "continue": True,
            # A batch has thousands of tasks: a progress display, not a line per task.
            "reporter": GradeProgress,
        }
        if self.lib.settings.verbosity is not None:
            config["verbosity"] = self.lib.settings.verbosity  # as `doit -v N`
        return config

    def tree_tasks(self) -> Iterator[Task]:
        yield {"basename": "tree", "name": None, "doc": "apply each patch to its case's tree"}
        seen: set[str] = set()
        intake = codehash.of_modules("intake.tree", "intake.patchtext", "intake.pragmas")
        for row in self.lib.rows:
            key = self.lib.tree_keys[row.id]
            if key in seen:
                continue
            seen.add(key)
            case = self.lib.cases[row.case]
            stamp = self.layout.tree_stamp(key)
            yield {
                "basename": "tree",
                "name": row.id,
                "doc": f"{row.id}: {row.source}",
                "actions": [
                    guarded(
                        stamp,
                        stamp_error(key),
                        materialise,
                        case.tree,
                        row.file,
                        case.spec.writable,
                        key,
                        self.layout,
                        case.spec.allow_diagnostic_pragmas,
                    )
                ],
                "file_dep": [str(row.file)] if row.file else [],
                "targets": [str(stamp)],
                "uptodate": [
                    config_changed({"key": key, "code": intake}),
                    no_harness_error(stamp),
                ],
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
                    guarded(target, cell_error(spec), build_cell, spec, self.layout),
                ],
                # A cell that builds on other cells' products (a consumer on its archive,
                # a program on its tree's library objects) waits for their result files.
                "file_dep": [str(self.layout.tree_stamp(spec.tree_key))]
                + [str(cell_result(self.layout, k)) for k in spec.prerequisites],
                "targets": [str(target)],
                "uptodate": [no_harness_error(target)],
                "clean": [(_remove_cell, [self.layout, key])],
            }

    def run_tasks(self) -> Iterator[Task]:
        yield {"basename": "exec", "name": None, "doc": "execute a built binary, bounded"}
        seen: set[str] = set()
        for plan in self.lib.plans.values():
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
                        guarded(target, run_error(spec), execute_run, spec, self.layout),
                    ],
                    "file_dep": [str(cell_result(self.layout, k)) for k in spec.cell_keys],
                    "targets": [str(target)],
                    "uptodate": [no_harness_error(target)],
                    "clean": [(_remove, [target.parent])],
                }

    def scan_tasks(self) -> Iterator[Task]:
        yield {"basename": "scan", "name": None, "doc": "read a tree's sources (parse, inventory)"}
        seen: set[str] = set()
        for plan in self.lib.plans.values():
            for spec in plan.scans.values():
                if spec.key in seen:
                    continue
                seen.add(spec.key)
                target = scan_result(self.layout, spec.key)
                yield {
                    "basename": "scan",
                    "name": spec.key,
                    "doc": spec.label,
                    "actions": [
                        guarded(target, error_result(spec), execute_scan, spec, self.layout)
                    ],
                    "file_dep": [str(self.layout.tree_stamp(spec.tree_key)), *spec.inputs],
                    "targets": [str(target)],
                    "uptodate": [no_harness_error(target)],
                    "clean": [(_remove, [target.parent])],
                }

    def gate_tasks(self) -> Iterator[Task]:
        gates = registry.gates()
        for name, gate in gates.items():
            yield {"basename": name, "name": None, "doc": gate.doc}
        # What a gate's verdict depends on besides its cells: its code and its config.
        signature = {
            (case.id, gate_name): {
                "engine": codehash.of_modules(
                    "contract.gate", "results.result", "toolchain.diagnostics", "contract.program"
                ),
                "code": gates[gate_name].code,
                "templates": codehash.of_templates(),
                "config": case.gate_config(gate_name).model_dump(mode="json"),
                "limits": case.spec.limits.model_dump(mode="json"),
            }
            for case in self.lib.cases.values()
            for gate_name in case.enabled_gates()
        }
        for row in self.lib.rows:
            case = self.lib.cases[row.case]
            key = self.lib.tree_keys[row.id]
            stamp = self.layout.tree_stamp(key)
            for gate_name in case.enabled_gates():
                plan = self.lib.plans[row.case, key, gate_name]
                target = self.layout.gate_result(row.case, row.name, gate_name)
                deps = [stamp] + [cell_result(self.layout, c.key) for c in plan.cells.values()]
                deps += [run_result(self.layout, r.key) for r in plan.runs.values()]
                deps += [scan_result(self.layout, s.key) for s in plan.scans.values()]
                yield {
                    "basename": gate_name,
                    "name": row.id,
                    "doc": f"{gate_name} on {row.id}",
                    "actions": [
                        guarded(
                            target, gate_error(gate_name), self._classify, row, gate_name, target
                        )
                    ],
                    "file_dep": [str(d) for d in deps],
                    "targets": [str(target)],
                    "uptodate": [
                        config_changed(signature[case.id, gate_name]),
                        no_harness_error(target),
                    ],
                    "clean": True,
                }

    def verdict_tasks(self) -> Iterator[Task]:
        yield {"basename": "verdict", "name": None, "doc": "fold a row's gates with its reference"}
        for row in self.lib.rows:
            case = self.lib.cases[row.case]
            ref, base = self.lib.references[row.case]
            deps = {self.layout.tree_stamp(self.lib.tree_keys[r.id]) for r in (row, ref, base) if r}
            for r in (row, ref, base):
                if r is not None:
                    deps.update(
                        self.layout.gate_result(r.case, r.name, g) for g in case.enabled_gates()
                    )
                    # The cells' diagnostic-control records (cxxgate/cells/preprocessed.py).
                    deps.update(cell_result(self.layout, k) for k in self._tree_cells(r))
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
                            "identity": self.lib.identity[row.case],
                            "code": codehash.of_modules("verdicts.verdict", "cells.preprocessed"),
                            "row": [row.role, row.sha, row.source, row.model],
                            "expect": row.expect.model_dump(mode="json", by_alias=True)
                            if row.expect
                            else None,
                        }
                    ),
                    whole_json(target),
                ],
                "clean": True,
            }

    def fold_tasks(self) -> Iterator[Task]:
        yield {"basename": "fold", "name": None, "doc": "collect one case's verdicts"}
        for case_id in self.lib.cases:
            rows = self.lib.rows_of[case_id]
            target = self.layout.fold(case_id)
            yield {
                "basename": "fold",
                "name": case_id,
                "doc": f"{len(rows)} verdicts of {case_id}",
                "actions": [(_fold_case, [rows, self.layout, target])],
                "file_dep": [str(self.layout.verdict(r.case, r.name)) for r in rows],
                "targets": [str(target)],
                "uptodate": [whole_json(target)],
                "clean": True,
            }

    def grade_task(self) -> Task:
        return {
            "actions": [(self._grade, [])],
            "file_dep": [str(self.layout.fold(c)) for c in self.lib.cases],
            "uptodate": [False],
            "verbosity": 2,
            "doc": "grade the case library (or a batch): table, verdicts.jsonl, exit status",
        }

    def prompts_task(self) -> Task:
        prompts = self.lib.prompts
        return {
            "actions": [(self._write_prompts, [])],
            "targets": [str(self.layout.prompt(c)) for c in prompts],
            "uptodate": [config_changed({c: r.text for c, r in prompts.items()})],
            "verbosity": 2,
            "doc": "render every case's prompt.md.j2 into out/prompts/ (never an oracle)",
        }

    def freeze_task(self) -> Task:
        return {
            "actions": [(self._freeze, [])],
            "uptodate": [False],
            "verbosity": 2,
            "doc": "pin every case's identity in identity.lock; print what moved",
        }

    def merge_task(self) -> Task:
        return {
            "actions": [(self._merge, [])],
            "uptodate": [False],
            "verbosity": 2,
            "doc": "fold shard folders (from=DIR,DIR,...) into out=: verdicts, table, history",
        }

    def compare_task(self) -> Task:
        return {
            "actions": [(history.compare, [self.layout.history, self.lib.settings.across])],
            "uptodate": [False],
            "verbosity": 2,
            "doc": "what flipped since the previous grade of the same identity (across=1: any)",
        }

    def prune_task(self) -> Task:
        keep = self.lib.settings.keep or DEFAULT_KEEP

        def action() -> None:
            print(prune.prune(self.layout, keep).line())

        return {
            "actions": [action],
            "uptodate": [False],
            "verbosity": 2,
            "doc": f"delete what no grade of the last keep=N (default {DEFAULT_KEEP}) refers to",
        }

    def rotate_seed_task(self) -> Task:
        return {
            "actions": [(self._rotate_seed, [])],
            "uptodate": [False],
            "verbosity": 2,
            "doc": "write a new batch seed to <out>/seed (with seed=N: that one); "
            "run it between nightly batches",
        }

    # ---- actions -------------------------------------------------------------------

    def _write_prompts(self) -> TaskFailed | None:
        for case_id, rendered in self.lib.prompts.items():
            target = self.layout.prompt(case_id)
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_text(target, rendered.text)
            print(f"{case_id}: {target}")
        unrendered = [e for e in self.lib.errors if "prompt" in e]
        return TaskFailed("\n".join(unrendered)) if unrendered else None

    def _freeze(self) -> TaskFailed | None:
        library = self.lib.settings.library
        try:
            old = lock.read(library) or lock.Lock({}, {})
        except (OSError, ValueError, yaml.YAMLError):
            old = lock.Lock({}, {})  # an unreadable lock is replaced whole
        cases = dict(old.cases)
        grader_files = dict(old.grader_files)
        moved: list[str] = []
        for case_id, pins in sorted(self.lib.pins.items()):
            moved += lock.moved(case_id, old, pins)
            cases[case_id] = lock.entry(pins)
            grader_files.update(pins.grader_files)
        if not self.lib.settings.only:  # a case folder that is gone leaves the lock too
            present = {p.name for p in library.iterdir() if (p / "case.yaml").is_file()}
            for gone in sorted(cases.keys() - present):
                moved.append(f"{gone}: removed from the library")
                del cases[gone]
            used = {f for p in self.lib.pins.values() for f in p.grader_files}
            grader_files = {k: v for k, v in grader_files.items() if k in used}
        unpinned = [c for c in self.lib.unpinned if c not in self.lib.pins]
        for line in moved or [f"{library / lock.FILE}: no pin moved"]:
            print(line)
        if unpinned:
            return TaskFailed(
                f"cases that could not be pinned: {', '.join(unpinned)}\n"
                + "\n".join(self.lib.errors)
            )
        if moved and os.environ.get("CI") == "true" and not self.lib.settings.allow_bump:
            return TaskFailed(
                f"CI=true: refusing to re-pin {len(moved)} pin(s) in {library / lock.FILE}; "
                "a pin moves only on purpose: `doit freeze allow_bump=1`"
            )
        if moved:
            lock.write(
                library, lock.Lock(dict(sorted(cases.items())), dict(sorted(grader_files.items())))
            )
        return None

    def _rotate_seed(self) -> None:
        file = self.layout.seed
        try:
            old = str(read_seed(file)) if file.exists() else "none"
        except InputError:
            old = "unreadable"
        given = self.lib.settings.given_seed
        seed = given if given is not None else new_seed()
        write_seed(file, seed)
        print(f"seed of {self.layout.root}: {old} -> {seed}")

    def _caching(self, evidence_roots: tuple[Path, ...]) -> report.Caching:
        """Each planned cell's result by its record line's start, for cells.txt's ccache
        column (kept out of every stored result: a cell built again from the same inputs
        may hit where it missed, and its gate result must not change for that)."""
        evidence = Evidence(self.layout.root, *evidence_roots)
        rows_by_tree: dict[tuple[str, str], list[str]] = {}
        for row in self.lib.rows:
            rows_by_tree.setdefault((row.case, self.lib.tree_keys[row.id]), []).append(row.id)
        cells: dict[str, CellResult] = {}
        starts: dict[str, str] = {}
        for (case, tree_key, gate), plan in self.lib.plans.items():
            for name, spec in plan.cells.items():
                if spec.key not in cells:
                    found = evidence.cell(f"cells/{spec.key[:2]}/{spec.key}")
                    if found is None:
                        continue
                    cells[spec.key] = found
                for row_id in rows_by_tree.get((case, tree_key), []):
                    starts[f"{row_id} {gate} {name} {spec.kind} "] = spec.key
        return report.Caching(cells, starts)

    def _unique_cells(self) -> dict[str, tuple[CellSpec, Row]]:
        by_tree = {self.lib.tree_keys[r.id]: r for r in reversed(self.lib.rows)}
        cells: dict[str, tuple[CellSpec, Row]] = {}
        for (_, tree_key, _), plan in self.lib.plans.items():
            for spec in plan.cells.values():
                # The library objects a program links are a cell of their own (cell.py).
                for cell in (spec.objects_cell, spec):
                    if cell is not None:
                        cells.setdefault(cell.key, (cell, by_tree[tree_key]))
        return cells

    def _classify(self, row: Row, gate_name: str, target: Path) -> None:
        key = self.lib.tree_keys[row.id]
        stamp = Stamp.load(self.layout.tree_stamp(key))
        plan = self.lib.plans[row.case, key, gate_name]
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
            scans={
                n: ScanResult.load(scan_result(self.layout, s.key)) for n, s in plan.scans.items()
            },
        )
        records = _records(row, gate_name, outputs)
        broken = [c.label for c in outputs.cells.values() if c.status == HARNESS_ERROR]
        broken += [r.label for r in outputs.runs.values() if r.status == HARNESS_ERROR]
        broken += [s.label for s in outputs.scans.values() if s.status == HARNESS_ERROR]
        # A program refused at its link for code that runs before the harness's: one class
        # for every gate that planned it, whatever the gate would make of a missing binary.
        refused = [c for c in outputs.cells.values() if c.status == PREMAIN_HOOK]
        if broken:
            result = GateResult(
                gate_name,
                "incomplete",
                HARNESS_ERROR,
                f"{broken[0]}: harness error (see its result.json)",
            )
        elif refused:
            first = refused[0].detail.splitlines()[0] if refused[0].detail else ""
            more = f" (and {len(refused) - 1} more programs)" if len(refused) > 1 else ""
            result = GateResult(
                gate_name,
                "fail",
                PREMAIN_HOOK,
                f"{refused[0].label}: code that runs before the harness's: {first}{more}",
            )
        else:
            result = registry.gates()[gate_name].classify(self.lib.context(row), plan, outputs)
        # A gate's own record lines (e.g. one per header probed) get the row's name too.
        result.cells[:] = [f"{row.id} {gate_name} {line}" for line in result.cells] + records
        # Evidence paths are relative to the build folder, so a row can be replayed from them.
        result.evidence.extend(
            str(self.layout.cell(c.key).relative_to(self.layout.root)) for c in plan.cells.values()
        )
        result.evidence.extend(
            str(self.layout.run(r.key).relative_to(self.layout.root)) for r in plan.runs.values()
        )
        result.evidence.extend(
            str(self.layout.scan(s.key).relative_to(self.layout.root)) for s in plan.scans.values()
        )
        result.write(target)

    @stops_on_full_disk("verdict")
    def _fold_row(self, row: Row, target: Path) -> None:
        case = self.lib.cases[row.case]
        gates = case.enabled_gates()

        def results_of(r: Row) -> tuple[Stamp, dict[str, GateResult]]:
            stamp = Stamp.load(self.layout.tree_stamp(self.lib.tree_keys[r.id]))
            return stamp, {
                g: GateResult.load(self.layout.gate_result(r.case, r.name, g)) for g in gates
            }

        ref_row, base_row = self.lib.references[row.case]
        ref_stamp, ref_results = results_of(ref_row)
        base_stamp, base_results = results_of(base_row) if base_row else (None, None)
        broken = reference_problems(
            gates, Reference(ref_stamp, ref_results, base_stamp, base_results)
        )
        stamp, results = results_of(row)
        controls: list[str] = []
        judged = row.role in {"candidate", "known"} and not case.spec.allow_diagnostic_pragmas
        if stamp.applied and judged:
            reference = [self._controls(r) for r in (ref_row, base_row) if r is not None]
            controls = preprocessed.added(self._controls(row), reference)
        fold(row, stamp, results, broken, self.lib.identity[row.case], controls).write(target)

    def _tree_cells(self, row: Row) -> list[str]:
        """Keys of the cells the row's gates planned on its own tree (and their objects)."""
        key = self.lib.tree_keys[row.id]
        case = self.lib.cases[row.case]
        return [
            cell.key
            for gate in case.enabled_gates()
            for spec in self.lib.plans[row.case, key, gate].cells.values()
            for cell in (spec, spec.objects_cell)
            if cell is not None and cell.tree_key == key
        ]

    def _controls(self, row: Row) -> dict[tuple[str, str], list[preprocessed.Control]]:
        """What each unit compiled from the row's tree got of diagnostic control, from the
        cells' own records, following a linking cell to the object cells it linked."""
        todo, seen, cells = self._tree_cells(row), set[str](), []
        while todo:
            key = todo.pop()
            if key in seen:
                continue
            seen.add(key)
            path = cell_result(self.layout, key)
            if path.is_file():
                cells.append(CellResult.load(path))
                todo += cells[-1].parts
        return preprocessed.records(cells)

    @stops_on_full_disk("grade")
    def _grade(self) -> Any:
        verdicts: list[Verdict] = []
        for case_id in self.lib.cases:
            data = json.loads(self.layout.fold(case_id).read_text())
            verdicts += [Verdict.from_json(v) for v in data]
        shard = self.lib.settings.shard
        merge.write_inputs(
            self.layout,
            self.lib.orphans,
            self.lib.errors,
            self.lib.settings.report_only,
            shard,
            verdicts,
            {**self.lib.manifest, "seed": self.lib.settings.seed_used()},
        )
        return self._report(verdicts, self.lib.orphans, self.lib.errors)

    def _merge(self) -> TaskFailed | None:
        """`doit merge from=DIR,...`: fold shard build folders into this one's outputs."""
        try:
            verdicts, orphans, errors = merge.read(self.lib.settings.merge_from)
        except merge.MergeError as exc:
            return TaskFailed(str(exc))
        return self._report(verdicts, orphans, errors, self.lib.settings.merge_from)

    def _report(
        self,
        verdicts: list[Verdict],
        orphans: list[Orphan],
        errors: list[str],
        evidence_roots: tuple[Path, ...] = (),
    ) -> TaskFailed | None:
        before, flips = history.since_previous(self.layout.history, [v.to_json() for v in verdicts])
        failed = report.grade(
            verdicts,
            orphans,
            errors,
            self.layout,
            registry_order=list(registry.gates()),
            report_only=self.lib.settings.report_only,
            flips=flips,
            evidence_roots=evidence_roots,
            caching=self._caching(evidence_roots),
            full_table=self.lib.settings.table or self.lib.settings.verbosity == 2,
        )
        rows = [json.loads(line) for line in self.layout.verdicts.read_text().splitlines()]
        seed = self.lib.settings.seed_used()
        grade = history.record(
            self.layout.history,
            rows,
            exit_status=1 if failed else 0,
            seed="" if seed is None else str(seed),
        )
        for line in history.summary(grade, before, flips):
            print(line)
        if self.lib.settings.keep:
            print(prune.prune(self.layout, self.lib.settings.keep).line())
        return failed


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


@stops_on_full_disk("fold")
def _fold_case(rows: list[Row], layout: Layout, target: Path) -> None:
    data = [json.loads(layout.verdict(r.case, r.name).read_text()) for r in rows]
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(target, json.dumps(data, sort_keys=True) + "\n")


@stops_on_full_disk("mkdir")
def _mkdir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)


def _remove_cell(layout: Layout, key: str) -> None:
    """`doit clean` of a cell: its folder and the object cells it linked."""
    try:
        parts = CellResult.load(cell_result(layout, key)).parts
    except (OSError, ValueError, TypeError):
        parts = []
    _remove(layout.cell(key), *(layout.cell(k) for k in parts))


def _remove(*paths: Path) -> None:
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
