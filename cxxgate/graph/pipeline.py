"""The doit task graph: cases x patches -> trees -> cells/runs -> gate results -> verdicts
-> per-case folds -> grade. dodo.py asks this module for each kind of task; what each task
runs is in cxxgate/graph/actions.py.

Every action that can meet a broken harness is wrapped by
cxxgate/verdicts/harness_error.py, so one fault never loses the rest of a batch. doit does
not hash actions: what shapes a result (code, configuration, keys) enters each task
through its name, file_dep or config_changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from doit.tools import config_changed

from cxxgate.cells.cell import build as build_cell
from cxxgate.contract import registry
from cxxgate.graph import actions
from cxxgate.graph.actions import DEFAULT_KEEP, Actions
from cxxgate.graph.library import Library
from cxxgate.graph.progress import GradeProgress
from cxxgate.intake.tree import materialise
from cxxgate.library.rows import Row
from cxxgate.runs.run import execute as execute_run
from cxxgate.runs.run import result_path as run_result
from cxxgate.runs.scan import error_result, result_files
from cxxgate.runs.scan import execute as execute_scan
from cxxgate.runs.scan import result_path as scan_result
from cxxgate.store import codehash, history, prune
from cxxgate.toolchain.cellspec import CellSpec
from cxxgate.toolchain.cellspec import result_path as cell_result
from cxxgate.verdicts.harness_error import (
    cell_error,
    gate_error,
    guarded,
    run_error,
    settled,
    stamp_error,
    whole_json,
)

Task = dict[str, Any]


class Pipeline:
    """Task builders over a loaded library; each method yields one kind of task."""

    def __init__(self, library: Library) -> None:
        self.lib = library
        self.layout = library.layout
        self.actions = Actions(library)

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
                    settled(stamp),
                ],
                "clean": [(actions.remove, [self.layout.tree(key), stamp])],
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
                    (actions.mkdir, [target.parent]),
                    guarded(target, cell_error(spec), build_cell, spec, self.layout),
                ],
                # A cell that builds on other cells' products (a consumer on its archive,
                # a program on its tree's library objects) waits for their result files.
                "file_dep": [str(self.layout.tree_stamp(spec.tree_key))]
                + [str(cell_result(self.layout, k)) for k in spec.prerequisites],
                "targets": [str(target)],
                "uptodate": [settled(target)],
                "clean": [(actions.remove_cell, [self.layout, key])],
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
                        (actions.mkdir, [target.parent]),
                        guarded(target, run_error(spec), execute_run, spec, self.layout),
                    ],
                    "file_dep": [str(cell_result(self.layout, k)) for k in spec.cell_keys],
                    "targets": [str(target)],
                    "uptodate": [settled(target)],
                    "clean": [(actions.remove, [target.parent])],
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
                    "file_dep": [
                        str(self.layout.tree_stamp(spec.tree_key)),
                        *spec.inputs,
                        *(str(p) for p in result_files(spec, self.layout).values()),
                    ],
                    "targets": [str(target)],
                    "uptodate": [settled(target)],
                    "clean": [(actions.remove, [target.parent])],
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
                # Only the templates this gate renders (its own folder): a template change
                # re-keys the gates that render it.
                "templates": codehash.of_templates(gates[gate_name].template_folder),
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
                            target,
                            gate_error(gate_name),
                            self.actions.classify,
                            row,
                            gate_name,
                            target,
                        )
                    ],
                    "file_dep": [str(d) for d in deps],
                    "targets": [str(target)],
                    "uptodate": [
                        config_changed(signature[case.id, gate_name]),
                        settled(target),
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
                    deps.update(cell_result(self.layout, k) for k in self.actions.tree_cells(r))
            target = self.layout.verdict(row.case, row.name)
            yield {
                "basename": "verdict",
                "name": row.id,
                "doc": f"verdict for {row.id}",
                "actions": [(self.actions.fold_row, [row, target])],
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
                "actions": [(actions.fold_case, [rows, self.layout, target])],
                "file_dep": [str(self.layout.verdict(r.case, r.name)) for r in rows],
                "targets": [str(target)],
                "uptodate": [whole_json(target)],
                "clean": True,
            }

    def grade_task(self) -> Task:
        return {
            "actions": [(self.actions.grade, [])],
            "file_dep": [str(self.layout.fold(c)) for c in self.lib.cases],
            "uptodate": [False],
            "verbosity": 2,
            "doc": "grade the case library (or a batch): table, verdicts.jsonl, exit status",
        }

    def prompts_task(self) -> Task:
        prompts = self.lib.prompts
        return {
            "actions": [(self.actions.write_prompts, [])],
            "targets": [str(self.layout.prompt(c)) for c in prompts],
            "uptodate": [config_changed({c: r.text for c, r in prompts.items()})],
            "verbosity": 2,
            "doc": "render every case's prompt.md.j2 into out/prompts/ (never an oracle)",
        }

    def freeze_task(self) -> Task:
        return {
            "actions": [(self.actions.freeze, [])],
            "uptodate": [False],
            "verbosity": 2,
            "doc": "pin every case's identity in identity.lock; print what moved",
        }

    def merge_task(self) -> Task:
        return {
            "actions": [(self.actions.merge, [])],
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
            "actions": [(self.actions.rotate_seed, [])],
            "uptodate": [False],
            "verbosity": 2,
            "doc": "write a new batch seed to <out>/seed (with seed=N: that one); "
            "run it between nightly batches",
        }

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
