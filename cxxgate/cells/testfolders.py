"""The tests' own folders of a candidate's build, as the reference has them.

The tests gate grades a library against the benchmark's tests. A patch that edits a file
of the test folders the test patch does not touch (a helper every test program links, a
CMakeLists.txt, a header beside the tests) changes what those tests are: it can define the
symbol a hook in the library calls, or patch the library's code at start-up, and the
listed tests pass on a library that is still wrong. Before a candidate's tree is built,
each such folder is made what it is in the reference tree, data included (the reference's
are the expected outputs: Catch2's approval baselines, which its fixes update): files the
candidate changed or deleted get the reference's bytes again, files it added are removed.
Two kinds stay the candidate's (`stays`): CMake code (CMakeLists.txt, *.cmake), which
CMake code elsewhere can do as well, so the build's graph is what the gate compares
(flags, link inputs, the crossed proof: cxxgate/cells/crossed.py); and a file it added
under a name none of the reference's compiles included (its build's dependency files,
cxxgate/cells/testhelpers.py; every name of the reference tree without them): its own
new test, which only the candidate's CMake code can name, while a file shadowing one a
test includes has that file's name. The test patch is applied after that, as on every
tree. Which folders are the tests' own is the gate's choice (gates/tests/testfiles.py
`own_folders`); the helper folders are the reference build's (testhelpers).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

from cxxgate.toolchain.cellspec import CellResult, CellSpec, Unit

UNIT = "test-folders.json"  # a cmake cell's unit: Asked
# The step of a candidate's cmake cell that says which folders its build took from the
# reference tree and what of the patch's it set aside there: {folders, helpers, set_aside}.
STEP = "test folders"


@dataclass(frozen=True)
class Asked:
    folders: list[str]
    reference: str = ""  # the reference tree's key (the gate plans without it)
    # For the helper folders the reference's build shows (cxxgate/cells/testhelpers.py):
    # the test files' folders, and the files the reference patch changes.
    test_dirs: list[str] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)


def unit(asked: Asked) -> Unit:
    return Unit(UNIT, json.dumps(asdict(asked), indent=1))


def asked(spec: CellSpec) -> Asked | None:
    """What the spec asks restored, if anything."""
    text = next((u.text for u in spec.units if u.name == UNIT), None)
    if text is None:
        return None
    return Asked(**json.loads(text))


def recorded(built: CellResult) -> list[str]:
    """The folders a cmake cell's build took from the reference tree (its own and helper
    folders, from its STEP; the reference's build records the same of itself)."""
    step = next((s for s in built.steps if s.source == STEP), None)
    if step is None:
        return []
    said = json.loads(step.output)
    return [*said["folders"], *said["helpers"]]


def cmake_code(rel: str) -> bool:
    name = PurePosixPath(rel).name.lower()
    return name == "cmakelists.txt" or name.endswith(".cmake")


# What a reference patch may change in a folder and leave it the tests' own (or a helper
# folder: cxxgate/cells/testhelpers.py): data the tests compare with or read (the
# candidate's build gets the reference's), and CMake code (never taken from the reference).
_DATA_SUFFIXES = (".txt", ".json", ".xml", ".md", ".rst", ".csv", ".yaml", ".yml", ".dat")


def not_code(rel: str) -> bool:
    return cmake_code(rel) or PurePosixPath(rel).name.lower().endswith(_DATA_SUFFIXES)


def stays(rel: str, added: bool, names: set[str]) -> bool:
    """Whether a file of the tests' folders stays the candidate's: CMake code, or a file
    it added under none of `names` (those a file there could stand in for)."""
    return cmake_code(rel) or (added and PurePosixPath(rel).name not in names)


def names(root: Path) -> set[str]:
    return {p.name for p in root.rglob("*") if p.is_file() and not p.is_symlink()}


def restore(
    tree: Path, reference: Path, folders: list[str], known: set[str] | None = None
) -> list[str]:
    """Make each of `folders` in `tree` what it is in `reference`, but what `stays`; the
    tree-relative paths that changed, sorted. `known`: the names an added file may not
    have (the files the reference's compiles included, cxxgate/cells/testhelpers.py;
    None: every name of the reference tree's). Both trees hold folders and regular files
    only (intake refuses anything else), and nothing in `tree` is followed: a path in the
    way is removed."""
    put: list[str] = []
    for folder in folders:
        mine = {p for p in _files(tree, folder) if not cmake_code(p)}
        theirs = {p for p in _files(reference, folder) if not cmake_code(p)}
        for rel in sorted(mine - theirs):
            known = names(reference) if known is None else known
            if not stays(rel, True, known):
                (tree / rel).unlink()
                put.append(rel)
        put += restore_files(tree, reference, sorted(theirs))
    return sorted(set(put))


def restore_files(tree: Path, reference: Path, files: list[str]) -> list[str]:
    """Give each of `files` the reference's bytes in `tree` (a path in the way removed);
    the paths that changed."""
    put: list[str] = []
    for rel in files:
        source, target = reference / rel, tree / rel
        if source.is_symlink() or not source.is_file():
            continue
        regular = target.is_file() and not target.is_symlink()
        if regular and target.read_bytes() == source.read_bytes():
            continue
        put += _clear_way(tree, rel)
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


def _clear_way(tree: Path, rel: str) -> list[str]:
    """Remove what stands where `rel`'s folders or `rel` itself must go (a file where the
    reference has a folder, or a folder where it has a file); the paths removed."""
    path = tree
    for part in Path(rel).parts:
        path = path / part
        if path.is_symlink() or path.is_file():
            path.unlink()
            return [path.relative_to(tree).as_posix()] if path != tree / rel else []
    if path.is_dir():
        shutil.rmtree(path)
        return [rel]
    return []
