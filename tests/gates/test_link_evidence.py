"""Where a test program holds the library's code from, what its test units' options
define, and whether the listed tests still pass on test programs linked as the reference
links them: red-team cheats against the tests gate of a CMake case, each a known-bad patch
here (tests/gates/link_cheats.py), beside honest patches that look like them. The project
is plain C++ (a library and two plain test programs), so every tree builds in seconds;
Catch2 and doctest, and the rows whose point is theirs, are tests/gates/test_frameworks.py's.

Every cheat leaves the library's bug in place and makes the tests run a fix from somewhere
else: an object only the test programs link, reached through the library's own `parse`
made an inline (COMDAT) function, a weak hook, a hidden or untyped copy, an absolute
symbol, a second archive; a header wrapper that only options of the test units switch
on; or ctest's own output forged (rounds 8 to 10). The earlier rounds' (first graded in
the Catch2 / doctest project, moved here because none needs a framework): a fixed twin
of the library linked instead or first, a program relinked or an archive rewritten after
the link step, test objects swapped, ctest's registration of a failing test changed, and
output shaped like a machine fault."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import SHIPPED, Grade, run_grade
from link_cheats import (
    DATA_FILES,
    FILES,
    MANGLED,
    RUN_FILES,
    SHARED_FILES,
    SUPPORT_FILES,
    TWO_FILES,
    data_patches,
    patches,
    run_patches,
    shared_patches,
    support_patches,
    two_patches,
)
from repos import cmake_case, new_repo

from cxxgate.host import sandbox

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
    # Earlier rounds, first graded in tests/gates/test_frameworks.py.
    "will_fail": "registration_changed",
    "true_command": "registration_changed",
    # Nothing of the project runs inside ctest's run: plain_parse fails as built.
    "second_read": "f2p_fail:plain_parse",
    "relinked": "f2p_fail:plain_parse",
    "twin": "test_flags_changed",
    "twin_first": "test_flags_changed",
    "weak_twin_first": "test_flags_changed",
    "weak_object": "test_flags_changed",
    "lto_twin_first": "test_flags_changed",
    "rewritten": "library_bypassed",
    "inline_copy": "library_bypassed",
    "relinked_after": "library_bypassed",
    "globbed": "library_bypassed",
    # An option word (a file of the build's named -Wl,--wrap=...): linked again without it.
    "wrap_word": "library_bypassed",
    "member_named": "library_bypassed",
    "unity": "library_bypassed",
    "second_compile": "test_flags_changed",
    # The build's own failure, though it prints a driver's infrastructure line.
    "fake_fault": "build_fail",
    "odd_files": "accept",  # honest
    "forged_line": "library_bypassed",
    "unity_split": "library_bypassed",
    "swapped_objects": "test_flags_changed",
    # A build.ninja the build spoilt with a driver's line after the link steps: the
    # project's fault, not the machine's (`ninja -t compdb` quotes the line and reads
    # nothing, so no test unit is found built).
    "quoted_fault": "test_missing",
    "post_build": "accept",  # honest
    "shared_source": "accept",  # honest
    # Round 11, against the crossed proof.
    "stale_seed": "build_fail",
    "hide_in_crossed": "library_bypassed",
    "program_dir": "test_flags_changed",
    # Honest: a new link option of the library's clients (-lm) is the crossed proof's.
    "link_libm": "accept",
}
# The project whose test programs also link an archive of the tests' own.
SUPPORT_CASE = "la"
SUPPORT_EXPECT = {
    "good": "accept",
    "support_fix": "test_flags_changed",  # two definitions of parse: a shadow
    "archive_objcopy": "library_bypassed",
    "calc_post": "library_bypassed",
    # Through files of tests/ the test patch does not touch: built with the reference's.
    "support_abs": "f2p_fail:plain_parse",
    "support_patch": "f2p_fail:plain_parse",
    "beside_header": "f2p_fail:plain_parse",
    "helper_edit": "accept",
    "own_test": "accept",
    "own_test_named": "accept",
    # Through a helper of a sibling folder only test programs are built from.
    "sibling_patch": "f2p_fail:plain_parse",
    "sibling_edit": "accept",
    # Round 17: the helper's compile is compared with the reference's as a test unit's.
    "helper_forced_include": "test_flags_changed",
    "helper_moved_source": "test_missing",
}
# The project whose tests link a shared library of the tests' own (red-team round 15).
SHARED_CASE = "ls"
SHARED_EXPECT = {
    "good": "accept",
    "glob_unit": "library_bypassed",
    "root_unit": "library_bypassed",
    "hwcaps": "library_bypassed",
    "platform": "library_bypassed",
}
# The shared-helper project with the library shared too (round 17).
TWO_CASE = "l2"
TWO_EXPECT = {
    "good": "accept", "runpath_twin": "library_bypassed", "linked_hwcaps": "library_bypassed"
}  # fmt: skip
# The project whose fail-to-pass test reads a data file at the tree's top (round 14).
# The project whose library's code is in a second shared library, the tests run in
# <build>/tests, plain_parse with its own LD_LIBRARY_PATH (round 19).
RUN_CASE = "lr"
RUN_EXPECT = {
    "good": "accept", "lib_dir": "accept", "cwd_twin": "library_bypassed",
    "env_twin": "library_bypassed", "aux_filter": "library_bypassed",
    "macro_twin": "library_bypassed", "objs_twin": "library_bypassed",
    "soname_twin": "library_bypassed", "lib_dir_source": "accept",
}  # fmt: skip
DATA_CASE = "ld"
DATA_EXPECT = {"good": "accept", "data_edit": "f2p_fail:plain_parse"}
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
    repo = root / "la.git"
    base = new_repo(repo, SUPPORT_FILES)
    summary += ", each linking an archive of the tests' own"
    case = library / SUPPORT_CASE
    rows = support_patches(repo)
    cmake_case(case, summary, repo, base, rows, lists, SUPPORT_EXPECT)
    repo = root / "ls.git"
    base = new_repo(repo, SHARED_FILES)
    summary = summary.replace("an archive", "a shared library")
    rows = shared_patches(repo)
    cmake_case(library / SHARED_CASE, summary, repo, base, rows, lists, SHARED_EXPECT)
    repo = root / "l2.git"
    base = new_repo(repo, TWO_FILES)
    summary = "calc::parse of an empty text, the library and the tests' helper shared"
    cmake_case(library / TWO_CASE, summary, repo, base, two_patches(repo), lists, TWO_EXPECT)
    repo = root / "lr.git"
    base = new_repo(repo, RUN_FILES)
    summary = "calc::parse of an empty text, its code in a second shared library"
    cmake_case(library / RUN_CASE, summary, repo, base, run_patches(repo), lists, RUN_EXPECT)
    repo = root / "ld.git"
    base = new_repo(repo, DATA_FILES)
    summary = "calc::parse of an empty text, the test's input a data file at the top"
    cmake_case(library / DATA_CASE, summary, repo, base, data_patches(repo), lists, DATA_EXPECT)
    return run_grade(root / "out", "-n", "2", library=library)


def _said(grade: Grade, row: str, check: str = "", case: str = CASE) -> str:
    """The details of the row's tests-gate checks (of those named `check`), one per line."""
    result = grade.out / "results" / case / row / "tests.json"
    checks = json.loads(result.read_text())["checks"]
    return "\n".join(str(c["detail"]) for c in checks if check in ("", c["name"]))


def _checks(grade: Grade, row: str) -> dict[str, dict[str, object]]:
    result = grade.out / "results" / CASE / row / "tests.json"
    return {str(c["name"]): c for c in json.loads(result.read_text())["checks"]}


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
        "archives": {},
        "programs": {"plain_digits": "relinked", "plain_parse": "relinked"},
        "tests": ["plain_digits", "plain_parse"],
    }
    assert _crossed(graded, "good") == {"archives": {}, "programs": {}, "tests": []}


def test_earlier_cheats_are_rejected_by_registration_link_and_build_evidence(
    graded: Grade,
) -> None:
    """The rows first graded in the Catch2 / doctest project (tests/gates/test_frameworks.py):
    what registers or runs the tests otherwise, a fixed twin or copy linked into the test
    programs or swapped in after their link, and faults the build itself prints."""
    assert graded.returncode == 0, graded.output[-3000:]
    # ctest's pass of a test registered otherwise than the reference registers it: a
    # wrong fix under WILL_FAIL, a command made `true`.
    will_fail = _said(graded, "will_fail", "plain_parse")
    assert 'its WILL_FAIL is true, on the reference "(none)"' in will_fail, will_fail
    true_command = _checks(graded, "true_command")["plain_parse"]
    assert true_command["class"] == "registration_changed", true_command
    assert "its command is" in str(true_command["detail"]), true_command
    # Nothing of the project runs inside ctest's run: the script's second read never
    # comes, and the listing's relinking cannot replace the build's programs.
    for name in ("second_read", "relinked"):
        assert not _checks(graded, name)["plain_parse"]["ok"], name
    # The relinked program was made, and refused in place of the build's (sticky folder).
    listing = [
        step["output"]
        for cell in graded.rows[f"{CASE}/relinked"]["evidence"]
        if (graded.out / cell / "result.json").is_file()
        for step in json.loads((graded.out / cell / "result.json").read_text()).get("steps", [])
        if step["source"] == "ctest-list"
    ]
    if sandbox.drop_uid():
        assert "relink plain_parse: linked 0, moved 1" in "".join(listing), listing
    said = _said(graded, "twin", "test_links")
    assert "plain_parse no longer links libcalc.a" in said, said
    for name in ("twin_first", "weak_twin_first", "weak_object"):
        said = _said(graded, name, "test_shadows")
        assert "plain_parse links two definitions of _ZN4calc5parse" in said, (name, said)
    said = _said(graded, "lto_twin_first", "test_shadows")
    assert "libcalc_t.a(parse_t.cpp.o) is unread: slim LTO" in said, said
    # The linker's map (a harness re-link): the project's member is not in the program,
    # whatever the twin calls itself; a program changed after its link is not what its
    # link command makes.
    for name in ("inline_copy", "twin_first"):
        said = _said(graded, name, "test_sources")
        assert "plain_parse no longer takes libcalc.a(parse.cpp.o) from the build" in said, said
    # Where the program holds what libcalc.a defines from, whatever the map's lines say
    # (a forged one) and however the archive's members are named (a unity build).
    for name in ("inline_copy", "forged_line", "unity_split"):
        said = _said(graded, name, "test_sources")
        want = f"plain_parse holds {MANGLED} from CMakeFiles/plain_parse.dir/src/fix.cpp.o"
        assert want in said, (name, said)
    for name in ("rewritten", "relinked_after", "globbed"):
        said = _said(graded, name, "test_sources")
        want = "plain_parse is not what the build links: it is not what its link command makes"
        assert want in said, (name, said)
    swapped = _said(graded, "swapped_objects", "object:tests/plain_parse.cpp")
    assert "its object is not what its compile command makes" in swapped, swapped


def _crossed(grade: Grade, row: str, case: str = CASE) -> dict[str, object]:
    """The row's crossed record (cxxgate/cells/crossed.py)."""
    for cell in grade.rows[f"{case}/{row}"]["evidence"]:  # type: ignore[union-attr]
        result = grade.out / cell / "result.json"
        if result.is_file() and json.loads(result.read_text()).get("kind") == "crossed":
            return json.loads((grade.out / cell / "crossed.json").read_text())
    raise AssertionError(f"{row}: no crossed cell among its evidence")


def test_round_11_against_the_crossed_proof(graded: Grade) -> None:
    """A build seeded from the reference's no longer lends it the reference's products; the
    crossed run lists nothing of the project's; a folder at the program's path is a failed
    cross; a fix compiled into the tests' own archive (which the reference's link names
    by path) is seen by what that archive holds."""
    assert graded.returncode == 0, graded.output[-3000:]
    said = _said(graded, "stale_seed", "build")
    assert "'libcalc.a', needed by 'plain_parse', missing and no known rule" in said, said
    assert f"{CROSSED}: failed after" in _said(graded, "hide_in_crossed", "plain_parse")
    said = _said(graded, "program_dir", "crossed:plain_parse")
    assert "the build made a folder where the reference's link makes the program" in said
    rows = graded.rows
    assert rows[f"{SUPPORT_CASE}/reference"]["class"] == "accept"
    assert rows[f"{SUPPORT_CASE}/base"]["gates"]["tests"]["class"] == "f2p_fail:plain_parse"
    for name, klass in SUPPORT_EXPECT.items():
        assert rows[f"{SUPPORT_CASE}/{name}"]["gates"]["tests"]["class"] == klass, name
    said = _said(graded, "support_fix", "test_archives", SUPPORT_CASE)
    assert "lible_support.a holds members the reference's does not: <tree>/src/fix.cpp" in said


def test_round_12_the_tests_own_archive_is_made_again(graded: Grade) -> None:
    """An archive of the tests' own is made again by the reference's archive command from
    its objects: rewritten after its own command by another step (objcopy adding abs_hook's
    symbol), the remade one stands in its place and the tests fail on it; an honest
    build's is the same bytes, and nothing is linked or run again."""
    for name in ("archive_objcopy", "calc_post"):
        assert f"{CROSSED}: failed after" in _said(graded, name, "plain_parse", SUPPORT_CASE)
        record = _crossed(graded, name, SUPPORT_CASE)
        assert record["archives"] == {"lible_support.a": "remade"}, record  # type: ignore[index]
    assert _crossed(graded, "good", SUPPORT_CASE) == {
        "archives": {"lible_support.a": "same"}, "programs": {}, "tests": []
    }


def test_round_13_the_tests_own_folders_and_helpers_are_the_reference_s(graded: Grade) -> None:
    """A candidate's changes to files of the test folders the test patch does not touch (a
    helper every test program links, a header beside the tests) are set aside: the build
    takes those folders from the reference tree, the check says which files, and the
    library's own bug is what the listed tests meet; also where the reference patch
    updates data there. An honest edit there costs nothing, and a test the patch adds
    stays (registered outside tests/, red-team round 14)."""
    for name, files in (
        ("support_abs", "tests/support.cpp"),
        ("support_patch", "tests/support.cpp"),
        ("beside_header", "tests/calc/calc.hpp"),
        ("helper_edit", "tests/support.cpp"),
    ):
        said = _said(graded, name, "test_folders", SUPPORT_CASE)
        assert said == f"built with the reference's tests, setting aside the patch's {files}", name
    # The reference patch updates tests/baselines/parse.txt, data: tests/ is still the
    # tests' own (round 14), with the reference's data; a test the patch adds under a new
    # name stays the patch's (round 15), and a baseline updated as the reference updates
    # it is not set aside: its bytes are the reference's.
    # An own test named like a library source that no test includes stays (round 16).
    for name in ("good", "own_test", "own_test_named"):
        assert _said(graded, name, "test_folders", SUPPORT_CASE) == "", name
    # A helper in a sibling folder only the test programs are built from (round 14): the
    # reference's too, found in the reference's build graph.
    for name in ("sibling_patch", "sibling_edit"):
        said = _said(graded, name, "test_helpers", SUPPORT_CASE)
        assert said == (
            "built with the reference's test helpers (files only its test programs are built "
            "from), setting aside the patch's testutil/util.cpp"
        ), (name, said)
    assert _said(graded, "good", "test_helpers", SUPPORT_CASE) == ""


def test_round_14_data_a_test_reads_is_the_reference_s(graded: Grade) -> None:
    """Data outside the tests' folders that no compile of the library reads (a listed
    test's input, named on its command line) is the reference's in a candidate's build:
    the edited input is set aside and the test meets the library's bug. An honest fix
    that adds documentation costs nothing."""
    assert graded.rows[f"{DATA_CASE}/reference"]["class"] == "accept"
    for name, klass in DATA_EXPECT.items():
        assert graded.rows[f"{DATA_CASE}/{name}"]["gates"]["tests"]["class"] == klass, name
    said = _said(graded, "data_edit", "test_data", DATA_CASE)
    assert said == (
        "built with the reference's data files (read by no compile of the library), setting "
        "aside the patch's data/empty.txt"
    ), said
    assert _said(graded, "good", "test_data", DATA_CASE) == ""


def test_round_15_a_relinked_shared_library_runs_every_listed_test_again(graded: Grade) -> None:
    """A shared library of the tests' own that the reference's command links to other
    bytes (a hot patch added by the project's own glob, or by the top CMakeLists.txt)
    stands in the suite's copy, and every listed test runs again on it: the programs'
    link commands are the reference's, and what they load is not in their commands."""
    rows = graded.rows
    assert rows[f"{SHARED_CASE}/reference"]["class"] == "accept"
    for name, klass in SHARED_EXPECT.items():
        assert rows[f"{SHARED_CASE}/{name}"]["gates"]["tests"]["class"] == klass, name
    for name in ("glob_unit", "root_unit"):
        record = _crossed(graded, name, SHARED_CASE)
        assert record["programs"]["tests/lible_support.so"] == "relinked", record  # type: ignore[index]
        assert record["tests"] == ["plain_digits", "plain_parse"], record  # type: ignore[index]
        said = _said(graded, name, "plain_parse", SHARED_CASE)
        assert f"{CROSSED}: failed after" in said, said
    # Round 16: every link is the reference's, and the tests load a second helper library.
    for name, folder in (("hwcaps", "glibc-hwcaps/x86-64-v2"), ("platform", "x86_64")):
        said = _said(graded, name, "test_loader", SHARED_CASE).splitlines()
        line = (
            "plain_parse loads lible_support.so from "
            f"<build>/tests/{folder}/lible_support.so, its links name "
            "<build>/tests/lible_support.so; the reference's from <build>/tests/lible_support.so"
        )
        assert line in said, said


def test_round_17_the_loader_finds_the_reference_s_libraries(graded: Grade) -> None:
    """Where each test program's shared libraries come from, as the system's loader
    resolves them over the build, is where the reference's come from: a fixed copy of the
    library earlier on the programs' RUNPATH, or behind a linked folder where the loader
    looks first, is found by its path though no link command changed."""
    assert graded.rows[f"{TWO_CASE}/reference"]["class"] == "accept"
    for name, klass in TWO_EXPECT.items():
        assert graded.rows[f"{TWO_CASE}/{name}"]["gates"]["tests"]["class"] == klass, name
    for name, at in (
        ("runpath_twin", "<build>/tests/libcalc.so"),
        # The linked folder's file as the file it is (cxxgate/cells/loads.py).
        ("linked_hwcaps", "<build>/twin/libcalc.so"),
    ):
        said = _said(graded, name, "test_loader", TWO_CASE).splitlines()
        line = (f"plain_parse loads libcalc.so from {at}, its links name <build>/libcalc.so; "
                "the reference's from <build>/libcalc.so")
        assert line in said, said


def test_round_19_the_loader_is_asked_as_each_test_runs(graded: Grade) -> None:
    """Each test's libraries are resolved in its own working folder and with its own
    LD_LIBRARY_PATH (cxxgate/cells/loads.py), and a filter a loaded library names is
    compared too. A library is the file the links the test is made of name for it
    (round 20): built elsewhere, of another source too, it is moved, not bypassed; a
    second target built from its source or objects, or a soname changed to a twin's, is
    not the same library."""
    assert graded.rows[f"{RUN_CASE}/reference"]["class"] == "accept"
    for name, klass in RUN_EXPECT.items():
        assert graded.rows[f"{RUN_CASE}/{name}"]["gates"]["tests"]["class"] == klass, name
    impl = "libcalc_impl.so from <build>/{}, its links name <build>/libcalc_impl.so; " + (
        "the reference's from <build>/libcalc_impl.so"
    )
    for name, line in (
        ("cwd_twin", "plain_parse loads " + impl.format("tests/twin/libcalc_impl.so")),
        ("env_twin", "plain_parse loads " + impl.format("plugins/libcalc_impl.so")),
        ("env_twin", "plain_digits loads " + impl.format("plugins/libcalc_impl.so")),
        ("macro_twin", "plain_parse loads " + impl.format("tests/twin/libcalc_impl.so")),
        ("objs_twin", "plain_parse loads libcalc.so from <build>/plugins/libcalc.so, its links "
         "name <build>/libcalc.so; the reference's from <build>/libcalc.so"),
        ("soname_twin", "plain_digits loads libcalc_fix.so from <build>/libcalc_fix.so, its "
         "links name <build>/libcalc_impl.so; the reference's loads no libcalc_fix.so"),
        ("aux_filter", "plain_parse loads libcalc.so: DT_AUXILIARY libcalc_fix.so, "
         "which the reference's do not name"),
    ):
        said = _said(graded, name, "test_loader", RUN_CASE).splitlines()
        assert line in said, said
