"""Line, branch and function counts of one coverage run: gcov's JSON (`-b`: with each
line's branches, its `unexecuted_block` flag, and each function's `execution_count` and
line span) over the cell's .gcno notes and the .gcda counts the run left (kept by
cxxgate/runs/run.py), by tree-relative path.

Branches are kept per translation unit (the object's note): one unit's copy of an inline
function has branches of its own, and a line's branches are compared only with copies of
the same shape (the same number of branches). Branches on exceptional edges (`throw`)
are not counted: every call that may throw has one.

gcov reads what the candidate's process wrote, so it runs confined (bubblewrap where
available: a scratch folder holding copies of both, nothing else writable) and bounded,
through cxxgate/toolchain/toolquery.py. It runs in a scan of its own (`gcov_output`, keyed by
the cell and the run it reads), so the coverage gate's classification only parses what it
stored, and re-classifying runs no gcov.
A source is named by the path its compile recorded: the tree's own files appear under
the neutral tree path (cxxgate/toolchain/cellspec.py NEUTRAL_TREE), so a file is joined to the
patch's hunks by its path below the tree, never by its base name. The name is the
spelling the compile met (`src/../src/sign.hpp` for `#include "../src/sign.hpp"`, a
relative name under the unit's working directory): it is normalised (joined to gcov's
`current_working_directory`, `os.path.normpath`) before the join, so no spelling of a tree
file escapes it. The tree holds no symbolic links (intake refuses them), so the lexical
normalisation names the file the compiler read.

Functions are merged by their source span (start line and column, end line) and source
name over units, instantiations and runs: an inline function's copies, a constructor's
C1/C2 symbols and a template's instantiations are one source function, executed when any
of them ran. The name keeps apart functions one macro expansion defines at one span
(`PAIR` expanding to `keep` and `skip`): its template arguments, parameters and return
type are dropped from gcov's demangled name (`long twice<long>(long)` is `twice`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cxxgate.host.sandbox import NEUTRAL_TREE
from cxxgate.runs.run import RunResult
from cxxgate.runs.scan import ScanResult, ScanSpec
from cxxgate.toolchain import toolquery
from cxxgate.toolchain.cellspec import CellResult

GCOV_SECONDS = 60.0
OUTPUT_CAP = 64 << 20


Span = tuple[int, int, int, str]  # start line, start column, end line, source name
_OPERATOR = re.compile(r"operator\s*(?:<=>|<<=|>>=|<<|>>|<=|>=|->\*|->|<|>|\(\)|\[\])")
_OPEN, _CLOSE = "([{", ")]}"


def source_name(demangled: str) -> str:
    """The function's name as its source spells it, from gcov's demangled name: template
    arguments, parameters and return type dropped (`int twice<int>(int)` -> `twice`,
    `S::S()` for both constructor symbols)."""
    text = _OPERATOR.sub(lambda m: "operator#" + m[0][8:].strip().encode().hex(), demangled)
    text = re.sub(r"\boperator\s+", "operator:", text)  # conversions, new, delete
    angle, plain = 0, []
    for ch in text:  # template arguments out
        if ch == "<":
            angle += 1
        elif ch == ">" and angle:
            angle -= 1
        elif not angle:
            plain.append(ch)
    depth, cut, spaces = 0, len(plain), []
    for i, ch in enumerate(plain):
        if ch in _OPEN:
            if depth == 0 and ch == "(":
                cut = i  # the last top-level parenthesis opens the parameters
            depth += 1
        elif ch in _CLOSE:
            depth = max(depth - 1, 0)
    head = "".join(plain[:cut]).strip()
    depth = 0
    for i, ch in enumerate(head):  # the return type ends at the last top-level space
        depth += (ch in _OPEN) - (ch in _CLOSE)
        if ch == " " and depth == 0:
            spaces.append(i)
    return head[spaces[-1] + 1 :] if spaces else head


@dataclass
class Counts:
    """Executable lines of the tree's files and their execution counts, summed over TUs;
    each line's branch counts per TU (`branches[path][line][unit]`, summed over runs)."""

    lines: dict[str, dict[int, int]] = field(default_factory=dict)
    branches: dict[str, dict[int, dict[str, list[int]]]] = field(default_factory=dict)
    # functions[path][(start line, start column, end line, source name)] = (name, executions)
    functions: dict[str, dict[Span, tuple[str, int]]] = field(default_factory=dict)
    # partial[path][line]: every copy of the line that ran left a block of it unexecuted
    # (gcov's `unexecuted_block`); False once one copy ran it whole.
    partial: dict[str, dict[int, bool]] = field(default_factory=dict)
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

    def add_function(self, path: str, span: Span, name: str, count: int) -> None:
        per_file = self.functions.setdefault(path, {})
        had = per_file.get(span)
        per_file[span] = (had[0] if had else name, (had[1] if had else 0) + count)

    def add_block(self, path: str, line: int, unexecuted: bool) -> None:
        """A copy of `line` that ran: with a block left unexecuted, or whole."""
        per_file = self.partial.setdefault(path, {})
        per_file[line] = per_file.get(line, True) and unexecuted

    def merge(self, other: Counts) -> None:
        for path, lines in other.lines.items():
            for line, count in lines.items():
                self.add(path, line, count)
        for path, spans in other.functions.items():
            for span, (name, count) in spans.items():
                self.add_function(path, span, name, count)
        for path, flags in other.partial.items():
            for line, unexecuted in flags.items():
                self.add_block(path, line, unexecuted)
        for path, per_line in other.branches.items():
            for line, per_unit in per_line.items():
                for unit, counts in per_unit.items():
                    self.add_branches(path, line, unit, counts)
        self.problem = self.problem or other.problem

    def taken(self, path: str, line: int) -> dict[int, list[bool]]:
        """Per shape (number of branches), which branches of a line some run took. Copies
        of the line from several units count as one where they have the same shape."""
        shapes: dict[int, list[bool]] = {}
        for counts in self.branches.get(path, {}).get(line, {}).values():
            taken = shapes.setdefault(len(counts), [False] * len(counts))
            shapes[len(counts)] = [t or c > 0 for t, c in zip(taken, counts, strict=True)]
        return shapes

    def untaken(self, path: str, line: int) -> tuple[int, int]:
        """(branches no run took, branches) of a line: a branch is taken when any copy of
        the line (of its shape) took it."""
        shapes = self.taken(path, line)
        total = sum(len(v) for v in shapes.values())
        return sum(v.count(False) for v in shapes.values()), total

    def unexecuted_functions(self, path: str, lines: set[int]) -> list[tuple[int, str]]:
        """(start line, name) of each function of `path` whose span holds one of `lines`
        and that no run executed."""
        return sorted(
            (start, name)
            for (start, _, end, _), (name, count) in self.functions.get(path, {}).items()
            if count == 0 and any(start <= n <= end for n in lines)
        )

    def part_run(self, path: str, line: int) -> bool:
        """The line ran, but no copy of it ran whole (a block of it never executed)."""
        return self.partial.get(path, {}).get(line, False)


def gcov_for(compiler: str) -> str | None:
    """The gcov of the compiler that built the cell: `x86_64-linux-gnu-g++-12` ->
    `x86_64-linux-gnu-gcov-12`, beside it."""
    path = Path(compiler)
    if "g++" not in path.name:
        return None
    tool = path.with_name(path.name.replace("g++", "gcov"))
    return str(tool) if tool.is_file() else None


def gcov_scan(tree_key: str, cell_key: str, run_key: str, gcov: str, label: str) -> ScanSpec:
    """The scan that runs gcov once over what the run `run_key` of cell `cell_key` left."""
    params = {"cell": cell_key, "run": run_key, "gcov": gcov}
    return ScanSpec.of(
        tree_key, gcov_output, params, label=label, cells=(cell_key,), runs=(run_key,)
    )


def gcov_output(tree: Path, params: dict[str, Any]) -> dict[str, str]:
    """A scan (cxxgate/runs/scan.py): gcov's JSON over the cell's notes and the run's
    counts, as text, or the reason there is none (`problem`)."""
    results = params["results"]
    cell = CellResult.load(Path(results[params["cell"]]))
    run = RunResult.load(Path(results[params["run"]]))
    problem, text = _gcov(cell, run, params["gcov"])
    return {"problem": problem, "text": text}


def counts(scan: ScanResult, harness: dict[str, str] | None = None) -> Counts:
    """gcov's counts for the cell's translation units, from the scan's stored output; a
    unit the run wrote no counts for reads as never executed. `harness` names the
    grader-owned units whose counts are kept too (their absolute path in the build -> the
    key they are kept under)."""
    if scan.status != "ok":
        return Counts(problem=f"gcov scan: {scan.status}: {scan.detail}")
    if scan.data["problem"]:
        return Counts(problem=scan.data["problem"])
    return parse(scan.data["text"], harness)


def _gcov(cell: CellResult, run: RunResult, gcov: str) -> tuple[str, str]:
    if cell.binary is None or not run.kept:
        return "no coverage data: the program was not built or did not run", ""
    folder = Path(cell.binary).parent
    notes = sorted(folder.glob("*.gcno"))
    if not notes:
        return f"the coverage cell {cell.key} holds no .gcno notes", ""
    with tempfile.TemporaryDirectory(prefix="cxxgate-gcov.") as scratch:
        work = Path(scratch)
        for note in notes:
            shutil.copy(note, work / note.name)
            data = Path(run.kept) / f"{note.stem}.gcda"
            if data.is_file():
                shutil.copy(data, work / data.name)
        argv = [gcov, "--branch-probabilities", "--json-format", "--stdout"]
        argv += [n.stem for n in notes]
        outcome = toolquery.ask(argv, cwd=work, seconds=GCOV_SECONDS, output_cap=OUTPUT_CAP)
    if outcome.timed_out or outcome.overflowed or outcome.exit != 0:
        said = outcome.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
        return f"gcov could not read the run's counts: exit {outcome.exit} {said[0]}", ""
    return "", outcome.stdout.decode(errors="replace")


def tree_path(name: str, cwd: str) -> str | None:
    """The tree-relative path of a source gcov names (as the compile spelt it, relative to
    the compile's working directory `cwd`), or None outside the tree."""
    full = os.path.normpath(os.path.join(cwd or "/", name))
    if not full.startswith(NEUTRAL_TREE + "/"):
        return None
    return full[len(NEUTRAL_TREE) + 1 :]


def parse(text: str, harness: dict[str, str] | None = None) -> Counts:
    """gcov --json-format --stdout: one JSON document per line (one per unit). The tree's
    files are kept by tree path, the grader units named in `harness` by their key."""
    counts = Counts()
    for raw in text.splitlines():
        if not raw.strip():
            continue
        try:
            doc = json.loads(raw)
        except json.JSONDecodeError:
            counts.problem = "gcov printed something that is not its JSON"
            continue
        unit = str(doc.get("data_file", ""))
        cwd = str(doc.get("current_working_directory", ""))
        for entry in doc.get("files", []):
            name = str(entry.get("file", ""))
            rel = tree_path(name, cwd)
            if rel is None and harness:
                rel = harness.get(os.path.normpath(os.path.join(cwd or "/", name)))
            if rel is None:
                continue  # the driver, the entry, the standard library
            for fn in entry.get("functions", []):
                name = str(fn.get("demangled_name") or fn.get("name", ""))
                start, column = int(fn["start_line"]), int(fn["start_column"])
                span = (start, column, int(fn["end_line"]), source_name(name))
                counts.add_function(rel, span, name, int(fn["execution_count"]))
            for line in entry.get("lines", []):
                number, count = int(line["line_number"]), int(line["count"])
                counts.add(rel, number, count)
                taken = [int(b["count"]) for b in line.get("branches", []) if not b.get("throw")]
                if taken:
                    counts.add_branches(rel, number, unit, taken)
                if count > 0:
                    counts.add_block(rel, number, bool(line.get("unexecuted_block")))
    return counts
