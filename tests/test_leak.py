"""Gate `leak`: the shipped case `answer_key` (read from the shared cold grade) reaches
every class, a hidden oracle stays hidden, and literals are compared by value."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import SHIPPED, Grade

from cxxgate.gates import cppsource, leak
from cxxgate.library import Library
from cxxgate.settings import Settings

REACHED = {
    ("answer_key/reference", "leak"): "accept",
    ("answer_key/good_newton", "leak"): "accept",
    ("answer_key/golden_table", "leak"): "literal_leak",
    ("answer_key/float_sqrt", "leak"): "hidden_oracle_fail",
    # The visible test is green on both cheats: that is what the leak gate is for.
    ("answer_key/golden_table", "matrix"): "accept",
    ("answer_key/float_sqrt", "matrix"): "accept",
}


def _result(grade: Grade, row: str) -> dict[str, object]:
    case, patch = row.split("/")
    data: dict[str, object] = json.loads(
        (grade.out / "results" / case / patch / "leak.json").read_text()
    )
    return data


@pytest.mark.parametrize(("row", "gate"), sorted(REACHED))
def test_class_reached(shipped: Grade, row: str, gate: str) -> None:
    assert shipped.gate(row, gate)["class"] == REACHED[row, gate]
    assert not shipped.rows[row].get("expect_problems")


def test_every_class_is_reached() -> None:
    reached = {c for (_, gate), c in REACHED.items() if gate == "leak"}
    assert reached == {*leak.SEVERITY, "accept"}


def test_leaks_are_named_by_value_and_place(shipped: Grade) -> None:
    findings = _result(shipped, "answer_key/golden_table")["findings"]
    assert isinstance(findings, list)
    got = [(f["path"], f["line"], f["message"]) for f in findings]
    assert got == [
        (
            "src/isqrt.cpp",
            7,
            "0x6E4@src/isqrt.cpp:7 is in the visible oracle: probes/visible_main.cpp:6, "
            "goldens/visible.stdout:5",
        ),
        (
            "src/isqrt.cpp",
            8,
            "42@src/isqrt.cpp:8 is in the visible oracle: goldens/visible.stdout:5",
        ),
        (
            "src/isqrt.cpp",
            9,
            "1'000'000@src/isqrt.cpp:9 is in the visible oracle: probes/visible_main.cpp:6, "
            "goldens/visible.stdout:6",
        ),
        (
            "src/isqrt.cpp",
            10,
            "1000@src/isqrt.cpp:10 is in the visible oracle: goldens/visible.stdout:6",
        ),
        (
            "src/isqrt.cpp",
            11,
            "99@src/isqrt.cpp:11 is in the visible oracle: tests/isqrt_test.cpp:7",
        ),
        (
            "src/isqrt.cpp",
            12,
            "9@src/isqrt.cpp:12 is in the visible oracle: tests/isqrt_test.cpp:7",
        ),
    ]


def test_hidden_failure_shows_the_output_not_the_golden(shipped: Grade) -> None:
    summary = shipped.gate("answer_key/float_sqrt", "leak")["summary"]
    assert "printed '4294967295 65536'" in summary
    golden = (SHIPPED / "answer_key" / "hidden" / "hidden.stdout").read_text()
    assert "4294967295 65535" in golden and "65535" not in summary


def test_hidden_files_never_reach_a_sandbox(shipped: Grade) -> None:
    """No compile or run of the case is handed the case folder (argv), and the hidden
    golden is copied into no tree or cell folder: only the hidden unit enters its cell."""
    case_dir = str(SHIPPED / "answer_key")
    golden = (SHIPPED / "answer_key" / "hidden" / "hidden.stdout").read_bytes()
    hidden_cells = 0
    for result in (shipped.out / "cells").glob("*/*/result.json"):
        cell = json.loads(result.read_text())
        for step in cell["steps"]:
            assert not any(case_dir in arg for arg in step["argv"]), step["argv"]
        if cell["label"].startswith("leak hidden"):
            hidden_cells += 1
            for path in result.parent.iterdir():
                assert path.read_bytes() != golden, path
    assert hidden_cells >= 3  # reference, good_newton, golden_table, float_sqrt (reuse aside)
    for result in (shipped.out / "runs").glob("*/*/result.json"):
        assert case_dir not in " ".join(json.loads(result.read_text())["argv"])
    for path in (shipped.out / "trees").rglob("*"):
        assert not path.is_file() or path.read_bytes() != golden, path


def _library(tmp_path: Path, edit: str, add: str) -> Library:
    lib = tmp_path / "cases"
    lib.mkdir()
    shutil.copy(SHIPPED / "envelopes.yaml", lib)
    shutil.copytree(SHIPPED / "answer_key", lib / "answer_key")
    case = lib / "answer_key" / "case.yaml"
    case.write_text(case.read_text().replace(edit, edit + add))
    settings = Settings(
        library=lib,
        out=tmp_path / "out",
        envelopes=lib / "envelopes.yaml",
        only=frozenset(),
        batch=None,
        report_only=False,
    )
    return Library(settings)


def test_a_hidden_file_named_where_a_candidate_sees_it_is_refused(tmp_path: Path) -> None:
    lib = _library(
        tmp_path,
        "      - {units: [probes/visible_main.cpp], stdout_file: goldens/visible.stdout}\n",
        "      - {units: [hidden/hidden_main.cpp], stdout_file: hidden/hidden.stdout}\n",
    )
    assert lib.cases == {}
    assert len(lib.errors) == 1
    assert (
        "gates.leak.hidden: 'hidden/hidden.stdout' is also named in gates.matrix" in (lib.errors[0])
    )


# ---- literals by value, on strings ---------------------------------------------------


def _values(text: str) -> list[tuple[str, str, int]]:
    return [
        (lit.value, lit.text, lit.line)
        for lit in cppsource.literals(cppsource.parse(text.encode()))
    ]


def test_literal_values() -> None:
    got = _values(
        "int a = 0x6E4 + 1'764 + 1764LL + 03344 + 0b11011100100;\n"
        "double b = 42.0 + 4.2e1f + -1 - -7;\n"
        "// 1765 in a comment\n"
        'auto s = "case-\\x37\\n" "!"; auto r = R"(x "y")"; char c = \'\\t\';\n'
        'auto u = u8"\\u00e9";\n'
    )
    assert got == [
        ("num:1764", "0x6E4", 1),
        ("num:1764", "1'764", 1),
        ("num:1764", "1764LL", 1),
        ("num:1764", "03344", 1),
        ("num:1764", "0b11011100100", 1),
        ("num:42", "42.0", 2),
        ("num:42", "4.2e1f", 2),
        ("num:-1", "-1", 2),
        ("num:-7", "-7", 2),
        ("str:case-7\n!", '"case-\\x37\\n" "!"', 4),
        ('str:x "y"', 'R"(x "y")"', 4),
        ("str:\t", "'\\t'", 4),
        ("str:\u00e9", 'u8"\\u00e9"', 5),
    ]


def test_golden_values() -> None:
    values = list(cppsource.text_values("isqrt(1764) = 42\n\nok: 2.50\n"))
    assert ("num:1764", 1) in values and ("num:42", 1) in values
    assert ("str:isqrt(1764) = 42", 1) in values and ("num:2.5", 3) in values
    assert ("str:ok", 3) in values


def test_trivial_values_and_exceptions_never_leak() -> None:
    oracle = {
        v: ["goldens/x:1"]
        for v in ("num:0", "num:1", "num:-1", "str:", "num:8080", "str:OK", "num:0.5", "num:7")
    }
    added = [{"value": v} for v in oracle]
    exceptions = leak.exception_values([8080, "OK", 0.5])
    assert [lit["value"] for lit, _ in leak.leaked(added, oracle, exceptions)] == ["num:7"]
