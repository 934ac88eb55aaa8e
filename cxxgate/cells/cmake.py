"""A project's own CMake build and test suite as cells (kinds `cmake` and `ctest`).

A `cmake` cell copies its tree into the cell folder (`trees/src`), gives that copy the
reference tree's test folders when its spec asks (a unit `test-folders.json`,
cxxgate/cells/testfolders.py), applies the harness's test patch there when its spec
carries one (a unit named `test.patch`), then configures
(Ninja, compile_commands.json exported) and builds. A `ctest` cell runs the suite of the
`cmake` cell it needs, as a candidate run (cxxgate/cells/ctest.py).

Every tool runs through cxxgate/toolchain/toolcall.py. Under bubblewrap the tree is seen read-only
at NEUTRAL_TREE and the build folder at NEUTRAL_BUILD, so a build folder does not depend on
where its cell lives: a `cmake` cell that needs another (the reference's build of the same
spec) starts from a copy of that build folder, and Ninja rebuilds what differs. Ninja
decides by mtimes, so before building, every file of this tree gets the seed tree's mtime
when its bytes equal the seed's, and a time newer than every seed output when they
differ; a file the seed's tree lacks means no seed (a new header can shadow one that
unchanged units found elsewhere, include/gtest/gtest.h, and no dependency file knows it).
The incremental build is then the full build, never less. Without a sandbox the paths
are real and every cell configures from scratch.

The compiler runs behind a launcher (CMAKE_CXX_COMPILER_LAUNCHER, a shell script in the
build folder) that notes each object it is asked for; after the build each is written to
the compiler log as a `compile` line, so counts include every compile inside a build,
failed ones too.

The grade's cache is shared by every tree's build, and a build runs commands the tree
chose (custom commands, its own launcher): only the case's own trees (CellSpec.trusted)
may write it. Project compiles keep their results in ccache's file storage under the
cache's folder (`projects/`), which a trusted build sees writable and any other build
read-only, as its only storage (remote_only): a candidate's compiles hit what the
reference's stored and store nothing. ccache's own folder for a build (its counters,
temporary files) is the cell's (`ccache/`). Before the harness writes a file in the cell
or build folder after a build's commands ran there, what is at that path is removed, not
followed: a command may have left a link into the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

from cxxgate.cells import testfolders, testhelpers
from cxxgate.cells.testframeworks import read_regular
from cxxgate.host import sandbox
from cxxgate.host.sandbox import NEUTRAL_BUILD, NEUTRAL_TREE
from cxxgate.intake.tree import materialise
from cxxgate.results import faults
from cxxgate.store.layout import Layout
from cxxgate.toolchain import ccache, toolcall
from cxxgate.toolchain.cellspec import (
    CellSpec,
    CellStatus,
    Phase,
    Step,
)
from cxxgate.toolchain.cellspec import result_path as cell_result
from cxxgate.toolchain.projectflags import COMPILE_DB, paths
from cxxgate.toolchain.tools import tool_path

TEST_PATCH = "test.patch"
# As the only target: configure (compile_commands.json) and build nothing; no CMake
# target can be called this.
CONFIGURE_ONLY = "cxxgate:configure-only"
LAUNCHER = ".cxxgate-launch"
NOTED = ".cxxgate-compiles"
STATS = ".cxxgate-ccache"  # one ccache stats log per compiled object
OWN_CACHE = "ccache"  # in the cell folder: ccache's own folder for this build alone
# Notes the object (-o) of each compile, then runs the compiler, through ccache when the
# cell has it (CCACHE_* set by the lines _launcher_text adds): `launcher compiler args`.
_LAUNCHER_HEAD = """#!/bin/sh
d=$(dirname "$0")
prev=
obj=
for a in "$@"; do
  if [ "$prev" = -o ]; then obj=$a; fi
  prev=$a
done
if [ -n "$obj" ]; then printf '%s\\n' "$obj" >> "$d/.cxxgate-compiles"; fi
"""
_LAUNCHER_CCACHE = """if [ -n "$obj" ]; then
  CCACHE_STATSLOG="$d/.cxxgate-ccache/$(printf '%s' "$obj" | tr / _).log"
  export CCACHE_STATSLOG
  exec {ccache} "$@"
fi
"""
# The project's flags are its own: of an envelope, a project build takes what a case asks
# for (sanitizers, instrumentation, defines, the compiler) and leaves out the warning
# policy (for the harness's probe units, not someone else's build: -Werror made a line of
# fmt's own test patch an error), the optimisation and debug levels (the build type's)
# and the language standard (the project's, unless the case names one: `std:`).
_NOT_FOR_PROJECTS = ("-W", "-pedantic", "-O", "-g", "-std=")
_PASS_THROUGH = ("-Wl,", "-Wa,", "-Wp,")  # options for the linker and assembler, not warnings


# gtest_discover_tests lists a test program's tests by running it: at ctest time, inside
# the suite's capped run (cxxgate/cells/ctest.py), not during the build.
DISCOVERY = ("-DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST",)

Built = tuple[CellStatus, str, list[Step], str | None]


def _test_folders(
    spec: CellSpec, layout: Layout, out: Path, steps: list[Step]
) -> Callable[[Path], object] | None:
    """The edit that gives a copied tree the reference's test folders and the helper
    folders its build shows (cxxgate/cells/testhelpers.py), when asked; what it set aside
    of the patch's is a step of the cell's (testfolders.STEP)."""
    asked = testfolders.asked(spec)
    if asked is None or not asked.reference:
        return None  # nothing asked, or the reference's own build (_own_helpers)
    reference = layout.tree(asked.reference)
    if not reference.is_dir():
        msg = f"the reference tree {asked.reference} is not materialised at {reference}"
        raise RuntimeError(msg)
    seed = layout.cell(spec.needs[0]) if spec.needs else None
    graph = _graph(spec, layout, seed, out, steps) if seed and asked.test_dirs else None
    helpers = graph.helper_folders(asked.test_dirs, asked.fixed, asked.folders) if graph else []
    stamp = layout.tree_stamp(spec.tree_key)
    changed = set(json.loads(stamp.read_text()).get("changed", [])) if stamp.is_file() else set()
    data = _tests_data(spec, layout, asked, graph, [*asked.folders, *helpers], changed)

    def prepare(tree: Path) -> None:
        known = graph.included_names([*asked.folders, *helpers]) if graph else None
        put = testfolders.restore(tree, reference, [*asked.folders, *helpers], known)
        put += testfolders.restore_files(tree, reference, data)
        aside = sorted(p for p in put if p in changed)
        said = {"folders": asked.folders, "helpers": helpers, "set_aside": aside}
        steps.append(Step("inspect", testfolders.STEP, [], 0, False, 0.0, json.dumps(said)))

    return prepare


def _tests_data(
    spec: CellSpec,
    layout: Layout,
    asked: testfolders.Asked,
    graph: testhelpers.Graph | None,
    restored: list[str],
    changed: set[str],
) -> list[str]:
    """The files outside the restored folders that the patch changed and the build takes
    from the reference tree all the same: those the reference's build never reads (no
    compile, and no command of a compile outside the restored folders names them; no
    command names them whose output the build reads on, Graph.build_reads; configure
    does not), which the reference patch does not change, CMake code aside. What a
    listed test reads at run time (simdjson's jsonexamples/, an input named on its
    command line, whatever its suffix) is the benchmark's; the library's code, its
    compile-time data and a table it is compiled to read stay the patch's."""
    if graph is None:
        return []
    seed = layout.cell(spec.needs[0])  # the reference's build, the graph's
    configured = _configure_inputs(seed / "build", seed / "trees/src")
    kept = graph.build_reads() | graph.named_by_compiles(restored)
    kept |= set(asked.fixed) | set(configured)
    return [
        p for p in sorted(changed)
        if not testfolders.cmake_code(p) and p not in kept
        and not any(p.startswith(f"{f}/") for f in restored)
    ]  # fmt: skip


def _own_helpers(spec: CellSpec, layout: Layout, out: Path, steps: list[Step]) -> None:
    """The reference's own build records the folders a candidate's build takes from it, as
    a candidate's does (testfolders.STEP): the suite compares their units as the tests'."""
    asked = testfolders.asked(spec)
    if asked is None or asked.reference:
        return
    graph = _graph(spec, layout, out, out, steps) if asked.test_dirs else None
    helpers = graph.helper_folders(asked.test_dirs, asked.fixed, asked.folders) if graph else []
    said = {"folders": asked.folders, "helpers": helpers, "set_aside": []}
    steps.append(Step("inspect", testfolders.STEP, [], 0, False, 0.0, json.dumps(said)))


def _graph(
    spec: CellSpec, layout: Layout, cell: Path, out: Path, steps: list[Step]
) -> testhelpers.Graph | None:
    """The build graph of a cmake cell's build (None without one: it failed)."""
    ninja = tool_path("ninja")
    if ninja is None or not (cell / "build" / "build.ninja").is_file():
        return None
    tree_at, build_at = paths(cell)
    views = ((str(cell / "build"), NEUTRAL_BUILD),) if sandbox.available() else ()
    said: list[str] = []
    for tool in (["compdb", "-x"], ["deps"]):
        argv = [ninja, "-C", build_at, "-t", *tool]
        step = toolcall.tool_call(
            layout, spec, "inspect", f"ninja -t {tool[0]}", argv, out,
            read=[*spec.data_paths, cell / "build"], views=views,
        )  # fmt: skip
        steps.append(replace(step, output=step.output[-2000:]))
        if step.exit != 0:
            return None
        said.append(step.output)
    try:
        db = json.loads(said[0])
    except ValueError:
        return None
    return testhelpers.Graph(db, testhelpers.deps(said[1]), tree_at, build_at)


def _binds(out: Path) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    if not sandbox.available():
        return (), ()
    return ((str(out / "trees" / "src"), NEUTRAL_TREE),), ((str(out / "build"), NEUTRAL_BUILD),)


def build(spec: CellSpec, layout: Layout, tree: Path, out: Path) -> Built:
    cmake = tool_path("cmake")
    if cmake is None or tool_path("ninja") is None:
        return "toolchain_missing", "cmake and ninja must be installed", [], None
    faults.check_folders(spec.data_paths)
    _clear(out / "trees")
    _clear(out / "build")
    patch = out / TEST_PATCH if any(u.name == TEST_PATCH for u in spec.units) else None
    steps: list[Step] = []
    stamp = materialise(
        tree, patch, ["**"], "src", Layout(out), allow_diagnostic_pragmas=True,
        prepare=_test_folders(spec, layout, out, steps),
    )  # fmt: skip
    if not stamp.applied:
        said = f"the test patch does not apply: {stamp.status}: {stamp.detail}"
        step = Step("configure", TEST_PATCH, ["git", "apply"], 1, False, 0.0, said)
        return "compile_error", said, [*steps, step], None
    src = out / "trees" / "src"
    build_dir = out / "build"
    seeded = _seed(spec, layout, src, build_dir)
    build_dir.mkdir(exist_ok=True)
    views, mounts = _binds(out)
    src_at, build_at = paths(out)

    def call(phase: Phase, argv: list[str]) -> Step:
        step = toolcall.tool_call(
            layout, spec, phase, argv[0], argv, out,
            read=spec.data_paths, mounts=mounts, views=views,
        )  # fmt: skip
        steps.append(step)
        return step

    launcher = build_dir / LAUNCHER
    launcher.write_text(_LAUNCHER_HEAD)
    launcher.chmod(0o755)
    if not seeded:
        step = call("configure", configure_argv(spec, cmake, src_at, build_at))
        if step.exit != 0 or step.timed_out:
            return _failed(steps, "cmake could not configure the project", spec)
    if spec.targets == (CONFIGURE_ONLY,):
        _export_db(build_dir, out)
        return "ok", "configured", steps, str(build_dir)
    if seeded and ccache.enabled():
        # A changed CMakeLists.txt would re-run configure inside the build, after ccache's
        # namespace was listed: the files configure writes (a header on an include
        # path) must be in that listing, so configure runs first.
        step = call("configure", configure_argv(spec, cmake, src_at, build_at))
        if step.exit != 0 or step.timed_out:
            return _failed(steps, "cmake could not configure the project", spec)
    _clear(build_dir / NOTED)  # configure ran the tree's code in this folder
    (build_dir / NOTED).write_text("")  # this build's compiles, not the seed's or configure's
    shared = _through_ccache(spec, layout, src, build_dir, out)
    if shared is not None and spec.trusted:
        mounts = (*mounts, (str(shared), str(shared)))  # the case's own tree: it stores
    elif shared is not None:
        # Any other tree's build sees the shared results read-only, whatever its commands
        # do (ccache's read-only attribute binds only ccache); what it compiles stays in
        # its build folder.
        views = (*views, (str(shared), str(shared)))
    targets = [a for t in spec.targets for a in ("--target", t)]
    step = call("build", [cmake, "--build", build_at, "-j", "2", *targets])
    steps += _compiles(layout, spec.key, build_dir)
    _export_db(build_dir, out)
    if step.exit != 0 or step.timed_out:
        return _failed(steps, "the build failed", spec, step)
    _own_helpers(spec, layout, out, steps)
    return "ok", "seeded" if seeded else "", steps, str(build_dir)


def _build_file(path: Path, build_dir: Path, cap: int = 64 << 20) -> bytes:
    """What the build wrote at `path` (b"" unless a regular file in the build folder, up to
    `cap` bytes): the project's commands may have put a link to /proc/kmsg, or a FIFO, in its
    place, and the harness reads it as root, outside any sandbox."""
    return read_regular(path, build_dir, cap) or b""


def _clear(path: Path) -> None:
    """Remove what is at `path`: a folder with what it holds, a file, a link (removed,
    never followed: a build's commands can write its cell and build folders, and a link
    they left there would turn the harness's next write there into a write elsewhere)."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)


def _export_db(build_dir: Path, out: Path) -> None:
    """The build's compile database, copied to the cell folder when CMake wrote one (read
    as _build_file reads; what was at the copy's path removed, not followed)."""
    _clear(out / COMPILE_DB)
    data = _build_file(build_dir / COMPILE_DB, build_dir)
    if data:
        (out / COMPILE_DB).write_bytes(data)


def case_options(build_type: str | None, std: str | None) -> tuple[str, ...]:
    """The configure options a case adds to its `build.options`: its build type and its
    language standard, each only when it names one (else the project's own)."""
    options = [f"-DCMAKE_BUILD_TYPE={build_type}"] if build_type else []
    if std is not None:
        options.append(f"-DCMAKE_CXX_STANDARD={std.rpartition('+')[2]}")
        options.append(f"-DCMAKE_CXX_EXTENSIONS={'ON' if std.startswith('gnu') else 'OFF'}")
    return tuple(options)


def build_flags(flags: tuple[str, ...], defines: tuple[str, ...]) -> list[str]:
    """An envelope's flags as a project build takes them (see _NOT_FOR_PROJECTS)."""
    kept = [f for f in flags if f.startswith(_PASS_THROUGH) or not f.startswith(_NOT_FOR_PROJECTS)]
    return [*kept, *(f"-D{d}" for d in defines)]


def configure_argv(spec: CellSpec, cmake: str, src_at: str, build_at: str) -> list[str]:
    """`cmake` configuring the project with its own flags: the envelope gives the compiler
    and what build_flags keeps; the case's options (build type, standard) come last."""
    env = spec.envelope
    assert env.toolchain.path is not None
    flags = build_flags(env.flags, env.defines)
    return [
        cmake,
        "-S",
        src_at,
        "-B",
        build_at,
        "-G",
        "Ninja",
        f"-DCMAKE_CXX_COMPILER={env.toolchain.path}",
        *([f"-DCMAKE_CXX_FLAGS={' '.join(flags)}"] if flags else []),
        "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
        f"-DCMAKE_CXX_COMPILER_LAUNCHER={build_at}/{LAUNCHER}",
        *DISCOVERY,
        *spec.extra_flags,
    ]


def host_bound(built: Built) -> bool:
    """Whether the build stopped in CMake's configure. Its checks (find_program,
    find_package, try_compile) read the host, which the cell's key does not hold: a
    reference that failed for want of lcov must pass once lcov is installed, so the failure
    is this run's word and the next run configures again (a few seconds; a build that got
    past configure is kept as it is)."""
    status, _, steps, _ = built
    if status == "ok" or not steps:
        return False
    return steps[-1].phase == "configure" and steps[-1].source != TEST_PATCH


def _failed(steps: list[Step], what: str, spec: CellSpec, last: Step | None = None) -> Built:
    last = last or steps[-1]
    if last.timed_out:
        # Not a compiler's word but the limit's: said so, never "the build failed".
        said = f"timeout: the build ran past limits.build_seconds ({spec.compile_seconds:g} s)"
        return "timeout", said, steps, None
    return "compile_error", f"{what}: {first_diagnostic(last.output)}", steps, None


def first_diagnostic(output: str) -> str:
    """The first line a compiler or CMake marked as an error, for the gate's summary."""
    lines = output.splitlines()
    for line in lines:
        if ": error:" in line or line.startswith("CMake Error"):
            return line.strip()
    return next((x.strip() for x in lines if x.startswith("FAILED:")), "no diagnostic")


def _seed(spec: CellSpec, layout: Layout, src: Path, build_dir: Path) -> bool:
    """Start from the needed cell's build folder when there is one to start from."""
    if not spec.needs or not sandbox.available():
        return False
    seed = layout.cell(spec.needs[0])
    seed_build = seed / "build"
    if not (seed_build / "build.ninja").is_file() or not cell_result(layout, seed.name).is_file():
        return False
    seed_src = seed / "trees" / "src"
    if any(not (seed_src / p.relative_to(src)).exists() for p in src.rglob("*") if p.is_file()):
        # A new file may stand in for a header that unchanged units found elsewhere
        # (include/gtest/gtest.h): Ninja's dependencies do not know it. Build afresh.
        return False
    if any(not _same(src / f, seed_src / f) for f in _configure_inputs(seed_build, seed_src)):
        # The seed's products are the reference's, and Ninja remakes one only by a rule of
        # the manifest. Other CMake code writes another manifest, which may name a product
        # of the seed's as an input and make it by no rule: the reference's fixed libcalc.a,
        # the candidate's library renamed and its tests linked to libcalc.a by path. Build
        # afresh: ccache still gives every unchanged compile.
        return False
    # Testing/ is the seed's ctest cell's, possibly being written right now.
    shutil.copytree(seed_build, build_dir, symlinks=True, ignore=shutil.ignore_patterns("Testing"))
    newest = max((p.stat().st_mtime for p in build_dir.rglob("*") if p.is_file()), default=0.0)
    _align(src, seed_src, max(time.time(), newest + 2.0))
    return True


def _configure_inputs(build: Path, tree: Path) -> list[str]:
    """The tree's files whose change makes CMake configure again (the inputs of
    build.ninja's own RERUN_CMAKE edge: every CMakeLists.txt, included .cmake file and
    configure_file input), tree-relative; from the seed's manifest, which the reference's
    CMake code wrote."""
    text = (build / "build.ninja").read_text(errors="replace").replace("$\n", "")
    edge = "build build.ninja: RERUN_CMAKE"
    line = next((x for x in text.splitlines() if x.startswith(edge)), "")
    words = re.split(r"(?<!\$) ", line.partition("|")[2].replace("$$", "\0"))
    found = []
    for word in words:
        path = word.replace("$ ", " ").replace("$:", ":").replace("\0", "$").strip()
        if path.startswith(f"{NEUTRAL_TREE}/"):
            found.append(path.removeprefix(f"{NEUTRAL_TREE}/"))
    # Without a listing, every file CMake could read as code (its names) counts.
    return found or [
        str(p.relative_to(tree))
        for p in tree.rglob("*")
        if p.name == "CMakeLists.txt" or p.name.endswith((".cmake", ".cmake.in"))
    ]


def _align(src: Path, seed_src: Path, fresh: float) -> None:
    """Same bytes as the seed's tree: the seed's mtime; other bytes: `fresh`."""
    for path in src.rglob("*"):
        if not path.is_file():
            continue
        twin = seed_src / path.relative_to(src)
        if twin.is_file() and _same(path, twin):
            st = twin.stat()
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        else:
            os.utime(path, (fresh, fresh))


def _same(a: Path, b: Path) -> bool:
    if not a.is_file() or not b.is_file():
        return a.exists() == b.exists() and not a.exists()
    if a.stat().st_size != b.stat().st_size:
        return False
    return hashlib.sha256(a.read_bytes()).digest() == hashlib.sha256(b.read_bytes()).digest()


def _through_ccache(
    spec: CellSpec, layout: Layout, src: Path, build_dir: Path, out: Path
) -> Path | None:
    """Make the launcher run each compile through the grade's ccache (cxxgate/toolchain/ccache.py)
    and return the folder of the results every tree's build shares (ccache's file storage,
    writable only when `spec.trusted`); None when compiles do not go through it.

    Keyed as the harness's own compiles are: depend mode (Ninja's compiles carry -MD),
    ccache's hash of the whole argv, `compiler_check` the toolchain's identity, and a
    namespace that is the listing of what an include could find (the tree's names and
    the build folder's files, its products aside): a new header that shadows an include
    in one tree never takes another tree's result. Under bubblewrap the tree and build
    folder sit at /src/project and /src/build, so the same unit in two trees (or two
    build folders) runs the same argv and hits.

    The shared results are ccache's only storage (remote_only, a file storage: ccache's
    own cache folder has another layout and cannot be read as one). A trusted build stores
    its misses there; any other build's storage is `|read-only` and its sandbox sees the
    folder read-only (build), so it stores nothing: its objects are in its build folder,
    and a private cache would only copy each of them once more. ccache's counters and
    temporary files go to the cell's own folder. A hit in the shared results is counted by
    ccache as a remote storage hit (_compiles reads it as a hit).

    No CXXGATE_CCACHE_REMOTE here, for any tree: ccache reaches redis over the network,
    and a build's sandbox has none. Giving it the network would give it to every command
    of the build, not only to ccache, and redis has no read-only view the harness could
    hand one build: a command could write any key other build folders read."""
    tc = spec.envelope.toolchain
    ccache_bin = ccache.binary()
    stats = build_dir / STATS
    _clear(stats)
    own = out / OWN_CACHE
    _clear(own)
    if not ccache.enabled() or ccache_bin is None or tc.path is None:
        return None
    stats.mkdir()
    shared = ccache.projects(layout.root)
    shared.mkdir(parents=True, exist_ok=True)
    (own / "tmp").mkdir(parents=True)
    config = own / "ccache.conf"
    config.write_text("")  # ours: no host configuration is read
    # A file storage's URL is percent-decoded by ccache (a space would end it).
    # A trusted build's hits refresh an entry's time, which `doit prune` reads
    # (cxxgate/store/prune.py); a read-only view cannot.
    storage = f"file:{quote(str(shared), safe='/')}" + (
        "|update-mtime=true" if spec.trusted else "|read-only"
    )
    names = hashlib.sha256(_names(src, products=False).encode())
    names.update(b"\0" + _names(build_dir, products=True).encode())
    if spec.data:  # a data folder on an include path: a new file there may shadow a header
        names.update(b"\0" + json.dumps(spec.data).encode())
    env = {
        "HOME": str(own),
        "CCACHE_CONFIGPATH": str(config),
        "CCACHE_DIR": str(own),
        "CCACHE_TEMPDIR": str(own / "tmp"),
        "CCACHE_COMPILERCHECK": f"string:{tc.version_sha}",
        "CCACHE_DEPEND": "1",
        "CCACHE_NAMESPACE": names.hexdigest()[:24],
        "CCACHE_REMOTE_ONLY": "1",
        "CCACHE_REMOTE_STORAGE": storage,
    }
    exports = "".join(f"{k}={shlex.quote(v)}\nexport {k}\n" for k, v in env.items())
    launcher = build_dir / LAUNCHER
    _clear(launcher)
    launcher.write_text(
        _LAUNCHER_HEAD
        + exports
        + _LAUNCHER_CCACHE.format(ccache=shlex.quote(ccache_bin))
        + 'exec "$@"\n'
    )
    launcher.chmod(0o755)
    return shared


def _names(root: Path, *, products: bool) -> str:
    """The files (and, in a tree, folders) under `root`; with `products`, a build folder's
    outputs left out by name (CMake's own folders, objects, libraries, Ninja's logs, the
    harness's notes): a seeded build folder holds the seed's, a fresh one none. Programs
    stay in (a seeded folder's listing differs from a fresh one's: fewer hits, never a
    wrong one)."""
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root)
        if products:
            dirs[:] = [d for d in dirs if d not in {"CMakeFiles", "Testing"} and d != STATS]
        else:
            found += [(rel / d).as_posix() + "/" for d in dirs]
        for name in files:
            path = Path(folder, name)
            if products and (
                name.startswith((".cxxgate", ".ninja")) or path.suffix in {".o", ".d", ".a", ".so"}
            ):
                continue
            # With its execute bit: a file's mode is no sign of a product (an executable
            # header on an include path was left out of the listing, so a build where
            # it shadowed an include was served another tree's object).
            mark = "*" if products and os.access(path, os.X_OK) else ""
            found.append((rel / name).as_posix() + mark)
    return "\n".join(sorted(found))


def _compiles(layout: Layout, key: str, build_dir: Path) -> list[Step]:
    """One compiler-log line and one `compile` step per object the launcher saw compiled
    in this build, with ccache's word on it (hit or miss) when it went through ccache."""
    objects = _build_file(build_dir / NOTED, build_dir).decode(errors="replace").splitlines()
    steps = []
    with layout.compiler_log.open("a") as log:
        for obj in sorted(set(objects)):
            log.write(f"{time.time():.3f} {key} compile {Path(obj).name}\n")
            stats = build_dir / STATS / (obj.replace("/", "_") + ".log")
            lines = _build_file(stats, build_dir).decode(errors="replace").splitlines()
            counters = [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]
            cached = ccache.outcome(counters) if counters else ""
            # ccache counts a hit in the shared results (a file storage, _through_ccache)
            # as a remote storage hit: it is a hit in this grade's cache, not in
            # CXXGATE_CCACHE_REMOTE's, which project builds never use.
            cached = "hit" if cached == "remote" else cached
            failed = "compile_failed" in counters
            # argv names the cell: two trees' builds of one object are two compiles.
            argv = [LAUNCHER, key, obj]
            steps.append(
                Step("compile", obj, argv, 1 if failed else 0, False, 0.0, "", cache=cached)
            )
    return steps
