"""Gate `consumer`: the shipped normalise case, graded by the real doit."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import Grade, case_library, compiler_calls, in_tree_test_exit, run_grade

CASE = "normalise"
EXPECTED = {
    "reference": "accept",
    "good_more_blanks": "accept",
    "definition_drift": "link_undefined",
    "header_helper": "odr_or_duplicate",
    "private_detail": "header_missing",
    "renamed_api": "consumer_compile_error",
    "keeps_case": "behavior_mismatch",
    "stuck_index": "hang",
}


@pytest.fixture(scope="module")
def graded(shipped: Grade) -> Grade:
    """The shared cold grade of the shipped library (tests/conftest.py)."""
    return shipped


def test_every_shipped_patch_lands_on_its_class(graded: Grade) -> None:
    assert graded.returncode == 0, graded.output
    for patch, klass in EXPECTED.items():
        assert graded.gate(f"{CASE}/{patch}", "consumer")["class"] == klass, patch
    assert set(EXPECTED) == {r.split("/")[1] for r in graded.rows if r.startswith(f"{CASE}/")}


def test_link_undefined_although_the_in_tree_test_passes(graded: Grade, tmp_path: Path) -> None:
    """The in-tree test compiles src/ into its own TU and stays green; a stranger cannot link."""
    tree = graded.tree(f"{CASE}/definition_drift")
    assert in_tree_test_exit(tree, "tests/test_normalise.cpp", tmp_path) == 0

    gate = graded.gate(f"{CASE}/definition_drift", "consumer")
    assert (gate["status"], gate["class"]) == ("fail", "link_undefined")
    # The archive's symbol table (nm) is the tie-breaker: it names what was built instead.
    assert "textkit::normalise" in gate["summary"]
    assert "the archive defines instead" in gate["summary"]


def test_each_phase_is_named_in_the_summary(graded: Grade) -> None:
    def summary(patch: str) -> str:
        return graded.gate(f"{CASE}/{patch}", "consumer")["summary"]

    assert "No such file or directory" in summary("private_detail")
    assert "defined twice: textkit::is_blank(char)" in summary("header_helper")
    assert "killed at the time limit" in summary("stuck_index")


def _one_case_library(tmp_path: Path) -> Path:
    return case_library(tmp_path / "cases", CASE)


@pytest.mark.parametrize(
    "declaration",
    [
        "namespace textkit {\nstd::string normalise(std::string_view);\n}\n",
        "std::string textkit::normalise(std::string_view);\n",
    ],
    ids=["opens_namespace", "qualified_declaration"],
)
def test_consumer_that_declares_the_library_is_a_case_error(
    tmp_path: Path, declaration: str
) -> None:
    library = _one_case_library(tmp_path)
    program = library / CASE / "consumer" / "main.cpp"
    # A declaration in the client would hide a header that lost its declaration.
    program.write_text(program.read_text().replace("int main() {", f"{declaration}\nint main() {{"))
    graded = run_grade(tmp_path / "out", f"case={CASE}", library=library)
    assert graded.returncode != 0
    assert "gates.consumer.program (consumer/main.cpp)" in graded.output
    assert "declares the library's own namespace 'textkit'" in graded.output
    assert compiler_calls(tmp_path / "out") == 0


def test_consumer_that_includes_a_private_file_is_a_case_error(tmp_path: Path) -> None:
    library = _one_case_library(tmp_path)
    program = library / CASE / "consumer" / "main.cpp"
    program.write_text('#include "../src/normalise.cpp"\n' + program.read_text())
    graded = run_grade(tmp_path / "out", f"case={CASE}", library=library)
    assert graded.returncode != 0
    assert "includes '../src/normalise.cpp', which is not a public header" in graded.output


def _real_diff(tree: Path, work: Path, path: str, old: str, new: str) -> str:
    """A patch made the way a model's would be: edit a git checkout, `git diff`."""
    shutil.copytree(tree, work)

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=work,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "base")
    target = work / path
    target.write_text(target.read_text().replace(old, new, 1))
    return git("diff")


def test_library_that_does_not_compile_is_not_blamed_on_the_consumer(tmp_path: Path) -> None:
    library = _one_case_library(tmp_path)
    case = library / CASE
    diff = _real_diff(
        case / "tree", tmp_path / "work", "src/words.cpp", "current += c;", "current += c"
    )
    (case / "patches" / "broken_words.diff").write_text(diff)
    data = yaml.safe_load((case / "case.yaml").read_text())
    data["patches"] = [
        {
            "file": "patches/broken_words.diff",
            "expect": {"verdict": "reject", "consumer": "library_broken"},
        }
    ]
    (case / "case.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    graded = run_grade(tmp_path / "out", f"case={CASE}", library=library)
    assert graded.returncode == 0, graded.output
    summary = graded.gate(f"{CASE}/broken_words", "consumer")["summary"]
    assert "archive: src/words.cpp:" in summary
