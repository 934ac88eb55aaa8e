"""Gate `leak`: the shipped case `answer_key` (read from the shared cold grade) reaches
every class, a hidden oracle stays hidden, and literals are compared by value."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import SHIPPED, Grade, case_library, run_grade

from cxxgate.gates import cppsource, leak, ledger, literals
from cxxgate.library import Library
from cxxgate.settings import Settings

REACHED = {
    ("answer_key/reference", "leak"): "accept",
    ("answer_key/good_newton", "leak"): "accept",
    ("answer_key/golden_table", "leak"): "literal_leak",
    ("answer_key/float_sqrt", "leak"): "hidden_oracle_fail",
    # Values, not spellings: folded arithmetic, an #included .inc, constexpr and bytes.
    ("answer_key/arithmetic", "leak"): "literal_leak",
    ("answer_key/included_inc", "leak"): "literal_leak",
    ("answer_key/constexpr_bytes", "leak"): "literal_leak",
    ("answer_key/arithmetic", "matrix"): "accept",
    ("answer_key/included_inc", "matrix"): "accept",
    ("answer_key/constexpr_bytes", "matrix"): "accept",
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


def test_folded_values_are_named_with_what_they_fold_to(shipped: Grade) -> None:
    def messages(row: str) -> list[str]:
        findings = _result(shipped, row)["findings"]
        assert isinstance(findings, list)
        return [f"{f['path']}:{f['line']} {f['message'].partition('@')[0]}" for f in findings]

    assert messages("answer_key/arithmetic") == [
        "src/isqrt.cpp:7 1700 + 64 (= 1764)",
        "src/isqrt.cpp:8 6 * 7 (= 42)",
        "src/isqrt.cpp:9 500 * 2000 (= 1000000)",
        "src/isqrt.cpp:10 500 + 500 (= 1000)",
    ]
    # The .inc file is read by the compile, whatever its suffix.
    assert messages("answer_key/included_inc")[:2] == [
        "src/answers.inc:2 0x6E4",
        "src/answers.inc:3 42",
    ]
    got = messages("answer_key/constexpr_bytes")
    assert "src/isqrt.cpp:7 { 0x06 , 0xE4 } (= 1764)" in got
    assert "src/isqrt.cpp:12 square ( kRoot ) (= 1764)" in got
    assert "src/isqrt.cpp:13 '*' (= 42)" in got


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


# ---- constants the compiled units fold (libclang), on small trees ----------------------


def _constants(tmp_path: Path, files: dict[str, str]) -> dict[str, Any]:
    tree = tmp_path / "tree"
    for rel, text in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    dirs = ledger.system_dirs(shutil.which("g++") or "g++", "c++20")
    params = {
        "std": "c++20",
        "include_dirs": ["include"],
        "units": ["src/*.cpp"],
        "tests": ["tests/**"],
        "system_dirs": list(dirs),
        "defines": [],
    }
    return literals.constants(tree, params)


def _folded(data: dict[str, Any]) -> set[tuple[str, int, str]]:
    return {(c["file"], c["line"], c["value"]) for c in data["constants"]}


def test_constants_are_folded_in_every_file_a_unit_reads(tmp_path: Path) -> None:
    data = _constants(
        tmp_path,
        {
            "include/k.hpp": "#pragma once\nconstexpr long long kBase = 1700;\n",
            "src/a.cpp": (
                '#include "k.hpp"\n'  # line 1
                "constexpr long long sq(long long x) { return x * x; }\n"
                "long long f(long long n) {\n"
                "  switch (n) {\n"
                '#include "table.txt"\n'  # line 5
                "  case kBase + 65: return sq(6 * 7);\n"  # line 6: split over two files
                "  }\n"
                '  const char* s = "17" "64";\n'  # line 8: concatenated
                "  static const char c[] = {'4', '2', 0};\n"  # line 9: a char array
                "  static const unsigned char b[] = {0xE4, 0x06};\n"  # line 10: little-endian
                "  return n ^ (1764 ^ 0x55) ^ s[0] ^ c[0] ^ b[0];\n"  # line 11: encoded
                "}\n"
                "#if 0\nint hidden = 1700 + 64;\n#endif\n"
            ),
            "src/table.txt": "case 500 * 2000: return 10 * 100;\n",
            "tests/t.cpp": "int main() { return 1700 + 64; }\n",  # not a unit, not read
        },
    )
    assert data["errors"] == []
    assert data["read"] == ["include/k.hpp", "src/a.cpp", "src/table.txt"]
    got = _folded(data)
    assert ("src/table.txt", 1, "num:1000000") in got
    assert ("src/table.txt", 1, "num:1000") in got
    assert ("src/a.cpp", 6, "num:1765") in got
    assert ("src/a.cpp", 6, "num:1764") in got  # sq(42): a constexpr call
    assert ("src/a.cpp", 8, "str:1764") in got and ("src/a.cpp", 8, "num:1764") in got
    assert ("src/a.cpp", 9, "str:42") in got and ("src/a.cpp", 9, "num:42") in got
    assert ("src/a.cpp", 10, "num:1764") in got
    # XOR with a constant folds to another value (1713): that one is not the golden's, and
    # the run-time decode is for the hidden oracle to catch.
    assert ("src/a.cpp", 11, "num:1713") in got
    assert not any(f.startswith("tests/") for f, _, _ in got)
    # What the preprocessor skipped is reported: its values were never folded.
    assert [(r["path"], r["line"]) for r in data["skipped"]] == [("src/a.cpp", 13)]


def test_a_unit_libclang_cannot_parse_is_reported(tmp_path: Path) -> None:
    data = _constants(tmp_path, {"src/a.cpp": "int f() { return undeclared + 1; }\n"})
    assert data["units"] == ["src/a.cpp"]
    assert [e["line"] for e in data["errors"]] == [1]


def test_a_data_file_of_any_suffix_shows_its_values() -> None:
    got = {v["value"] for v in literals.data_values("src/answers.dat", b"1764 42\nok\n")}
    assert {"num:1764", "num:42", "str:1764 42", "str:ok"} <= got
    raw = {v["value"] for v in literals.data_values("src/key.bin", b"\x06\xe4")}
    assert "num:1764" in raw


# ---- a bug-fix case: a patch's values are what the base tree lacks ----------------------

FIXTURE = Path(__file__).parent / "fixtures" / "leak_bugfix"
VARIANT_DIFF = "\n".join(
    [
        "diff --git a/src/triple.cpp b/src/triple.cpp",
        "--- a/src/triple.cpp",
        "+++ b/src/triple.cpp",
        "@@ -1,3 +1,3 @@",
        ' #include "triple.hpp"',
        " ",  # the blank context line
        "-int triple(int x) { return x + x; }",
        "+int triple(int x) { return 3 * x; }",
        "",
    ]
)


def test_a_bug_fix_case_judges_a_patch_against_its_base_tree(tmp_path: Path) -> None:
    """Base `x + 3`, reference `x + x + x`, a test `triple(3) == 9`: the base tree's own 3
    is no leak (on the base row, and in a candidate `3 * x`), so the case is not
    `baseline_red`. A second case whose reference adds the test's 3 (`3 * x` over base
    `x + x`) grades green too: the known-good fix's values are the task's."""
    lib = case_library(tmp_path / "cases")
    shutil.copytree(FIXTURE, lib / "leak_bugfix")
    variant = lib / "leak_variant"
    shutil.copytree(FIXTURE, variant)
    src = variant / "tree" / "src" / "triple.cpp"
    src.write_text(src.read_text().replace("x + 3", "x + x"))
    (variant / "patches" / "reference.diff").write_text(VARIANT_DIFF)
    case = variant / "case.yaml"
    case.write_text(case.read_text().partition("patches:\n")[0])
    grade = run_grade(tmp_path / "out", library=lib)
    assert grade.returncode == 0, grade.output
    assert grade.gate("leak_bugfix/base", "leak")["class"] == "accept"
    assert grade.gate("leak_bugfix/reference", "leak")["class"] == "accept"
    assert grade.gate("leak_bugfix/base", "matrix")["class"] == "run_fail:dbg"
    assert grade.rows["leak_bugfix/times_three"]["verdict"] == "accept"
    assert grade.gate("leak_bugfix/answers", "leak")["class"] == "literal_leak"
    assert grade.gate("leak_variant/reference", "leak")["class"] == "accept"
    assert grade.rows["leak_variant/reference"]["verdict"] == "accept"
