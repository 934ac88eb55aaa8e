"""Imported instances grade out of the box: a case library made by `doit import` alone (no
envelopes.yaml), a project built with its own flags (a warning its test patch carries is
no error), builds and test runs under limits of their own (a build longer than
compile_seconds is fine; one past build_seconds is a timeout, said so), project compiles
through ccache, and the per-instance report in Multi-SWE-bench's shape. The project is
a small CMake + GoogleTest repository made here (tests/e2e/test_repo_cases.py's)."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
from conftest import Grade, run_doit
from repos import FILES, PARSE_BODY, diff, git, new_repo

from cxxgate.host import sandbox

INSTANCE = "calc__calc-7"
CASE = INSTANCE
# A test the project's own flags accept and -Wall -Wextra -Werror refused: `seen` is set,
# never read (-Wunused-but-set-variable).
WARNED_TEST = """\
TEST(Parse, Empty) {
    int seen = 0;
    seen = 1;
    EXPECT_EQ(calc::parse(""), 0);
}
TEST(Parse, Digits) { EXPECT_EQ(calc::parse("42"), 42); }
"""
# A later commit whose build runs a slow step: more than compile_seconds, less than the
# default build_seconds.
SLOW = "add_custom_target(slow ALL COMMAND sleep 3)\n"


class World:
    def __init__(self, root: Path, repo: Path, slow: str, test_patch: str) -> None:
        self.root, self.repo, self.slow, self.test_patch = root, repo, slow, test_patch
        self.library = root / "cases"
        self.out = root / "out"
        self.grade: Grade | None = None


def _record(base: str, gold: str, test_patch: str) -> dict[str, object]:
    status = {"run": "NONE", "test": "FAIL", "fix": "PASS"}
    return {
        "org": "calc",
        "repo": "calc",
        "number": 7,
        "base": {"label": "calc:main", "ref": "main", "sha": base},
        "resolved_issues": [{"number": 6, "title": "empty text", "body": "parse('') throws"}],
        "fix_patch": gold,
        "test_patch": test_patch,
        "f2p_tests": {"Parse.Empty": status},
        "p2p_tests": {t: {"run": "PASS", "test": "PASS", "fix": "PASS"} for t in ("Add.Small",)},
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("swe_grade")
    repo = root / "calc.git"
    base = new_repo(repo, FILES)
    source = (repo / "src/parse.cpp").read_text()
    gold = diff(
        repo,
        "src/parse.cpp",
        source.replace(PARSE_BODY, "    if (text.empty()) return 0;\n" + PARSE_BODY),
    )
    tests = (repo / "tests/test_calc.cpp").read_text()
    test_patch = diff(repo, "tests/test_calc.cpp", tests + WARNED_TEST)
    (repo / "CMakeLists.txt").write_text((repo / "CMakeLists.txt").read_text() + SLOW)
    git(repo, "commit", "-q", "-am", "slow")
    world = World(root, repo, git(repo, "rev-parse", "HEAD"), test_patch)
    records = root / "instances.jsonl"
    records.write_text(json.dumps(_record(base, gold, test_patch)) + "\n")
    # Multi-SWE-bench's patch file ({org, repo, number, fix_patch}), and its dataset record
    # (an instance_id too) read as a prediction of its gold patch.
    preds = root / "preds.jsonl"
    pred = {"org": "calc", "repo": "calc", "number": 7, "fix_patch": gold}
    preds.write_text(json.dumps(pred) + "\n" + json.dumps({**pred, "instance_id": INSTANCE}) + "\n")
    world.library.mkdir()
    done = run_doit(
        world.out, "import", f"instances={records}", f"repo={repo}", library=world.library
    )
    assert done.returncode == 0, done.output
    assert not (world.library / "envelopes.yaml").exists()
    world.grade = run_doit(world.out, "grade", f"patches={preds}", library=world.library)
    return world


def _slow_case(world: World, name: str, limits: str) -> None:
    folder = world.library / name
    folder.mkdir()
    (folder / "test.diff").write_text(world.test_patch)
    (folder / "case.yaml").write_text(
        f"summary: a project whose build runs a slow step\n"
        f"repo: {{path: {world.repo}, commit: {world.slow}}}\n"
        "build: cmake\n"
        'writable: ["src/**"]\n'
        f"limits: {limits}\n"
        "gates:\n"
        "  tests: {test_patch: test.diff, pass_to_pass: [Add.Small, Parse.Digits]}\n"
    )


def test_imported_library_grades_without_envelopes_yaml(world: World) -> None:
    """The README's two commands, nothing else: import, then grade the predictions."""
    grade = world.grade
    assert grade is not None
    assert "cannot read" not in grade.output
    assert grade.returncode == 0, grade.output[-3000:]
    assert grade.rows[f"{CASE}/reference"]["class"] == "accept"
    assert grade.gate(f"{CASE}/base", "tests")["class"] == "f2p_fail:Parse.Empty"
    candidates = [r for r in grade.rows.values() if r["role"] == "candidate"]
    assert [r["verdict"] for r in candidates] == ["accept", "accept"]


def test_project_builds_with_its_own_flags(world: World) -> None:
    """The test patch sets a variable it never reads: a warning, an error under the
    envelope's -Wall -Wextra -Werror, nothing under the project's own flags."""
    out = world.out
    dbs = list((out / "cells").glob("*/*/compile_commands.json"))
    assert dbs
    for db in dbs:
        text = db.read_text()
        assert "-Werror" not in text and "-std=c++20" not in text and "-O0" not in text, db


def test_per_instance_report_and_resolved_rate(world: World) -> None:
    grade = world.grade
    assert grade is not None
    report = json.loads((world.out / "swe_report.json").read_text())
    assert len(report["resolved_ids"]) == 2 and report["unresolved_ids"] == []
    one = report["instances"][report["resolved_ids"][0]]
    assert one["resolved"] is True
    assert one["f2p_tests"] == {"Parse.Empty": {"run": "NONE", "test": "FAIL", "fix": "PASS"}}
    assert one["fixed_tests"] == one["f2p_tests"]
    assert one["p2p_tests"]["Add.Small"]["fix"] == "PASS"
    assert "resolved: 2/2 (100.0%) of the candidates" in grade.output


def test_build_longer_than_compile_seconds(world: World) -> None:
    """A build (its slow step: 3 s) far past compile_seconds builds under build_seconds;
    one past build_seconds is a timeout, said as one (not "the build failed")."""
    _slow_case(world, "slow_ok", "{compile_seconds: 1}")
    _slow_case(world, "slow_timeout", "{build_seconds: 1}")
    ok = run_doit(world.out, "grade", "case=slow_ok", library=world.library)
    assert ok.returncode == 0, ok.output[-3000:]
    assert ok.rows["slow_ok/reference"]["class"] == "accept"
    late = run_doit(world.out, "grade", "case=slow_timeout", library=world.library)
    assert late.returncode != 0
    tests = late.gate("slow_timeout/reference", "tests")
    assert tests["class"] == "hang", tests
    assert "ran past limits.build_seconds (1 s)" in tests["summary"]
    assert "no diagnostic" not in late.output


def test_project_compiles_go_through_ccache(world: World) -> None:
    """A second build of the same trees in new build folders (a new build limit: new cell
    keys) compiles nothing itself: every object is a ccache hit, counted in the summary."""
    case = world.library / CASE / "case.yaml"
    text = case.read_text()
    case.write_text(text.replace("gates:\n", "limits: {build_seconds: 1700}\ngates:\n", 1))
    try:
        again = run_doit(world.out, "grade", f"case={CASE}", library=world.library)
    finally:
        case.write_text(text)
    assert again.returncode == 0, again.output[-3000:]
    line = next(ln for ln in again.output.splitlines() if ln.startswith("ccache:"))
    hits, misses = int(line.split()[1]), int(line.split("),")[1].split()[0])
    assert hits >= 4 and misses == 0, line


def test_report_reads_stored_check_classes() -> None:
    """The gate result on disk spells a check's class `class` (cxxgate/result.py): a test
    the framework's report does not show is NONE, not FAIL, and the gate's own path check
    is not reported as a test."""
    from cxxgate.reports.swe_report import _status

    assert _status({"ok": False, "class": "test_missing", "detail": "absent"}) == "NONE"
    assert _status({"ok": False, "class": "test_missing", "detail": "skipped"}) == "SKIP"
    assert _status({"ok": False, "class": "f2p_fail", "detail": "failed"}) == "FAIL"
    # A tree that did not build ran no test: the benchmark writes NONE, not FAIL.
    assert _status({"ok": False, "class": "build_fail", "detail": "not built"}) == "NONE"


def test_lowercased_test_names_find_their_ctest_tests(world: World) -> None:
    """Multi-SWE-bench lowercases every log line before it reads test names (Catch2's
    `RunTests` is listed as `runtests`): a listed name matches the one ctest test equal to
    it but for case, and the check keeps the listed name (the report pairs by it). Every
    test of such a name runs (cxxgate/cells/ctestfile.py `kept`): one the reference does
    not have is the patch's own, run with the listed tests, and refused."""
    source = world.library / CASE
    folder = world.library / "lowercased"
    folder.mkdir()
    for name in ("gold.diff", "test.diff", "prompt.md.j2"):
        (folder / name).write_text((source / name).read_text())
    text = (source / "case.yaml").read_text()
    (folder / "case.yaml").write_text(
        text.replace("- Parse.Empty", "- parse.empty").replace("- Add.Small", "- ADD.SMALL")
    )
    grade = run_doit(world.out, "grade", "case=lowercased", library=world.library)
    assert grade.returncode == 0, grade.output[-3000:]
    assert grade.rows["lowercased/reference"]["class"] == "accept"
    assert grade.gate("lowercased/base", "tests")["class"] == "f2p_fail:parse.empty"
    # A patch that registers a look-alike with the listed spelling (`parse.empty`, passing
    # on `true`) and leaves the real Parse.Empty failing: the name was resolved on the
    # reference's run, so the real one is the listed test, and it failed.
    cmake = textwrap.dedent(FILES["CMakeLists.txt"])
    (folder / "lookalike.diff").write_text(
        "--- a/CMakeLists.txt\n+++ b/CMakeLists.txt\n"
        "@@ -9,3 +9,4 @@\n"
        + "".join(f" {line}\n" for line in cmake.splitlines()[8:11])
        + "+add_test(NAME parse.empty COMMAND true)\n"
    )
    with (folder / "case.yaml").open("a") as f:
        f.write("patches:\n  - {file: lookalike.diff, expect: {verdict: reject}}\n")
    again = run_doit(world.out, "grade", "case=lowercased", library=world.library)
    assert again.returncode == 0, again.output[-3000:]
    assert again.gate("lowercased/lookalike", "tests")["class"] == "registration_changed"
    result = world.out / "results" / "lowercased" / "lookalike" / "tests.json"
    checks = {c["name"]: c for c in json.loads(result.read_text())["checks"]}
    assert checks["parse.empty"]["class"] == "f2p_fail"
    assert checks["parse.empty"]["detail"].endswith("(ctest: Parse.Empty)")
    assert checks["beside:parse.empty"]["detail"] == (
        "parse.empty runs with the listed tests, and the reference has no such test"
    )


def test_configure_checks_listed_as_tests(world: World) -> None:
    """Multi-SWE-bench counts CMake's `-- Performing Test NAME - Success` configure lines
    as passed tests (Catch2's `have_flag_-wall` among its ctest tests): such a name is
    decided by the build's CMakeCache.txt, passed or failed, also one named after the
    benchmark's source folder; a name neither ctest nor CMake knows stays test_missing."""
    cmake = world.repo / "CMakeLists.txt"
    cmake.write_text(
        cmake.read_text() + "include(CheckCXXCompilerFlag)\n"
        "check_cxx_compiler_flag(-Wall HAVE_FLAG_-WALL)\n"
        "check_cxx_compiler_flag(-fno-such-option-xyz HAVE_FLAG_-FNO_SUCH)\n"
        # Named after the source folder, as Catch2's is (its benchmark's: /home/calc).
        'string(MAKE_C_IDENTIFIER "-ffile-prefix-map=${CMAKE_SOURCE_DIR}/=" id)\n'
        'check_cxx_compiler_flag("-ffile-prefix-map=${CMAKE_SOURCE_DIR}/=" HAVE_FLAG_${id})\n'
    )
    git(world.repo, "commit", "-q", "-am", "configure checks")
    head = git(world.repo, "rev-parse", "HEAD")
    for name, p2p in (
        ("checks_pass", "[Add.Small, have_flag_-wall, have_flag__ffile_prefix_map__home_calc__]"),
        ("checks_fail", "[Add.Small, have_flag_-fno_such]"),
        ("checks_absent", "[Add.Small, have_flag_-wnothing]"),
    ):
        folder = world.library / name
        folder.mkdir()
        (folder / "test.diff").write_text(world.test_patch)
        (folder / "case.yaml").write_text(
            "summary: a project with configure checks\n"
            f"repo: {{path: {world.repo}, commit: {head}}}\n"
            'build: cmake\nwritable: ["src/**"]\n'
            f"gates:\n  tests: {{test_patch: test.diff, pass_to_pass: {p2p}}}\n"
        )
    grade = run_doit(world.out, "grade", "case=checks_pass,checks_fail,checks_absent",
                     library=world.library)  # fmt: skip
    assert grade.rows["checks_pass/reference"]["class"] == "accept", grade.output[-3000:]
    tests = grade.gate("checks_fail/reference", "tests")
    assert tests["class"] == "p2p_broken:have_flag_-fno_such", tests
    assert grade.gate("checks_absent/reference", "tests")["class"] == "test_missing", tests


def test_a_fix_may_add_diagnostic_pragmas(world: World, tmp_path: Path) -> None:
    """An imported case builds with the project's own flags, never the envelope's -Werror:
    a gold patch adding `#pragma GCC diagnostic` lines, as real projects' fixes do
    (Catch2-1609), is the reference, not a diagnostic_control reject."""
    base = json.loads((world.root / "instances.jsonl").read_text())["base"]["sha"]
    git(world.repo, "checkout", "-q", base)
    try:
        source = (world.repo / "src/parse.cpp").read_text()
        pragma = '#pragma GCC diagnostic ignored "-Wunused-parameter"\n'
        fixed = source.replace(PARSE_BODY, "    if (text.empty()) return 0;\n" + PARSE_BODY)
        gold = diff(world.repo, "src/parse.cpp", pragma + fixed)
    finally:
        git(world.repo, "checkout", "-q", "main")
    record = _record(base, gold, world.test_patch)
    record["number"] = 8
    records = tmp_path / "pragma.jsonl"
    records.write_text(json.dumps(record) + "\n")
    done = run_doit(
        world.out, "import", f"instances={records}", f"repo={world.repo}", library=world.library
    )
    assert done.returncode == 0, done.output
    grade = run_doit(world.out, "grade", "case=calc__calc-8", library=world.library)
    assert grade.returncode == 0, grade.output[-3000:]
    assert grade.rows["calc__calc-8/reference"]["class"] == "accept"


def _instance_with_test(
    world: World, tmp_path: Path, number: int, cmake_lines: str, p2p: str
) -> Path:
    """A commit adding `cmake_lines` to the project, and a record of instance `number` at
    it whose one pass-to-pass test is `p2p`: the records file."""
    cmake = world.repo / "CMakeLists.txt"
    cmake.write_text(cmake.read_text() + cmake_lines)
    git(world.repo, "commit", "-q", "-am", f"instance {number}: {p2p}")
    gold = (world.library / CASE / "gold.diff").read_text()
    record = _record(git(world.repo, "rev-parse", "HEAD"), gold, world.test_patch)
    record["number"] = number
    record["p2p_tests"] = {p2p: {"run": "PASS", "test": "PASS", "fix": "PASS"}}
    records = tmp_path / f"instance-{number}.jsonl"
    records.write_text(json.dumps(record) + "\n")
    return records


def test_data_folders_are_seen_and_keyed(world: World, tmp_path: Path) -> None:
    """`doit import ... data=DIR`: a folder the tests read besides the repository
    (nlohmann/json's json_test_data, which its build would download) is seen read-only at
    its own path by the build and the tests, and its files are in the build's key: the
    same path with other bytes is graded again, not taken from the cache."""
    lines = (
        'add_test(NAME data.read COMMAND grep -qx 42 "${CALC_DATA}/answer.txt")\n'
        'add_test(NAME data.write COMMAND touch "${CALC_DATA}/written")\n'
    )
    records = _instance_with_test(world, tmp_path, 9, lines, "data.read")
    data = tmp_path / "calc_data"
    data.mkdir()
    (data / "answer.txt").write_text("42\n")
    done = run_doit(world.out, "import", f"instances={records}", f"repo={world.repo}",
                    f"options=-DBUILD_TESTING=ON -DCALC_DATA={data}", f"data={data}",
                    library=world.library)  # fmt: skip
    assert done.returncode == 0, done.output
    case = world.library / "calc__calc-9/case.yaml"
    with_data = case.read_text()
    assert f"  data:\n  - {data}\n" in with_data

    def reference() -> dict[str, object]:
        grade = run_doit(world.out, "grade", "case=calc__calc-9", library=world.library)
        return grade.gate("calc__calc-9/reference", "tests")

    assert reference()["class"] == "accept"
    assert not (data / "written").exists()  # read-only: the writing test failed
    (data / "answer.txt").write_text("41\n")
    assert reference()["class"] == "p2p_broken:data.read"
    (data / "answer.txt").write_text("42\n")
    if sandbox.available():
        # Not named, the folder is not there for the tests: the bind is what shows it.
        case.write_text(with_data.replace(f"  data:\n  - {data}\n", ""))
        assert reference()["class"] == "p2p_broken:data.read"
    for bad, said in (
        (world.library, f"holds {world.library / 'calc__calc-9'}, which candidates must not"),
        (data / "secret", "secret is not readable by others (mode 600)"),
        (data / "link", "link is a symlink; a data folder holds folders and regular files"),
    ):
        if bad.is_relative_to(data):
            bad.unlink(missing_ok=True)
            if bad.name == "link":
                bad.symlink_to("/etc/hostname")
            else:
                bad.write_text("x")
                bad.chmod(0o600)
        folder = world.library if bad == world.library else data
        case.write_text(with_data.replace(f"  - {data}\n", f"  - {folder}\n"))
        grade = run_doit(world.out, "grade", "case=calc__calc-9", library=world.library)
        assert grade.returncode != 0
        assert f"{case}: build.data[0] ({folder}): " in grade.output, grade.output[-2000:]
        assert said in grade.output, grade.output[-2000:]
        if bad.is_relative_to(data):
            bad.unlink()
    shutil.rmtree(world.library / "calc__calc-9")


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs a memory checker to hide")
def test_imports_hide_the_memory_checker_from_the_project(world: World, tmp_path: Path) -> None:
    """This machine has valgrind (the leak gate's); CTest finds it and a project registers
    other tests when it has one (Catch2 leaves out its MultiReporter tests). Import's
    options hide it unless they name it, as the benchmarks' images never had one: the
    listed test is there; with valgrind named, it is missing."""
    lines = "include(CTest)\nif(NOT MEMORYCHECK_COMMAND)\n"
    lines += "  add_test(NAME without.memcheck COMMAND true)\nendif()\n"
    records = _instance_with_test(world, tmp_path, 10, lines, "without.memcheck")
    named = f"options=-DBUILD_TESTING=ON -DMEMORYCHECK_COMMAND={shutil.which('valgrind')}"
    for options, expected in ((), "accept"), ((named,), "test_missing"):
        done = run_doit(world.out, "import", f"instances={records}", f"repo={world.repo}",
                        *options, library=world.library)  # fmt: skip
        assert done.returncode == 0, done.output
        grade = run_doit(world.out, "grade", "case=calc__calc-10", library=world.library)
        tests = grade.gate("calc__calc-10/reference", "tests")
        assert tests["class"] == expected, (options, tests)
    shutil.rmtree(world.library / "calc__calc-10")


def test_a_suite_may_write_beside_its_sources(world: World, tmp_path: Path) -> None:
    """Some suites write into their source tree, as a checkout lets them (Catch2's approval
    tests write next to their baselines; under a read-only tree every Catch2 v2 gold patch
    failed `approvaltests`). The tests see a tree of the run's own: the write succeeds,
    and the tree the build cell holds is untouched. Some build, and run git (nlohmann/json's
    download_test_data: `cmake --build`, Ninja appending to its log, then `git clone`):
    both work as the run's uid."""
    lines = (
        "add_custom_target(stamp COMMAND ${CMAKE_COMMAND} -E echo built)\n"
        'add_test(NAME tree.write COMMAND sh -c "echo x > written && grep -qx x written'
        ' && cmake --build ${CMAKE_BINARY_DIR} --target stamp && git config --list"\n'
        '         WORKING_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}")\n'
    )
    records = _instance_with_test(world, tmp_path, 11, lines, "tree.write")
    done = run_doit(world.out, "import", f"instances={records}", f"repo={world.repo}",
                    library=world.library)  # fmt: skip
    assert done.returncode == 0, done.output
    grade = run_doit(world.out, "grade", "case=calc__calc-11", library=world.library)
    assert grade.gate("calc__calc-11/reference", "tests")["class"] == "accept", grade.output[-2000:]
    if sandbox.available():  # without one the suite runs in the cell's real paths
        assert not list((world.out / "cells").glob("*/*/trees/src/written"))
    shutil.rmtree(world.library / "calc__calc-11")
