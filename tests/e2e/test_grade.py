"""`doit grade` end to end on the negcomp cases: classes, exit status, incrementality."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from conftest import (
    SHIPPED,
    Grade,
    binary_runs,
    compiler_calls,
    exclusive,
    run_grade,
)

# Three negcomp cases, 16 rows: enough for the serial and the `-n 2` grade to be compared.
NEGCOMP_CASES = "case=bounded_index,saturating,discarded"


@pytest.fixture(scope="module")
def cold(shipped: Grade) -> Grade:
    """The shared cold grade of the shipped library (tests/conftest.py)."""
    return shipped


def test_every_shipped_patch_lands_on_its_expected_class(cold: Grade) -> None:
    assert cold.returncode == 0, cold.output
    assert "grade ok" in cold.output
    known = [r for r in cold.rows.values() if r["role"] == "known"]
    assert len(known) >= 20
    assert all(r["expect_problems"] == [] for r in known)


def test_every_negcomp_class_and_intake_class_is_reached(cold: Grade) -> None:
    negcomp = [r["gates"]["negcomp"] for r in cold.rows.values() if "negcomp" in r["gates"]]
    gate_classes = {g["class"] for g in negcomp}
    assert {
        "accept",
        "surface_regression",
        "build_broken",
        "functional_regression",
        "fails_for_wrong_reason",
        "toolchain_mismatch",
    } <= gate_classes
    row_classes = {r["class"] for r in cold.rows.values()}
    assert {"malformed_patch", "path_violation", "patch_does_not_apply"} <= row_classes


def test_rows_carry_sha_identity_and_evidence(cold: Grade) -> None:
    row = cold.rows["token_handle/public_ctor"]
    sha = hashlib.sha256((SHIPPED / "token_handle/patches/public_ctor.diff").read_bytes())
    assert row["sha"] == sha.hexdigest()
    assert "g++" in row["identity"]["toolchains"]["gcc"]["version"]
    assert any(e.startswith("cells/") for e in row["evidence"])
    assert any(e.startswith("runs/") for e in row["evidence"])
    assert "results/token_handle/public_ctor/negcomp.json" in row["evidence"]
    for path in row["evidence"]:
        assert (cold.out / path).exists(), path
    assert "now compiles" in row["gates"]["negcomp"]["summary"]


def test_wrong_reason_names_the_line_that_failed(cold: Grade) -> None:
    summary = cold.gate("token_handle/drop_utility_widen_assign", "negcomp")["summary"]
    assert "marked line" in summary or "without line" in summary


def test_probes_cannot_tell_they_are_probes(cold: Grade) -> None:
    # file_sniff.diff deletes copying only when __FILE__ names the grader's folders.
    assert cold.gate("token_handle/file_sniff", "negcomp")["class"] == "surface_regression"
    for result in (cold.out / "cells").glob("*/*/result.json"):
        for step in json.loads(result.read_text())["steps"]:
            if step["phase"] == "compile" and step["argv"][-1] == "main.cpp":
                assert any(a.startswith("-ffile-prefix-map=") for a in step["argv"])


def test_a_program_must_return_from_its_own_main(cold: Grade) -> None:
    # A static initialiser calls _exit(0): exit 0, but the entry never saw main return.
    gate = cold.gate("token_handle/exit_before_main", "negcomp")
    assert gate["class"] == "functional_regression"
    assert "exited before main returned (exit 0)" in gate["summary"]
    # `#define main` in the header and a main in src/: it collides with the harness entry.
    gate = cold.gate("token_handle/main_macro", "negcomp")
    assert gate["class"] == "build_broken"
    assert "multiple definition of `main'" in gate["summary"]
    # Only yes/no is stored: the nonce itself is per execution and never recorded.
    runs = [json.loads(p.read_text()) for p in (cold.out / "runs").glob("*/*/result.json")]
    # (consumer runs link no entry: None)
    assert {True, False} <= {r["returned"] for r in runs if r["status"] == "exited"}
    assert {r["returned"] for r in runs if r["status"] == "not_built"} == {None}


def test_a_promoted_warning_is_not_a_rejection(cold: Grade) -> None:
    # The forbidden call compiles; only its discarded [[nodiscard]] result warns, and the
    # envelope's -Werror made that an "error" on the marked line.
    gate = cold.gate("discarded/accepts_double", "negcomp")
    assert gate["class"] == "surface_regression"
    assert "[-Werror=unused-result]" in gate["summary"]
    assert cold.gate("discarded/good_to_chars", "negcomp")["class"] == "accept"
    # The same in a header: only -Wsign-compare stands between in_bounds(-1, ...) and a build.
    naive = cold.gate("bounded_index/naive_relax", "negcomp")
    assert naive["class"] == "surface_regression"
    assert "[-Werror=sign-compare]" in naive["summary"]


def test_a_drifted_pin_where_the_reference_failed_is_a_toolchain_mismatch(cold: Grade) -> None:
    # Header-only contract: the reference's first error is inside <vector>'s machinery.
    gate = cold.gate("bounded_index/delete_default", "negcomp")
    assert gate["class"] == "toolchain_mismatch"
    assert "at the reference's first error" in gate["summary"]
    # The error really moved (into a static_assert of the case's header): wrong reason.
    moved = cold.gate("bounded_index/friendly_default", "negcomp")
    assert moved["class"] == "fails_for_wrong_reason"
    assert "moved to include/bounded_index.hpp" in moved["summary"]


def test_a_failure_reported_on_stdout_is_quoted(cold: Grade) -> None:
    summary = cold.gate("discarded/unsigned_only", "negcomp")["summary"]
    assert '[  FAILED  ] to_text(-7L) gave "18446744073709551609"' in summary
    assert "(stdout)" in summary and "no stderr" not in summary


def test_feature_case_checks_fail_on_base_and_pass_on_reference(cold: Grade) -> None:
    base = cold.rows["saturating/base"]
    assert base["verdict"] == "reject" and base["broken"] == {}
    assert cold.rows["saturating/reference"]["verdict"] == "accept"


def test_cell_record_is_one_stable_line_per_cell(cold: Grade) -> None:
    lines = (cold.out / "cells.txt").read_text().splitlines()
    assert any(
        ln.startswith("token_handle/public_ctor negcomp fail1 syntax gcc@c++20 ok") for ln in lines
    )
    assert not any("/tmp/" in ln or str(cold.out) in ln for ln in lines)


def test_warm_rerun_compiles_nothing_and_gives_the_same_verdicts(cold: Grade) -> None:
    """For every gate of the library at once: a warm re-run compiles, runs and parses
    nothing (no cell, exec or scan task executes) and writes the same verdicts."""
    before = compiler_calls(cold.out), binary_runs(cold.out)
    first = (cold.out / "verdicts.jsonl").read_text()
    results = sorted((cold.out).glob("*/*/*/result.json"))
    stamps = [p.stat().st_mtime_ns for p in results]
    with exclusive(cold):
        warm = run_grade(cold.out, "-n", "2")
    assert warm.returncode == 0, warm.output
    assert (compiler_calls(cold.out), binary_runs(cold.out)) == before
    assert (cold.out / "verdicts.jsonl").read_text() == first
    assert [p.stat().st_mtime_ns for p in results] == stamps


def test_parallel_grade_gives_identical_verdicts(cold: Grade, tmp_path: Path) -> None:
    # The shared grade ran with -n 2; this one is serial, on the negcomp cases.
    serial = run_grade(tmp_path / "serial", NEGCOMP_CASES)
    assert serial.returncode == 0, serial.output
    assert "grade ok" in serial.output
    cases = tuple(f"{c}/" for c in NEGCOMP_CASES.removeprefix("case=").split(","))

    def ours(path: Path) -> list[str]:
        # Without the ccache column: which of two cells compiling the same unit at once
        # gets the hit is a matter of timing.
        lines = path.read_text().splitlines()
        return [re.sub(r" ccache=\S+", "", ln) for ln in lines if ln.startswith(cases)]

    def rows(grade: Grade) -> dict[str, object]:
        return {k: v for k, v in grade.rows.items() if k.startswith(cases)}

    assert rows(serial) == rows(cold)
    assert ours(serial.out / "cells.txt") == ours(cold.out / "cells.txt")


def test_verdicts_jsonl_is_valid_json_lines(cold: Grade) -> None:
    for line in (cold.out / "verdicts.jsonl").read_text().splitlines():
        row = json.loads(line)
        assert row["verdict"] in {"accept", "reject", "incomplete"}
