"""What the terminal gets at the end of a grade (cxxgate/reports/report_terminal.py): counts, the
rows to act on with their deciding gate and first finding, and where the reports are;
the whole table only in table.txt, unless `table=1`.

A real cold grade of `discarded` trimmed to its reference, with three candidates: one
accepted, one rejected by its gate, one that is not a diff."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import SHIPPED, Grade, case_library, run_grade

from cxxgate.reports import report_terminal
from cxxgate.store.layout import Layout
from cxxgate.verdicts.evidence import Evidence

CASE = "discarded"


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Grade:
    root = tmp_path_factory.mktemp("terminal")
    library = case_library(root / "cases", CASE)
    path = library / CASE / "case.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["patches"] = []
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    batch = root / "patches" / CASE
    batch.mkdir(parents=True)
    shipped = SHIPPED / CASE / "patches"
    (batch / "good.diff").write_bytes((shipped / "good_to_chars.diff").read_bytes())
    (batch / "wraps.diff").write_bytes((shipped / "unsigned_only.diff").read_bytes())
    (batch / "prose.diff").write_text("not a diff\n")
    return run_grade(root / "out", f"patches={root / 'patches'}", library=library)


def test_the_summary_names_what_to_act_on_and_where_the_reports_are(graded: Grade) -> None:
    assert graded.returncode != 0  # two candidates rejected
    out = graded.output
    assert "4 rows: 2 accept, 2 reject\n" in out
    assert "classes: 2 accept, 1 functional_regression, 1 malformed_patch\n" in out
    assert "rows to act on (2):\n" in out
    listed = [line.split() for line in out.splitlines() if line.startswith(f"  {CASE}/")]
    assert [line[:4] for line in listed] == [
        [f"{CASE}/prose", "reject", "malformed_patch", "intake"],
        [f"{CASE}/wraps", "reject", "functional_regression", "negcomp"],
    ]
    wraps = next(line for line in out.splitlines() if line.startswith(f"  {CASE}/wraps"))
    assert 'to_text(-7L) gave "18446744073709551609"' in wraps  # its failed check, one line
    assert f"reports in {graded.out}/: table.txt, verdicts.jsonl, report.md" in out
    # The table itself stays in table.txt, byte for byte what it was; its rows are not printed.
    table = (graded.out / "table.txt").read_text()
    assert f"{CASE}  wraps" in table and table.splitlines()[0] not in out
    assert f"  - {CASE}/wraps: reject (functional_regression)" in out  # the exit's reasons


def test_table_1_prints_the_whole_table_too(graded: Grade) -> None:
    again = run_grade(
        graded.out,
        f"patches={graded.out.parent / 'patches'}",
        "table=1",
        library=graded.out.parent / "cases",
    )
    table = (graded.out / "table.txt").read_text()
    assert table in again.output
    assert again.output.index(table) < again.output.index("4 rows: ")


def test_the_list_is_capped_and_candidate_text_cannot_drive_the_terminal(tmp_path: Path) -> None:
    rows = [
        {
            "case": "c",
            "patch": f"p{i:03}",
            "role": "candidate",
            "verdict": "reject",
            "class": "compile_error",
            "detail": "negcomp: boom \x1b[2J\nsecond line",
            "gates": {"negcomp": {"status": "fail", "class": "compile_error", "summary": "x"}},
        }
        for i in range(report_terminal.SHOWN + 5)
    ]
    layout = Layout(tmp_path)
    text = report_terminal.render(rows, [], layout, Evidence(tmp_path))
    listed = [line for line in text.splitlines() if line.startswith("  c/")]
    assert len(listed) == report_terminal.SHOWN
    assert listed[0].split() == [
        "c/p000",
        "reject",
        "compile_error",
        "negcomp",
        "boom",
        "?[2J",
        "second",
        "line",
    ]
    assert "\x1b" not in text
    assert f"  ... 5 more in {layout.table}" in text
