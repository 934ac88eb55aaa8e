"""The grade: verdicts.jsonl, the table (table.txt), the per-cell record, the reports
(report.md, report.html, findings.sarif, junit.xml), what the terminal gets
(cxxgate/reports/report_terminal.py), and the exit status.

Exit 0 only when every row ended as it should: the reference state of every case is
green (no broken case), shipped patches match their `expect`, candidates are accepted
(unless `report_only=1`, for nightly batches), and nothing hit a harness error.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from doit.exceptions import TaskFailed

from cxxgate.reports import junit, report_html, report_md, report_terminal, sarif, swe_report
from cxxgate.results.result import BASELINE_RED, HARNESS_ERROR
from cxxgate.store import codehash
from cxxgate.store.layout import Layout
from cxxgate.toolchain import ccache
from cxxgate.toolchain.diagnostics import why_failed
from cxxgate.util import atomic
from cxxgate.verdicts.evidence import Evidence
from cxxgate.verdicts.verdict import Verdict

if TYPE_CHECKING:
    from cxxgate.library.rows import Orphan
    from cxxgate.store.history import Flip
    from cxxgate.toolchain.cellspec import CellResult

_ROLE_ORDER = {"reference": 0, "base": 1, "known": 2, "candidate": 3}


def cell_note(cell: CellResult) -> str:
    """The part of a cell's record line that says why it failed, stable between runs."""
    if cell.status in {"ok", "no_tree"}:
        return ""
    return f" | {why_failed(cell)}"


def cache_note(cell: CellResult) -> str:
    """The record line's ccache column: `ccache=H/M`, hits and misses among the compiles
    this cell's build ran through ccache (a hit in remote storage is a hit); `0/0` when
    it adopted an earlier cell's result (cxxgate/cells/reuse.py), `off` when no compile went
    through ccache. Stable between warm runs: it is read from the cell's result."""
    compiles = cell.compile_steps()
    if not compiles:
        return ""
    if cell.reused_from:
        return " ccache=0/0"
    if not any(s.cache for s in compiles):
        return " ccache=off"
    hits = sum(s.cache in {"hit", "remote"} for s in compiles)
    return f" ccache={hits}/{sum(s.cache == 'miss' for s in compiles)}"


@dataclass(frozen=True)
class Caching:
    """What cells.txt's ccache column and the summary line read: each planned cell's
    result by key, and the key of each record line by the line's start (row, gate, name,
    kind), from cxxgate/graph/actions.py."""

    cells: dict[str, CellResult]
    starts: dict[str, str]

    def column(self, line: str) -> str:
        start = " ".join(line.split(" ", 4)[:4]) + " "
        key = self.starts.get(start)
        return cache_note(self.cells[key]) if key in self.cells else ""

    def summary(self) -> str:
        """One line over the grade's distinct compiles (cells not adopted). A program's
        result repeats the steps of the object cells it linked (cxxgate/cells/cell.py), and two
        programs may link one object: a compile is counted once, by its argv (an object's
        names its own output)."""
        steps = list(
            {
                tuple(s.argv): s
                for c in self.cells.values()
                if not c.reused_from
                for s in c.compile_steps()
                if s.cache
            }.values()
        )
        if not steps:
            # e.g. every project build stopped in its configure (json 1.x without lcov)
            if ccache.enabled():
                return "ccache: on; no cell compiled through it\n"
            return "ccache: off\n"
        hits = sum(s.cache in {"hit", "remote"} for s in steps)
        remote = sum(s.cache == "remote" for s in steps)
        return (
            f"ccache: {hits} hit(s) ({remote} from remote storage), "
            f"{len(steps) - hits} miss(es) in {len(steps)} compile(s)\n"
        )


def _with_column(line: str, caching: Caching | None) -> str:
    """A record line with its cell's ccache column before the failure note."""
    column = caching.column(line) if caching else ""
    if not column:
        return line
    head, sep, note = line.partition(" | ")
    return f"{head}{column}{sep}{note}"


def grade(
    verdicts: list[Verdict],
    orphans: list[Orphan],
    errors: list[str],
    layout: Layout,
    registry_order: list[str],
    report_only: bool,
    flips: list[Flip] | None = None,
    evidence_roots: tuple[Path, ...] = (),
    caching: Caching | None = None,
    full_table: bool = False,
) -> TaskFailed | None:
    """Write every output of the grade and say whether it passed. `flips` are the rows
    whose verdict or class changed since an earlier grade; report.md lists them. The
    terminal gets the counts and the rows to act on; `full_table` prints the table too."""
    verdicts.sort(key=lambda v: (v.case, _ROLE_ORDER[v.role], v.patch))
    # In a fixed order, so a merge of shards reports exactly what one grade would.
    orphans = sorted(orphans, key=lambda o: (o.case, o.name, o.klass))
    errors = sorted(set(errors))
    gates = [g for g in registry_order if any(g in v.gates for v in verdicts)]
    rows = [v.to_json() for v in verdicts]
    rows += [
        {
            "case": o.case,
            "patch": o.name,
            "role": "candidate",
            "model": o.model,
            "verdict": "incomplete",
            "class": o.klass,
            "detail": o.detail,
            "gates": {},
        }
        for o in orphans
    ]
    # Whole files or the previous ones: a grade killed while it writes them leaves nothing
    # half-written for the reader (a CI step, a diff between nights).
    atomic.write_text(layout.verdicts, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    # The ccache column is cells.txt's only: rows and results are the same whatever the
    # cache held (on, off, another shard's).
    records = "".join(_with_column(line, caching) + "\n" for v in verdicts for line in v.cells)
    atomic.write_text(layout.cell_record, records)
    table = render_table(verdicts, orphans, gates)
    atomic.write_text(layout.table, table)
    problems = exit_problems(verdicts, orphans, errors, report_only)
    junit.write(layout.junit, verdicts, orphans, problems)
    _write_reports(layout, rows, gates, problems, flips or [], evidence_roots)
    lines = [table, "\n"] if full_table else []
    evidence = Evidence(layout.root, *evidence_roots)
    lines.append(report_terminal.render(rows, problems, layout, evidence))
    lines.append(swe_report.write(layout, verdicts))  # cases with a `tests` gate only
    if caching is not None:
        lines.append(caching.summary())
    lines.append(report_terminal.where(layout))
    if problems:
        shown = report_terminal.SHOWN
        lines.append(f"\ngrade FAILED ({len(problems)} problem(s)):\n")
        lines += [f"  - {message}\n" for _, message in problems[:shown]]
        if len(problems) > shown:
            lines.append(f"  ... {len(problems) - shown} more in {layout.junit}\n")
    else:
        lines.append("grade ok: every row ended as expected\n")
    # The real stdout, not sys.stdout: doit's thread runner swaps sys.stdout per task to
    # capture output, and concurrent tasks can leave it pointing at a dead capture buffer
    # (seen with `-n 2`: the output vanished).
    out = sys.__stdout__ or sys.stdout
    out.write("".join(lines))
    out.flush()
    return TaskFailed(f"{len(problems)} problem(s); see above") if problems else None


def _write_reports(
    layout: Layout,
    rows: list[dict[str, object]],
    gates: list[str],
    problems: list[tuple[str | None, str]],
    flips: list[Flip],
    evidence_roots: tuple[Path, ...],
) -> None:
    """report.md, report.html and findings.sarif, unless their inputs are those of the
    files already there: rows name their evidence by content key, so the same rows mean
    the same evidence. A warm grade of 1,000 rows skips 0.9 s of rendering."""
    inputs = [rows, gates, problems, [asdict(f) for f in flips], codehash.of_reports()]
    digest = codehash.of_text(json.dumps(inputs, sort_keys=True, default=str))
    outputs = (layout.report_md, layout.report_html, layout.findings_sarif)
    marker = layout.root / "reports.digest"
    if all(p.exists() for p in outputs) and marker.exists() and marker.read_text() == digest:
        return
    evidence = Evidence(layout.root, *evidence_roots)
    report_md.write(layout.report_md, rows, gates, problems, evidence, flips)
    report_html.write(layout.report_html, rows, gates, problems, evidence)
    sarif.write(layout.findings_sarif, rows, evidence)
    atomic.write_text(marker, digest)


def exit_problems(
    verdicts: list[Verdict], orphans: list[Orphan], errors: list[str], report_only: bool
) -> list[tuple[str | None, str]]:
    """Why the grade fails, as (row id, message); input errors belong to no row, a broken
    case to its reference row."""
    problems: list[tuple[str | None, str]] = [(None, f"input error: {e}") for e in errors]
    for v in verdicts:
        where = f"{v.case}/{v.patch}"
        harness = [g for g, r in v.gates.items() if r["class"] == HARNESS_ERROR]
        if v.klass == HARNESS_ERROR or harness:
            problems.append((where, f"{where}: harness error in {harness or ['intake']}"))
        if v.role == "reference":
            for gate, problem in v.broken.items():
                state = "is broken" if problem["class"] == BASELINE_RED else "could not be graded"
                problems.append((where, f"case {v.case} {state} for gate {gate}: {problem['why']}"))
        if v.role == "known" and v.expect_problems:
            problems.append((where, f"{where}: {'; '.join(v.expect_problems)}"))
        if v.role == "candidate" and v.verdict != "accept" and not report_only:
            problems.append((where, f"{where}: {v.verdict} ({v.klass})"))
    # An unreadable batch line is an input error, never report-only: a file of nothing
    # but broken lines must not pass as "grade ok". An unknown case is a candidate's row.
    problems += [
        (f"{o.case}/{o.name}", f"{o.case}/{o.name}: {o.klass}: {o.detail}")
        for o in orphans
        if not report_only or o.klass != "unknown_case"
    ]
    return problems


def _shown(gate: dict[str, str] | None) -> str:
    if gate is None or gate["status"] == "not_applicable":
        return "-"
    return gate["class"] + ("?" if gate["status"] == "incomplete" else "")


def render_table(verdicts: list[Verdict], orphans: list[Orphan], gates: list[str]) -> str:
    header = ["case", "patch", "role", "verdict", "class", *gates, "expected"]
    body = []
    for v in verdicts:
        expected = "" if v.expect is None else ("ok" if not v.expect_problems else "MISMATCH")
        cells = [_shown(v.gates.get(g)) for g in gates]
        if v.role in {"reference", "base"} and v.broken:
            expected = "BROKEN"
        body.append([v.case, v.patch, v.role, v.verdict, v.klass, *cells, expected])
    for o in orphans:
        body.append([o.case, o.name, "candidate", "incomplete", o.klass, *["-"] * len(gates), ""])
    widths = [max(len(str(r[i])) for r in [header, *body]) for i in range(len(header))]

    def line(r: list[str]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *map(line, body)]) + "\n"
