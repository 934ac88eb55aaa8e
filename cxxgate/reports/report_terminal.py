"""What the terminal gets at the end of a grade: what a person acts on, not the table.

Counts per verdict and per class; the rows to act on, one line each (case/patch, verdict,
class, the gate that decided the class, and that row's first finding or summary), at most
`SHOWN`; and where the full table and the reports are. A row is listed when the grade
fails because of it (cxxgate/reports/report.py `exit_problems`: a shipped patch whose expectation
failed, a case whose reference state is broken, a harness error, a candidate not accepted,
a batch line that names no case or cannot be read) and, under `report_only=1` too, when it
is a candidate that was not accepted. The whole table is in table.txt; `table=1` or
`verbosity=2` prints it before these lines, as grades did before.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from cxxgate.reports.report_md import first_line
from cxxgate.store.layout import Layout
from cxxgate.verdicts.evidence import Evidence

SHOWN = 40  # rows listed; the rest are in table.txt
_TEXT = 160  # characters of a row's finding or summary


def one_line(text: str, limit: int = _TEXT) -> str:
    """A candidate-shaped text as one terminal line: whitespace folded, control characters
    (escape sequences) shown as `?`, cut to `limit`."""
    flat = "".join(c if c.isprintable() else "?" for c in " ".join(str(text).split()))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def deciding_gate(row: dict[str, Any]) -> str:
    """The gate whose class became the row's (cxxgate/verdicts/verdict.py `_decide` writes the
    detail as `<gate>: <summary>`); `intake` for a class decided before any gate (or for
    a batch line), `verdict` for diagnostic control found in the compiled units."""
    gate = str(row.get("detail") or "").partition(":")[0]
    if gate in row.get("gates", {}):
        return gate
    if row["verdict"] == "accept":
        return "-"
    return "verdict" if row["class"] == "diagnostic_control" else "intake"


def _why(row: dict[str, Any], evidence: Evidence) -> str:
    """The row's first finding or summary; for a row without one (an accepted row that
    should have been rejected, a reference whose base tree is wrong), what went wrong."""
    text = first_line(row, evidence)
    if text:
        return text
    if row.get("expect_problems"):
        return "; ".join(row["expect_problems"])
    broken = row.get("broken") or {}
    return "; ".join(f"{g}: {b['why']}" for g, b in broken.items())


def acted_on(
    rows: list[dict[str, Any]], problems: list[tuple[str | None, str]]
) -> list[dict[str, Any]]:
    """The rows to act on, those the grade fails on first, each group in table order."""
    failing = {p for p, _ in problems if p}
    listed = [
        r
        for r in rows
        if f"{r['case']}/{r['patch']}" in failing
        or (r["role"] == "candidate" and r["verdict"] != "accept")
    ]
    return sorted(listed, key=lambda r: f"{r['case']}/{r['patch']}" not in failing)


def render(
    rows: list[dict[str, Any]],
    problems: list[tuple[str | None, str]],
    layout: Layout,
    evidence: Evidence,
) -> str:
    verdicts = Counter(r["verdict"] for r in rows)
    classes = Counter(r["class"] for r in rows)
    if not rows:
        return "0 rows\n"
    by_count = sorted(classes.items(), key=lambda kv: (-kv[1], kv[0]))
    out = [
        f"{len(rows)} rows: " + ", ".join(f"{verdicts[v]} {v}" for v in sorted(verdicts)),
        "classes: " + ", ".join(f"{n} {k}" for k, n in by_count),
    ]
    listed = acted_on(rows, problems)
    if not listed:
        out.append("rows to act on: none")
    else:
        out.append(f"rows to act on ({len(listed)}):")
        body = [
            [
                f"{r['case']}/{r['patch']}",
                r["verdict"],
                r["class"],
                deciding_gate(r),
                one_line(_why(r, evidence).removeprefix(f"{deciding_gate(r)}: ")),
            ]
            for r in listed[:SHOWN]
        ]
        widths = [max(len(line[i]) for line in body) for i in range(4)]
        out += [
            "  " + "  ".join(c.ljust(w) for c, w in zip(line, [*widths, 0], strict=True)).rstrip()
            for line in body
        ]
        if len(listed) > SHOWN:
            out.append(f"  ... {len(listed) - SHOWN} more in {layout.table}")
    return "\n".join(out) + "\n"


def where(layout: Layout) -> str:
    """One line naming the grade's files, under the build folder."""
    files = (
        layout.table,
        layout.verdicts,
        layout.report_md,
        layout.report_html,
        layout.junit,
        layout.findings_sarif,
        layout.cell_record,
    )
    return f"reports in {layout.root}/: " + ", ".join(p.name for p in files) + "\n"
