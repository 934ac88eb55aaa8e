"""Shared fixtures: run the real doit over a case library into a private build folder."""

from __future__ import annotations

import compileall
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pytest
from filelock import FileLock

from cxxgate.cells.cell import build
from cxxgate.store.layout import Layout
from cxxgate.toolchain import ccache
from cxxgate.toolchain.cellspec import CellResult, CellSpec, Unit
from cxxgate.toolchain.envelope import Envelopes

PROJECT = Path(__file__).resolve().parent.parent
SHIPPED = PROJECT / "cases"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# Test files whose module fixture grades a library of its own for minutes, and the file
# that reads the shipped grade with the most grading of its own. A LONG file's grade runs
# at a lower priority (LONG_NICE): it overlaps the shipped grade, whose slope gate times
# native runs against a 4 s limit (measured: the reference's run of `dedupe` ran out of
# it twice with the framework fixture's compiles beside it at the same priority).
LONG = ("tests/gates/test_frameworks.py",)
LONG_NICE = 10
FIRST_READER = "tests/e2e/test_grade.py"


_SHARED_CACHE = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    """Set up once, on the controller, before pytest-xdist starts its workers (they, and
    every doit they run, inherit it):

    - the project's bytecode. Every doit a test runs imports the project afresh; where
      PYTHONDONTWRITEBYTECODE is set, each compiled it from source again (0.35 s of the
      1.2 s of a small library's `doit list`);
    - one compile cache for every grade of the session, as shards share one: a `file:`
      remote storage (cxxgate/toolchain/ccache.py) that every build folder's compiles read
      and store into, so a unit that two tests compile (a case graded in two build
      folders) compiles once. Tests about what ccache stores and hits clear it
      (tests/cells/test_ccache.py's `layout`); a project's CMake build never reads it
      (cxxgate/cells/cmake.py)."""
    if hasattr(config, "workerinput"):
        return
    for package in ("cxxgate", "gates"):  # gates/ is cxxgate/gates, a link compileall skips
        compileall.compile_dir(PROJECT / package, quiet=1)
    folder = Path(tempfile.mkdtemp(prefix="cxxgate-tests-ccache-"))
    config.stash[_SHARED_CACHE] = folder
    os.environ[ccache.REMOTE] = f"file:{folder}"


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_SHARED_CACHE, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the test files for pytest-xdist's per-file scheduling: the long ones first,
    then FIRST_READER (its worker makes the shipped grade), then every file that does not
    read the shipped grade, then the rest that do. A worker hands out files in this order,
    so while one worker grades the shipped library the other has work that does not wait
    on it, and no long file starts last and runs alone (measured: the framework fixture
    started 21 minutes into a 30-minute suite, and both workers sat in `shipped`)."""
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    reads = [f for f, its in files.items() if any("shipped" in i.fixturenames for i in its)]

    def rank(name: str) -> int:
        if name in LONG:
            return 0
        if name == FIRST_READER:
            return 1
        return 3 if name in reads else 2

    items[:] = [i for f in sorted(files, key=rank) for i in files[f]]


@dataclass
class Grade:
    returncode: int
    output: str
    out: Path

    @cached_property
    def rows(self) -> dict[str, dict[str, object]]:
        """verdicts.jsonl by 'case/patch', as it was when first read."""
        rows = {}
        for line in (self.out / "verdicts.jsonl").read_text().splitlines():
            row = json.loads(line)
            rows[f"{row['case']}/{row['patch']}"] = row
        return rows

    def gate(self, row: str, gate: str) -> dict[str, str]:
        return self.rows[row]["gates"][gate]  # type: ignore[index, no-any-return]

    def tree(self, row: str) -> Path:
        """The patched tree a row was graded on, found through its evidence."""
        evidence = self.rows[row]["evidence"]
        assert isinstance(evidence, list)
        return self.out / next(e for e in evidence if e.startswith("trees/"))


def in_tree_test_exit(tree: Path, test: str, workdir: Path) -> int:
    """Build one of the tree's own tests the way the project's build would (the test file
    includes what it needs, sources too) and return its exit status: the green test a
    model would point to."""
    binary = workdir / Path(test).stem
    build = subprocess.run(
        [
            "g++",
            "-std=c++20",
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-I{tree / 'include'}",
            str(tree / test),
            "-o",
            str(binary),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    return subprocess.run([str(binary)], check=False, timeout=30).returncode


def make_tree(layout: Layout, key: str, files: dict[str, str]) -> Path:
    """A patched tree as the pipeline leaves it (files and an applied stamp), for tests that
    build cells directly."""
    for rel, text in files.items():
        path = layout.tree(key) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    layout.tree_stamp(key).write_text(json.dumps({"applied": True}))
    return layout.tree(key)


def build_program(
    layout: Layout, tree: str, probe: Unit, manifest: Path, envelope: str
) -> CellResult:
    """An exe cell built directly: `probe` with the tree's `src/*.cpp`, headers from
    `include/`, under `envelope` of the manifest file `manifest`."""
    spec = CellSpec(
        kind="exe",
        tree_key=tree,
        units=(probe,),
        tree_sources=("src/*.cpp",),
        include_dirs=("include",),
        envelope=Envelopes(manifest).get(envelope),
        compile_seconds=60,
    )
    return build(spec, layout)


def compiler_calls(out: Path) -> int:
    """Compiles and links so far: compiler-calls.log's lines but the `preprocess` ones (the
    diagnostic-control scan's -E of a unit that the same cell compiles)."""
    log = out / "compiler-calls.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return sum(1 for line in lines if line.split()[2:3] != ["preprocess"])


def binary_runs(out: Path) -> int:
    """Executions of built binaries (candidate, reference, probes) so far."""
    log = out / "runs.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def run_doit(
    out: Path,
    *args: str,
    library: Path | None = None,
    project: Path = PROJECT,
    nice: int = 0,
    **env: str,
) -> Grade:
    """`doit ARGS cases=... out=...` as a user runs it, e.g. `run_doit(out, "freeze")`;
    `nice` lowers its priority and its children's."""
    library = library or project / "cases"
    cmd = [sys.executable, "-m", "doit", "-f", str(project / "dodo.py"), *args]
    cmd += [f"cases={library}", f"out={out}"]
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        cwd=project,
        check=False,
        timeout=2400,  # a cold grade of the whole library on a loaded machine
        env={**os.environ, "PYTHONPATH": str(project), **env},
        preexec_fn=(lambda: os.nice(nice)) if nice else None,
    )
    return Grade(proc.returncode, proc.stdout + proc.stderr, out)


def run_grade(
    out: Path, *args: str, library: Path | None = None, project: Path = PROJECT, nice: int = 0
) -> Grade:
    """`doit grade` as a user runs it, with the build folder and dep file under `out`.

    `project` may be a copy made by `project_copy`, for tests that edit gate code."""
    return run_doit(out, *args, "grade", library=library, project=project, nice=nice)


def keep_patches(project: Path, case: str, *names: str) -> None:
    """Trim a copied project's case to the named patches (the reference row stays): a test
    about how a case is graded need not grade every shipped patch of it."""
    yaml = project / "cases" / case / "case.yaml"
    lines = yaml.read_text().splitlines(keepends=True)
    entry = re.compile(r"\s+- \{file: patches/([\w.-]+)\.diff")
    kept = [ln for ln in lines if not (m := entry.match(ln)) or m.group(1) in names]
    assert len(lines) - len(kept) > 0 and sum(bool(entry.match(ln)) for ln in kept) == len(names)
    yaml.write_text("".join(kept))


def project_copy(tmp_path: Path, *, locked: bool = False) -> Path:
    """A private copy of the project (dodo.py, pyproject.toml, cxxgate/, cases/) to edit:
    run with PYTHONPATH on the copy, the registered gates load from the copy's modules.
    Tests edit cases and gate code in it, so its library is unpinned (no identity.lock)
    unless `locked`."""
    dest = tmp_path / "project"
    # The built-in gates are loaded from the copy's cxxgate.gates (registry.BUILTIN); gates/
    # and templates/ come along through the package's links.
    for name in ("cxxgate", "cases"):
        if (PROJECT / name).exists():
            ignore = shutil.ignore_patterns("__pycache__")
            shutil.copytree(PROJECT / name, dest / name, ignore=ignore)
    for name in ("dodo.py", "pyproject.toml"):
        shutil.copy(PROJECT / name, dest)
    if not locked:
        (dest / "cases/identity.lock").unlink()
    return dest


@pytest.fixture(scope="session")
def shipped(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Grade:
    """One cold grade of the whole shipped library (`-n 2`), shared by the test modules
    that read it, across pytest-xdist workers too: the first worker to ask grades under a
    file lock, the others read its result. A test that grades again into its folder grades
    the whole library (warm), so its verdicts.jsonl and cells.txt always hold every row."""
    if worker_id == "master":  # not under xdist
        return _grade_shipped(tmp_path_factory.mktemp("shipped"))
    shared = tmp_path_factory.getbasetemp().parent  # one folder for every worker
    record = shared / "shipped.json"
    with FileLock(str(shared / "shipped.lock")):
        if not record.exists():
            grade = _grade_shipped(shared / "shipped")
            record.write_text(json.dumps([grade.returncode, grade.output]))
    returncode, output = json.loads(record.read_text())
    return Grade(returncode, output, shared / "shipped")


SHIPPED_SEED = "20261130"


def _grade_shipped(out: Path) -> Grade:
    """The build folder's batch seed is set first, so the metamorphic gate's draws (and the
    counterexamples the reports quote) are the same on every run of the suite."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "seed").write_text(SHIPPED_SEED + "\n")
    return run_grade(out, "-n", "2")


def exclusive(grade: Grade) -> FileLock:
    """Hold this while running doit on a shared grade's folder: doit takes the folder's
    lock and another worker's doit on it would stop at once."""
    return FileLock(str(grade.out.parent / f"{grade.out.name}.use.lock"))


def case_library(dest: Path, *cases: str) -> Path:
    """A library at `dest` holding the shipped envelope manifest and copies of `cases`."""
    dest.mkdir(parents=True)
    shutil.copy(SHIPPED / "envelopes.yaml", dest)
    for case in cases:
        shutil.copytree(SHIPPED / case, dest / case)
    return dest


@pytest.fixture
def library(tmp_path: Path) -> Iterator[Path]:
    """A private, writable copy of the shipped library (tests edit cases in it), unpinned."""
    dest = tmp_path / "cases"
    shutil.copytree(SHIPPED, dest)
    (dest / "identity.lock").unlink()
    yield dest
