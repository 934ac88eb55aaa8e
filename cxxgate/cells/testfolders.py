"""The tests' own folders of a candidate's build, as the reference has them.

The tests gate grades a library against the benchmark's tests. A patch that edits a file
of the test folders the test patch does not touch (a helper every test program links, a
CMakeLists.txt, a header beside the tests) changes what those tests are: it can define the
symbol a hook in the library calls, or patch the library's code at start-up, and the
listed tests pass on a library that is still wrong. Before a candidate's tree is built,
each such folder is made what it is in the reference tree: files the candidate changed or
deleted get the reference's bytes again, files it added are removed. Two kinds stay the
candidate's: a translation unit it added (its own new test, which CMake code outside the
folder may name; whatever links it into a listed test's program is the crossed proof's,
cxxgate/cells/crossed.py), and the data files the reference patch itself changes there
(`keep`: Catch2's approval baselines, which a fix updates). The test patch is applied
after that, as on every tree. Which folders are the tests' own is the gate's choice
(gates/tests/testfiles.py `own_folders`).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from cxxgate.cells.ctest import SOURCE_SUFFIXES
from cxxgate.toolchain.cellspec import CellSpec, Unit

UNIT = "test-folders.json"  # a cmake cell's unit: {"folders", "keep", "reference"}


@dataclass(frozen=True)
class Asked:
    folders: list[str]
    keep: list[str]  # tree paths in those folders that stay the candidate's
    reference: str = ""  # the reference tree's key (the gate plans without it)


def unit(asked: Asked) -> Unit:
    return Unit(UNIT, json.dumps(asdict(asked), indent=1))


def asked(spec: CellSpec) -> Asked | None:
    """What the spec asks restored, if anything."""
    text = next((u.text for u in spec.units if u.name == UNIT), None)
    if text is None:
        return None
    data = json.loads(text)
    return Asked(list(data["folders"]), list(data["keep"]), str(data["reference"]))


def added_unit(rel: str) -> bool:
    """A translation unit by its name: one a candidate adds stays in its tree."""
    return rel.lower().endswith(SOURCE_SUFFIXES)


def restore(tree: Path, reference: Path, folders: list[str], keep: list[str]) -> list[str]:
    """Make each of `folders` in `tree` what it is in `reference`, but `keep` and the
    translation units only `tree` has; the tree-relative paths that changed, sorted. Both
    trees hold folders and regular files only (intake refuses anything else), and nothing
    in `tree` is followed: a path in the way is removed."""
    put: list[str] = []
    kept = set(keep)
    for folder in folders:
        mine, theirs = _files(tree, folder) - kept, _files(reference, folder) - kept
        for rel in sorted(mine - theirs):
            if not added_unit(rel):
                (tree / rel).unlink()
                put.append(rel)
        for rel in sorted(theirs):
            source, target = reference / rel, tree / rel
            if rel in mine and target.read_bytes() == source.read_bytes():
                continue
            _clear_way(tree, rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
            put.append(rel)
    return sorted(set(put))


def _files(root: Path, folder: str) -> set[str]:
    top = root / folder
    if top.is_symlink() or not top.is_dir():
        return set()
    found = (p for p in top.rglob("*") if p.is_file() and not p.is_symlink())
    return {p.relative_to(root).as_posix() for p in found}


def _clear_way(tree: Path, rel: str) -> None:
    """Remove what stands where `rel`'s folders or `rel` itself must go: a file where the
    reference has a folder, or a folder where it has a file."""
    path = tree
    for part in Path(rel).parts:
        path = path / part
        if path.is_symlink() or path.is_file():
            path.unlink()
            return
    if path.is_dir():
        shutil.rmtree(path)
