"""`report.md`: the grade as Markdown, for a CI step summary or a pull-request comment.

Counts per class (of rows, and of each gate), the rows that flipped since a previous grade
(given by the caller; the section appears only when there are some), and the worst
offenders with their first diagnostic line. Every text a candidate can shape (diagnostics,
summaries) is escaped and cut to one line, so it cannot break the table or add markup.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from cxxgate.store.history import Flip
from cxxgate.util import atomic
from cxxgate.verdicts.evidence import Evidence

WORST = 10  # offenders listed
_LINE = 160  # characters of a diagnostic line
# Enough to keep a candidate's text from making a link, an image, emphasis or a new column.
_MARKUP = re.compile(r"([\\`*_\[\]!|~])")


def cell(text: str, limit: int = _LINE) -> str:
    """One Markdown table cell: one line, cut, markup and HTML escaped."""
    one = " ".join(str(text).split())
    if len(one) > limit:
        one = one[: limit - 3] + "..."
    one = one.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKUP.sub(r"\\\1", one)


def _table(header: list[str], body: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    return lines + ["| " + " | ".join(r) + " |" for r in body]


def first_line(row: dict[str, Any], evidence: Evidence) -> str:
    """The row's first diagnostic line: its first finding (file:line: message), else the
    detail of the failed check behind the row's class, else the row's own detail."""
    for gate, f in evidence.findings(row):
        if row["gates"][gate]["status"] == "fail":
            where = f"{f.path}:{f.line}" if f.line else f.path
            return f"{where}: {f.message}"
    detail = str(row.get("detail") or "")
    gate = detail.partition(":")[0]
    result = evidence.result(row, gate) if gate in row.get("gates", {}) else None
    for check in result.checks if result else []:
        if not check.ok and check.klass == row["class"]:
            return f"{gate}: {check.name}: {check.detail}"
    return detail


def _rank(row: dict[str, Any], problem_rows: set[str]) -> tuple[int, int, str, str]:
    failing = sum(g["status"] == "fail" for g in row.get("gates", {}).values())
    mismatch = f"{row['case']}/{row['patch']}" in problem_rows
    return (-mismatch, -failing, row["case"], row["patch"])


def render(
    rows: list[dict[str, Any]],
    gates: list[str],
    problems: list[tuple[str | None, str]],
    evidence: Evidence,
    flips: list[Flip] | None = None,
) -> str:
    verdicts = Counter(r["verdict"] for r in rows)
    status = f"FAILED ({len(problems)} problem(s))" if problems else "ok"
    out = [
        "# cxxgate grade",
        "",
        f"{len(rows)} rows: "
        + ", ".join(f"{verdicts[v]} {v}" for v in sorted(verdicts))
        + f". Grade {status}.",
        "",
        "## Classes",
        "",
    ]
    classes = Counter(r["class"] for r in rows)
    per_gate = {g: Counter(r["gates"][g]["class"] for r in rows if g in r["gates"]) for g in gates}
    every = sorted(set(classes).union(*per_gate.values()), key=lambda k: (k != "accept", k))
    body = [
        [cell(k), str(classes.get(k, "")), *[str(per_gate[g].get(k, "")) for g in gates]]
        for k in every
    ]
    out += _table(["class", "rows", *gates], body)
    if flips:
        out += ["", "## Flipped", ""]
        out += _table(
            ["row", "before", "after"],
            [[cell(f.row), cell(f.before), cell(f.after)] for f in flips],
        )
    if problems:
        out += ["", "## Problems", ""]
        out += [f"- {cell(message, 300)}" for _, message in problems[:WORST]]
        if len(problems) > WORST:
            out.append(f"- ... and {len(problems) - WORST} more (see junit.xml)")
    problem_rows = {p for p, _ in problems if p}
    offenders = sorted(
        (
            r
            for r in rows
            if r["verdict"] != "accept" or f"{r['case']}/{r['patch']}" in problem_rows
        ),
        key=lambda r: _rank(r, problem_rows),
    )
    if offenders:
        out += ["", f"## Worst offenders ({min(WORST, len(offenders))} of {len(offenders)})", ""]
        body = [
            [
                cell(f"{r['case']}/{r['patch']}"),
                cell(r["role"]),
                cell(r["verdict"]),
                cell(r["class"]),
                cell(first_line(r, evidence)),
            ]
            for r in offenders[:WORST]
        ]
        out += _table(["row", "role", "verdict", "class", "first diagnostic"], body)
    return "\n".join(out) + "\n"


def write(
    path: Path,
    rows: list[dict[str, Any]],
    gates: list[str],
    problems: list[tuple[str | None, str]],
    evidence: Evidence,
    flips: list[Flip] | None = None,
) -> None:
    atomic.write_text(path, render(rows, gates, problems, evidence, flips))
