"""A project's own CMake build and test suite as cells (kinds `cmake` and `ctest`).

A `cmake` cell copies its tree into the cell folder (`trees/src`), applies the harness's
test patch there when its spec carries one (a unit named `test.patch`), then configures
(Ninja, compile_commands.json exported) and builds. A `ctest` cell runs the suite of the
`cmake` cell it needs, as a candidate run (cxxgate/ctest.py).

Every tool runs through cxxgate/toolcall.py. Under bubblewrap the tree is seen read-only
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
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

from cxxgate import ctest, sandbox, toolcall
from cxxgate.cellspec import (
    CellSpec,
    CellStatus,
    Phase,
    Step,
)
from cxxgate.cellspec import result_path as cell_result
from cxxgate.layout import Layout
from cxxgate.projectflags import COMPILE_DB, paths
from cxxgate.sandbox import NEUTRAL_BUILD, NEUTRAL_TREE
from cxxgate.tools import tool_path
from cxxgate.tree import materialise

TEST_PATCH = "test.patch"
# As the only target: configure (compile_commands.json) and build nothing; no CMake
# target can be called this.
CONFIGURE_ONLY = "cxxgate:configure-only"
LAUNCHER = ".cxxgate-launch"
NOTED = ".cxxgate-compiles"
# Notes the object (-o) of each compile, then runs the compiler: `launcher compiler args`.
_LAUNCHER_TEXT = """#!/bin/sh
prev=
for a in "$@"; do
  if [ "$prev" = -o ]; then printf '%s\\n' "$a" >> "$(dirname "$0")/.cxxgate-compiles"; fi
  prev=$a
done
exec "$@"
"""

# gtest_discover_tests lists a test program's tests by running it: at ctest time, inside
# the suite's capped run (cxxgate/ctest.py), not during the build.
DISCOVERY = ("-DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST",)

Built = tuple[CellStatus, str, list[Step], str | None]


def build(spec: CellSpec, layout: Layout, tree: Path, out: Path) -> Built:
    if spec.kind == "ctest":
        return ctest.run_suite(spec, layout, out)
    return _cmake(spec, layout, tree, out)


def _binds(out: Path) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    if not sandbox.available():
        return (), ()
    return ((str(out / "trees" / "src"), NEUTRAL_TREE),), ((str(out / "build"), NEUTRAL_BUILD),)


def _cmake(spec: CellSpec, layout: Layout, tree: Path, out: Path) -> Built:
    cmake = tool_path("cmake")
    if cmake is None or tool_path("ninja") is None:
        return "toolchain_missing", "cmake and ninja must be installed", [], None
    shutil.rmtree(out / "trees", ignore_errors=True)
    shutil.rmtree(out / "build", ignore_errors=True)
    patch = out / TEST_PATCH if any(u.name == TEST_PATCH for u in spec.units) else None
    stamp = materialise(tree, patch, ["**"], "src", Layout(out), allow_diagnostic_pragmas=True)
    if not stamp.applied:
        said = f"the test patch does not apply: {stamp.status}: {stamp.detail}"
        step = Step("configure", TEST_PATCH, ["git", "apply"], 1, False, 0.0, said)
        return "compile_error", said, [step], None
    src = out / "trees" / "src"
    build_dir = out / "build"
    seeded = _seed(spec, layout, src, build_dir)
    build_dir.mkdir(exist_ok=True)
    views, mounts = _binds(out)
    src_at, build_at = paths(out)
    steps: list[Step] = []

    def call(phase: Phase, argv: list[str]) -> Step:
        step = toolcall.tool_call(
            layout, spec, phase, argv[0], argv, out, read=[], mounts=mounts, views=views
        )
        steps.append(step)
        return step

    launcher = build_dir / LAUNCHER
    launcher.write_text(_LAUNCHER_TEXT)
    launcher.chmod(0o755)
    if not seeded:
        env = spec.envelope
        assert env.toolchain.path is not None
        flags = [*env.flags, *(f"-D{d}" for d in env.defines)]
        configure = [
            cmake,
            "-S",
            src_at,
            "-B",
            build_at,
            "-G",
            "Ninja",
            f"-DCMAKE_CXX_COMPILER={env.toolchain.path}",
            f"-DCMAKE_CXX_FLAGS={' '.join(flags)}",
            f"-DCMAKE_CXX_STANDARD={env.std.rpartition('+')[2]}",
            "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
            f"-DCMAKE_CXX_COMPILER_LAUNCHER={build_at}/{LAUNCHER}",
            *DISCOVERY,
            *spec.extra_flags,
        ]
        step = call("configure", configure)
        if step.exit != 0 or step.timed_out:
            return _failed(steps, "cmake could not configure the project")
    if spec.targets == (CONFIGURE_ONLY,):
        if (build_dir / COMPILE_DB).is_file():
            shutil.copy2(build_dir / COMPILE_DB, out / COMPILE_DB)
        return "ok", "configured", steps, str(build_dir)
    (build_dir / NOTED).write_text("")  # this build's compiles, not the seed's or configure's
    targets = [a for t in spec.targets for a in ("--target", t)]
    step = call("build", [cmake, "--build", build_at, "-j", "2", *targets])
    _log_compiles(layout, spec.key, build_dir / NOTED)
    if (build_dir / COMPILE_DB).is_file():
        shutil.copy2(build_dir / COMPILE_DB, out / COMPILE_DB)
    if step.exit != 0 or step.timed_out:
        return _failed(steps, "the build failed")
    return "ok", "seeded" if seeded else "", steps, str(build_dir)


def _failed(steps: list[Step], what: str) -> Built:
    last = steps[-1]
    status: CellStatus = "timeout" if last.timed_out else "compile_error"
    return status, f"{what}: {first_diagnostic(last.output)}", steps, None


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
    # Testing/ is the seed's ctest cell's, possibly being written right now.
    shutil.copytree(seed_build, build_dir, symlinks=True, ignore=shutil.ignore_patterns("Testing"))
    newest = max((p.stat().st_mtime for p in build_dir.rglob("*") if p.is_file()), default=0.0)
    _align(src, seed_src, max(time.time(), newest + 2.0))
    return True


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
    if a.stat().st_size != b.stat().st_size:
        return False
    return hashlib.sha256(a.read_bytes()).digest() == hashlib.sha256(b.read_bytes()).digest()


def _log_compiles(layout: Layout, key: str, noted: Path) -> None:
    """One compiler-log line per object the launcher saw compiled in this build."""
    objects = noted.read_text(errors="replace").splitlines() if noted.is_file() else []
    with layout.compiler_log.open("a") as log:
        for obj in sorted(objects):
            log.write(f"{time.time():.3f} {key} compile {Path(obj).name}\n")
