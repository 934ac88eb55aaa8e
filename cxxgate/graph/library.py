"""The case library as the grade sees it: settings from the command line, the cases that
loaded (and the input errors of those that did not), the rows to grade, their tree keys,
and every gate's plan for every row. Loading never compiles or runs anything.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path

import yaml

from cxxgate.contract import registry
from cxxgate.contract.gate import Context, Plan
from cxxgate.library import identity, prompt
from cxxgate.library.case import Case, load_case
from cxxgate.library.rows import Orphan, Row, batch_rows, case_rows
from cxxgate.library.settings import Settings
from cxxgate.results import faults
from cxxgate.store import codehash, outdir
from cxxgate.store.layout import Layout
from cxxgate.toolchain.envelope import Envelopes
from cxxgate.util.yamlfile import InputError


class Library:
    """Loaded once per doit invocation, before any task runs."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.layout = Layout(settings.out)
        self.lock = outdir.claim(settings.out)  # writable, and ours alone until we exit
        self.errors: list[str] = []  # input errors: named in the table, fail the grade
        self.cases: dict[str, Case] = {}
        self.rows: list[Row] = []
        self.orphans: list[Orphan] = []
        self.tree_keys: dict[str, str] = {}  # row id -> tree key
        # (case, tree key, gate) -> plan. Two cases may share a tree (same base, same patch)
        # but not a plan: the plan follows each case's own configuration.
        self.plans: dict[tuple[str, str, str], Plan] = {}
        self.identity: dict[str, dict[str, object]] = {}  # what each row of a case carries
        self.pins: dict[str, identity.Pins] = {}  # every case that loaded, graded or not
        self.prompts: dict[str, prompt.Rendered] = {}
        self.unpinned: list[str] = []  # cases not graded: pins moved, or no prompt rendered
        self.elsewhere: set[str] = set()  # cases another shard grades (shard=I/N)
        self.rows_of: dict[str, list[Row]] = {}
        self.references: dict[str, tuple[Row, Row | None]] = {}  # reference row, base row
        # The batch as a shard saw it (merge.py compares them); empty when loading stopped.
        self.manifest: dict[str, object] = {}
        try:
            self._load()
        except OSError as exc:
            if faults.disk_full(exc):  # a batch stores its patches under out= as it loads
                raise SystemExit(f"out={settings.out}: no space left on device: {exc}") from None
            raise

    def _load(self) -> None:
        lib = self.settings.library
        try:
            # A toolchain prefix must not hold the oracles or the build outputs.
            self.envelopes = Envelopes(
                self.settings.envelopes,
                protect=(lib, self.settings.out),
                optional=self.settings.envelopes == lib / "envelopes.yaml",
            )
        except InputError as exc:
            self.errors.append(str(exc))
            return
        if not lib.is_dir():
            self.errors.append(f"{lib}: the case library folder does not exist")
            return
        dirs = sorted(p for p in lib.iterdir() if p.is_dir())
        for name in sorted(self.settings.only - {d.name for d in dirs}):
            self.errors.append(f"case={name}: no such case in {lib}")
        if self.settings.only:
            dirs = [d for d in dirs if d.name in self.settings.only]
        self.manifest = self._manifest(dirs)
        if self.settings.shard is not None:
            # By case, in a fixed order: a case's reference and candidates share cells.
            index, count = self.settings.shard
            self.elsewhere = {d.name for k, d in enumerate(dirs) if k % count != index - 1}
            dirs = [d for d in dirs if d.name not in self.elsewhere]
        for case_dir in dirs:
            if not (case_dir / "case.yaml").exists():
                self.errors.append(f"{case_dir}: a folder in the case library without case.yaml")
                continue
            try:
                case = load_case(case_dir, registry.gates(), self.layout.root / "repos")
                rows = case_rows(case, with_known=self.settings.batch is None)
                self._plan_rows(case, rows[:2])  # reference state first: its errors are the case's
            except InputError as exc:
                self.errors.append(str(exc))
                continue
            except Exception as exc:  # one case's fault must not drop the rest
                self.errors.append(
                    f"{case_dir / 'case.yaml'}: could not be loaded, a harness fault "
                    f"({type(exc).__name__}: {exc})"
                )
                continue
            self.cases[case.id] = case
            self.rows += rows
        if self.settings.batch is not None:
            try:
                batch, orphans = batch_rows(self.settings.batch, self.cases, self.layout)
                self.orphans = [o for o in orphans if o.case not in self.elsewhere]
            except OSError as exc:
                self.errors.append(f"patches={self.settings.batch}: cannot read: {exc}")
                batch = []
            self.rows += batch
        self.rows_of = {c: [] for c in self.cases}
        for row in self.rows:
            self.rows_of[row.case].append(row)
        try:
            locked = identity.read(lib)
        except (OSError, ValueError, yaml.YAMLError) as exc:
            self.errors.append(f"{lib / identity.FILE}: cannot read: {exc}")
            # Fail closed: nothing is graded against an unreadable lock.
            locked = identity.Lock({}, {})
        for case in list(self.cases.values()):
            rows = self.rows_of[case.id]
            try:
                plans = self._plan_rows(case, rows)
                problems = self._pin(case, plans, locked)
            except (InputError, prompt.PromptError) as exc:
                problems = [str(exc)]
            if problems:
                self.errors += problems
                self.unpinned.append(case.id)
                del self.cases[case.id], self.rows_of[case.id]
                continue
            self.plans.update(plans)
            base = next((r for r in rows if r.role == "base"), None)
            self.references[case.id] = (rows[0], base)  # case_rows puts the reference first
        self.rows = [r for r in self.rows if r.case in self.cases]

    def _manifest(self, dirs: list[Path]) -> dict[str, object]:
        """What the whole batch is, the same in every shard of it (cxxgate/batch/merge.py): each
        (case, patch name, patch sha) of the batch, whichever shard grades the case, the
        library's identity (its lock and case folders), the grader's code and N (the seed is
        added when the grade is written: a gate may draw it while grading)."""
        batch: list[list[str]] = []
        if self.settings.batch is not None:
            try:
                names = {d.name for d in dirs}
                rows, orphans = batch_rows(self.settings.batch, names, self.layout)
            except OSError:
                rows, orphans = [], []  # the load below names the error
            batch = sorted([r.case, r.name, r.sha] for r in rows)
            batch += sorted([o.case, o.name, o.klass] for o in orphans)
        lock_file = self.settings.library / identity.FILE
        # Every file of every case folder: a case's reference and known patches, oracles
        # and tree, whichever shard grades it.
        library = {
            "lock": codehash.of_text(lock_file.read_bytes()) if lock_file.is_file() else None,
            "cases": {d.name: _folder_digest(d) for d in dirs},
        }
        shard = self.settings.shard
        return {
            "batch": batch,
            "library": codehash.of_text(json.dumps(library, sort_keys=True)),
            "grader": codehash.of_package(),
            "n": shard[1] if shard else 1,
        }

    def _pin(
        self,
        case: Case,
        plans: dict[tuple[str, str, str], Plan],
        locked: identity.Lock | None,
    ) -> list[str]:
        """Render the case's prompt, pin its identity, and say how it moved from the lock."""
        # The batch seed, when one is set or the build folder has one (never made here).
        seed = self.settings.seed_used()
        rendered = prompt.render(case, "" if seed is None else str(seed))
        if rendered is not None:
            self.prompts[case.id] = rendered
        envelopes = {s.envelope.name: s.envelope for p in plans.values() for s in p.cells.values()}
        pins = identity.pins(
            case, rendered.text if rendered else None, _gate_files(), envelopes.values()
        )
        self.pins[case.id] = pins
        self.identity[case.id] = pins.stamp(locked=locked is not None)
        if locked is None:
            return []
        where = self.settings.library / identity.FILE
        moved = identity.moved(case.id, locked, pins)
        return [f"{where}: {line}; `doit freeze` re-pins on purpose" for line in moved]

    def _plan_rows(self, case: Case, rows: list[Row]) -> dict[tuple[str, str, str], Plan]:
        """Every gate's plan for these rows; all or nothing, so a case whose config fails
        in one gate leaves no half-planned tasks behind."""
        for row in rows:
            intake = [case.tree_digest, case.spec.writable, row.sha]
            intake += ["allow_diagnostic_pragmas"] if case.spec.allow_diagnostic_pragmas else []
            blob = json.dumps(intake)
            self.tree_keys[row.id] = codehash.of_text(blob)[:24]
        plans: dict[tuple[str, str, str], Plan] = {}
        for row in rows:
            ctx = self._context(case, self.tree_keys[row.id])
            for gate_name in case.enabled_gates():
                if (case.id, ctx.tree_key, gate_name) not in plans:
                    plans[case.id, ctx.tree_key, gate_name] = registry.gates()[gate_name].plan(ctx)
        return plans

    def context(self, row: Row) -> Context:
        return self._context(self.cases[row.case], self.tree_keys[row.id])

    def _context(self, case: Case, tree_key: str) -> Context:
        reference = self.tree_keys[f"{case.id}/reference"]
        base = self.tree_keys.get(f"{case.id}/base", reference)  # a bug-fix case's base row
        return Context(case, tree_key, self.envelopes, reference, self._seed, base)

    def _seed(self) -> int:
        return self.settings.seed


@cache
def _gate_files() -> dict[str, list[Path]]:
    """The source files behind each registered gate's code hash."""
    return {
        name: codehash.module_and_sibling_files(gate.classify.__module__)
        for name, gate in registry.gates().items()
    }


def _folder_digest(folder: Path) -> str:
    """sha256 over a folder's files (paths and bytes), links named, never followed."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix().encode() + b"\0"
        if path.is_symlink():
            h.update(rel + b"link:" + str(path.readlink()).encode() + b"\0")
        elif path.is_file():
            h.update(rel + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()
