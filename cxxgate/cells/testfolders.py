"""The tests' own folders of a candidate's build, as the reference has them.

The tests gate grades a library against the benchmark's tests. A patch that edits a file
of the test folders the test patch does not touch (a helper every test program links, a
CMakeLists.txt, a header beside the tests) changes what those tests are: it can define the
symbol a hook in the library calls, or patch the library's code at start-up, and the
listed tests pass on a library that is still wrong. Before a candidate's tree is built,
each such folder is made what it is in the reference tree: files the candidate changed or
deleted get the reference's bytes again, files it added are removed. The test patch is
applied after that, as on every tree. Which folders are the tests' own is the gate's
choice (gates/tests/testfiles.py `own_folders`): never one the reference patch changes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cxxgate.toolchain.cellspec import CellSpec, Unit

UNIT = "test-folders.json"  # a cmake cell's unit: {"folders": [...], "reference": tree key}


def unit(folders: list[str], reference_key: str) -> Unit:
    return Unit(UNIT, json.dumps({"folders": folders, "reference": reference_key}, indent=1))


def asked(spec: CellSpec) -> tuple[list[str], str] | None:
    """The folders to restore and the reference tree's key, when the spec asks for it."""
    text = next((u.text for u in spec.units if u.name == UNIT), None)
    if text is None:
        return None
    data = json.loads(text)
    return list(data["folders"]), str(data["reference"])


def restore(tree: Path, reference: Path, folders: list[str]) -> list[str]:
    """Make each of `folders` in `tree` what it is in `reference`; the tree-relative paths
    that changed, sorted. Both trees hold folders and regular files only (intake refuses
    anything else), and nothing in `tree` is followed: a path in the way is removed."""
    put: list[str] = []
    for folder in folders:
        mine, theirs = _files(tree, folder), _files(reference, folder)
        for rel in sorted(mine - theirs):
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
