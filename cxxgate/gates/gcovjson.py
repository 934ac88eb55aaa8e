"""Line and branch counts of one coverage run: gcov's JSON (`-b`: with each line's
branches) over the cell's .gcno notes and the .gcda counts the run left (kept by
cxxgate/run.py), by tree-relative path.

Branches are kept per translation unit (the object's note): one unit's copy of an inline
function has branches of its own, and a line's branches are compared only with copies of
the same shape (the same number of branches). Branches on exceptional edges (`throw`)
are not counted: every call that may throw has one.

gcov reads what the candidate's process wrote, so it runs confined (bubblewrap where
available: a scratch folder holding copies of both, nothing else writable) and bounded.
A source is named by the path its compile recorded: the tree's own files appear under
the neutral tree path (cxxgate/cellspec.py NEUTRAL_TREE), so a file is joined to the
patch's hunks by its exact path below the tree, never by its base name.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from cxxgate.cellspec import CellResult
from cxxgate.process import bounded
from cxxgate.run import RunResult
from cxxgate.sandbox import NEUTRAL_TREE, confine

GCOV_SECONDS = 60.0
OUTPUT_CAP = 64 << 20


@dataclass
class Counts:
    """Executable lines of the tree's files and their execution counts, summed over TUs;
    each line's branch counts per TU (`branches[path][line][unit]`, summed over runs)."""

    lines: dict[str, dict[int, int]] = field(default_factory=dict)
    branches: dict[str, dict[int, dict[str, list[int]]]] = field(default_factory=dict)
    problem: str = ""  # gcov could not read the counts (the reason)

    def add(self, path: str, line: int, count: int) -> None:
        per_file = self.lines.setdefault(path, {})
        per_file[line] = per_file.get(line, 0) + count

    def add_branches(self, path: str, line: int, unit: str, counts: list[int]) -> None:
        per_unit = self.branches.setdefault(path, {}).setdefault(line, {})
        had = per_unit.get(unit)
        if had is None or len(had) != len(counts):
            per_unit[unit] = list(counts) if had is None else had  # a unit has one shape
            return
        per_unit[unit] = [a + b for a, b in zip(had, counts, strict=True)]

    def merge(self, other: Counts) -> None:
        for path, lines in other.lines.items():
            for line, count in lines.items():
                self.add(path, line, count)
        for path, per_line in other.branches.items():
            for line, per_unit in per_line.items():
                for unit, counts in per_unit.items():
                    self.add_branches(path, line, unit, counts)
        self.problem = self.problem or other.problem

    def untaken(self, path: str, line: int) -> tuple[int, int]:
        """(branches no run took, branches) of a line. Copies of the line from several
        units count as one where they have the same shape: a branch is taken when any
        copy took it."""
        shapes: dict[int, list[bool]] = {}
        for counts in self.branches.get(path, {}).get(line, {}).values():
            taken = shapes.setdefault(len(counts), [False] * len(counts))
            shapes[len(counts)] = [t or c > 0 for t, c in zip(taken, counts, strict=True)]
        total = sum(len(v) for v in shapes.values())
        return sum(v.count(False) for v in shapes.values()), total


def gcov_for(compiler: str) -> str | None:
    """The gcov of the compiler that built the cell: `x86_64-linux-gnu-g++-12` ->
    `x86_64-linux-gnu-gcov-12`, beside it."""
    path = Path(compiler)
    if "g++" not in path.name:
        return None
    tool = path.with_name(path.name.replace("g++", "gcov"))
    return str(tool) if tool.is_file() else None


def read(cell: CellResult, run: RunResult, gcov: str) -> Counts:
    """gcov's counts for the cell's translation units; a unit the run wrote no counts for
    reads as never executed."""
    if cell.binary is None or not run.kept:
        return Counts(problem="no coverage data: the program was not built or did not run")
    folder = Path(cell.binary).parent
    notes = sorted(folder.glob("*.gcno"))
    if not notes:
        return Counts(problem=f"the coverage cell {cell.key} holds no .gcno notes")
    with tempfile.TemporaryDirectory(prefix="cxxgate-gcov.") as scratch:
        work = Path(scratch)
        for note in notes:
            shutil.copy(note, work / note.name)
            data = Path(run.kept) / f"{note.stem}.gcda"
            if data.is_file():
                shutil.copy(data, work / data.name)
        argv = [gcov, "--branch-probabilities", "--json-format", "--stdout"]
        argv += [n.stem for n in notes]
        confined, _ = confine(argv, cwd=work, read=[], write=[work])
        outcome = bounded(
            confined,
            cwd=work,
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
            timeout=GCOV_SECONDS,
            output_cap=OUTPUT_CAP,
        )
    if outcome.timed_out or outcome.overflowed or outcome.exit != 0:
        said = outcome.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
        return Counts(
            problem=f"gcov could not read the run's counts: exit {outcome.exit} {said[0]}"
        )
    return parse(outcome.stdout.decode(errors="replace"))


def parse(text: str) -> Counts:
    """gcov --json-format --stdout: one JSON document per line (one per unit)."""
    counts = Counts()
    prefix = NEUTRAL_TREE + "/"
    for raw in text.splitlines():
        if not raw.strip():
            continue
        try:
            doc = json.loads(raw)
        except json.JSONDecodeError:
            counts.problem = "gcov printed something that is not its JSON"
            continue
        unit = str(doc.get("data_file", ""))
        for entry in doc.get("files", []):
            name = str(entry.get("file", ""))
            if not name.startswith(prefix):
                continue  # the driver, the entry, the standard library
            rel = name[len(prefix) :]
            for line in entry.get("lines", []):
                number = int(line["line_number"])
                counts.add(rel, number, int(line["count"]))
                taken = [int(b["count"]) for b in line.get("branches", []) if not b.get("throw")]
                if taken:
                    counts.add_branches(rel, number, unit, taken)
    return counts
