"""`doit prune keep=N`: the build folder does not grow without end.

Keeps what the last N grades in history.sqlite3 refer to (their rows' trees, cells, runs,
scans, gate results and stored patches) and deletes the rest, with doit's memory of the
tasks that made it, so a kept row still grades warm (no compile, no run) and a pruned one
is graded afresh. Reuse records that point to a deleted cell are skipped at lookup
(cxxgate/cells/reuse.py checks the cell is still there); their folders are removed here too.

Two stores are keyed by content, not by a row; a removed entry is a miss, so it costs a
compile, never a verdict. The test-unit digests in `verified/` keep what was written or
used since the newest grade that is not kept ended (the harness refreshes an entry's
time on each hit). Project compiles in `ccache/projects/` are trimmed to PROJECTS_SIZE,
oldest first, by ccache's own `--trim-dir`: a candidate's build reads them read-only, so
its hits cannot refresh an entry, and an age rule would drop what every night's
candidates still hit.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from cxxgate.store import history
from cxxgate.store.layout import Layout
from cxxgate.util import removal

KEYED = {"cell": "cells", "exec": "runs", "scan": "scans"}  # task basename -> folder
PROJECTS_SIZE = "5G"  # ccache's own default size for a cache


@dataclass
class Pruned:
    kept_grades: int = 0
    removed: dict[str, int] = field(default_factory=dict)  # folder -> entries removed
    forgotten: int = 0  # doit task records dropped

    def line(self) -> str:
        parts = ", ".join(f"{n} {k}" for k, n in sorted(self.removed.items()) if n)
        return (
            f"kept what the last {self.kept_grades} grade(s) refer to; removed "
            f"{parts or 'nothing'}; doit forgot {self.forgotten} task(s)"
        )


def prune(layout: Layout, keep: int) -> Pruned:
    kept = history.kept(layout.history, keep)
    result = Pruned(kept_grades=len(kept.grades))
    if not kept.grades:
        return result
    names = {
        folder: {Path(p).name for p in kept.evidence if p.startswith(f"{folder}/")}
        for folder in ("cells", "runs", "scans", "trees")
    }
    names["cells"] |= _parts(layout, names["cells"])
    for folder in ("cells", "runs", "scans"):  # <folder>/<2 characters>/<key>
        result.removed[folder] = sum(
            _remove(shard, _named(names[folder])) for shard in _entries(layout.root / folder)
        )
    result.removed["trees"] = _remove(
        layout.root / "trees", lambda p: p.name.removesuffix(".json") in names["trees"]
    )
    result.removed["patches"] = _remove(layout.root / "patches", lambda p: p.stem in kept.shas)
    result.removed["results"] = sum(
        _remove(
            case, _named({r.partition("/")[2] for r in kept.rows if r.startswith(f"{case.name}/")})
        )
        for case in _entries(layout.root / "results")
    )
    result.removed["reuse"] = _remove_stale_reuse(layout)
    older = [g for g in history.grades(layout.history) if g.id < kept.grades[0].id]
    if older:
        result.removed["verified"] = _remove_unused(layout.root / "verified", older[-1].time)
    # ccache's file storage of CMake projects' compiles (cxxgate/toolchain/ccache.py
    # `projects`; the store layer names the folder, it does not import the toolchain).
    result.removed["ccache"] = trim(layout.root / "ccache" / "projects")
    result.forgotten = _forget(layout.root / "doit.sqlite3", names, kept.rows)
    history.forget_before(layout.history, kept.grades[0].id)
    return result


def _parts(layout: Layout, cells: set[str]) -> set[str]:
    """The object cells the kept cells linked (cxxgate/cells/cell.py): a kept program links
    again from them without a compile, and the tasks that made them stay up to date."""
    parts: set[str] = set()
    for key in cells:
        try:
            parts.update(json.loads(layout.cell_result(key).read_text()).get("parts", []))
        except (OSError, ValueError, AttributeError):
            continue
    return parts


def _named(names: set[str]) -> Callable[[Path], bool]:
    return lambda entry: entry.name in names


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.iterdir()) if folder.is_dir() else []


def _remove(folder: Path, keep: Callable[[Path], bool]) -> int:
    """Remove the entries of `folder` that `keep` refuses; return how many."""
    gone = [entry for entry in _entries(folder) if not keep(entry)]
    for entry in gone:
        try:
            removal.remove_tree(entry)  # a run's leftovers may nest any depth
        except OSError:
            continue
    return len(gone)


def _remove_unused(folder: Path, since: float) -> int:
    """Remove the files under `folder` neither written nor used since `since`."""
    gone = 0
    for entry in folder.rglob("*") if folder.is_dir() else []:
        try:
            if entry.is_file() and not entry.is_symlink() and entry.stat().st_mtime < since:
                entry.unlink()
                gone += 1
        except OSError:
            continue
    return gone


def trim(folder: Path, size: str = PROJECTS_SIZE) -> int:
    """Trim ccache's file storage at `folder` to `size`; return how many files went."""
    binary = shutil.which("ccache")
    if binary is None or not folder.is_dir():
        return 0
    before = sum(1 for p in folder.rglob("*") if p.is_file())
    subprocess.run(
        [binary, "--trim-dir", str(folder), "--trim-max-size", size,
         "--trim-method", "mtime"],
        env={**os.environ, "CCACHE_DIR": str(folder.parent / "trim")},
        capture_output=True, check=False,
    )  # fmt: skip
    return before - sum(1 for p in folder.rglob("*") if p.is_file())


def _remove_stale_reuse(layout: Layout) -> int:
    """Reuse records whose cell was removed (`*.hit` files naming a missing cell)."""
    gone = 0
    for hit in (layout.root / "reuse").rglob("*.hit"):
        if not layout.cell_result(hit.read_text().strip()).exists():
            hit.unlink()
            gone += 1
    return gone


def _forget(db_path: Path, names: dict[str, set[str]], rows: set[str]) -> int:
    """Drop doit's records of tasks whose outputs were removed: doit writes back only the
    tasks a run executed, so records deleted here stay deleted."""
    if not db_path.exists():
        return 0
    with closing(sqlite3.connect(db_path, timeout=30)) as db, db:
        ids = [r[0] for r in db.execute("select task_id from doit")]
        drop = []
        for task in ids:
            base, _, name = task.partition(":")
            if base in KEYED:
                stale = name not in names[KEYED[base]]
            elif base == "fold":
                stale = not any(r.startswith(f"{name}/") for r in rows)
            elif name and "/" in name:  # tree, verdict and gate tasks are named by row
                stale = name not in rows
            else:
                stale = False
            if stale:
                drop.append((task,))
        db.executemany("delete from doit where task_id = ?", drop)
    return len(drop)
