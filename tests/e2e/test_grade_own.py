"""`doit grade` end to end on libraries of the tests' own (copies of shipped cases, edited):
incrementality, a broken reference, harness faults, clang. None reads the shared grade of
the shipped library, so pytest-xdist runs this file beside it (tests/conftest.py)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import (
    binary_runs,
    compiler_calls,
    keep_patches,
    project_copy,
    run_doit,
    run_grade,
)


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
    keep_patches(project, "token_handle", "good_valid_reset")
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
    keep_patches(project, "saturating", "wraps")
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
    keep_patches(project, "saturating", "wraps")
    ref = project / "cases/saturating/patches/reference.diff"
    ref.write_text("this is not a diff\n")
    grade = run_grade(tmp_path / "out", "case=saturating", project=project)
    assert grade.returncode != 0
    assert "the reference patch is malformed_patch" in grade.output


def test_missing_compiler_is_incomplete_never_green(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    keep_patches(project, "token_handle", "good_valid_reset", "touch_tests")
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


def test_a_harness_fault_is_a_row_not_a_lost_batch_and_is_retried(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    keep_patches(project, "token_handle", "defaulted_move")
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
    keep_patches(project, "saturating", "wraps")
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
