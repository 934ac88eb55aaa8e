"""`doit grade` end to end on the negcomp cases: classes, exit status, incrementality."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import (
    SHIPPED,
    Grade,
    binary_runs,
    compiler_calls,
    exclusive,
    project_copy,
    run_doit,
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


def test_edits_rebuild_only_what_they_touch(tmp_path: Path) -> None:
    project = project_copy(tmp_path, locked=True)
    lockfile = project / "cases/identity.lock"
    out = tmp_path / "out"
    assert run_grade(out, "case=token_handle", project=project).returncode == 0
    base_calls, base_runs = compiler_calls(out), binary_runs(out)
    assert base_runs > 0

    # A prompt edit moves the prompt pin: the grade fails closed before it scores anything.
    prompt = project / "cases/token_handle/prompt.md.j2"
    prompt.write_text(prompt.read_text().replace("Reply with", "Answer with"))
    refused = run_grade(out, "case=token_handle", project=project)
    assert refused.returncode != 0
    assert "token_handle: prompt pin moved: the rendered prompt changed" in refused.output
    # Re-pinning is on purpose: under CI it needs allow_bump=1, and prints the pin diff.
    pinned = lockfile.read_text()
    ci = run_doit(out, "freeze", "case=token_handle", project=project, CI="true")
    assert ci.returncode != 0 and "allow_bump=1" in ci.output
    assert lockfile.read_text() == pinned
    bump = run_doit(out, "freeze", "case=token_handle", "allow_bump=1", project=project, CI="true")
    assert bump.returncode == 0 and "token_handle: prompt pin moved" in bump.output
    # Cells are keyed by content, not by prompt: no compiler and no binary runs again.
    again = run_grade(out, "case=token_handle", project=project)
    assert again.returncode == 0, again.output
    assert (compiler_calls(out), binary_runs(out)) == (base_calls, base_runs)
    identity = again.rows["token_handle/reference"]["identity"]
    assert identity["locked"] is True and identity["prompt"] in lockfile.read_text()

    # Classification code edit: the grader pin moves; once re-pinned, gates re-classify from
    # stored cells and no compiler runs.
    gate = project / "cxxgate/gates/negcomp.py"
    gate.write_text(gate.read_text() + "\n# a comment that changes the gate's code hash\n")
    refused = run_grade(out, "case=token_handle", project=project)
    assert "grader pin moved: cxxgate/gates/negcomp.py (changed)" in refused.output
    assert run_doit(out, "freeze", "allow_bump=1", project=project).returncode == 0
    reclass = run_grade(out, "-v", "2", "case=token_handle", project=project)  # names tasks
    assert reclass.returncode == 0 and compiler_calls(out) == base_calls
    assert ".  negcomp:token_handle/public_ctor" in reclass.output  # executed, not "--"
    lockfile.unlink()  # unpinned from here on

    # One patch edited: only that patch's cells compile (2 must-build exes of 3 TUs -- the
    # unit, the harness entry, the library source -- + objcopy renaming the unit's main +
    # link, 4 must-fail units and their 4 twins: 2*5 + 4 + 4 = 18 invocations at most).
    patch = project / "cases/token_handle/patches/good_valid_reset.diff"
    patch.write_text(patch.read_text().replace("valid()", "is_valid()"))
    edited = run_grade(out, "case=token_handle", project=project)
    assert edited.returncode == 0, edited.output
    assert 0 < compiler_calls(out) - base_calls <= 18


def test_reference_red_marks_the_case_broken(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    yaml = project / "cases/token_handle/case.yaml"
    # A must-fail unit that the base tree itself accepts: moving is allowed.
    yaml.write_text(
        yaml.read_text().replace(
            "    must_fail:\n",
            "    must_fail:\n      - {template: construct_from, "
            'args: {type: TokenHandle, from: "TokenHandle::make(1)"}}\n',
            1,
        )
    )
    grade = run_grade(tmp_path / "out", "case=token_handle", project=project)
    assert grade.returncode != 0
    assert "case token_handle is broken for gate negcomp" in grade.output
    assert grade.rows["token_handle/reference"]["gates"]["negcomp"]["class"] == (
        "surface_regression"
    )
    good = grade.rows["token_handle/good_valid_reset"]
    assert good["gates"]["negcomp"]["class"] == "baseline_red"
    assert good["verdict"] == "incomplete"


def test_fail_to_pass_check_that_passes_on_base_breaks_the_case(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    yaml = project / "cases/saturating/case.yaml"
    text = yaml.read_text().replace(
        "- probes/pos_sub.cpp", "- {unit: probes/pos_sub.cpp, fail_to_pass: true}", 1
    )
    yaml.write_text(text)
    grade = run_grade(tmp_path / "out", "case=saturating", project=project)
    assert grade.returncode != 0
    assert "already passes on the base tree" in grade.output
    assert grade.rows["saturating/wraps"]["gates"]["negcomp"]["class"] == "baseline_red"


def test_reference_patch_that_does_not_apply_breaks_the_case(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    ref = project / "cases/saturating/patches/reference.diff"
    ref.write_text("this is not a diff\n")
    grade = run_grade(tmp_path / "out", "case=saturating", project=project)
    assert grade.returncode != 0
    assert "the reference patch is malformed_patch" in grade.output


def test_missing_compiler_is_incomplete_never_green(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    env = project / "cases/envelopes.yaml"
    env.write_text(env.read_text().replace("command: g++", "command: g++-cxxgate-absent"))
    grade = run_grade(tmp_path / "out", "case=token_handle", project=project)
    assert grade.returncode != 0
    good = grade.rows["token_handle/good_valid_reset"]
    assert good["verdict"] == "incomplete"
    assert good["gates"]["negcomp"]["class"] == "toolchain_missing"  # not the case's fault
    assert "case token_handle could not be graded for gate negcomp" in grade.output
    ref = grade.rows["token_handle/reference"]["gates"]["negcomp"]
    assert ref["status"] == "incomplete" and ref["class"] == "toolchain_missing"
    assert "g++-cxxgate-absent" in ref["summary"]
    # Intake still decides what it can without a compiler.
    assert grade.rows["token_handle/touch_tests"]["class"] == "path_violation"


@pytest.mark.skipif(shutil.which("clang++") is None, reason="clang++ not installed")
def test_clang_envelope_lands_on_the_same_classes(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    yaml = project / "cases/token_handle/case.yaml"
    yaml.write_text(yaml.read_text().replace("std: c++20", "std: c++20\nenvelope: clang", 1))
    grade = run_grade(tmp_path / "out", "case=token_handle", project=project)
    assert grade.returncode == 0, grade.output
    assert (
        "clang"
        in grade.rows["token_handle/reference"]["identity"]["toolchains"]["clang"]["version"]
    )
    assert "gcc@" not in (grade.out / "cells.txt").read_text()

    # Without a pin for the running toolchain a unit is checked by status and line only:
    # the C++03-style private copy is still rejected on the marked line, so it passes.
    text = yaml.read_text()
    yaml.write_text(re.sub(r", clang: (\{[^}]*\}|\"[^\"]*\")", "", text))
    # Into the same build folder: the pins are no compile input, so only classification
    # runs again.
    unpinned = run_grade(tmp_path / "out", "case=token_handle", project=project)
    row = unpinned.rows["token_handle/private_undefined_copy"]
    assert row["gates"]["negcomp"]["class"] == "accept"


def test_verdicts_jsonl_is_valid_json_lines(cold: Grade) -> None:
    for line in (cold.out / "verdicts.jsonl").read_text().splitlines():
        row = json.loads(line)
        assert row["verdict"] in {"accept", "reject", "incomplete"}


def test_a_harness_fault_is_a_row_not_a_lost_batch_and_is_retried(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    gate = project / "cxxgate/gates/negcomp.py"
    healthy = gate.read_text()
    gate.write_text(
        healthy.replace(
            "def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:\n",
            "def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:\n"
            "    if ctx.tree_key != ctx.reference_tree_key:\n"
            "        raise RuntimeError('a bug in the gate')\n",
        )
    )
    out = tmp_path / "out"
    broken = run_grade(out, "case=token_handle", project=project)
    assert broken.returncode != 0
    assert "token_handle/defaulted_move: harness error in ['negcomp']" in broken.output
    row = broken.rows["token_handle/defaulted_move"]
    assert row["verdict"] == "incomplete"
    assert row["gates"]["negcomp"]["class"] == "harness_error"
    assert "a bug in the gate" in row["gates"]["negcomp"]["summary"]
    assert broken.rows["token_handle/reference"]["verdict"] == "accept"  # the rest still ran

    calls = compiler_calls(out)
    gate.write_text(healthy)  # the fix: the failed gate tasks run again, cells stay built
    fixed = run_grade(out, "case=token_handle", project=project)
    assert fixed.returncode == 0, fixed.output
    fixed_row = fixed.rows["token_handle/defaulted_move"]
    assert fixed_row["gates"]["negcomp"]["class"] == "functional_regression"
    assert compiler_calls(out) == calls


def test_a_harness_fault_on_the_base_tree_is_not_a_broken_case(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    gate = project / "cxxgate/gates/negcomp.py"
    gate.write_text(
        gate.read_text().replace(
            "def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:\n",
            "def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:\n"
            "    if ctx.tree_key != ctx.reference_tree_key:\n"
            "        raise RuntimeError('a bug in the gate')\n",
        )
    )
    grade = run_grade(tmp_path / "out", "case=saturating", project=project)
    assert grade.returncode != 0
    assert "case saturating could not be graded for gate negcomp" in grade.output
    assert "is broken" not in grade.output
    assert grade.rows["saturating/wraps"]["gates"]["negcomp"]["class"] == "harness_error"
