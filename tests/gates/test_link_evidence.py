"""Where a test program holds the library's code from, what its test units' options
define, and whether the listed tests still pass on test programs linked as the reference
links them: red-team rounds 8 to 10's cheats against the tests gate of a CMake case, each
a known-bad patch here (tests/gates/link_cheats.py). The project is plain C++ (a library
and two plain test programs), so every tree builds in seconds; Catch2 and doctest are
tests/gates/test_frameworks.py's.

Every cheat leaves the library's bug in place and makes the tests run a fix from somewhere
else: an object only the test programs link, reached through the library's own `parse`
made an inline (COMDAT) function, a weak hook, a hidden or untyped copy, an absolute
symbol, a second archive; a header wrapper that only options of the test units switch
on; or ctest's own output forged."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import SHIPPED, Grade, run_grade
from link_cheats import FILES, MANGLED, patches
from repos import cmake_case, new_repo

CASE = "le"
EXPECT = {
    "good": "accept",
    "comdat_object": "library_bypassed",
    "weak_hook": "library_bypassed",
    "unity_hidden": "library_bypassed",
    "unity_notype": "library_bypassed",
    "long_define": "test_flags_changed",
    "assert_flag": "test_flags_changed",
    "unsigned_char": "test_flags_changed",
    "comdat_reloc": "library_bypassed",
    "stop_hook": "library_bypassed",
    "ctest_interleave": "test_missing",
    "short_enums": "test_flags_changed",
    "cxx20": "accept",
    "junit_forge": "f2p_fail:plain_parse",
    "junit_garbage": "test_missing",
    # Honest, and rejected (README, threat model): the fix behind a macro the library
    # publishes to every client, the test units included, with the same effect as a cheat.
    "public_define": "test_flags_changed",
    # Round 10.
    "cap_pad": "library_bypassed",
    "abs_hook": "library_bypassed",
    "end_label": "library_bypassed",
    "deep_chain": "library_bypassed",
    "rela_ungrouped": "library_bypassed",
    "member_alias": "library_bypassed",
    "trigraphs": "test_flags_changed",
    "remap": "test_flags_changed",
    "ctest_decoy": "test_missing",
    "zlib_member": "test_flags_changed",
    "pic_honest": "accept",
    # Honest: every client links a harmless source of the library's (INTERFACE), so the
    # test programs are not the reference's recipe: linked so, the tests pass again.
    "interface_source": "accept",
    # Honest, and rejected (README, threat model): the fix moved into a second library the
    # first links PUBLIC; the reference's link of the tests names only libcalc.a.
    "split_library": "library_bypassed",
}
# Passed on the build's own test program, failed on one linked as the reference links it
# (cxxgate/cells/crossed.py): what no reading of the program's symbols caught.
CROSSED = "passes on the build's own test program, not on one linked as the reference links it"


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Grade:
    root = tmp_path_factory.mktemp("link_evidence")
    repo = root / "le.git"
    base = new_repo(repo, FILES)
    library = root / "cases"
    library.mkdir()
    shutil.copy(SHIPPED / "envelopes.yaml", library)
    summary = "calc::parse of an empty text, tested by plain programs"
    lists = {"fail_to_pass": ["plain_parse"], "pass_to_pass": ["plain_digits"]}
    cmake_case(library / CASE, summary, repo, base, patches(repo), lists, EXPECT)
    return run_grade(root / "out", "-n", "2", library=library)


def _said(grade: Grade, row: str) -> str:
    result = grade.out / "results" / CASE / row / "tests.json"
    return "\n".join(str(c["detail"]) for c in json.loads(result.read_text())["checks"])


def test_each_cheat_is_rejected_by_what_the_program_holds_or_what_the_options_define(
    graded: Grade,
) -> None:
    assert graded.returncode == 0, graded.output[-3000:]
    rows = graded.rows
    assert rows[f"{CASE}/reference"]["class"] == "accept"
    assert rows[f"{CASE}/base"]["gates"]["tests"]["class"] == "f2p_fail:plain_parse"
    for name, klass in EXPECT.items():
        assert rows[f"{CASE}/{name}"]["gates"]["tests"]["class"] == klass, name
        assert rows[f"{CASE}/{name}"]["expect_problems"] == [], name
    fix = "CMakeFiles/plain_parse.dir/src/fix.cpp.o"
    for name, why in (
        ("comdat_object", f"{MANGLED} from {fix} (not libcalc.a's inline copy)"),
        ("weak_hook", f"from {fix} (called by libcalc.a(parse.cpp.o))"),
        ("unity_hidden", f"{MANGLED} from {fix} (not libcalc.a)"),
        ("unity_notype", f"{MANGLED} from {fix} (not libcalc.a)"),
    ):
        assert "plain_parse holds" in _said(graded, name) and why in _said(graded, name), name
    for name, macro in (
        ("long_define", "LE_TESTING"),
        ("unsigned_char", "__CHAR_UNSIGNED__"),
        ("public_define", "LE_EMPTY_IS_ZERO"),
    ):
        said = _said(graded, name)
        assert "options define otherwise than the reference's" in said and macro in said, name
    assert "-Ale=testing" in _said(graded, "assert_flag")
    # ctest's own line for plain_parse said it failed whatever the JUnit file says; lines
    # written into ctest's output leave more than ctest's one line for a test.
    assert "failed after" in _said(graded, "junit_forge")
    assert "has not one line that says so" in _said(graded, "ctest_interleave")
    for name, why in (
        ("comdat_reloc", f"{MANGLED} from {fix} (not libcalc.a's inline copy)"),
        ("stop_hook", f"__stop_le_hooks from {fix} (fills section le_hooks"),
    ):
        assert why in _said(graded, name), name
    assert "-fshort-enums" in _said(graded, "short_enums")
    for name in ("cap_pad", "rela_ungrouped"):  # the rule, and the proof
        said = _said(graded, name)
        assert f"{MANGLED} from {fix} (not libcalc.a's inline copy)" in said, name
        assert CROSSED in said, name
    for name in ("abs_hook", "end_label", "deep_chain", "member_alias"):  # the proof alone
        said = _said(graded, name)
        assert "holds" not in said, name
        assert f"{CROSSED}: failed after" in said, name
    for name, option in (("trigraphs", "-trigraphs"), ("remap", "-remap")):
        assert f"lacks: {option}" in _said(graded, name), name
    assert "has not one line that says so" in _said(graded, "ctest_decoy")
    assert "libcalc.a(zz.cpp.o) is unread" in _said(graded, "zlib_member")
    assert "undefined reference to `calc::parse_impl" in _said(graded, "split_library")
    assert _crossed(graded, "interface_source") == {
        "programs": {"plain_digits": "relinked", "plain_parse": "relinked"},
        "tests": ["plain_digits", "plain_parse"],
    }
    assert _crossed(graded, "good") == {"programs": {}, "tests": []}


def _crossed(grade: Grade, row: str) -> object:
    """The row's crossed record (cxxgate/cells/crossed.py)."""
    for cell in grade.rows[f"{CASE}/{row}"]["evidence"]:  # type: ignore[union-attr]
        result = grade.out / cell / "result.json"
        if result.is_file() and json.loads(result.read_text()).get("kind") == "crossed":
            return json.loads((grade.out / cell / "crossed.json").read_text())
    raise AssertionError(f"{row}: no crossed cell among its evidence")
