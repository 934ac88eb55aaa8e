"""A unit's diagnostic-control record kept by what its compile read
(cxxgate/cells/controlstore.py), on the real g++: another build folder sharing the file
storage takes it instead of preprocessing again, and a tree that would preprocess
differently (a header's bytes, a new file's name) never does."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import build_program, make_tree

from cxxgate.cells import reuse
from cxxgate.store.layout import Layout
from cxxgate.toolchain import ccache
from cxxgate.toolchain.cellspec import CellResult, Unit

ENVELOPES = """\
toolchains:
  gcc: {command: g++, family: gcc}
envelopes:
  plain: {toolchain: gcc, std: c++20, flags: [-O0]}
  strict: {toolchain: gcc, std: c++20, flags: [-O0, -Wall, -Werror]}
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


def _build(layout: Layout, tree: str, manifest: Path, envelope: str = "plain") -> CellResult:
    return build_program(layout, tree, PROBE, manifest, envelope)


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


# Red team round 23. A pragma spelt through macro arguments (intake's text scan misses
# it; only the -E record shows it) that lets an unused variable compile under -Werror.
SILENCE = '#define CAT(a, b) a##b\nCAT(_Pra, gma)("GCC diagnostic ignored \\"-Wunused-variable\\"")'
SILENCE += "\n"


def _silenced(layout: Layout) -> bool:
    return any(text == PRAGMA for *_, text in _controls(layout))


@pytest.mark.parametrize(("real", "escaped"), [("q$.hpp", "q$$.hpp"), ("q#.hpp", "q\\#.hpp")])
def test_a_name_make_escapes_is_the_file_read_not_a_decoy(
    tmp_path: Path, manifest: Path, real: str, escaped: str
) -> None:
    """GCC writes `$` as `$$` and `#` as `\\#` in a dependency file. Read literally, the key
    hashed a decoy the patch adds under the escaped name, never the header the compile
    read: a tree whose `q$.hpp` silences a warning took the clean tree's record."""
    header = f'#pragma once\n#include "{real}"\ninline int f() {{ return 1; }}\n'

    def files(quiet: str) -> dict[str, str]:
        decoy = {f"include/{escaped}": "// decoy\n"}
        source = '#include "x.hpp"\nint g() { KEEP int unused; return f(); }\n'
        return {"include/x.hpp": header, f"include/{real}": quiet, "src/a.cpp": source, **decoy}

    one, two = Layout(tmp_path / "one"), Layout(tmp_path / "two")
    make_tree(one, "a1" * 12, files("#pragma once\n#define KEEP [[maybe_unused]]\n"))
    assert _build(one, "a1" * 12, manifest, "strict").status == "ok" and not _silenced(one)
    for layout in (one, two):  # the same build folder (reuse.py) and another (the store)
        make_tree(layout, "b2" * 12, files("#pragma once\n#define KEEP\n" + SILENCE))
        assert _build(layout, "b2" * 12, manifest, "strict").status == "ok"
        assert _silenced(layout)


def test_an_honest_name_make_escapes_grades(tmp_path: Path, manifest: Path) -> None:
    one = Layout(tmp_path / "one")
    header = '#pragma once\n#include "q$.hpp"\ninline int f() { return 1; }\n'
    make_tree(one, "c3" * 12, {**FILES, "include/x.hpp": header, "include/q$.hpp": ""})
    assert _build(one, "c3" * 12, manifest).status == "ok"


def test_the_record_is_made_where_the_compile_saw_the_tree(tmp_path: Path, manifest: Path) -> None:
    """Under bubblewrap with ccache the compile sees the tree at /src/project. The -E ran
    at the tree's own path, so a header that tests where it is showed the compile a
    pragma its record never held; the -E now sees what its compile saw."""
    header = '#pragma once\n#if __has_include("/src/project/include/x.hpp")\n' + SILENCE
    header += "#endif\ninline int f() { return 1; }\n"
    source = '#include "x.hpp"\nint g() { int unused; return f(); }\n'
    one = Layout(tmp_path / "one")
    make_tree(one, "d4" * 12, {"include/x.hpp": header, "src/a.cpp": source})
    result = _build(one, "d4" * 12, manifest, "strict")
    assert result.status != "ok" or _silenced(one), _controls(one)


def test_make_escapes_are_undone() -> None:
    text = "a.o: /t/src/a.cpp /t/include/q$$.hpp /t/include/q\\#.hpp \\\n /t/my\\ dir/x.hpp\n"
    assert reuse.parse_depfile(text) == [
        "/t/src/a.cpp",
        "/t/include/q$.hpp",
        "/t/include/q#.hpp",
        "/t/my dir/x.hpp",
    ]
