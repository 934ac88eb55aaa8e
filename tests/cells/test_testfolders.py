"""The tests' own folders of a candidate's build, taken from the reference tree
(cxxgate/cells/testfolders.py), which folders those are (gates/tests/testfiles.py), and
the test file globs they come from (gates/tests/tests.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from repos import diff, new_repo

from cxxgate.cells import testfolders
from cxxgate.gates.tests import testfiles, tests


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_changed_deleted_added_and_reshaped_files_get_the_reference_s_state(
    tmp_path: Path,
) -> None:
    reference = _tree(tmp_path / "ref", {
        "tests/a.cpp": "a", "tests/b.cpp": "b", "tests/sub/c.hpp": "c", "tests/d/e.cpp": "e",
        "src/lib.cpp": "ref lib", "include/calc/calc.hpp": "h",
    })  # fmt: skip
    mine = _tree(tmp_path / "mine", {
        "tests/a.cpp": "a",  # unchanged
        "tests/b.cpp": "hostile",  # changed
        # tests/sub/c.hpp deleted
        "tests/calc/calc.hpp": "inline parse",  # added, under a name the reference has
        "tests/d": "a file where the reference has a folder",
        "src/lib.cpp": "candidate lib",  # not a test folder: the candidate's
        "include/calc/calc.hpp": "h",
    })  # fmt: skip
    put = testfolders.restore(mine, reference, ["tests"])
    expected = ["tests/b.cpp", "tests/calc/calc.hpp", "tests/d", "tests/d/e.cpp", "tests/sub/c.hpp"]
    assert put == expected
    found = {p.relative_to(mine).as_posix(): p.read_text() for p in mine.rglob("*") if p.is_file()}
    assert found == {
        "tests/a.cpp": "a", "tests/b.cpp": "b", "tests/sub/c.hpp": "c", "tests/d/e.cpp": "e",
        "src/lib.cpp": "candidate lib", "include/calc/calc.hpp": "h",
    }  # fmt: skip


def test_a_folder_the_reference_lacks_is_emptied(tmp_path: Path) -> None:
    reference = _tree(tmp_path / "ref", {"src/lib.cpp": "x"})
    mine = _tree(tmp_path / "mine", {"src/lib.cpp": "x", "tests/new/lib.cpp": "hook"})
    assert testfolders.restore(mine, reference, ["tests/new"]) == ["tests/new/lib.cpp"]
    assert not (mine / "tests/new/lib.cpp").exists()


def test_cmake_code_and_files_under_new_names_stay_the_candidate_s(tmp_path: Path) -> None:
    reference = _tree(tmp_path / "ref", {
        "tests/a.cpp": "a", "tests/CMakeLists.txt": "ref", "tests/base/out.txt": "ref",
        "include/calc/calc.hpp": "h",
    })  # fmt: skip
    mine = _tree(tmp_path / "mine", {
        "tests/a.cpp": "a", "tests/CMakeLists.txt": "mine", "tests/base/out.txt": "mine",
        "tests/own_test.cpp": "mine", "tests/own_case.hpp": "mine", "tests/x/calc.hpp": "shadow",
        "include/calc/calc.hpp": "h",
    })  # fmt: skip
    put = testfolders.restore(mine, reference, ["tests"])
    # The data file is the reference's; a file under a name the reference tree has (a
    # shadow of calc.hpp) is removed.
    assert put == ["tests/base/out.txt", "tests/x/calc.hpp"]
    assert (mine / "tests/CMakeLists.txt").read_text() == "mine"
    assert (mine / "tests/own_test.cpp").read_text() == "mine"
    assert (mine / "tests/own_case.hpp").read_text() == "mine"
    assert (mine / "tests/base/out.txt").read_text() == "ref"


def test_own_folders_are_the_outermost_where_the_reference_patch_changes_no_code(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "r.git"
    files = {"include/internal/x.h": "x\n", "projects/SelfTest/Baselines/b.txt": "b\n"}
    new_repo(repo, {**files, "tests/src/t.cpp": "t\n", "tests/CMakeLists.txt": "c\n",
                    "tests/support/s.cpp": "s\n"})  # fmt: skip
    fix = diff(repo, "include/internal/x.h", "fixed\n")
    fix += diff(repo, "projects/SelfTest/Baselines/b.txt", "fixed\n")
    fix += diff(repo, "tests/CMakeLists.txt", "changed\n")
    dirs = [".", "docs", "include/internal", "projects/SelfTest/UsageTests", "tests/src"]
    assert testfiles.own_folders(dirs, fix).folders == ["docs", "projects", "tests"]
    assert testfiles.own_folders(dirs, None).folders == ["docs", "include", "projects", "tests"]
    # Other code the reference changes in the tests' folder: the test files' own folder.
    helper = diff(repo, "tests/support/s.cpp", "changed\n")
    assert testfiles.own_folders(["tests/src"], helper).folders == ["tests/src"]


def test_a_test_files_glob_must_name_its_folder() -> None:
    """`**/plain_*.cpp` would make every unit of the tree a test unit (red-team round 14:
    the base then failed on the reference's own macros and the case could not be graded)."""
    with pytest.raises(ValidationError, match=r"must start with its folder .*'\*\*/plain_\*\.cpp'"):
        tests.Config(test_patch="t.patch", fail_to_pass=["t"], test_files=["**/plain_*.cpp"])
    with pytest.raises(ValidationError, match="must start with its folder"):
        tests.Config(test_patch="t.patch", fail_to_pass=["t"], test_files=["./**/plain_*.cpp"])
    for globs in (["tests/**"], ["tests/plain_*.cpp"], ["top_test.cpp"]):
        assert tests.Config(test_patch="t.patch", fail_to_pass=["t"], test_files=globs)
