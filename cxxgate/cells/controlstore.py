"""A unit's diagnostic-control record (cxxgate/cells/preprocessed.py), kept by what its
compile read, so the `-E` that makes it runs once per content, not once per cell.

Every compile cell preprocesses each translation unit again to read its controls. The
compile goes through ccache; the `-E` cannot (ccache does not cache preprocessing). A cell
keyed anew (another tree with the same bytes where it matters, a harness change, another
build folder) compiled from ccache in milliseconds and preprocessed for a tenth of a second
or more: in the test suite, 1379 of 3118 `-E` calls repeated one made in another build
folder.

The key is what cxxgate/cells/reuse.py adopts a whole cell by, per unit: the spec without
the tree (toolchain identity, envelope, harness units, the harness's code), the unit, the
`-E` argv with the tree, the working folder and the build folder named neutrally, the
tree's file listing (a new file can shadow an include without touching any file read),
and the bytes of every tree file the unit's compile read (its `-MD` file). The controls are
tree paths and texts, so the record holds for any tree and build folder with that key.
Only a clean `-E` is kept: a failed or timed-out one is run again.

Records live in the build folder (`<out>/reuse/controls/`) and, when the compile cache has
a file storage (CXXGATE_CCACHE_REMOTE=file:..., cxxgate/toolchain/ccache.py), in its
`cxxgate-controls/` too: build folders sharing that storage share these. Only the harness
writes them (never a sandboxed command), once, atomically."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from cxxgate.cells import reuse
from cxxgate.store.layout import Layout
from cxxgate.toolchain import ccache
from cxxgate.toolchain.cellspec import CellSpec
from cxxgate.util import atomic

Record = list[tuple[str, int, str]]  # (tree path, line, text) of each control line


def key(
    layout: Layout, spec: CellSpec, argv: list[str], unit: str, cwd: Path, reads: list[str]
) -> str:
    tree = layout.tree(spec.tree_key)
    swaps = [(str(tree), "<tree>"), (str(cwd), "<cwd>"), (str(layout.root), "<out>")]
    neutral = []
    for arg in argv:
        for real, name in swaps:
            arg = arg.replace(real, name)
        neutral.append(arg)
    blob = json.dumps([spec.spec_key, unit, neutral, reuse.listing(tree)])
    h = hashlib.sha256(blob.encode())
    h.update(reuse.digest(tree, reads).encode())
    return h.hexdigest()[:32]


def load(layout: Layout, record_key: str) -> Record | None:
    for folder in _folders(layout):
        try:
            data = json.loads((folder / record_key[:2] / f"{record_key}.json").read_text())
        except (OSError, ValueError):
            continue
        return [(str(p), int(n), str(t)) for p, n, t in data]
    return None


def store(layout: Layout, record_key: str, record: Record) -> None:
    text = json.dumps(record)
    for folder in _folders(layout):
        path = folder / record_key[:2] / f"{record_key}.json"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_text(path, text)


def _folders(layout: Layout) -> list[Path]:
    folders = [layout.root / "reuse" / "controls"]
    shared = ccache.file_storage(os.environ.get(ccache.REMOTE, ""))
    if shared is not None:
        folders.append(shared / "cxxgate-controls")
    return folders
