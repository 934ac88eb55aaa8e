"""A project's test suite as a cell (kind `ctest`): ctest run like any candidate program.

The suite's processes are the candidate's code, so they run as cxxgate/runs/run.py runs a
candidate binary: the run sandbox (system directories read-only, own pid/net/ipc/uts
namespaces), a uid of the run's own when the harness is root, the case's caps set at exec
by prlimit (address space, file size, processes; they hold ctest and every test process
it starts), the suite's wall limit, and the work folder deleted afterwards. The build
cell is never written under bubblewrap: the suite runs in copies of its build folder and
its tree, seen at NEUTRAL_BUILD and NEUTRAL_TREE, where a dropped uid may add files but
neither write, remove nor replace any file of the build or the tree (_own_copy); runs
that keep the harness's uid get real copies, which they may rewrite. ctest lists the
suite once (`--show-only=json-v1`, reading the project's CTestTestfile.cmake files) and
the run reads that listing written back by the harness (cxxgate/cells/ctestfile.py):
no code of the project runs inside ctest's run. What stays in this cell is what the gate
names: ctest's JUnit file, the GoogleTest reports (`GTEST_OUTPUT`, one file per test
process), the listing, and the compile commands and framework macros of each test unit.

Test units: the units of the build under a test folder, with the commands Ninja runs for
them (`ninja -t compdb`, which keeps a compiler launcher the project may set; CMake's
compile_commands.json leaves launchers out). Each is preprocessed with its own command
plus `-E -dM` (through cxxgate/toolchain/toolcall.py, in the compile sandbox), and the definitions
of the test frameworks' macros are kept (`macros.json`): a header that redefines
`EXPECT_EQ`, however it is reached, shows there.

A `crossed` cell is this run again on test programs the harness linked with the
reference's link commands (cxxgate/cells/crossed.py): only where a program differs, and
only the listed tests that run it.
"""

from __future__ import annotations

import errno
import json
import os
import posixpath
import re
import shlex
import shutil
import stat
import time
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from cxxgate.cells import (
    crossed,
    ctestfile,
    loads,
    relink,
    shadows,
    testfolders,
    testframeworks,
    testhelpers,
    verified,
)
from cxxgate.host import sandbox, userns
from cxxgate.host.process import Caps, bounded
from cxxgate.host.sandbox import NEUTRAL_BUILD, NEUTRAL_TREE
from cxxgate.results import faults
from cxxgate.runs import run
from cxxgate.store.layout import Layout
from cxxgate.toolchain import toolcall
from cxxgate.toolchain.cellspec import CellResult, CellSpec, CellStatus, Phase, Step
from cxxgate.toolchain.cellspec import result_path as cell_result
from cxxgate.toolchain.projectflags import paths
from cxxgate.toolchain.tools import tool_path
from cxxgate.util.elfread import ELF_ERRORS

JUNIT = "junit.xml"
GTEST_DIR = "gtest"
FRAMEWORK_DIR = testframeworks.FRAMEWORK_DIR  # Catch2 / doctest reports (their records:
FRAMEWORKS_JSON = testframeworks.FRAMEWORKS_JSON  # cxxgate/cells/testframeworks.py)
TESTS_JSON = "tests.json"  # ctest --show-only=json-v1, the cell's paths spelt (spell)
# ctest's own line for each test in what it printed, and its exit status (said_by_ctest).
SAID_JSON = "said.json"
MACROS_JSON = "macros.json"  # source path -> {macro: definition}
# source path -> every macro its command defines before the first line of any source
# (predefined, command line, -include'd): `-E -dM` of an empty unit with its options.
DEFINES_JSON = "defines.json"
OBJECTS_JSON = "objects.json"  # source path -> "" (its compile makes its object) or why not
COMMANDS_JSON = "commands.json"  # the test units' commands as Ninja runs them
# What macros.json says of a unit no compiler driver of the system compiles (nvcc, a
# script of the project's): the harness runs none but those, so nothing was read of it.
UNDRIVEN = {"": "did not preprocess (no compiler driver of the system)"}
# The build's graph as Ninja runs it: every compile (object -> source), every link and
# archive command, and the GoogleTest symbols each compiled object names (see _graph).
GRAPH_JSON = "graph.json"
# Units of the spec, written by the gate (cxxgate/gates/tests.py): the caps of the run
# (json of process.Caps) and the tree folders whose units are test units (one a line).
CAPS_UNIT = "caps.json"
TEST_DIRS_UNIT = "test-dirs"
REPORTS = "/reports"  # where the run writes its reports, inside the sandbox
NEUTRAL_CTEST = "/src/ctest"  # the harness's CTestTestfile.cmake (ctestfile.py), inside it
LISTING = "ctest-list"  # the listing command, as compiler-calls.log names it
# The test frameworks' macros a header could redefine (GoogleTest, Catch2, doctest).
FRAMEWORK_MACRO = re.compile(
    r"(EXPECT|ASSERT|GTEST|TEST|TYPED_TEST|REQUIRE|CHECK|CATCH|DOCTEST|SUCCEED|FAIL)\w*"
)
_MIB = 1 << 20

Built = tuple[CellStatus, str, list[Step], str | None]


def caps_unit(caps: Caps) -> str:
    return json.dumps(
        {"memory_mib": caps.memory_mib, "file_mib": caps.file_mib,
         "processes": caps.processes, "resident": caps.resident},
        sort_keys=True,
    )  # fmt: skip


def _unit(spec: CellSpec, name: str) -> str:
    return next((u.text for u in spec.units if u.name == name), "")


def _test_dirs(spec: CellSpec, layout: Layout) -> list[str]:
    """The folders of the test units: the test files' own, and the folders the build took
    from the reference tree (or, the reference's own build, would give a candidate's:
    cxxgate/cells/testfolders.py `recorded`), whose units are compared as the tests' are."""
    dirs = [d for d in _unit(spec, TEST_DIRS_UNIT).splitlines() if d]
    built = cell_result(layout, spec.needs[0])
    restored = testfolders.recorded(CellResult.load(built)) if built.is_file() else []
    return list(dict.fromkeys([*dirs, *restored]))


def run_suite(spec: CellSpec, layout: Layout, out: Path) -> Built:
    ctest = tool_path("ctest")
    if ctest is None:
        return "toolchain_missing", "ctest (cmake) must be installed", [], None
    faults.check_folders(spec.data_paths)
    built = CellResult.load(cell_result(layout, spec.needs[0]))
    if built.status != "ok" or built.binary is None:
        return "needs_failed", f"the build did not succeed: {built.status}", [], None
    caps = Caps(**json.loads(_unit(spec, CAPS_UNIT) or "{}"))
    graphs = tuple(read_graph(layout.cell(key)) for key in spec.needs[1:3])
    test_dirs = _test_dirs(spec, layout)
    if spec.kind == "crossed" and not (
        crossed.to_cross(graphs[1], graphs[0]) or crossed.test_archives(graphs[0], test_dirs)
    ):
        crossed.write(out / crossed.JSON, {}, {}, [])  # the reference's recipe: no link, no run
        return "ok", "", [], str(out / crossed.JSON)
    stales = (JUNIT, SAID_JSON, TESTS_JSON, MACROS_JSON, DEFINES_JSON, OBJECTS_JSON,
              COMMANDS_JSON, GRAPH_JSON, FRAMEWORKS_JSON, crossed.JSON)  # fmt: skip
    for stale in stales:
        (out / stale).unlink(missing_ok=True)
    run.remove_work(out / GTEST_DIR)
    run.remove_work(out / FRAMEWORK_DIR)
    work = out / "work"
    run.remove_work(work)
    work.mkdir()
    cell = layout.cell(spec.needs[0])
    try:
        with run.run_uid() as uid:
            # Testing/: the last run's logs and cost data.
            copy = _own_copy(Path(built.binary), work / "build", uid, skip=("Testing",))
            # A test may build (nlohmann/json's download_test_data runs `cmake --build`):
            # Ninja appends to its logs, which are the run's own.
            for log in (".ninja_log", ".ninja_deps"):
                _run_owned(copy / log, uid)
            # Suites may write beside their sources, as in a checkout (Catch2's approval
            # tests write next to their baselines): the tree they see is the run's own too.
            # Without a sandbox the suite's paths are the build cell's real ones (its
            # CTestTestfile names them): no copy would be seen.
            if sandbox.available():
                _own_copy(cell / "trees" / "src", work / "src", uid)
            reports = work / "reports"
            reports.mkdir()
            if uid is not None:
                os.chown(reports, uid, uid)
            if spec.kind == "crossed":
                ref_listing, steps = _crossed(spec, layout, cell, copy, out, *graphs)
                if ref_listing is None:  # no program other than the candidate's: no run
                    return "ok", "", steps, str(out / crossed.JSON)
                listing = ctestfile.write(ref_listing, 0, _folder(work / "ctest"))
            else:
                units, steps = _commands(spec, layout, cell, copy, out)
                steps += _again(spec, layout, cell, copy, out, units)
                listed = _ctest(spec, layout, out, work, uid, caps,
                                [ctest, "--show-only=json-v1"], LISTING)  # fmt: skip
                steps.append(listed)
                if listed.timed_out:
                    return "timeout", "ctest did not list the tests in time", steps, None
                try:  # the run reads the listing (cxxgate/cells/ctestfile.py), nothing else
                    named = [t for t in _unit(spec, testframeworks.NAMED_UNIT).splitlines() if t]
                    listing = ctestfile.write(
                        listed.output, listed.exit, _folder(work / "ctest"), named
                    )
                except ValueError as err:
                    why = f"ctest could not list the tests ({err}): "
                    why += _cap_hit(listed.output, caps) + listed.output[-400:]
                    return "compile_error", why, steps, None
            # spelt: the gate compares it with the reference's
            (out / TESTS_JSON).write_text(spell(listing, *paths(cell)))
            if spec.kind != "crossed":
                steps += _test_loads(spec, layout, listing, copy, cell, out)
            junit = f"{REPORTS}/{JUNIT}" if sandbox.available() else str(reports / JUNIT)
            argv = [ctest, "--output-junit", junit, *spec.extra_flags]
            step = _ctest(spec, layout, out, work, uid, caps, argv)
            steps.append(step)
            said = {"exit": step.exit, "tests": said_by_ctest(step.output)}
            (out / SAID_JSON).write_text(json.dumps(said, indent=1, sort_keys=True) + "\n")
            records: dict[str, testframeworks.Record] = {}
            if not step.timed_out:
                more, records = _framework_pass(spec, layout, work, uid, caps, listing)
                steps += more
            _keep_reports(reports, out, records)
    finally:
        run.remove_work(work)
    if step.timed_out:
        return "timeout", "ctest did not finish in time", steps, None
    if not (out / JUNIT).is_file():
        why = f"ctest wrote no JUnit file: {_cap_hit(step.output, caps)}{step.output[-400:]}"
        return "compile_error", why, steps, None
    return "ok", "", steps, str(out / JUNIT)


# ctest's line for a finished test, the name padded with at least three dots:
# `2/5 Test #2: plain_parse .....***Failed    0.01 sec`, `... Subprocess aborted***Exception:`.
_CTEST_LINE = re.compile(
    r"\d+/\d+ Test\s+#\d+: (?P<name>.+?) \.{3,}\s*(?P<status>.*?)\s+[\d.]+ sec\s*$"
)


def said_by_ctest(output: str) -> dict[str, list[str]]:
    """Test name -> every status a line of ctest's kind gives it in its output, wherever
    the line starts. The JUnit file lies where the suite's tests can write (a test the
    patch registers wrote a passing one and made ctest's `junit.xml.tmp` a folder); what
    ctest prints goes to a pipe of the harness's. A test may still write there (it runs
    under ctest's uid: pidfd_getfd took ctest's stdout), but ctest writes each line whole,
    so added lines, and a dangling byte in front of ctest's own, leave that line there:
    a test counts as passed only with exactly one line, that says so (gates/tests/suite.py)."""
    found: dict[str, list[str]] = {}
    for line in output.splitlines():
        hit = _CTEST_LINE.search(line)
        if hit:
            found.setdefault(hit["name"], []).append(hit["status"].strip())
    return found


def _cap_hit(output: str, caps: Caps) -> str:
    """Which run cap a test process (or test discovery) died at, as ctest reported it."""
    if "SIGXFSZ" in output or "File size limit" in output:
        return f"a test process reached the {caps.file_mib} MiB file cap (SIGXFSZ); "
    if "Resource temporarily unavailable" in output:
        return f"a test process reached the cap of {caps.processes} processes; "
    return ""


def _own_copy(folder: Path, dest: Path, uid: int | None, skip: tuple[str, ...] = ()) -> Path:
    """A folder of the build cell (its build folder, its tree) for this run. Under a uid
    of the run's own: hard links to the cell's files (the harness's, 0644/0755: not
    writable through), every folder the harness's with the sticky bit and open to all
    (1777, as /tmp): the suite adds files beside its programs and sources, and removes or
    renames its own, but none of the build's or the tree's. A test (or a script ctest
    runs while it lists the tests) that put a fixed program in place of another test's
    program, or rewrote a golden file a later test reads, would change what the later
    test is. Runs that keep the harness's uid get a plain copy. Names in `skip` are left
    out."""

    def link(src: str, dst: str) -> None:
        mode = os.lstat(src).st_mode
        if not stat.S_ISREG(mode):
            return  # a FIFO, socket or device the build made is not the build's product
        # A file the build made writable by group or others (file(CHMOD) in a hostile
        # CMakeLists.txt) would let the run write the build cell through the link: copied,
        # and not writable by the run either.
        if mode & 0o022:
            shutil.copy2(src, dst)
            os.chmod(dst, stat.S_IMODE(os.lstat(dst).st_mode) & ~0o022)
            return
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    def plain(src: str, dst: str) -> None:
        if stat.S_ISREG(os.lstat(src).st_mode):
            shutil.copy2(src, dst)

    copy = link if uid is not None else plain
    ignore = shutil.ignore_patterns(*skip) if skip else None
    shutil.copytree(folder, dest, symlinks=True, ignore=ignore, copy_function=copy)
    if uid is not None:
        for root, _, _ in os.walk(dest):  # every folder, none through a link
            os.chmod(root, 0o1777)
    return dest


def _run_owned(path: Path, uid: int | None) -> None:
    """The copy's file at `path` made a file of the run's own (a copy, not a link)."""
    if uid is None or path.is_symlink() or not path.is_file():
        return
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data)
    os.chown(path, uid, uid)


def _folder(path: Path) -> Path:
    """A folder of the harness's in the run's work folder, where ctest may add files
    (its Testing/ logs) beside what the harness wrote, but replace none of them."""
    path.mkdir()
    os.chmod(path, 0o1777)
    return path


def _ctest(
    spec: CellSpec,
    layout: Layout,
    out: Path,
    work: Path,
    uid: int | None,
    caps: Caps,
    argv: list[str],
    what: str = "ctest",
) -> Step:
    """One ctest command, sandboxed, capped and bounded as a candidate run
    (cxxgate/runs/run.py); `what` names it in compiler-calls.log. The listing
    (LISTING) reads the project's CTestTestfile.cmake files in the copied build folder;
    the run reads the harness's (ctestfile.py)."""
    return _boxed(spec, layout, work, uid, caps, argv, what)


def _boxed(
    spec: CellSpec,
    layout: Layout,
    work: Path,
    uid: int | None,
    caps: Caps,
    argv: list[str],
    what: str,
    test: tuple[str, dict[str, str], float] | None = None,
) -> Step:
    """A ctest command (test None), or one test's own command (`test`: its working folder
    as the run sees it, its environment, its timeout), in the run sandbox, where it can
    make no user namespace (userns.closed)."""
    reports = work / "reports"
    env = {**run.BASE_ENV, "GTEST_OUTPUT": f"xml:{REPORTS}/{GTEST_DIR}/"}
    timeout = spec.compile_seconds
    if test is not None:
        env = {**run.BASE_ENV, **test[1]}
        timeout = test[2]
    ooms = faults.oom_kills()
    with userns.closed(uid is not None) as (closed, closed_fds):
        if sandbox.available():
            tmp = run.fresh_folder(work / "tmp", uid)  # each command's own /tmp
            prelude = sandbox.run_args(tmp) if uid is not None else sandbox.base_args(tmp)
            binds = [a for s, d in spec.envelope.toolchain.binds for a in ("--ro-bind", s, d)]
            binds += _data_binds(spec)
            test_dir = NEUTRAL_BUILD if what == LISTING else NEUTRAL_CTEST
            harness_file = test is None and what != LISTING  # the run reads ctestfile.py's
            argv = [
                *prelude, *binds,
                # bwrap makes missing parents 0700 (root's): the run's uid must pass through.
                "--perms", "0755", "--dir", str(Path(NEUTRAL_TREE).parent),
                "--bind", str(work / "src"), NEUTRAL_TREE,
                "--bind", str(work / "build"), NEUTRAL_BUILD,
                *(["--bind", str(work / "ctest"), NEUTRAL_CTEST] if harness_file else []),
                "--bind", str(reports), REPORTS,
                *closed, *sandbox.sealed(),
                "--chdir", test[0] if test else NEUTRAL_BUILD,
                *(sandbox.drop_args(uid) if uid is not None else []),
                *(argv if test else [argv[0], "--test-dir", test_dir, *argv[1:]]),
            ]  # fmt: skip
            box = "bwrap"
        else:
            if test is None:
                env["GTEST_OUTPUT"] = f"xml:{reports / GTEST_DIR}/"
                test_dir = str(work / ("build" if what == LISTING else "ctest"))
                argv = [argv[0], "--test-dir", test_dir, *argv[1:]]
            box = "none"
        with layout.compiler_log.open("a") as log:
            log.write(f"{time.time():.3f} {spec.key} test {what}\n")
        cwd = Path(test[0]) if test and box == "none" and Path(test[0]).is_dir() else work
        outcome = bounded(
            argv,
            cwd=cwd,
            env=env,
            timeout=timeout,
            output_cap=toolcall.OUTPUT_CAP,
            caps=caps,
            pass_fds=closed_fds if box == "bwrap" else (),
            disk=work,
        )
    if outcome.disk_short:  # not the suite's fault: the grade stops (see run.py)
        raise OSError(errno.ENOSPC, "the disk ran (nearly) full while the tests ran", str(work))
    # A test the OOM killer ended failed (a signal fails a test even under WILL_FAIL), so
    # the command failed; one that succeeded lost nothing to a kill elsewhere (a global
    # count: another container's cgroup OOM moves it too). Kills of the harness's own
    # are the suite's verdict.
    failed = outcome.exit != 0 and not outcome.stopped_by_harness
    if failed and faults.oom_kills() > ooms:  # a test killed for memory no cap of its own counts
        msg = "the kernel's OOM killer ran while the tests ran: the machine's memory ran out"
        raise RuntimeError(f"{msg}, not a verdict on the candidate (retried by the next grade)")
    text = outcome.stdout.decode(errors="replace") + outcome.stderr.decode(errors="replace")
    return Step("test", what, argv, outcome.exit, outcome.timed_out,
                round(outcome.wall_seconds, 3), text, box)  # fmt: skip


def _data_binds(spec: CellSpec) -> list[str]:
    """Each data folder read-only at its own path, the folders above it made passable:
    bwrap makes missing parents 0700 (root's), closed to the run's dropped uid."""
    args: list[str] = []
    for folder, _ in spec.data:
        for parent in reversed(PurePosixPath(folder).parents[:-1]):
            args += ["--perms", "0755", "--dir", str(parent)]
        args += ["--ro-bind", folder, folder]
    return args


def _framework_pass(
    spec: CellSpec,
    layout: Layout,
    work: Path,
    uid: int | None,
    caps: Caps,
    listing: str,
) -> tuple[list[Step], dict[str, testframeworks.Record]]:
    """Each named Catch2 or doctest test's command again, with its framework's XML
    reporter writing to a name the harness chose (cxxgate/cells/testframeworks.py); the
    records (kept by _keep_reports in FRAMEWORKS_JSON, with the reports)."""
    named = [t for t in _unit(spec, testframeworks.NAMED_UNIT).splitlines() if t]
    folder = work / "reports" / FRAMEWORK_DIR
    folder.mkdir()
    if uid is not None:
        os.chown(folder, uid, uid)
    boxed = sandbox.available()
    copy = work / "build"
    flags = list(spec.extra_flags)
    per_test = float(flags[flags.index("--timeout") + 1]) if "--timeout" in flags else 0.0
    per_test = min(per_test or spec.compile_seconds, spec.compile_seconds)
    steps: list[Step] = []

    def host_path(seen: str) -> Path | None:
        if boxed:
            if not PurePosixPath(seen).is_relative_to(NEUTRAL_BUILD):
                return None
            return copy / PurePosixPath(seen).relative_to(NEUTRAL_BUILD)
        return Path(seen) if Path(seen).is_file() else None

    def report_at(name: str) -> str:
        return f"{REPORTS}/{FRAMEWORK_DIR}/{name}" if boxed else str(folder / name)

    def run_one(argv: list[str], cwd: str, env: dict[str, str]) -> tuple[int | None, bool]:
        step = _boxed(spec, layout, work, uid, caps, argv, "framework-report",
                      (cwd, env, per_test))  # fmt: skip
        steps.append(replace(step, output=step.output[-2000:]))
        return step.exit, step.timed_out

    inside = copy if boxed else Path("/")  # bare, a test's program is any path it names
    records = testframeworks.report_pass(
        listing, named, host_path, report_at, folder, run_one, inside, run.BASE_ENV
    )
    return steps, records


def _keep_reports(reports: Path, out: Path, records: dict[str, testframeworks.Record]) -> None:
    """ctest's JUnit file, GoogleTest's reports and the Catch2 / doctest reports the
    harness asked for (only the names it gave), regular files only (the run wrote them
    and may have left links instead), up to the file cap each."""
    (out / GTEST_DIR).mkdir()
    (out / FRAMEWORK_DIR).mkdir()
    wanted = [(reports / JUNIT, out / JUNIT)]
    if (reports / GTEST_DIR).is_dir() and not (reports / GTEST_DIR).is_symlink():
        wanted += [(p, out / GTEST_DIR / p.name) for p in sorted((reports / GTEST_DIR).iterdir())]
    if records:
        testframeworks.write_records(records, out / FRAMEWORKS_JSON)
    for record in records.values():
        if record.report:
            found = reports / FRAMEWORK_DIR / record.report
            wanted.append((found, out / FRAMEWORK_DIR / record.report))
    for src, dst in wanted:
        data = _regular(src)
        if data is not None:
            dst.write_bytes(data)


def _regular(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        return f.read(64 * _MIB)


def test_units(
    db: list[dict[str, object]], test_dirs: list[str], tree_at: str
) -> list[dict[str, object]]:
    """The compile database's entries whose source lies in one of the test folders."""
    found = []
    for entry in db:
        source = PurePosixPath(str(entry.get("file", "")))
        if not source.is_relative_to(tree_at):
            continue
        rel = source.relative_to(tree_at)
        if any(rel.is_relative_to(d) for d in test_dirs):
            found.append(entry)
    return found


def entry_argv(entry: dict[str, object]) -> list[str]:
    """A compile database entry's argv (its `arguments`, or its `command` split)."""
    args = entry.get("arguments")
    if isinstance(args, list):
        return [str(a) for a in args]
    return shlex.split(str(entry.get("command", "")))


def _commands(
    spec: CellSpec, layout: Layout, cell: Path, copy: Path, out: Path
) -> tuple[list[dict[str, object]], list[Step]]:
    """The test units' compile commands as Ninja runs them (`ninja -t compdb`: a compiler
    launcher in front included, which compile_commands.json leaves out), in
    commands.json with the tree and build paths they are spelt with."""
    test_dirs = _test_dirs(spec, layout)
    ninja = tool_path("ninja")
    if not test_dirs or ninja is None:
        return [], []
    tree_at, build_at = paths(cell) if sandbox.available() else (paths(cell)[0], str(copy))
    views = ((str(cell / "trees" / "src"), NEUTRAL_TREE),) if sandbox.available() else ()
    mounts = ((str(copy), NEUTRAL_BUILD),) if sandbox.available() else ()
    argv = [ninja, "-C", build_at, "-t", "compdb", "-x"]  # -x: response files inline
    step = toolcall.tool_call(
        layout, spec, "inspect", "ninja -t compdb", argv, copy,
        read=spec.data_paths, mounts=mounts, views=views,
    )  # fmt: skip
    try:
        db = json.loads(step.output) if step.exit == 0 else []
    except ValueError:
        db = []
    units = sorted(test_units(db, test_dirs, tree_at), key=lambda e: str(e.get("file")))
    listing = {"tree": tree_at, "build": build_at, "commands": units}
    (out / COMMANDS_JSON).write_text(json.dumps(listing, indent=1) + "\n")
    read = shadows.Reader(copy)
    graph = _graph(db, tree_at, build_at, copy, read)
    tested = {str(e.get("output", "")) for e in units}
    links: dict[str, list[str]] = graph["links"]
    programs = {
        out: cmd for out, cmd in ((str(e.get("output", "")), str(e.get("command", ""))) for e in db)
        if not out.endswith(".a") and tested & set(links.get(out, ()))
    }  # fmt: skip
    graph["linked"], relinks = _relinks(spec, layout, programs, copy, build_at, out, views, read)
    # Whole commands (a `cd` in front is kept): a crossed cell runs the reference's.
    graph["programs"] = {p: spell(c, tree_at, build_at) for p, c in programs.items()}
    argv = [ninja, "-C", build_at, "-t", "deps", *sorted(tested)]
    deps = toolcall.tool_call(
        layout, spec, "inspect", "ninja -t deps", argv, copy,
        read=spec.data_paths, mounts=mounts, views=views,
    )  # fmt: skip
    graph["reads"] = _unit_reads(units, deps.output if deps.exit == 0 else "", tree_at, build_at)
    (out / GRAPH_JSON).write_text(json.dumps(graph, indent=1, sort_keys=True) + "\n")
    said = [replace(s, output=s.output[-2000:]) for s in (step, deps)]
    return units, [*said, *relinks]


def _unit_reads(
    units: list[dict[str, object]], deps: str, tree_at: str, build_at: str
) -> dict[str, list[str]]:
    """Per test unit (its source, spelt), the files of the tree and the build its compile
    read (its dependency file, `ninja -t deps`), spelt."""
    reads = testhelpers.deps(deps)
    found: dict[str, set[str]] = {}
    for entry in units:
        source = spell(str(entry.get("file", "")), tree_at, build_at)
        for path in reads.get(str(entry.get("output", "")), []):
            full = posixpath.normpath(posixpath.join(build_at, path))
            if full.startswith((f"{tree_at}/", f"{build_at}/")):
                found.setdefault(source, set()).add(spell(full, tree_at, build_at))
    return {source: sorted(paths) for source, paths in found.items()}


def _relinks(
    spec: CellSpec,
    layout: Layout,
    programs: dict[str, str],
    copy: Path,
    build_at: str,
    out: Path,
    views: tuple[tuple[str, str], ...],
    read: shadows.Reader,
) -> tuple[dict[str, object], list[Step]]:
    """Each test program (a link naming a test unit's object) linked again by the
    harness with its own command and a map (cxxgate/cells/relink.py): program ->
    {inputs, why}. Sealed (_sealed); each has RELINK_SECONDS, and once one runs out of
    time (a link input the build made a FIFO) the rest are not run."""
    scratch, seen = _scratch(out, "relink")
    steps: list[Step] = []
    found: dict[str, object] = {}
    stalled: list[str] = []
    for output, command in sorted(programs.items()):

        def again(argv: list[str], cd: str, output: str = output) -> tuple[int | None, str]:
            step = _sealed(spec, layout, "link", output, argv, cd or build_at, copy, build_at,
                           scratch, seen, views, RELINK_SECONDS)  # fmt: skip
            steps.append(replace(step, output=step.output[-2000:]))
            if step.timed_out:
                stalled.append(output)
                return None, "it ran out of time"
            return step.exit, step.output

        if stalled:
            found[output] = {"inputs": [], "elsewhere": {},
                             "why": f"not linked again: {stalled[0]} ran out of time"}  # fmt: skip
            continue
        found[output] = relink.relink(output, command, copy, build_at, seen, scratch, again, read)
    run.remove_work(scratch)
    return found, steps


def _crossed(
    spec: CellSpec,
    layout: Layout,
    cell: Path,
    copy: Path,
    out: Path,
    ref: dict[str, Any],
    mine: dict[str, Any],
) -> tuple[str | None, list[Step]]:
    """A crossed cell's links (cxxgate/cells/crossed.py): each reference test program the
    candidate does not link by the reference's command (`ref`, `mine`: the two ctest
    cells' graphs), linked so over the build's copy, sealed, and put in the copy in its
    place when its bytes differ (crossed.json). What the run then reads: the reference's
    own listing (the patch cannot shape it, and no script of the project's runs), cut to
    the listed tests that run a relinked program; None when no program differs."""
    tree_at, build_at = paths(cell) if sandbox.available() else (paths(cell)[0], str(copy))
    views = ((str(cell / "trees" / "src"), NEUTRAL_TREE),) if sandbox.available() else ()
    scratch, seen = _scratch(out, "crossed")
    commands: dict[str, str] = ref.get("programs", {})
    links: dict[str, list[str]] = ref.get("links", {})
    steps: list[Step] = []

    def sealed(phase: Phase, what: str) -> relink.Runner:
        def again(argv: list[str], cd: str) -> tuple[int | None, str]:
            if any(s.timed_out for s in steps):
                return None, "a step before it ran out of time"
            step = _sealed(spec, layout, phase, what, argv, cd or build_at, copy, build_at,
                           scratch, seen, views, RELINK_SECONDS)  # fmt: skip
            steps.append(replace(step, output=step.output[-2000:]))
            return (None, "it ran out of time") if step.timed_out else (step.exit, step.output)

        return again

    def unspelt(text: str) -> str:
        return text.replace("<tree>", tree_at).replace("<build>", build_at)

    test_dirs = _test_dirs(spec, layout)
    archives = {
        a: crossed.remake(a, [unspelt(w) for w in links[a]], copy, build_at, scratch, seen,
                          sealed("archive", a))
        for a in crossed.test_archives(ref, test_dirs)
    }  # fmt: skip
    remade = {a for a, said in archives.items() if said == crossed.REMADE}
    # A program that links a remade archive is the reference's recipe no longer.
    uses = {p for p in commands if remade & set(links.get(p, []))}
    found = {
        p: crossed.cross(p, unspelt(commands[p]), copy, build_at, scratch, seen, sealed("link", p))
        for p in sorted(set(crossed.to_cross(mine, ref)) | uses)
    }
    run.remove_work(scratch)
    # The tests as the reference's run saw them, at this run's paths (without a sandbox,
    # the copy's: there the swapped programs are).
    try:
        listing = (layout.cell(spec.needs[1]) / TESTS_JSON).read_text()
    except OSError:  # the reference's suite was never listed: its own case is broken
        crossed.write(out / crossed.JSON, found, archives, [])
        return None, steps
    listing = listing.replace("<tree>", tree_at).replace("<build>", build_at)
    named = [t for t in _unit(spec, testframeworks.NAMED_UNIT).splitlines() if t]
    found = crossed.excuse(found, links, listing, sorted(commands), named, build_at)
    if crossed.RELINKED not in found.values():
        crossed.write(out / crossed.JSON, found, archives, [])
        return None, steps
    kept, tests = crossed.pick(listing, found, sorted(commands), named, build_at)
    crossed.write(out / crossed.JSON, found, archives, tests)
    return kept, steps


def read_graph(cell: Path) -> dict[str, Any]:
    """A ctest cell's graph.json; empty when it has none (the suite never got that far)."""
    try:
        found = json.loads((cell / GRAPH_JSON).read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _scratch(out: Path, name: str) -> tuple[Path, str]:
    """A fresh folder of the harness's for a sealed step's output, and its path as the
    step sees it."""
    scratch = out / name
    run.remove_work(scratch)
    scratch.mkdir()
    return scratch, f"{NEUTRAL_BUILD}-{name}" if sandbox.available() else str(scratch)


def _sealed(
    spec: CellSpec,
    layout: Layout,
    phase: Phase,
    source: str,
    argv: list[str],
    where: str,
    copy: Path,
    build_at: str,
    scratch: Path,
    seen: str,
    views: tuple[tuple[str, str], ...],
    seconds: float = 0,
) -> Step:
    """A command of the candidate's build run again by the harness (a re-link, a unit's
    `-E -dM`: its options may load a plugin), in folder `where` as the build sees it:
    the build read-only, only `scratch` (seen as `seen`) writable, and what it prints
    never read as the machine's fault."""
    if not sandbox.available():
        return toolcall.tool_call(layout, spec, phase, source, argv, _inside(copy, build_at, where),
                                  read=spec.data_paths, seconds=seconds)  # fmt: skip
    return toolcall.tool_call(
        layout, spec, phase, source, argv, scratch,
        read=spec.data_paths, mounts=((str(scratch), seen),),
        views=(*views, (str(copy), NEUTRAL_BUILD)), inside=where, seconds=seconds,
    )  # fmt: skip


# A GoogleTest name in a mangled symbol: the namespace `testing` (N7testing...E), or a
# template argument or type of it.
_GTEST_SYMBOL = re.compile(r"_Z.*7testing")


def spell(text: str, tree_at: str, build_at: str) -> str:
    """A path or command with a cell's own tree and build folders spelt <tree>, <build>
    (they differ between cells without a sandbox)."""
    return text.replace(tree_at, "<tree>").replace(build_at, "<build>")


RELINK_SECONDS = 120.0  # one test program's link, or a test unit's `-E -dM`, run again
# A test unit's compile run again: a large unit on a loaded machine, not a load-noise
# reject (a timeout is the candidate's: an `.incbin` of a FIFO only the compile reads).
COMPILE_AGAIN_SECONDS = 600.0
_SOURCE_SUFFIXES = (".c", ".cc", ".cp", ".cpp", ".cxx", ".c++", ".m", ".mm", ".cu", ".s")  # lowered


def _graph(
    db: list[dict[str, object]], tree_at: str, build_at: str, copy: Path, read: shadows.Reader
) -> dict[str, Any]:
    """What the build compiled and linked, read before any of its programs runs: per
    compile, object (build-relative) -> source (spelt) and the GoogleTest symbols the
    object names (defined or undefined, pyelftools); per other command with an output
    (links, archives), output -> its words (spelt); per link, the symbols two of its
    inputs define and the inputs it cannot read (cxxgate/cells/shadows.py). Ninja's own
    commands, not the project's word: the objects are those Ninja made. A link's words are
    those of the part of its line that writes the program (cxxgate/cells/relink.py
    link_part): a POST_BUILD `cmake -E echo` is not a link word."""
    compiles: dict[str, str] = {}
    symbols: dict[str, list[str]] = {}
    links: dict[str, list[str]] = {}
    for entry in db:
        output, command = str(entry.get("output", "")), str(entry.get("command", ""))
        if not output or not command:
            continue
        directory = str(entry.get("directory", build_at))
        # A compile by what it reads and makes, not by how its command is spelt (`-c`,
        # `--compile`, a `cp`); a source made into two objects is read in both.
        source = spell(str(entry.get("file", "")), tree_at, build_at)
        if output.endswith((".o", ".obj")) and source.lower().endswith(_SOURCE_SUFFIXES):
            compiles[output] = source
            found = _inside(copy, build_at, posixpath.join(directory, output))
            symbols[source] = sorted(set(symbols.get(source, [])) | gtest_symbols(found, copy))
        elif "--regenerate-during-build" not in command:
            words = relink.link_part(command, output, build_at)
            if words is None:
                try:
                    words = shlex.split(command)
                except ValueError:
                    words = command.split()
            links[output] = [spell(w, tree_at, build_at) for w in words]
    return {
        "compiles": compiles, "symbols": symbols, "links": links,
        "shadowed": shadows.shadowed(links, read),
    }  # fmt: skip


def _test_loads(
    spec: CellSpec, layout: Layout, listing: str, copy: Path, cell: Path, out: Path
) -> list[Step]:
    """Each listed test's shared libraries as the loader finds them for its run
    (cxxgate/cells/loads.py), spelt, into the suite's graph."""
    graph = read_graph(out)
    if not graph:
        return []
    tree_at, build_at = paths(cell)  # as the listing names them
    scratch, seen = _scratch(out, "loads")
    views = ((str(cell / "trees" / "src"), NEUTRAL_TREE),) if sandbox.available() else ()

    def call(what: str, argv: list[str], where: str) -> Step:
        return _sealed(spec, layout, "inspect", what, argv, where, copy, build_at, scratch,
                       seen, views, RELINK_SECONDS)  # fmt: skip

    found = loads.resolve(listing, build_at, copy, call)
    graph["loads"] = {
        test: {n: spell(p, tree_at, build_at) for n, p in libs.items()}
        for test, libs in found.loads.items()
    }  # fmt: skip
    graph["filters"] = found.filters
    graph["neutral"] = {
        test: {n: spell(p, tree_at, build_at) for n, p in libs.items()}
        for test, libs in found.neutral.items()
    }  # fmt: skip
    graph["runs"] = {test: spell(p, tree_at, build_at) for test, p in found.runs.items()}
    graph["binds"] = loads.binds(graph.get("links", {}), copy, cell / "trees" / "src")
    names = {n for libs in found.loads.values() for n in libs}
    searched = {spell(f, tree_at, build_at) for f in found.searched}
    graph["versions"] = loads.versions(names, searched, copy, cell / "trees" / "src")
    (out / GRAPH_JSON).write_text(json.dumps(graph, indent=1, sort_keys=True) + "\n")
    return [replace(s, output=s.output[-2000:]) for s in found.steps]


def _inside(copy: Path, build_at: str, path: str) -> Path:
    """The copy's file or folder at a path as the build saw it (the copy itself for one
    outside the build)."""
    if PurePosixPath(path).is_relative_to(build_at):
        return copy / PurePosixPath(path).relative_to(build_at)
    return copy


def gtest_symbols(obj: Path, inside: Path) -> set[str]:
    """The mangled GoogleTest names an object's symbol table holds, each `U name` (bound
    elsewhere: GoogleTest's library) or `D name` (defined here: a template instantiated
    with the unit's own types); an object that is not there, not a regular file in folder
    `inside` (testframeworks.open_regular: the build's commands made it) or not ELF: one
    marker name, so it never reads as clean."""
    opened = testframeworks.open_regular(obj, inside)
    if opened is None:
        return {"(not an ELF object)"}
    try:
        with opened as f:
            elf = ELFFile(f)
            found = set()
            for section in elf.iter_sections():
                if isinstance(section, SymbolTableSection):
                    found |= {
                        ("U " if s["st_shndx"] == "SHN_UNDEF" else "D ") + s.name
                        for s in section.iter_symbols()
                        if _GTEST_SYMBOL.match(s.name)
                    }
            return found
    except ELF_ERRORS:
        return {"(not an ELF object)"}


def _again(
    spec: CellSpec,
    layout: Layout,
    cell: Path,
    copy: Path,
    out: Path,
    units: list[dict[str, object]],
) -> list[Step]:
    """Each test unit's compile command run again by the harness, sealed (_sealed: its
    options may load a plugin), from its system compiler driver on: `-E -dM`, the
    framework macros it sees (macros.json); `-E -dM` of an empty unit with the same
    options, every macro they define (defines.json: `--define-macro=X`, `-funsigned-char`
    and `-include` read alike, however spelt); and the compile itself into scratch, whose
    object must be the build's byte for byte (objects.json): a custom command may
    rewrite a test unit's object after its compile, with commands that name no object.
    The compile is not run again where a unit read bytes already compiled, or in a
    trusted tree (the base tree: cxxgate/cells/verified.py). Per source path relative to the tree;
    each step has RELINK_SECONDS, and once one runs out of time (a header the build made
    a FIFO) the rest are not run."""
    tree_at, build_at = paths(cell) if sandbox.available() else (paths(cell)[0], str(copy))
    scratch, seen = _scratch(out, "macros")
    views = ((str(cell / "trees" / "src"), NEUTRAL_TREE),) if sandbox.available() else ()
    steps: list[Step] = []
    macros: dict[str, dict[str, str]] = {}
    defines: dict[str, dict[str, str]] = {}
    by_options: dict[tuple[str, ...], dict[str, str]] = {}  # units of one target: one run
    objects: dict[str, str] = {}
    store = verified.Store(layout.root)
    stalled = ""
    for i, entry in enumerate(units):
        rel = str(PurePosixPath(str(entry["file"])).relative_to(tree_at))
        key = rel if rel not in macros else f"{rel}#{i}"  # a unit compiled twice: both read
        compiler = relink.compiler_on(entry_argv(entry))
        if stalled or compiler is None:
            why = f"{stalled} ran out of time" if stalled else "no compiler driver of the system"
            macros[key] = {"": f"did not preprocess ({why})"} if stalled else UNDRIVEN
            objects[key], defines[key] = f"not compiled ({why})", macros[key]
            continue
        directory = str(entry.get("directory", build_at))
        at = f"{seen}/{i}"
        options = tuple(_again_argv(_without(compiler, str(entry["file"]), directory), []))
        if options not in by_options:
            empty = [*options, "-x", "c++", "-E", "-dM", "/dev/null", "-o", f"{at}.p"]
            step = _sealed(spec, layout, "preprocess", f"{rel}#options", empty, directory,
                           copy, build_at, scratch, seen, views, RELINK_SECONDS)  # fmt: skip
            steps.append(replace(step, output=step.output[-2000:]))
            by_options[options] = (
                all_macros(_scratch_text(scratch, f"{i}.p")) if step.exit == 0
                else {"": "did not preprocess an empty unit"}
            )  # fmt: skip
            if step.timed_out:
                stalled, objects[key] = rel, "not compiled (its preprocessing ran out of time)"
                macros[key] = defines[key] = by_options[options]
                continue
        defines[key] = by_options[options]
        dm = _again_argv(compiler, ["-E", "-dM", "-MD", "-MF", f"{at}.d", "-o", f"{at}.h"])
        step = _sealed(spec, layout, "preprocess", rel, dm, directory, copy, build_at,
                       scratch, seen, views, RELINK_SECONDS)  # fmt: skip
        steps.append(replace(step, output=step.output[-2000:]))
        text, deps = "", None
        if step.exit == 0:
            text = _scratch_text(scratch, f"{i}.h")
            deps = verified.depfile_paths(_scratch_text(scratch, f"{i}.d"))
        macros[key] = framework_macros(text) if step.exit == 0 else {"": "did not preprocess"}
        if step.timed_out:
            stalled, objects[key] = rel, "not compiled (its preprocessing ran out of time)"
            continue
        made = _inside(copy, build_at, posixpath.join(directory, str(entry.get("output", ""))))
        known = None if deps is None else verified.key(
            spec.envelope.toolchain.version_sha, _again_argv(compiler, ["-c"]), directory, deps,
            lambda seen_at: _host_bytes(seen_at, tree_at, cell, build_at, copy),
        )  # fmt: skip
        again = store.get(known) if known else None
        if again is None and known and spec.trusted:
            # A case's own tree (CellSpec.trusted) wrote the compile cache every other
            # tree's build reads: its objects are trusted as those results are. Its digest
            # is kept for a candidate's unit that reads the same bytes, not made again.
            again = relink.digest(made, copy) or None
            if again:
                store.put(known, again)
        if again is None:
            argv = _again_argv(compiler, ["-c", "-o", f"{at}.o"])
            step = _sealed(spec, layout, "inspect", rel, argv, directory, copy, build_at,
                           scratch, seen, views, COMPILE_AGAIN_SECONDS)  # fmt: skip
            steps.append(replace(step, output=step.output[-2000:]))
            stalled = rel if step.timed_out else ""
            again = relink.digest(scratch / f"{i}.o", scratch) if step.exit == 0 else ""
            if again and known:
                store.put(known, again)
        objects[key] = (
            "" if again and again == relink.digest(made, copy)
            else "its object is not what its compile command makes" if again
            else f"its compile did not finish in {COMPILE_AGAIN_SECONDS:.0f} s" if step.timed_out
            else "its compile command does not compile it again"
        )  # fmt: skip
    (out / MACROS_JSON).write_text(json.dumps(macros, indent=1, sort_keys=True) + "\n")
    (out / DEFINES_JSON).write_text(json.dumps(defines, indent=1, sort_keys=True) + "\n")
    (out / OBJECTS_JSON).write_text(json.dumps(objects, indent=1, sort_keys=True) + "\n")
    run.remove_work(scratch)
    return steps


def _scratch_text(scratch: Path, name: str) -> str:
    return (testframeworks.read_regular(scratch / name, scratch) or b"").decode(errors="replace")


def _host_bytes(seen: str, tree_at: str, cell: Path, build_at: str, copy: Path) -> bytes | None:
    """The bytes of a file a path of the sealed view names: the tree's, the build's (as
    testframeworks.read_regular reads them: no link out, no FIFO); None for any other
    (the system's are read where they are)."""
    for at, host in ((tree_at, cell / "trees" / "src"), (build_at, copy)):
        if seen.startswith(f"{at}/"):
            return testframeworks.read_regular(host / seen[len(at) + 1 :], host, 256 << 20)
    return None


def _again_argv(argv: list[str], tail: list[str]) -> list[str]:
    """A compile command without its output, its dependency file and its `-c`, and with
    `tail` (what to make, and where) at its end."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if arg in ("-c", "-MD", "-MMD") or arg.startswith(("-o", "-MF")):
            continue
        kept.append(arg)
    return [*kept, *tail]


def framework_macros(defines: str) -> dict[str, str]:
    """name -> definition of the test frameworks' macros in `-dM` output."""
    return {n: d for n, d in all_macros(defines).items() if FRAMEWORK_MACRO.fullmatch(n)}


def all_macros(defines: str) -> dict[str, str]:
    """name -> definition of every macro in `-dM` output."""
    found: dict[str, str] = {}
    for line in defines.splitlines():
        if not line.startswith("#define "):
            continue
        head, _, body = line[8:].partition(" ")
        found[head.split("(", 1)[0]] = f"{head} {body}".strip()
    return found


def _without(argv: list[str], source: str, directory: str) -> list[str]:
    """A compile command without its source file (the compile database's `file`, spelt
    as the command spells it or relative to its folder)."""
    where = posixpath.normpath(posixpath.join(directory, source))
    for i in range(len(argv) - 1, 0, -1):
        if posixpath.normpath(posixpath.join(directory, argv[i])) == where:
            return [*argv[:i], *argv[i + 1 :]]
    return argv
