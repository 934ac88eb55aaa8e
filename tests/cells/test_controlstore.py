"""A unit's diagnostic-control record kept by what its compile read
(cxxgate/cells/controlstore.py), on the real g++: another build folder sharing the file
storage takes it instead of preprocessing again, and a tree that would preprocess
differently (a header's bytes, a new file's name) never does."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import make_tree

from cxxgate.cells.cell import build
from cxxgate.store.layout import Layout
from cxxgate.toolchain import ccache
from cxxgate.toolchain.cellspec import CellResult, CellSpec, Unit
from cxxgate.toolchain.envelope import Envelopes

ENVELOPES = """\
toolchains:
  gcc: {command: g++, family: gcc}
envelopes:
  plain: {toolchain: gcc, std: c++20, flags: [-O0]}
"""
PRAGMA = '#pragma GCC diagnostic ignored "-Wunused-variable"'
HEADER = f"#pragma once\n{PRAGMA}\ninline int f() {{ return 1; }}\n"
SOURCE = '#include "x.hpp"\nint g() { int unused; return f(); }\n'
PROBE = Unit("main.cpp", '#include "x.hpp"\nint g();\nint main() { return f() + g() - 2; }\n')
FILES = {"include/x.hpp": HEADER, "src/a.cpp": SOURCE}


@pytest.fixture
def manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(ccache.REMOTE, f"file:{tmp_path / 'shared'}")
    monkeypatch.delenv("CXXGATE_REUSE", raising=False)
    path = tmp_path / "envelopes.yaml"
    path.write_text(ENVELOPES)
    return path


def _build(layout: Layout, tree: str, manifest: Path) -> CellResult:
    spec = CellSpec(
        kind="exe",
        tree_key=tree,
        units=(PROBE,),
        tree_sources=("src/*.cpp",),
        include_dirs=("include",),
        envelope=Envelopes(manifest).get("plain"),
        compile_seconds=60,
    )
    return build(spec, layout)


def _controls(layout: Layout) -> list[tuple[str, str, int, str]]:
    """Every object cell's controls (unit, file, line, text), sorted."""
    found = []
    for path in (layout.root / "cells").glob("*/*/result.json"):
        cell = CellResult.load(path)
        found += [(c["unit"], c["path"], c["line"], c["text"]) for c in cell.controls or []]
    return sorted(found)


def _preprocessed(layout: Layout) -> int:
    log = layout.root / "compiler-calls.log"
    return sum(ln.split()[2] == "preprocess" for ln in log.read_text().splitlines())


def test_another_build_folder_takes_the_record_and_a_changed_tree_does_not(
    tmp_path: Path, manifest: Path
) -> None:
    one, two = Layout(tmp_path / "one"), Layout(tmp_path / "two")
    tree = "t1" * 12
    make_tree(one, tree, FILES)
    assert _build(one, tree, manifest).status == "ok"
    assert _preprocessed(one) == 2  # main.cpp and src/a.cpp, each in its object cell
    assert ("src/a.cpp", "include/x.hpp", 2, PRAGMA) in _controls(one)

    # The same bytes in another build folder: the records, and no -E.
    make_tree(two, tree, FILES)
    assert _build(two, tree, manifest).status == "ok"
    assert _preprocessed(two) == 0
    assert _controls(two) == _controls(one)

    # A header the units read has other bytes: both units preprocess again, and the
    # controls are this tree's.
    edited = "t2" * 12
    wall = '#pragma GCC diagnostic ignored "-Wall"'
    make_tree(two, edited, {**FILES, "include/x.hpp": HEADER.replace(PRAGMA, f"{wall}\n{PRAGMA}")})
    assert _build(two, edited, manifest).status == "ok"
    assert _preprocessed(two) == 2
    assert ("src/a.cpp", "include/x.hpp", 2, wall) in _controls(two)

    # Same bytes in every file read, one more file in the tree (it could shadow an
    # include): preprocessed again.
    grown = "t3" * 12
    make_tree(two, grown, {**FILES, "src/x.hpp": "#error shadow\n"})
    _build(two, grown, manifest)
    assert _preprocessed(two) == 4
