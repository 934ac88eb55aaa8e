"""Reuse a cell's result across trees that agree on every file it read.

A cell's key covers its whole tree, so a patch that edits only `src/impl.cpp` gets new
keys for the probes that read only headers, and would compile them again. Here, before a
syntax, object or exe cell compiles, we look for an earlier result of the same spec
(everything but the tree) whose tree had the same list of files and the same bytes in
every tree file the compiler read: the dependency files it wrote (-MD) name them. Same
listing, because a new file can shadow an include without touching any file that was
read; same bytes in what was read, because that is everything else the compiler saw of
the tree. Files outside the tree are the toolchain's, and its identity is in the spec.

Layout under the build folder: reuse/<spec>/<listing>/<depset>.deps holds the tree paths
one earlier compile read; <depset>-<digest>.hit names the cell that read them with those
bytes. A lookup costs one digest per distinct dependency set, not one per earlier cell.

Object cells (one translation unit each, cxxgate/cells/cell.py) are where this pays most: the
object of src/a.cpp is adopted by a tree whose patch edits only src/b.cpp. A program
cell's reads are the union of its objects' (CellResult.reads), adopted ones included.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from functools import cache
from pathlib import Path

from cxxgate.store.layout import Layout
from cxxgate.util import atomic


def lookup(layout: Layout, spec_key: str, tree: Path, asking: str) -> str | None:
    """The key of an earlier cell whose result holds for this tree, if there is one; never
    `asking` itself. CXXGATE_REUSE=0 turns lookups off (every cell compiles), to measure or
    to rule reuse out."""
    if os.environ.get("CXXGATE_REUSE") == "0":
        return None
    folder = layout.root / "reuse" / spec_key / listing(tree)
    if not folder.is_dir():
        return None
    for deps_file in sorted(folder.glob("*.deps")):
        try:
            paths = json.loads(deps_file.read_text())
            key = (folder / f"{deps_file.stem}-{digest(tree, paths)}.hit").read_text().strip()
        except (OSError, ValueError):
            continue  # no hit for these bytes (or a record from before atomic writes)
        # A run resumed after a kill, or after `doit forget`, asks again for a cell it
        # recorded before: that is no earlier compile, and its folder is this cell's own.
        if key != asking and usable(layout, key):
            return key
    return None


def usable(layout: Layout, key: str) -> bool:
    """Whether a recorded cell's result can be adopted: readable, not a harness fault, not
    decided by the host (CellResult.host_bound), and its binary (if it has one) still there.
    It may have been cleaned, or re-run into a harness fault since it was recorded."""
    try:
        data = json.loads(layout.cell_result(key).read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict) or data.get("status") in (None, "harness_error"):
        return False
    if data.get("host_bound"):
        return False
    binary = data.get("binary")
    return binary is None or Path(binary).is_file()


def reads_of(tree: Path, depfiles: list[Path]) -> list[str] | None:
    """The tree paths a compile read, from its dependency files; None without a dependency
    file for every TU, or when a tree path it names is not a file of the tree as read (a
    name make's escapes leave ambiguous): what it read is then unknown, and nothing is
    kept by it. A wrong name would key a result by the bytes of another file (red team
    round 23: `q$.hpp` written `q$$.hpp`, and a decoy the patch added under that name)."""
    read: set[str] = set()
    root = os.path.normpath(tree)
    for depfile in depfiles:
        if not depfile.is_file():
            return None
        for dep in parse_depfile(depfile.read_text()):
            path = os.path.normpath(dep)
            if os.path.isabs(path) and path.startswith(root + os.sep):
                if "\\" in path or not os.path.isfile(path):
                    return None
                read.add(os.path.relpath(path, root))
    return sorted(read)


def record(layout: Layout, spec_key: str, tree: Path, paths: list[str] | None, cell: str) -> None:
    """Remember what a compile read (tree paths); when that is unknown, remember nothing."""
    if paths is None:
        return
    depset = hashlib.sha256(json.dumps(paths).encode()).hexdigest()[:16]
    folder = layout.root / "reuse" / spec_key / listing(tree)
    folder.mkdir(parents=True, exist_ok=True)
    _write_once(folder / f"{depset}.deps", json.dumps(paths))
    hit = folder / f"{depset}-{digest(tree, paths)}.hit"
    try:
        stale = not usable(layout, hit.read_text().strip())
    except OSError:
        stale = True
    if stale:  # missing, or naming a cell that was cleaned or broke since: this one now
        atomic.write_text(hit, cell)


_CONTINUATION = re.compile(r"\\\n")
_SPLIT = re.compile(r"(?<!\\)\s+")
_ESCAPED = re.compile(r"\\([\s#])")


def parse_depfile(text: str) -> list[str]:
    """Prerequisites of the first rule of a make dependency file (`-MD -MF` output), make's
    escapes undone as GCC writes them: `\\ ` (a blank), `\\#`, `$$`."""
    joined = _CONTINUATION.sub(" ", text)
    _, _, prerequisites = joined.partition(": ")
    first_rule = prerequisites.split("\n", 1)[0]
    words = [p for p in _SPLIT.split(first_rule.strip()) if p]
    return [_ESCAPED.sub(r"\1", p).replace("$$", "$") for p in words]


@cache
def listing(tree: Path) -> str:
    """Digest of the tree's file names (not contents). A tree never changes once made."""
    names = sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file())
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]


def digest(tree: Path, paths: list[str]) -> str:
    h = hashlib.sha256()
    for rel in paths:
        h.update(rel.encode() + b"\0" + hashlib.sha256((tree / rel).read_bytes()).digest())
    return h.hexdigest()[:24]


def _write_once(path: Path, text: str) -> None:
    if not path.exists():
        atomic.write_text(path, text)  # two threads recording the same entry agree anyway
