"""Reference-first and fail-closed for the runtime lanes, on edited copies of the library.

A matrix cell that cannot be built (missing toolchain) is `incomplete`, never a pass; a
reference that is not quiet in every envelope marks the case broken (`baseline_red`);
leak detection is turned off only with a stated reason.
"""

from __future__ import annotations

from pathlib import Path

from conftest import run_grade

GHOST = """
  ghost:
    toolchain: ghost
    flags: [-O1]
"""


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def test_missing_cell_is_incomplete_and_the_case_broken(library: Path, tmp_path: Path) -> None:
    manifest = library / "envelopes.yaml"
    _edit(
        manifest,
        "toolchains:\n",
        "toolchains:\n  ghost: {command: g++-not-installed-9, family: gcc}\n",
    )
    manifest.write_text(manifest.read_text() + GHOST)
    _edit(
        library / "ring" / "case.yaml",
        "  matrix:\n    programs:",
        "  matrix:\n    envelopes: [dbg, ghost]\n    programs:",
    )
    grade = run_grade(tmp_path / "out", "case=ring", library=library)
    assert grade.returncode != 0
    ref = grade.gate("ring/reference", "matrix")
    assert (ref["status"], ref["class"]) == ("incomplete", "incomplete")
    assert "toolchain_missing" in ref["summary"]
    # The reference could not vouch for the gate, so no candidate can pass it.
    for row in ("ring/good_max_element", "ring/signed_seq"):
        assert grade.gate(row, "matrix")["status"] == "incomplete"
        assert grade.rows[row]["verdict"] == "incomplete"
    assert "case ring" in grade.output and "gate matrix" in grade.output


def test_reference_not_quiet_is_baseline_red(library: Path, tmp_path: Path) -> None:
    # The case's own reference overflows: the matrix blames the case, not the patches.
    header = library / "ring" / "tree" / "include" / "ring.hpp"
    _edit(
        header,
        "return static_cast<std::int32_t>(a - b) > 0;",
        "return static_cast<int>(a) - static_cast<int>(b) > 0;",
    )
    grade = run_grade(tmp_path / "out", "case=ring", library=library)
    assert grade.returncode != 0
    assert grade.gate("ring/reference", "matrix")["status"] == "fail"
    assert grade.gate("ring/good_max_element", "matrix")["class"] == "baseline_red"
    assert "case ring is broken for gate matrix" in grade.output


def test_leak_opt_out_needs_a_reason(library: Path, tmp_path: Path) -> None:
    case = library / "label" / "case.yaml"
    _edit(case, "  sanitizer:\n", "  sanitizer:\n    leaks: {detect: false}\n")
    grade = run_grade(tmp_path / "out", "case=label", library=library)
    assert grade.returncode != 0
    assert "case.yaml" in grade.output and "gates.sanitizer.leaks" in grade.output


def test_leak_opt_out_with_a_reason(library: Path, tmp_path: Path) -> None:
    case = library / "label" / "case.yaml"
    _edit(
        case,
        "  sanitizer:\n",
        "  sanitizer:\n"
        '    leaks: {detect: false, reason: "labels are interned for the process lifetime"}\n',
    )
    _edit(
        case,
        "leaky_label.diff, expect: {verdict: reject, sanitizer: sanitizer_fault,",
        "leaky_label.diff, expect: {verdict: reject, sanitizer: accept,",
    )
    grade = run_grade(tmp_path / "out", "-n", "2", "case=label", library=library)
    assert grade.gate("label/leaky_label", "sanitizer")["class"] == "accept"
    # The opt-out is the sanitizer gate's alone: the matrix's asan cell still reports it.
    assert grade.gate("label/leaky_label", "matrix")["class"] == "run_fail:asan"
    assert grade.gate("label/dangling_view", "sanitizer")["class"] == "sanitizer_fault"
    assert grade.returncode == 0, grade.output[-2000:]


def test_unknown_envelope_names_file_and_key(library: Path, tmp_path: Path) -> None:
    _edit(
        library / "ring" / "case.yaml",
        "  matrix:\n    programs:",
        "  matrix:\n    envelopes: [dbg, rel3]\n    programs:",
    )
    grade = run_grade(tmp_path / "out", "case=ring", library=library)
    assert grade.returncode != 0
    assert "ring/case.yaml: gates.matrix.envelopes[1]: unknown envelope 'rel3'" in grade.output
