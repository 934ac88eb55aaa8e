"""Programs link objects: each translation unit is compiled once per (what it reads,
envelope, flags), whichever gate or unit links it (cxxgate/cells/cell.py)."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

from conftest import SHIPPED, Grade, make_tree

from cxxgate.cells.cell import build
from cxxgate.store.layout import Layout
from cxxgate.toolchain.cellspec import CellResult, CellSpec, Unit
from cxxgate.toolchain.envelope import Envelopes

ENVELOPES = Envelopes(SHIPPED / "envelopes.yaml")
TREE = {
    "include/lib.hpp": "int answer();\nint other();\n",
    "src/lib.cpp": '#include "lib.hpp"\nint answer() { return 42; }\n',
    "src/other.cpp": '#include "lib.hpp"\nint other() { return 7; }\n',
}
# Three programs, as three gates would plan them: each links the tree's two sources.
PROGRAMS = [
    Unit("main.cpp", f'#include <cstdio>\n#include "lib.hpp"\nint main() {{ {body} }}\n')
    for body in (
        'std::printf("%d\\n", answer());',
        'std::printf("%d\\n", other());',
        'std::printf("%d\\n", answer() + other());',
    )
]


def _program(tree: str, unit: Unit, envelope: str) -> CellSpec:
    return CellSpec(
        kind="exe",
        tree_key=tree,
        units=(unit,),
        tree_sources=("src/*.cpp",),
        include_dirs=("include",),
        envelope=ENVELOPES.get(envelope),
        compile_seconds=60,
        entry=True,
    )


def _compiles(layout: Layout) -> Counter[str]:
    """Compiler calls per source file name (compiler-calls.log: time key phase source)."""
    lines = layout.compiler_log.read_text().splitlines()
    return Counter(line.split()[3] for line in lines if line.split()[2] == "compile")


def test_a_library_source_is_compiled_once_per_tree_and_envelope(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "out")
    make_tree(layout, "a", TREE)
    built = [build(_program("a", u, env), layout) for env in ("dbg", "rel") for u in PROGRAMS]
    assert all(c.status == "ok" for c in built), [c.detail for c in built]
    outputs = [subprocess.run([c.binary or ""], capture_output=True, text=True) for c in built]
    assert [o.stdout for o in outputs] == ["42\n", "7\n", "49\n"] * 2
    # Six programs, two envelopes: each library source and the entry once per envelope,
    # each program's own unit once; every program's result still lists all its compiles.
    assert _compiles(layout) == {
        "lib.cpp": 2,
        "other.cpp": 2,
        "cxxgate_entry.cpp": 2,
        "main.cpp": 6,
    }
    # The entry first: its .preinit_array hook runs before anything else's.
    assert [s.source for s in built[0].compile_steps()] == [
        "cxxgate_entry.cpp",
        "main.cpp",
        "src/lib.cpp",
        "src/other.cpp",
    ]

    # A patch that edits only src/other.cpp: the objects of everything else are adopted.
    make_tree(layout, "b", {**TREE, "src/other.cpp": "int other() { return 8; }\n"})
    again = build(_program("b", PROGRAMS[2], "dbg"), layout)
    assert again.status == "ok"
    assert subprocess.run([again.binary or ""], capture_output=True, text=True).stdout == "50\n"
    assert _compiles(layout)["other.cpp"] == 3
    assert _compiles(layout).total() == 13  # one compile more: src/other.cpp
    adopted = [CellResult.load(layout.cell_result(k)) for k in again.parts[1:]]
    assert [bool(c.reused_from) for c in adopted] == [False, True, True, False]  # entry, ...


def test_a_compile_error_in_a_library_source_reads_as_before(tmp_path: Path) -> None:
    """Every program linking the broken source says so with the tree path, and the object
    is compiled once."""
    layout = Layout(tmp_path / "out")
    broken = '#include "lib.hpp"\nint answer() { return; }\n'
    make_tree(layout, "a", {**TREE, "src/lib.cpp": broken})
    built = [build(_program("a", u, "dbg"), layout) for u in PROGRAMS]
    assert {c.status for c in built} == {"compile_error"}
    for cell in built:
        failed = [s for s in cell.compile_steps() if s.exit != 0]
        assert [s.source for s in failed] == ["src/lib.cpp"]
        assert str(layout.tree("a") / "src/lib.cpp") in failed[0].output
    assert _compiles(layout)["lib.cpp"] == 1
    assert not any(c.binary for c in built)


def _tree_source_compiles(grade: Grade) -> Counter[tuple[str, ...]]:
    """Compiles of tree files in the shipped grade, by tree, envelope and argv (the
    compiling cell's own key and folder taken out)."""
    seen: Counter[tuple[str, ...]] = Counter()
    layout = Layout(grade.out)
    for line in layout.compiler_log.read_text().splitlines():
        _, key, phase, _ = line.split(maxsplit=3)  # a source may hold blanks
        if phase != "compile" or not layout.cell_result(key).exists():
            continue  # a link; or a scan's compile (census: gates/census/survive.py), not a cell
        cell = CellResult.load(layout.cell_result(key))
        if cell.kind in ("syntax", "consumer", "cmake"):
            continue  # compiles of their own: a probe, a stranger, the project's build
        assert cell.kind == "object", f"{cell.kind} cell {key} compiled a unit itself"
        step = cell.compile_steps()[0]
        if "/" in step.source:  # a tree path; harness units have a bare name
            argv = tuple(a.replace(key, "KEY") for a in step.argv)
            seen[(cell.tree_root, cell.envelope, *argv)] += 1
    return seen


def test_the_shipped_grade_compiles_each_library_source_once(shipped: Grade) -> None:
    """token_handle's two must_build programs, hot_path's five lanes over sanitizer, matrix
    and budget, normalise's archive: each (tree, envelope, flags, source) compiles once."""
    seen = _tree_source_compiles(shipped)
    assert seen and max(seen.values()) == 1
    # A compile error in a library source still fails the program that links it, with the
    # tree path, in the class the gate gave before programs linked objects.
    negcomp = shipped.gate("token_handle/broken_build", "negcomp")
    assert negcomp["class"] == "build_broken"
    assert "src/token_handle.cpp:6: error: no declaration matches" in negcomp["summary"]
    matrix = shipped.gate("tally/stack_uninit", "matrix")
    assert matrix["class"] == "compile_fail:rel"
    assert "src/tally.cpp:6: error: 'sum' may be used uninitialized" in matrix["summary"]
