"""A project's own compile flags for the harness's compiles (probes, library cells).

A cell that `needs` a `cmake` cell (cxxgate/cells/cmake.py) compiles with the include folders,
defines and language standard that the project's compile_commands.json gives the case's
library sources (the cell's `tree_sources` globs; every entry when it has none), after the
envelope's own flags. Include folders under the project's tree are turned into this cell's
tree; those under the build folder (generated headers) are not visible to a probe and are
left out.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path, PurePosixPath

from cxxgate.host import sandbox
from cxxgate.host.sandbox import NEUTRAL_BUILD, NEUTRAL_TREE
from cxxgate.store.layout import Layout
from cxxgate.toolchain.cellspec import CellSpec

COMPILE_DB = "compile_commands.json"
_PATHS = ("-I", "-isystem", "-iquote")


def paths(cell: Path) -> tuple[str, str]:
    """Where a cmake cell's tree and build folder are seen by its tools."""
    if sandbox.available():
        return NEUTRAL_TREE, NEUTRAL_BUILD
    return str(cell / "trees" / "src"), str(cell / "build")


def project_flags(layout: Layout, spec: CellSpec, tree: Path) -> list[str]:
    """The flags of every needed `cmake` cell's compile database (none: no flags)."""
    flags: list[str] = []
    for key in spec.needs:
        result = layout.cell_result(key)
        if not result.is_file() or json.loads(result.read_text()).get("kind") != "cmake":
            continue
        db = layout.cell(key) / COMPILE_DB
        if db.is_file():
            wanted = {
                p.relative_to(tree).as_posix() for g in spec.tree_sources for p in tree.glob(g)
            }
            src_at = paths(layout.cell(key))[0]
            for entry in json.loads(db.read_text()):
                flags += _entry_flags(entry, wanted, tree, src_at)
    return list(dict.fromkeys(flags))


def _entry_flags(entry: dict[str, object], wanted: set[str], tree: Path, src_at: str) -> list[str]:
    file = PurePosixPath(str(entry.get("file", "")))
    if not file.is_relative_to(src_at):
        return []
    if wanted and file.relative_to(src_at).as_posix() not in wanted:
        return []
    args = entry.get("arguments")
    if isinstance(args, list):
        argv = [str(a) for a in args]
    else:
        argv = shlex.split(str(entry.get("command", "")))
    return _kept(argv, tree, src_at)


def _kept(argv: list[str], tree: Path, src_at: str) -> list[str]:
    """-I/-isystem/-iquote inside the project's tree (made this tree's), -D, -U, -std=."""
    kept: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        flag = next((f for f in _PATHS if arg.startswith(f)), None)
        if flag is not None:
            joined = arg != flag
            path = arg[len(flag) :] if joined else (argv[i + 1] if i + 1 < len(argv) else "")
            i += 1 if joined else 2
            pure = PurePosixPath(path)
            if pure.is_relative_to(src_at):
                kept.append(f"{flag}{tree / pure.relative_to(src_at)}")
            continue
        if arg.startswith(("-D", "-U", "-std=")):
            kept.append(arg)
        i += 1
    return kept
