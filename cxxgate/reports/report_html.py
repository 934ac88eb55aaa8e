"""`report.html`: one static page, no network: the verdict table, sortable and filterable
by case, gate and class, each row opening its evidence inline (failed checks, findings,
compiler diagnostics, stdout diffs against the reference, sanitizer reports on stderr,
symbol pairs). `report.html#open=<case>/<patch>` opens one row's evidence;
`#case=..&gate=..&class=..` presets the filters.

A candidate controls diagnostics and program output: Jinja2's autoescape escapes every
text, the script only reads the page (textContent, data attributes), and the page's
Content-Security-Policy forbids any load. The template lives outside templates/: the
probes' template digest keys every gate's classification, and a report's looks must not.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from cxxgate.util import atomic
from cxxgate.verdicts.evidence import Evidence, rows_by_case_reference

TEMPLATE = Path(__file__).resolve().parent / "report_templates" / "report.html.j2"


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE.parent),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
    )
    return env.get_template(TEMPLATE.name)


def _expected(row: dict[str, Any]) -> str:
    if row.get("role") in {"reference", "base"} and row.get("broken"):
        return "BROKEN"
    if row.get("expect") is None:
        return ""
    return "MISMATCH" if row.get("expect_problems") else "ok"


def render(
    rows: list[dict[str, Any]],
    gates: list[str],
    problems: list[tuple[str | None, str]],
    evidence: Evidence,
) -> str:
    refs = rows_by_case_reference(rows)
    shown = []
    for r in rows:
        shown.append(
            {
                "id": f"{r['case']}/{r['patch']}",
                "case": r["case"],
                "patch": r["patch"],
                "role": r.get("role", ""),
                "verdict": r["verdict"],
                "klass": r["class"],
                "gates": r.get("gates", {}),
                "expected": _expected(r),
                "source": r.get("source", "batch input"),
                "model": r.get("model"),
                "sha": r.get("sha", ""),
                "detail": r.get("detail", ""),
                "expect_problems": r.get("expect_problems", []),
                "broken": r.get("broken", {}),
                "views": evidence.gate_views(r, refs.get(r["case"])),
            }
        )
    classes = {r["class"] for r in rows}
    for r in rows:
        classes |= {g["class"] for g in r.get("gates", {}).values()}
    verdicts = Counter(r["verdict"] for r in rows)
    return _template().render(
        rows=shown,
        gates=gates,
        cases=sorted({r["case"] for r in rows}),
        classes=sorted(classes),
        verdicts=sorted(verdicts.items()),
        status=f"FAILED ({len(problems)} problem(s))" if problems else "ok",
    )


def write(
    path: Path,
    rows: list[dict[str, Any]],
    gates: list[str],
    problems: list[tuple[str | None, str]],
    evidence: Evidence,
) -> None:
    atomic.write_text(path, render(rows, gates, problems, evidence))
