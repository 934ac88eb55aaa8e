"""The one program model (cxxgate/contract/program.py): its case-file shape and errors, stdin from a
file, stdout from the reference's run, units from the tree, and fail_to_pass on a program.

The shipped case `saturating` carries a matrix section with the project's own test (a tree
unit) and a fail-to-pass table program (stdin file, `stdout_of: reference`); its rows come
from the session's one grade of the shipped library.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import SHIPPED, Grade, case_library, run_grade

from cxxgate.contract import program
from cxxgate.graph.library import Library
from cxxgate.intake.tree import Stamp
from cxxgate.library.settings import Settings
from cxxgate.results.result import BASELINE_RED, Check, GateResult
from cxxgate.runs.run import RunResult
from cxxgate.store.layout import Layout
from cxxgate.verdicts.verdict import Reference, reference_problems

TABLE = "      - {units: [probes/add_table.cpp], stdin_file: inputs/add_table.txt, stdout_of: reference, fail_to_pass: true}\n"  # noqa: E501
TREE_TEST = "      - {units: [{tree: tests/test_saturating.cpp}]}\n"


def _errors(tmp_path: Path, old: str, new: str) -> list[str]:
    """Load a copy of `saturating` with one line of its case.yaml replaced."""
    lib = tmp_path / "cases"
    lib.mkdir()
    shutil.copy(SHIPPED / "envelopes.yaml", lib)
    shutil.copytree(SHIPPED / "saturating", lib / "saturating")
    case = lib / "saturating" / "case.yaml"
    text = case.read_text()
    assert old in text
    case.write_text(text.replace(old, new))
    settings = Settings(
        library=lib,
        out=tmp_path / "out",
        envelopes=lib / "envelopes.yaml",
        only=frozenset(),
        batch=None,
        report_only=False,
    )
    loaded = Library(settings)
    assert loaded.cases == {}
    return loaded.errors


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        # Both stdin spellings: the model names the program.
        (
            TABLE,
            TABLE.replace("stdin_file:", 'stdin: "8 1 2\\n", stdin_file:'),
            "gates.matrix.programs[1]: Value error, give 'stdin' (inline) or 'stdin_file'",
        ),
        # A unit that is both, and the old single-unit spelling.
        (
            TREE_TEST,
            TREE_TEST.replace("{tree:", "{oracle: probes/pos_add.cpp, tree:"),
            "gates.matrix.programs[0].units[0]: Value error, give exactly one of 'oracle'",
        ),
        (
            TREE_TEST,
            TREE_TEST.replace("units: [{tree: tests/test_saturating.cpp}]", "unit: probes/x.cpp"),
            "gates.matrix.programs[0].unit: Extra inputs are not permitted",
        ),
        (
            TABLE,
            TABLE.replace("stdout_of: reference", "stdout_of: base"),
            "gates.matrix.programs[1].stdout_of: Input should be 'reference'",
        ),
        # Files: an absent stdin file, a tree unit a patch could rewrite, one not in the tree.
        (
            TABLE,
            TABLE.replace("inputs/add_table.txt", "inputs/absent.txt"),
            "case.yaml: gates.matrix.programs[1].stdin_file: file 'inputs/absent.txt' does not "
            "exist",
        ),
        (
            TREE_TEST,
            TREE_TEST.replace("tests/test_saturating.cpp", "include/saturating.hpp"),
            "case.yaml: gates.matrix.programs[0].units[0].tree: 'include/saturating.hpp' is in "
            "the writable set",
        ),
        (
            TREE_TEST,
            TREE_TEST.replace("tests/test_saturating.cpp", "tests/absent.cpp"),
            "case.yaml: gates.matrix.programs[0].units[0].tree: 'tests/absent.cpp' is not a file "
            "of the base tree",
        ),
        (
            "reference: patches/reference.diff\n",
            "",
            "case.yaml: gates.matrix.programs[1].fail_to_pass: the case has no `reference:` patch",
        ),
    ],
    ids=[
        "stdin-twice",
        "unit-both",
        "old-unit-key",
        "stdout-of-base",
        "absent-stdin-file",
        "writable-tree-unit",
        "absent-tree-unit",
        "fail-to-pass-without-reference",
    ],
)
def test_a_malformed_program_names_the_file_and_the_key(
    tmp_path: Path, old: str, new: str, said: str
) -> None:
    errors = _errors(tmp_path, old, new)
    assert len(errors) == 1
    assert "saturating/case.yaml" in errors[0]
    assert said in errors[0], errors[0]


def test_stdout_of_the_reference_rejects_a_patch_every_probe_passes(shipped: Grade) -> None:
    row = "saturating/narrow_promotion"
    assert shipped.gate(row, "negcomp")["class"] == "accept"
    matrix = shipped.gate(row, "matrix")
    assert matrix["class"] == "run_fail:dbg+rel"
    # The expected bytes are the reference's own run of the same program, shown where the
    # outputs part: the u16 row the promotion bug gets wrong.
    assert "printed line 4: 'u16 60000 + 10000 = 4464" in matrix["summary"]
    assert "the reference's run has 'u16 60000 + 10000 = 65535" in matrix["summary"]
    # A different body that prints the reference's bytes is accepted.
    assert shipped.rows["saturating/good_wrap_check"]["verdict"] == "accept"
    assert shipped.gate("saturating/good_wrap_check", "matrix")["class"] == "accept"


def test_stdin_comes_from_the_file(shipped: Grade) -> None:
    result = GateResult.load(shipped.out / "results/saturating/reference/matrix.json")
    runs = [
        RunResult.load(shipped.out / rel / "result.json")
        for rel in sorted(set(result.evidence))
        if rel.startswith("runs/")
    ]
    table = [r for r in runs if "add_table" in r.label]
    assert {r.label for r in table} == {
        "matrix run probes/add_table.cpp [dbg]",
        "matrix run probes/add_table.cpp [rel]",
    }
    rows = (SHIPPED / "saturating/inputs/add_table.txt").read_text().splitlines()
    for run in table:
        printed = run.stdout.decode().splitlines()
        assert len(printed) == len(rows) == 9
        assert printed[3] == "u16 60000 + 10000 = 65535"


def test_an_in_tree_unit_is_the_tree_file(shipped: Grade) -> None:
    result = GateResult.load(shipped.out / "results/saturating/base/matrix.json")
    checks = {c.name: c for c in result.checks}
    # Pass-to-pass on the base tree: the project's test ran there and passed.
    assert checks["tree/tests/test_saturating.cpp agreement"].ok
    assert not checks["tree/tests/test_saturating.cpp agreement"].fail_to_pass
    layout = Layout(shipped.out)
    cells = [shipped.out / rel for rel in result.evidence if rel.startswith("cells/")]
    # Its program's object compiled the tree's file, through the harness unit that includes it.
    objects = [
        layout.cell(part)
        for cell in cells
        if (cell / "result.json").exists()
        for part in json.loads((cell / "result.json").read_text()).get("parts", [])
    ]
    deps = [
        (cell / "tu0.d").read_text()
        for cell in objects
        if (cell / "main.cpp").exists()
        and (cell / "main.cpp").read_text() == '#include "test_saturating.cpp"\n'
    ]
    assert deps
    assert all("/tests/test_saturating.cpp" in d for d in deps)


def test_a_fail_to_pass_program_fails_on_base_and_passes_on_reference(shipped: Grade) -> None:
    base = GateResult.load(shipped.out / "results/saturating/base/matrix.json")
    group = "gates.matrix.programs[1] (probes/add_table.cpp)"
    f2p = [c for c in base.checks if c.fail_to_pass]
    assert f2p
    assert {c.group for c in f2p} == {group}
    assert all(not c.ok and c.klass == "compile_fail" for c in f2p)
    assert shipped.gate("saturating/reference", "matrix")["class"] == "accept"
    assert shipped.rows["saturating/reference"]["broken"] == {}


def test_a_fail_to_pass_program_green_on_base_breaks_the_case(tmp_path: Path) -> None:
    lib = case_library(tmp_path / "cases", "saturating")
    case = lib / "saturating/case.yaml"
    text = case.read_text()
    text = text.replace(TREE_TEST, TREE_TEST.replace("]}", "], fail_to_pass: true}"))
    text = text[: text.index("patches:\n")]  # the reference and base rows are enough
    case.write_text(text)
    grade = run_grade(tmp_path / "out", "case=saturating", library=lib)
    assert grade.returncode != 0
    broken = grade.rows["saturating/reference"]["broken"]
    assert isinstance(broken, dict)
    assert broken["matrix"]["class"] == BASELINE_RED
    assert broken["matrix"]["why"] == (
        "fail-to-pass check 'gates.matrix.programs[0] (tree/tests/test_saturating.cpp)' "
        "already passes on the base tree, so it cannot see the change"
    )
    assert "negcomp" not in broken


def _reference(base_checks: list[Check]) -> Reference:
    stamp = Stamp("k", "applied", "", ["include/x.hpp"])
    ok = GateResult("g", "pass", "accept", "", [Check("c", True, "accept")])
    base = GateResult.from_checks("g", base_checks, ("run_fail",), [])
    return Reference(stamp, {"g": ok}, stamp, {"g": base})


def test_a_fail_to_pass_group_needs_one_failing_check_on_base() -> None:
    prog = program.Program.model_validate({"units": ["p.cpp"], "fail_to_pass": True})
    # A wrong answer: the stdout check fails, the sanitizer check of the same program passes.
    wrong = program.tagged(
        prog,
        "gates.g.programs[0]",
        [Check("functional", False, "run_fail"), Check("sanitizer", True, "accept")],
    )
    assert reference_problems(["g"], _reference(wrong)) == {}
    green = program.tagged(
        prog,
        "gates.g.programs[0]",
        [Check("functional", True, "accept"), Check("s", True, "accept")],
    )
    why = reference_problems(["g"], _reference(green))["g"]["why"]
    assert why.startswith("fail-to-pass check 'gates.g.programs[0] (p.cpp)' already passes")
    # Unmarked checks are each their own: one red on base breaks the case.
    plain = [Check("functional", False, "run_fail"), Check("sanitizer", True, "accept")]
    assert (
        "pass-to-pass check 'functional' fails"
        in (reference_problems(["g"], _reference([*plain[:1], *wrong]))["g"]["why"])
    )


def test_the_short_unit_form_is_an_oracle_file() -> None:
    prog = program.Program.model_validate(
        {"units": ["probes/a.cpp", {"tree": "tests/t.cpp"}], "stdin_file": "in.txt"}
    )
    assert [u.oracle for u in prog.units] == ["probes/a.cpp", None]
    assert prog.units[1].tree == "tests/t.cpp"
    assert prog.name == "probes/a.cpp"
    assert prog.oracle_files() == ["probes/a.cpp", "in.txt"]
    assert not prog.checks_stdout


def test_a_stdout_difference_is_shown_where_it_starts() -> None:
    want = program.Expected(b"a\nb\nc\n", "golden g.txt")
    assert program.stdout_problem(b"a\nb\nc\n", want) is None
    assert (
        program.stdout_problem(b"a\nB\nc\n", want)
        == "line 2: printed 'B\\nc\\n', golden g.txt has 'b\\nc\\n'"
    )
    assert program.stdout_problem(b"x\n", want) == "printed 'x\\n', golden g.txt has 'a\\nb\\nc\\n'"
    assert program.stdout_problem(b"anything", program.Expected(None, "")) is None
