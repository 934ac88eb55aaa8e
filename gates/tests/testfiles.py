"""Which files a test patch touches, and which test files a candidate's patch changed
(from its intake stamp), for the tests gate (cxxgate/gates/tests/tests.py)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

import pathspec

from cxxgate.cells import testfolders
from cxxgate.intake.tree import guard
from cxxgate.toolchain.cellspec import CellResult
from cxxgate.util.yamlfile import InputError


@cache
def touched_by(patch_text: str, key: str = "gates.tests.test_patch") -> list[str]:
    stamp = guard(patch_text.encode(), ["**"])
    if stamp.status != "applied":
        msg = f"{key}: not a patch the harness can apply: {stamp.detail}"
        raise InputError(msg)
    return ["/" + p for p in stamp.changed]  # anchored: that file, not any of its name


def own_folders(test_dirs: list[str], reference_patch: str | None) -> testfolders.Asked:
    """The folders whose files a candidate's build takes from the reference tree
    (cxxgate/cells/testfolders.py). For each folder of the test files: its outermost
    folder but the tree's top in which the reference patch changes no code but CMake's (so
    a vendored framework or a helper beside the tests, json's tests/thirdparty/doctest for
    tests/src, is the reference's too); none where each holds such code (the library:
    Catch2's test patches touch include/internal, where its fixes live)."""
    fixed = [p.lstrip("/") for p in touched_by(reference_patch or "", "reference")]
    folders: set[str] = set()
    for folder in test_dirs:
        parts = PurePosixPath(folder).parts if folder != "." else ()
        for depth in range(1, len(parts) + 1):
            top = "/".join(parts[:depth])
            if all(testfolders.not_code(f) for f in fixed if f.startswith(f"{top}/")):
                folders.add(top)
                break
    return testfolders.Asked(sorted(folders), test_dirs=list(test_dirs), fixed=fixed)


def touched_tests(tree: Path, params: dict[str, Any]) -> dict[str, Any]:
    """The test files the patch of this tree changed, from its intake stamp, and the files
    it added whose path ends in a system header's (include/gtest/gtest.h): found first on
    a project include path, such a file stands in for the header the tests include."""
    stamp = json.loads(tree.with_name(f"{tree.name}.json").read_text())
    changed: list[str] = stamp.get("changed", [])
    spec = pathspec.GitIgnoreSpec.from_lines(params["globs"])
    base = Path(params["base"])
    added = [p for p in changed if (tree / p).is_file() and not (base / p).exists()]
    shadows = [p for p in added if _system_header(p)]
    touched = [p for p in changed if spec.match_file(p)]
    return {"touched": touched, "shadows": shadows}


# The system include folders of the Debian toolchains (GCC's and clang's search lists).
_SYSTEM_INCLUDES = (
    "/usr/include",
    "/usr/local/include",
    "/usr/include/c++/*",
    "/usr/include/*-linux-gnu",
    "/usr/include/*-linux-gnu/c++/*",
)


@cache
def _system_folders() -> tuple[Path, ...]:
    return tuple(p for g in _SYSTEM_INCLUDES for p in Path("/").glob(g.lstrip("/")) if p.is_dir())


def _system_header(rel: str) -> str:
    """The system header `rel` would shadow through some include folder, or ""."""
    parts = PurePosixPath(rel).parts
    for i in range(len(parts)):
        tail = "/".join(parts[i:])
        for folder in _system_folders():
            if (folder / tail).is_file():
                return str(folder / tail)
    return ""


def set_aside(built: CellResult, touched: list[str]) -> dict[str, list[str]]:
    """What the build took back from the reference of the patch's (cxxgate/cells/cmake.py,
    testfolders.STEP), by check: in the tests' own folders, in the helper folders, and
    data elsewhere; the test files it touched (`path_violation`) aside."""
    step = next((s for s in built.steps if s.source == testfolders.STEP), None)
    said = json.loads(step.output) if step is not None else {}
    found: dict[str, list[str]] = {"test_folders": [], "test_helpers": [], "test_data": []}
    for path in said.get("set_aside", []):
        if path in touched:
            continue
        own = any(path.startswith(f"{f}/") for f in said["folders"])
        helper = any(path.startswith(f"{f}/") for f in said["helpers"])
        found["test_folders" if own else "test_helpers" if helper else "test_data"].append(path)
    return found
