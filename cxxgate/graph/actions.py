"""The actions the task graph (cxxgate/graph/pipeline.py) runs: each stage's body, and the
side commands' (prompts, freeze, merge, rotate_seed). A task declaration names one of these
with its arguments; what shapes its result enters the task's key there, not here.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import yaml
from doit.exceptions import TaskFailed

from cxxgate.batch import merge
from cxxgate.cells import preprocessed
from cxxgate.contract import registry
from cxxgate.contract.gate import Outputs
from cxxgate.graph.library import Library
from cxxgate.intake.tree import Stamp
from cxxgate.library import identity
from cxxgate.library.rows import Orphan, Row
from cxxgate.library.settings import new_seed, read_seed, write_seed
from cxxgate.reports import report
from cxxgate.results.faults import stops_on_full_disk
from cxxgate.results.result import HARNESS_ERROR, PREMAIN_HOOK, GateResult
from cxxgate.runs.run import RunResult
from cxxgate.runs.run import result_path as run_result
from cxxgate.runs.scan import ScanResult
from cxxgate.runs.scan import result_path as scan_result
from cxxgate.store import history, prune
from cxxgate.store.layout import Layout
from cxxgate.toolchain.cellspec import CellResult
from cxxgate.toolchain.cellspec import result_path as cell_result
from cxxgate.util import atomic
from cxxgate.util.yamlfile import InputError
from cxxgate.verdicts.evidence import Evidence
from cxxgate.verdicts.verdict import Reference, Verdict, fold, reference_problems

DEFAULT_KEEP = 5  # grades `doit prune` keeps when not told keep=N


class Actions:
    """What the tasks of one loaded library run."""

    def __init__(self, library: Library) -> None:
        self.lib = library
        self.layout = library.layout

    def write_prompts(self) -> TaskFailed | None:
        for case_id, rendered in self.lib.prompts.items():
            target = self.layout.prompt(case_id)
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_text(target, rendered.text)
            print(f"{case_id}: {target}")
        unrendered = [e for e in self.lib.errors if "prompt" in e]
        return TaskFailed("\n".join(unrendered)) if unrendered else None

    def freeze(self) -> TaskFailed | None:
        library = self.lib.settings.library
        try:
            old = identity.read(library) or identity.Lock({}, {})
        except (OSError, ValueError, yaml.YAMLError):
            old = identity.Lock({}, {})  # an unreadable lock is replaced whole
        cases = dict(old.cases)
        grader_files = dict(old.grader_files)
        moved: list[str] = []
        for case_id, pins in sorted(self.lib.pins.items()):
            moved += identity.moved(case_id, old, pins)
            cases[case_id] = identity.entry(pins)
            grader_files.update(pins.grader_files)
        if not self.lib.settings.only:  # a case folder that is gone leaves the lock too
            present = {p.name for p in library.iterdir() if (p / "case.yaml").is_file()}
            for gone in sorted(cases.keys() - present):
                moved.append(f"{gone}: removed from the library")
                del cases[gone]
            used = {f for p in self.lib.pins.values() for f in p.grader_files}
            grader_files = {k: v for k, v in grader_files.items() if k in used}
        unpinned = [c for c in self.lib.unpinned if c not in self.lib.pins]
        for line in moved or [f"{library / identity.FILE}: no pin moved"]:
            print(line)
        if unpinned:
            return TaskFailed(
                f"cases that could not be pinned: {', '.join(unpinned)}\n"
                + "\n".join(self.lib.errors)
            )
        if moved and os.environ.get("CI") == "true" and not self.lib.settings.allow_bump:
            return TaskFailed(
                f"CI=true: refusing to re-pin {len(moved)} pin(s) in {library / identity.FILE}; "
                "a pin moves only on purpose: `doit freeze allow_bump=1`"
            )
        if moved:
            identity.write(
                library,
                identity.Lock(dict(sorted(cases.items())), dict(sorted(grader_files.items()))),
            )
        return None

    def rotate_seed(self) -> None:
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

    def classify(self, row: Row, gate_name: str, target: Path) -> None:
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
        # A scan over stored cells or runs (gcov over a run's counts) is shown through them.
        result.evidence.extend(
            str(self.layout.scan(s.key).relative_to(self.layout.root))
            for s in plan.scans.values()
            if not (s.cells or s.runs)
        )
        result.write(target)

    @stops_on_full_disk("verdict")
    def fold_row(self, row: Row, target: Path) -> None:
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

    def tree_cells(self, row: Row) -> list[str]:
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
        todo, seen, cells = self.tree_cells(row), set[str](), []
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
    def grade(self) -> Any:
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

    def merge(self) -> TaskFailed | None:
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
def fold_case(rows: list[Row], layout: Layout, target: Path) -> None:
    data = [json.loads(layout.verdict(r.case, r.name).read_text()) for r in rows]
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(target, json.dumps(data, sort_keys=True) + "\n")


@stops_on_full_disk("mkdir")
def mkdir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)


def remove_cell(layout: Layout, key: str) -> None:
    """`doit clean` of a cell: its folder and the object cells it linked."""
    try:
        parts = CellResult.load(cell_result(layout, key)).parts
    except (OSError, ValueError, TypeError):
        parts = []
    remove(layout.cell(key), *(layout.cell(k) for k in parts))


def remove(*paths: Path) -> None:
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
