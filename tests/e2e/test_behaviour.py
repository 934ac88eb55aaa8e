"""Gates slope and coverage on their shipped cases (`dedupe`, `port`), real g++, valgrind
and gcov, read from the shared cold grade; their pure parts on strings."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest
from conftest import Grade

from cxxgate.gates import slope
from cxxgate.gates.coverage import coverage, gcovjson
from cxxgate.gates.shared import hunks
from cxxgate.runs.run import RunSpec, _keep

REACHED = {
    ("dedupe/reference", "slope"): "accept",
    ("dedupe/reserve", "slope"): "accept",
    ("dedupe/quadratic", "slope"): "steep",
    ("dedupe/truncate", "slope"): "checksum_mismatch",
    ("dedupe/fixed_table", "slope"): "inconclusive",
    ("dedupe/defines_main", "slope"): "build_fail",
    ("dedupe/reads_sizes", "slope"): "build_fail",
    ("dedupe/spins", "slope"): "hang",
    ("dedupe/client_request", "slope"): "measurement_tamper",
    ("dedupe/on_thread", "slope"): "steep",
    ("dedupe/above_table", "slope"): "steep",
    ("dedupe/preload_switch", "slope"): "measurement_tamper",
    ("dedupe/rewrite_profile", "slope"): "measurement_tamper",
    ("port/reference", "coverage"): "accept",
    ("port/digit_helper", "coverage"): "accept",
    ("port/plus_sign", "coverage"): "zero_hit",
    ("port/untested_inline", "coverage"): "zero_hit",
    ("port/plus_sign_excluded", "coverage"): "exclusion_tamper",
    ("port/unused_template", "coverage"): "no_overlap",
    ("port/off_by_one", "coverage"): "suite_red",
    ("port/comment_only", "coverage"): "not_applicable",
    ("port/table_dispatch", "coverage"): "function_unexecuted",
    ("port/macro_pair", "coverage"): "function_unexecuted",
    ("port/def_suffix", "coverage"): "zero_hit",
    ("port/dotdot_path", "coverage"): "zero_hit",
    ("port/honest_defensive", "coverage"): "branch_untested",
    ("port/plus_sign_one_line", "coverage"): "branch_untested",
    ("port/formfeed_shift", "coverage"): "zero_hit",
    ("port/linesep_shift", "coverage"): "zero_hit",
    ("port/ndebug_block", "coverage"): "zero_hit",
    ("port/optimize_block", "coverage"): "zero_hit",
    ("port/constexpr_wide", "coverage"): "zero_hit",
    ("port/default_arg", "coverage"): "zero_hit",
    ("port/oneline_template", "coverage"): "no_overlap",
    ("port/test_unit_macro", "coverage"): "branch_untested",
    ("port/reword_plus", "coverage"): "branch_untested",
    ("port/honest_reformat", "coverage"): "accept",
    ("port/honest_nodiscard", "coverage"): "not_applicable",
    ("port/honest_guard", "coverage"): "not_applicable",
    ("port/include_skipped", "coverage"): "no_overlap",
}


def _result(grade: Grade, row: str, gate: str) -> dict[str, object]:
    case, patch = row.split("/")
    data: dict[str, object] = json.loads(
        (grade.out / "results" / case / patch / f"{gate}.json").read_text()
    )
    return data


@pytest.mark.parametrize(("row", "gate"), sorted(REACHED))
def test_class_reached(shipped: Grade, row: str, gate: str) -> None:
    assert shipped.gate(row, gate)["class"] == REACHED[row, gate], shipped.gate(row, gate)
    assert not shipped.rows[row]["expect_problems"]


def test_every_class_is_reached() -> None:
    for gate in (slope.GATE, coverage.GATE):
        reached = {k for (_, g), k in REACHED.items() if g == gate.name}
        assert set(gate.severity) <= reached, set(gate.severity) - reached


def _exponents(summary: str) -> tuple[float, float, float]:
    m = re.search(r"exponent ([\d.]+) \(r\^2 ([\d.]+)\), reference ([\d.]+)", summary)
    assert m, summary
    return float(m[1]), float(m[2]), float(m[3])


def _evidence(grade: Grade, row: str, prefix: str) -> str:
    evidence = _result(grade, row, "slope")["evidence"]
    assert isinstance(evidence, list)
    return next(str(e) for e in evidence if str(e).startswith(prefix))


def test_steep_is_decided_on_the_fitted_exponents(shipped: Grade) -> None:
    steep, r2, ref = _exponents(shipped.gate("dedupe/quadratic", "slope")["summary"])
    assert steep > ref + 0.25 and r2 >= 0.98
    assert 1.7 < steep < 2.1 and 0.8 < ref < 1.2
    good, _, ref2 = _exponents(_evidence(shipped, "dedupe/reserve", "exponent"))
    assert ref2 == ref and good <= ref + 0.25
    # The native lanes ran on the accepted patch, timed against the reference's.
    assert "ratio" in _evidence(shipped, "dedupe/reserve", "native (native:")
    assert "exponent excess" in _evidence(shipped, "dedupe/reserve", "native per-element growth")


def test_counts_come_from_one_callgrind_profile_per_size(shipped: Grade) -> None:
    evidence = _result(shipped, "dedupe/quadratic", "slope")["evidence"]
    assert isinstance(evidence, list)
    line = next(e for e in evidence if e.startswith("candidate instructions:"))
    pairs = [p.split(":") for p in line.split(": ", 1)[1].split()]
    sizes = [int(n) for n, _ in pairs]
    assert sizes[:5] == [256, 512, 1024, 2048, 4096] and len(sizes) == 7
    assert 4096 * 1.5 < sizes[5] <= 4096 * 2 < 4096 * 2.5 < sizes[6] <= 4096 * 3
    counts = [int(c) for _, c in pairs]
    assert counts == sorted(counts) and counts[-1] > 100 * counts[0]


def test_truncation_and_cheats_are_named(shipped: Grade) -> None:
    summary = shipped.gate("dedupe/truncate", "slope")["summary"]
    assert "n=2048, 4096" in summary and "3/7 sizes agree" in summary
    assert "defines main" in shipped.gate("dedupe/defines_main", "slope")["summary"]
    assert "slope_sizes" in shipped.gate("dedupe/reads_sizes", "slope")["summary"]
    assert shipped.rows["dedupe/edits_header"]["class"] == "path_violation"


def test_zero_hit_lines_are_findings_by_tree_path(shipped: Grade) -> None:
    findings = _result(shipped, "port/plus_sign", "coverage")["findings"]
    assert isinstance(findings, list)
    assert findings[0] == {
        "rule": "zero_hit",
        "message": "a line the patch added that no test executed",
        "path": "src/port.cpp",
        "line": 8,
        "column": 0,
    }
    # The `if` on line 7 ran, its branch into line 8 never did.
    assert [(f["rule"], f["line"]) for f in findings[1:]] == [("branch_untested", 7)]
    # A header's lines are scored under the header's own path.
    header = _result(shipped, "port/untested_inline", "coverage")["findings"]
    assert isinstance(header, list)
    assert {(f["rule"], f["path"], f["line"]) for f in header} == {
        ("zero_hit", "include/port.hpp", 10),
        ("zero_hit", "include/port.hpp", 11),
        ("function_unexecuted", "include/port.hpp", 10),
    }


def test_tamper_and_not_applicable(shipped: Grade) -> None:
    tamper = _result(shipped, "port/plus_sign_excluded", "coverage")
    assert tamper["status"] == "fail"
    assert "src/port.cpp:8 (LCOV_EXCL_LINE)" in str(tamper["summary"])
    row = shipped.rows["port/comment_only"]
    assert row["verdict"] == "accept"
    assert shipped.gate("port/comment_only", "coverage")["status"] == "not_applicable"
    # The untested branch's row with no marker: zero_hit, not tamper.
    assert shipped.gate("port/plus_sign", "coverage")["class"] == "zero_hit"
    ref = _result(shipped, "port/reference", "coverage")
    assert re.search(r"\d+ executable lines of 1 tree files scored", str(ref["evidence"]))


# ---- pure parts ------------------------------------------------------------------------


def test_fit_recovers_exponents() -> None:
    sizes = [256, 512, 1024, 2048, 4096]
    assert slope.fit(sizes, [3 * n * n for n in sizes]) == pytest.approx((2.0, 1.0))
    lin = slope.fit(sizes, [int(40 * n * math.log2(n)) for n in sizes])
    assert 1.1 < lin[0] < 1.3 and lin[1] > 0.99
    flat = slope.fit(sizes, [700_000 + 300 * n for n in sizes])
    assert flat[1] < 0.98  # a constant plus a line is no power of n


def test_added_lines_by_hunk() -> None:
    old = "a\nb\nc\nd\n"
    new = "a\nB\nc\nd\ne\nf\n"
    assert hunks.hunks_of("x.cpp", old, new) == [[(2, "B")], [(5, "e"), (6, "f")]]
    assert hunks.hunks_of("x.cpp", old, "a\nd\n") == []  # deletions add nothing


def test_cosmetic_changes() -> None:
    base = '#include <x>\nint f(int a) {\n  return a; // why\n}\nconst char* s = "a  b";\n'
    assert hunks.same_tokens(base, base.replace("// why", "/* why not */").replace("  r", "\tr"))
    assert not hunks.same_tokens(base, base.replace("return a;", "return a + 1;"))
    assert not hunks.same_tokens(base, base.replace('"a  b"', '"a b"'))
    assert not hunks.same_tokens(base, base.replace("<x>", "<y>"))


@pytest.mark.parametrize(
    ("line", "tampers"),
    [
        ("  x = 1;  // LCOV_EXCL_LINE", True),
        ("// GCOVR_EXCL_START", True),
        ('#line 1 "elsewhere.cpp"', True),
        ("__attribute__((no_profile_instrument_function)) void f();", True),
        ('#pragma GCC optimize ("no-profile-arcs")', True),
        ('extern "C" void __gcov_reset();', True),
        ("int line = 3;  // the line count", False),
        ("optimizer.run();", False),
    ],
)
def test_tamper_markers(line: str, tampers: bool) -> None:
    assert bool(hunks.TAMPER.search(line)) is tampers


def test_gcov_join_is_by_exact_tree_path() -> None:
    doc = {
        "files": [
            {"file": "/src/project/src/port.cpp", "lines": [{"line_number": 3, "count": 1}]},
            {"file": "/src/project/test/port.cpp", "lines": [{"line_number": 3, "count": 0}]},
            {"file": "/src/build/main.cpp", "lines": [{"line_number": 1, "count": 1}]},
            {"file": "/usr/include/c++/12/bits/x.h", "lines": [{"line_number": 1, "count": 9}]},
        ]
    }
    counts = gcovjson.parse(json.dumps(doc) + "\n" + json.dumps(doc))
    assert counts.lines == {"src/port.cpp": {3: 2}, "test/port.cpp": {3: 0}}
    assert gcovjson.parse("not json").problem


def test_kept_files_are_regular_files_only(tmp_path: Path) -> None:
    work, dest = tmp_path / "work", tmp_path / "kept"
    work.mkdir()
    (work / "cg.out.1").write_text("totals: 5\n")
    (work / "cg.out.2").symlink_to("/etc/passwd")
    os.mkfifo(work / "cg.out.3")
    (work / "other").write_text("x")
    _keep(work, dest, ("cg.out.*",))
    assert sorted(p.name for p in dest.iterdir()) == ["cg.out.1"]


def test_profiler_references_are_code_not_comments(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.cpp").write_text("// measured under valgrind nightly\nint f();\n")
    (tmp_path / "src" / "b.cpp").write_text(
        '#include <valgrind/callgrind.h>\nint g() { asm("rolq $3, %%rdi"); return 0; }\n'
    )
    found = slope.profiler_references(tmp_path, {})["found"]
    assert [(p, n) for p, n, _ in found] == [("src/b.cpp", 1), ("src/b.cpp", 2)]


def test_tool_options_enter_the_run_key() -> None:
    plain = RunSpec(cell_key="c")
    assert RunSpec(cell_key="c", wrapper=("/usr/bin/valgrind",)).key != plain.key
    assert RunSpec(cell_key="c", keep=("*.gcda",)).key != plain.key
