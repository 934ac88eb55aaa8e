"""The naive loop the seeds' listings describe, on a cxxgate case library and batch: for
every row (each case's reference state and every candidate), for every gate the case
enables, apply the patch into a fresh folder, compile with g++ everything that gate
needs, and run what it runs. No cache, no sharing across gates or candidates: a gate that
compares with the reference builds and runs the reference again, in its own folder.

What "everything that gate needs" is comes from cxxgate's own planner (the same units,
library sources, envelopes' flags, runs, stdin, arguments, limits), so both sides do the
same kind of work; only the execution is naive. Compiles call the compiler directly
(no sandbox, no JSON diagnostics, no prefix maps, no harness entry); runs go through
cxxgate/host/process.py `bounded` with the case's caps, because shipped patches fork, spin
and flood. The source gates' scans (tree-sitter, libclang, the census's preprocessor)
are not replayed: this loop is slower than a naive harness would be by that much less.
It classifies nothing.

    python bench/naive_loop.py cases=DIR patches=DIR [jobs=2] [json=FILE]
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from benchlib import PROJECT

sys.path.insert(0, str(PROJECT))

from cxxgate.contract.gate import Plan
from cxxgate.graph.library import Library
from cxxgate.host.process import bounded
from cxxgate.library.rows import Row
from cxxgate.library.settings import Settings
from cxxgate.runs.run import RunSpec
from cxxgate.toolchain.cellspec import CellSpec

CXX = (".cpp", ".cc", ".cxx", ".c++")
SEED = 12345  # the metamorphic gate's relation run needs one; any fixed value


@dataclass
class Tally:
    """What the loop did; summed over jobs under a lock."""

    jobs: int = 0
    tool_calls: int = 0  # every compiler, ar, abidiff process
    compiles: int = 0  # of which compiles (-c / -fsyntax-only), as cxxgate's "compile" phase
    tool_seconds: float = 0.0
    runs: int = 0  # executions of built binaries
    run_seconds: float = 0.0
    trees: int = 0  # patched folders made
    not_applied: int = 0
    by_gate: Counter[str] = field(default_factory=Counter)  # tool calls per gate
    by_case: Counter[str] = field(default_factory=Counter)  # tool calls per case
    seconds_by_case: dict[str, float] = field(default_factory=dict)  # tool + run seconds
    slowest: list[tuple[float, str]] = field(default_factory=list)  # the slowest tool calls
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def spent(self, case: str, seconds: float) -> None:
        self.seconds_by_case[case] = self.seconds_by_case.get(case, 0.0) + seconds

    def add(self, other: Tally) -> None:
        with self.lock:
            self.jobs += other.jobs
            self.tool_calls += other.tool_calls
            self.compiles += other.compiles
            self.tool_seconds += other.tool_seconds
            self.runs += other.runs
            self.run_seconds += other.run_seconds
            self.trees += other.trees
            self.not_applied += other.not_applied
            self.by_gate.update(other.by_gate)
            self.by_case.update(other.by_case)
            for case, seconds in other.seconds_by_case.items():
                self.spent(case, seconds)
            self.slowest = sorted(self.slowest + other.slowest, reverse=True)[:10]


class Job:
    """One (row, gate): a folder of its own, deleted at the end."""

    def __init__(self, lib: NaiveLibrary, row: Row, gate: str, plan: Plan, root: Path) -> None:
        self.lib, self.row, self.gate, self.plan, self.root = lib, row, gate, plan, root
        self.tally = Tally(jobs=1)
        self.trees: dict[str, Path | None] = {}
        self.products: dict[str, Path] = {}

    def tool(self, argv: list[str], cwd: Path, *, compile_: bool, timeout: float) -> bool:
        start = time.perf_counter()
        try:
            proc = subprocess.run(argv, cwd=cwd, capture_output=True, timeout=timeout, check=False)
            ok = proc.returncode == 0
        except subprocess.TimeoutExpired:
            ok = False
        took = time.perf_counter() - start
        self.tally.tool_seconds += took
        self.tally.spent(self.row.case, took)
        where = f"{self.row.id} {self.gate}: {Path(argv[0]).name} ... {argv[-1]}"
        self.tally.slowest = sorted([*self.tally.slowest, (round(took, 2), where)])[-10:]
        self.tally.tool_calls += 1
        self.tally.compiles += compile_
        self.tally.by_gate[self.gate] += 1
        self.tally.by_case[self.row.case] += 1
        return ok

    def tree(self, tree_key: str) -> Path | None:
        """The base tree with the patch of the row that owns tree_key, applied afresh."""
        if tree_key in self.trees:
            return self.trees[tree_key]
        row = self.lib.row_of_tree[tree_key]
        case = self.lib.cases[row.case]
        dest = self.root / f"tree{len(self.trees)}"
        shutil.copytree(case.dir / "tree", dest, symlinks=True)
        self.tally.trees += 1
        applied: Path | None = dest
        if row.file is not None:
            proc = subprocess.run(
                ["git", "apply", "--whitespace=nowarn", str(row.file)],
                cwd=dest,
                capture_output=True,
                check=False,
            )
            if proc.returncode != 0:
                self.tally.not_applied += 1
                applied = None
        self.trees[tree_key] = applied
        return applied

    def run(self) -> Tally:
        cells = {spec.key: spec for spec in self.plan.cells.values()}
        for key in _ordered(cells):
            self.build(cells[key])
        seen = set()
        for spec in self.plan.runs.values():
            if spec.key not in seen:
                seen.add(spec.key)
                self.execute(spec)
        return self.tally

    def build(self, spec: CellSpec) -> None:
        tree = self.tree(spec.tree_key)
        env = spec.envelope
        cc = env.toolchain.path
        if tree is None or cc is None:
            return
        out = self.root / f"cell-{spec.key}"
        out.mkdir()
        for unit in spec.units:
            (out / unit.name).write_text(unit.text)
        base = [cc, f"-std={env.std}", *env.flags, *(f"-D{d}" for d in env.defines)]
        base += [f"-I{tree / inc}" for inc in spec.include_dirs]
        limit = spec.compile_seconds
        units = [u.name for u in spec.units if u.name.endswith(CXX)]
        sources = units + _resolve(tree, spec.tree_sources)

        def compile_all(extra: list[str], objects: bool) -> list[str] | None:
            made = []
            for i, src in enumerate(sources):
                tail = ["-c", src, "-o", f"tu{i}.o"] if objects else ["-fsyntax-only", src]
                if not self.tool([*base, *extra, *tail], out, compile_=True, timeout=limit):
                    return None
                made.append(f"tu{i}.o")
            return made

        link = [cc, *env.flags, *env.link_flags]
        if spec.kind == "syntax":
            compile_all([], objects=False)
        elif spec.kind == "exe":
            objs = compile_all([], objects=True)
            if objs and self.tool(
                [*link, *objs, "-o", "a.out"], out, compile_=False, timeout=limit
            ):
                self.products[spec.key] = out / "a.out"
        elif spec.kind == "archive":
            objs = compile_all(list(spec.extra_flags), objects=True)
            lib = f"lib{spec.product}.a"
            if objs and self.tool(["ar", "rcs", lib, *objs], out, compile_=False, timeout=limit):
                self.products[spec.key] = out / lib
        elif spec.kind == "shared":
            objs = compile_all(list(spec.extra_flags), objects=True)
            lib = f"lib{spec.product}.so"
            argv = [*link, "-shared", *spec.link_args, *(objs or []), "-o", lib]
            if objs and self.tool(argv, out, compile_=False, timeout=limit):
                self.products[spec.key] = out / lib
        elif spec.kind == "consumer":
            self.consumer(spec, tree, out, base, link)
        elif spec.kind == "abidiff":
            old, new = (self.products.get(k) for k in spec.needs[:2])
            if old and new and shutil.which("abidiff"):
                self.tool(["abidiff", str(old), str(new)], out, compile_=False, timeout=limit)

    def consumer(
        self, spec: CellSpec, tree: Path, out: Path, base: list[str], link: list[str]
    ) -> None:
        archive = self.products.get(spec.needs[0]) if spec.needs else None
        if archive is None:
            return
        (out / "include").mkdir()
        (out / "lib").mkdir()
        for tree_path, include in spec.publish:
            if (tree / tree_path).is_file():
                dest = out / "include" / include
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(tree / tree_path, dest)
        shutil.copyfile(archive, out / "lib" / archive.name)
        stranger = [a for a in base if not a.startswith("-I")] + [*spec.extra_flags, "-Iinclude"]
        objs = []
        for i, unit in enumerate(u for u in spec.units if u.name.endswith(CXX)):
            argv = [*stranger, "-c", unit.name, "-o", f"consumer{i}.o"]
            if not self.tool(argv, out, compile_=True, timeout=spec.compile_seconds):
                return
            objs.append(f"consumer{i}.o")
        argv = [*link, *objs, "-Llib", f"-l{spec.product}", *spec.link_args, "-o", "consumer"]
        if self.tool(argv, out, compile_=False, timeout=spec.compile_seconds):
            self.products[spec.key] = out / "consumer"

    def execute(self, spec: RunSpec) -> None:
        binary = self.products.get(spec.cell_key)
        if binary is None:
            return
        sides = [binary]
        if spec.reference is not None and spec.reference in self.products:
            sides.append(self.products[spec.reference])
        for _ in range(spec.warmup + spec.rounds):
            for program in sides:
                work = Path(tempfile.mkdtemp(dir=self.root, prefix="work"))
                outcome = bounded(
                    [*spec.wrapper, str(program), *spec.args],
                    cwd=work,
                    env={"PATH": "/usr/bin:/bin", **dict(spec.env)},
                    stdin=spec.stdin.encode(),
                    timeout=spec.timeout,
                    output_cap=spec.output_cap,
                    caps=spec.caps,
                )
                self.tally.runs += 1
                self.tally.run_seconds += outcome.wall_seconds
                self.tally.spent(self.row.case, outcome.wall_seconds)
                shutil.rmtree(work, ignore_errors=True)


def _ordered(cells: dict[str, CellSpec]) -> list[str]:
    """Cells a gate builds on (`needs`) before the cells that use them."""
    done: list[str] = []

    def visit(key: str) -> None:
        if key in done or key not in cells:
            return
        for need in cells[key].needs:
            visit(need)
        done.append(key)

    for key in cells:
        visit(key)
    return done


def _resolve(tree: Path, globs: tuple[str, ...]) -> list[str]:
    found: set[Path] = set()
    for pattern in globs:
        found.update(p for p in tree.glob(pattern) if p.is_file())
    return [str(p) for p in sorted(found)]


class NaiveLibrary(Library):
    """cxxgate's loader, for the rows and plans only (nothing is graded through it)."""

    row_of_tree: dict[str, Row]


def load(cases: Path, batch: Path | None, scratch: Path) -> NaiveLibrary:
    settings = Settings(
        library=cases.resolve(),
        out=scratch,
        envelopes=cases.resolve() / "envelopes.yaml",
        only=frozenset(),
        batch=batch.resolve() if batch else None,
        report_only=True,
        given_seed=SEED,
    )
    lib = NaiveLibrary(settings)
    if lib.errors:
        raise SystemExit("the library did not load:\n" + "\n".join(lib.errors))
    lib.row_of_tree = {}
    for row in lib.rows:
        lib.row_of_tree.setdefault(lib.tree_keys[row.id], row)
    return lib


def naive(cases: Path, batch: Path | None, jobs: int = 2) -> dict[str, object]:
    """Run the loop; return its figures."""
    with tempfile.TemporaryDirectory(prefix="cxxgate-naive-") as tmp:
        lib = load(cases, batch, Path(tmp) / "plan")
        work = [
            (row, gate, lib.plans[row.case, lib.tree_keys[row.id], gate])
            for row in lib.rows
            for gate in lib.cases[row.case].enabled_gates()
        ]
        total = Tally()

        def one(n: int) -> None:
            row, gate, plan = work[n]
            root = Path(tmp) / f"job{n}"
            root.mkdir()
            try:
                total.add(Job(lib, row, gate, plan, root).run())
            finally:
                shutil.rmtree(root, ignore_errors=True)

        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(one, range(len(work))))
        seconds = time.perf_counter() - start
    return {
        "seconds": round(seconds, 3),
        "workers": jobs,
        "rows": len(lib.rows),
        "jobs": total.jobs,
        "tool_calls": total.tool_calls,
        "compiles": total.compiles,
        "tool_seconds": round(total.tool_seconds, 3),
        "runs": total.runs,
        "run_seconds": round(total.run_seconds, 3),
        "trees": total.trees,
        "not_applied": total.not_applied,
        "tool_calls_by_gate": dict(sorted(total.by_gate.items())),
        "tool_calls_by_case": dict(sorted(total.by_case.items())),
        "seconds_by_case": {k: round(v, 1) for k, v in sorted(total.seconds_by_case.items())},
        "slowest_tool_calls": total.slowest,
    }


def main(argv: list[str]) -> int:
    args = dict(a.split("=", 1) for a in argv)
    cases = Path(args.get("cases", PROJECT / "cases"))
    batch = Path(args["patches"]) if "patches" in args else None
    figures = naive(cases, batch, int(args.get("jobs", "2")))
    text = json.dumps(figures, indent=1, sort_keys=True)
    if "json" in args:
        Path(args["json"]).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
