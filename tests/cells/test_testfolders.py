"""The tests' own folders of a candidate's build, taken from the reference tree
(cxxgate/cells/testfolders.py), and which folders those are (gates/tests/testfiles.py)."""

from __future__ import annotations

from pathlib import Path

from repos import diff, new_repo

from cxxgate.cells import testfolders
from cxxgate.gates.tests import testfiles


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
        "src/lib.cpp": "ref lib",
    })  # fmt: skip
    mine = _tree(tmp_path / "mine", {
        "tests/a.cpp": "a",  # unchanged
        "tests/b.cpp": "hostile",  # changed
        # tests/sub/c.hpp deleted
        "tests/calc/calc.hpp": "inline parse",  # added
        "tests/d": "a file where the reference has a folder",
        "src/lib.cpp": "candidate lib",  # not a test folder: the candidate's
    })  # fmt: skip
    put = testfolders.restore(mine, reference, ["tests"])
    expected = ["tests/b.cpp", "tests/calc/calc.hpp", "tests/d", "tests/d/e.cpp", "tests/sub/c.hpp"]
    assert put == expected
    found = {p.relative_to(mine).as_posix(): p.read_text() for p in mine.rglob("*") if p.is_file()}
    assert found == {
        "tests/a.cpp": "a", "tests/b.cpp": "b", "tests/sub/c.hpp": "c", "tests/d/e.cpp": "e",
        "src/lib.cpp": "candidate lib",
    }  # fmt: skip


def test_a_folder_the_reference_lacks_is_emptied(tmp_path: Path) -> None:
    reference = _tree(tmp_path / "ref", {"src/lib.cpp": "x"})
    mine = _tree(tmp_path / "mine", {"src/lib.cpp": "x", "tests/new/hook.cpp": "hook"})
    assert testfolders.restore(mine, reference, ["tests/new"]) == ["tests/new/hook.cpp"]
    assert not (mine / "tests/new/hook.cpp").exists()


def test_own_folders_are_the_outermost_the_reference_patch_leaves_alone(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "r.git"
    files = {"include/internal/x.h": "x\n", "projects/SelfTest/Baselines/b.txt": "b\n"}
    new_repo(repo, {**files, "tests/src/t.cpp": "t\n", "docs/a.md": "a\n"})
    fix = diff(repo, "include/internal/x.h", "fixed\n")
    fix += diff(repo, "projects/SelfTest/Baselines/b.txt", "fixed\n")
    dirs = [".", "docs", "include/internal", "projects/SelfTest/UsageTests", "tests/src"]
    assert testfiles.own_folders(dirs, fix) == ["docs", "projects/SelfTest/UsageTests", "tests"]
    assert testfiles.own_folders(dirs, None) == ["docs", "include", "projects", "tests"]
