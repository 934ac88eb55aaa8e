"""Repository cases: a CMake + GoogleTest project of our own, made a git repository by the
test, graded by the real doit with the `tests` gate (gates/tests/tests.py)."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest
from conftest import SHIPPED, Grade, run_doit, run_grade
from repos import FILES, PARSE_BODY, cmake_case, diff, git, new_repo, write

from cxxgate.intake.repo import RepoSpec, base_tree
from cxxgate.toolchain.projectflags import _kept
from cxxgate.util.yamlfile import InputError

CASE = "calc"

CANDIDATES = {
    "good": ("    return text.size() == 0 ? 0 : std::stoi(text);\n", "accept"),
    "f2p_red": ('    return text == " " ? 0 : std::stoi(text);\n', "f2p_fail:Parse.Empty"),
    "p2p_broken": (
        "    return text.empty() ? 0 : std::stoi(text) + 1;\n",
        "p2p_broken:Parse.Digits",
    ),
    "no_compile": ("    return text.empty() ? 0 : std::stoi(text)\n", "build_fail"),
    # Exits 0 before GoogleTest runs a single test: ctest calls every test passed.
    "exits_early": (
        "    return text.empty() ? 0 : std::stoi(text);\n}\n"
        "const bool quit = [] {\n"
        '    std::ifstream f("/proc/self/cmdline");\n'
        "    std::string s((std::istreambuf_iterator<char>(f)), {});\n"
        '    if (s.find("--gtest_filter") != std::string::npos) std::_Exit(0);\n'
        "    return false;\n}();\nint unused() {\n    return 0;\n",
        "test_missing",
    ),
    "hangs": (
        "    for (volatile bool on = text.empty(); on;) {}\n    return std::stoi(text);\n",
        "hang",
    ),
}


def make_repo(root: Path) -> tuple[Path, str, dict[str, str]]:
    """The project at a base commit (and a later commit the case must not see), and its
    patches: gold, the hidden test patch, the candidates."""
    repo = root / "calc.git"
    base = new_repo(repo, FILES)
    parse = repo / "src/parse.cpp"
    source = parse.read_text()
    patches = {
        "gold": diff(
            repo,
            "src/parse.cpp",
            source.replace(PARSE_BODY, "    if (text.empty()) return 0;\n" + PARSE_BODY),
        ),
    }
    tests = (repo / "tests/test_calc.cpp").read_text()
    added = 'TEST(Parse, Empty) { EXPECT_EQ(calc::parse(""), 0); }\n'
    added += 'TEST(Parse, Digits) { EXPECT_EQ(calc::parse("42"), 42); }\n'
    patches["test"] = diff(repo, "tests/test_calc.cpp", tests + added)
    for name, (body, _) in CANDIDATES.items():
        patches[name] = diff(repo, "src/parse.cpp", source.replace(PARSE_BODY, body))
    # Fixes nothing; a gtest/gtest.h of its own, found first on the library's include path,
    # turns every EXPECT_EQ into nothing (GoogleTest's own report then says passed).
    shadow = "#pragma once\n#include_next <gtest/gtest.h>\n#undef EXPECT_EQ\n"
    shadow += "#define EXPECT_EQ(a, b) static_cast<void>(0)\n"
    (repo / "include/gtest").mkdir()
    (repo / "include/gtest/gtest.h").write_text(shadow)
    git(repo, "add", "-N", "include/gtest/gtest.h")
    patches["shadows_gtest"] = git(repo, "diff", "--", "include/gtest/gtest.h") + "\n"
    git(repo, "reset", "-q", "--", "include/gtest/gtest.h")
    shutil.rmtree(repo / "include/gtest")
    # Fixes parse() and deletes the failing test's neighbour: the tests are not the patch's.
    fix = diff(
        repo,
        "src/parse.cpp",
        source.replace(PARSE_BODY, "    if (text.empty()) return 0;\n" + PARSE_BODY),
    )
    patches["edits_tests"] = fix + diff(
        repo,
        "tests/test_calc.cpp",
        tests.replace("TEST(Mul, Small) { EXPECT_EQ(calc::mul(2, 3), 6); }\n", ""),
    )
    # A later commit: the case grades the base commit, not the branch head.
    parse.write_text(source.replace("std::stoi", "  std::stoi"))
    git(repo, "commit", "-q", "-am", "later")
    return repo, base, patches


def make_case(library: Path, repo: Path, base: str, patches: dict[str, str]) -> None:
    case = library / CASE
    (case / "patches").mkdir(parents=True)
    for name, text in patches.items():
        folder = case if name in {"gold", "test"} else case / "patches"
        (folder / f"{name}.patch").write_text(text)
    known = [("good", "accept", "accept"), ("edits_tests", "reject", "path_violation")]
    known += [("shadows_gtest", "reject", "path_violation")]
    known += [(n, "reject", c) for n, (_, c) in CANDIDATES.items() if n != "good"]
    lines = [
        "summary: calc::parse of an empty text",
        f"repo: {{path: {repo}, commit: {base}}}",
        "build: {options: [-DBUILD_TESTING=ON]}",
        'writable: ["src/**", "include/**", "tests/**"]',
        "include_dirs: [include]",
        "public_headers: [include/calc/calc.hpp]",
        'sources: ["src/*.cpp"]',
        "reference: gold.patch",
        "limits: {run_seconds: 2}",
        "gates:",
        "  headers: {}",
        "  symbols: {library: calc}",
        "  tests:",
        "    test_patch: test.patch",
        "    fail_to_pass: [Parse.Empty]",
        "    pass_to_pass: [Add.Small, Mul.Small, Parse.Digits]",
        "patches:",
    ]
    for name, verdict, klass in known:
        lines.append(
            f"  - {{file: patches/{name}.patch, expect: {{verdict: {verdict}, tests: '{klass}'}}}}"
        )
    (case / "case.yaml").write_text("\n".join(lines) + "\n")


def compiles(out: Path) -> list[str]:
    """The compiler log's compile lines: one per object a build compiled."""
    log = out / "compiler-calls.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [line for line in lines if line.split()[2] == "compile"]


def cell_keys(grade: Grade, row: str) -> set[str]:
    evidence = grade.rows[row]["evidence"]
    assert isinstance(evidence, list)
    return {e.rsplit("/", 1)[-1] for e in evidence if e.startswith("cells/")}


class Graded:
    def __init__(self, grade: Grade, repo: Path, library: Path, cold: list[str]) -> None:
        self.grade, self.repo, self.library, self.cold = grade, repo, library, cold


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Graded:
    root = tmp_path_factory.mktemp("repo_cases")
    repo, base, patches = make_repo(root)
    library = root / "cases"
    library.mkdir()
    shutil.copy(SHIPPED / "envelopes.yaml", library)
    make_case(library, repo, base, patches)
    out = root / "out"
    grade = run_grade(out, "-n", "2", library=library)
    return Graded(grade, repo, library, compiles(out))


def test_every_class_is_reached(graded: Graded) -> None:
    """Reference first (F2P red on base + test patch, green with the gold patch), then one
    candidate per class; every row's class is the one its `expect:` names."""
    grade = graded.grade
    assert grade.returncode == 0, grade.output[-3000:]
    rows = grade.rows
    assert rows[f"{CASE}/reference"]["class"] == "accept"
    assert rows[f"{CASE}/base"]["gates"]["tests"]["class"] == "f2p_fail:Parse.Empty"
    for name, (_, klass) in CANDIDATES.items():
        assert rows[f"{CASE}/{name}"]["gates"]["tests"]["class"] == klass, name
        assert rows[f"{CASE}/{name}"]["expect_problems"] == []
    assert rows[f"{CASE}/edits_tests"]["class"] == "path_violation"
    shadow = rows[f"{CASE}/shadows_gtest"]["gates"]["tests"]
    assert shadow["class"] == "path_violation"
    assert "include/gtest/gtest.h" in shadow["summary"]
    # ...and the cheat is real: every listed test passed, GoogleTest's report included;
    # the test unit's macros show it too, whatever the file's name.
    result = graded.grade.out / "results" / CASE / "shadows_gtest" / "tests.json"
    checks = json.loads(result.read_text())["checks"]
    failed = [c["name"] for c in checks if not c["ok"]]
    # The emptied EXPECT_EQ calls nothing: the test program holds no code of parse.cpp.
    assert failed == ["shadowed_headers", "macros:tests/test_calc.cpp", "test_sources"]
    assert "EXPECT_EQ" in next(c["detail"] for c in checks if c["name"].startswith("macros:"))
    assert "tests/test_calc.cpp" in rows[f"{CASE}/edits_tests"]["gates"]["tests"]["summary"]
    assert "error" in rows[f"{CASE}/no_compile"]["gates"]["tests"]["summary"]
    # Hostile: every test process exits 0 before GoogleTest runs; ctest's JUnit says
    # passed, GoogleTest's own report has no run: not a pass.
    assert "ctest says passed" in rows[f"{CASE}/exits_early"]["gates"]["tests"]["summary"]


def test_one_file_patch_rebuilds_one_object(graded: Graded) -> None:
    """The reference builds the project (4 objects); the base tree and every candidate
    start from the reference's build folder and compile only parse.cpp (the test patch is
    the same in all of them)."""
    grade, cold = graded.grade, graded.cold
    by_cell: dict[str, list[str]] = {}
    for line in cold:
        by_cell.setdefault(line.split()[1], []).append(line.split()[3])

    reference = cell_keys(grade, f"{CASE}/reference")

    def builds(row: str) -> list[list[str]]:
        # A candidate's row also holds the reference's cells (its flags and macros are
        # compared with them): only its own builds count here.
        mine = cell_keys(grade, f"{CASE}/{row}") - (reference if row != "reference" else set())
        keys = [k for k in mine if _kind(grade, k) == "cmake"]
        return [sorted(by_cell[k]) for k in keys if k in by_cell]

    assert builds("reference") == [["add.cpp.o", "mul.cpp.o", "parse.cpp.o", "test_calc.cpp.o"]]
    for name in ("base", *(n for n in CANDIDATES if n != "edits_tests")):
        assert builds(name) == [["parse.cpp.o"]], name
    # A new file (a header that may shadow another) is built afresh, not from the seed.
    assert builds("shadows_gtest") == builds("reference")
    assert builds("edits_tests") == []  # its test patch does not apply: nothing to build


def test_only_the_case_trees_store_in_the_shared_cache(graded: Graded) -> None:
    """The reference's and the base tree's builds store their compiles in the grade's
    cache (cxxgate/cells/cmake.py, `ccache/projects`); no candidate's build stores any:
    neither its compile of parse.cpp nor shadows_gtest's whole build (a new file: built
    afresh, every object a miss)."""
    grade = graded.grade
    trusted = cell_keys(grade, f"{CASE}/reference") | cell_keys(grade, f"{CASE}/base")
    rows = [r for r in grade.rows if r.startswith(f"{CASE}/") and r.split("/")[1] != "base"]
    others = set().union(*(cell_keys(grade, r) for r in rows)) - trusted

    def stored_misses(keys: set[str]) -> int:
        """Compiles of cmake cells that missed and succeeded: what a build would store."""
        found = 0
        for key in keys:
            result = json.loads((grade.out / "cells" / key[:2] / key / "result.json").read_text())
            if result["kind"] == "cmake":
                steps = [s for s in result["steps"] if s["phase"] == "compile"]
                found += sum(s["cache"] == "miss" and s["exit"] == 0 for s in steps)
        return found

    shared = grade.out / "ccache" / "projects"
    stored = [p for p in shared.rglob("*") if p.is_file() and p.name != "CACHEDIR.TAG"]
    own = stored_misses(trusted)
    assert own == 5  # the reference's 4 objects, the base tree's parse.cpp
    assert stored_misses(others) >= 5  # parse.cpp in each candidate, shadows_gtest's 4
    # A result for each, and a manifest unless one of the same key (same argv and listing)
    # was already there.
    assert own <= len(stored) <= 2 * own, stored


def test_the_base_trees_test_units_are_not_compiled_again(graded: Graded) -> None:
    """The harness compiles each test unit again to check that the build's object is what
    its command makes (cxxgate/cells/ctest.py `_again`), but not in the base tree: its
    build fills the compile cache every candidate's build reads, and its objects' digests
    are kept for candidates' units that read the same bytes (cxxgate/cells/verified.py).
    The reference's unit is not exempt: whether a compile makes the same bytes twice is
    judged there (it is compiled again unless a tree with the same bytes was first).
    Every unit is still checked."""
    grade = graded.grade
    rows = [f"{CASE}/reference", f"{CASE}/base"]
    ref, base = ({k for k in cell_keys(grade, r) if _kind(grade, k) == "ctest"} for r in rows)
    base -= ref  # the base row holds the reference's suite too
    assert len(ref) == len(base) == 1, (ref, base)
    lines = (grade.out / "compiler-calls.log").read_text().splitlines()
    again = {ln.split()[1] for ln in lines if ln.split()[2:4] == ["inspect", "test_calc.cpp"]}
    assert not base & again, (base, again)
    for row in (*rows, f"{CASE}/good"):
        for key in cell_keys(grade, row):
            if _kind(grade, key) == "ctest":
                checked = grade.out / "cells" / key[:2] / key / "objects.json"
                assert json.loads(checked.read_text()) == {"tests/test_calc.cpp": ""}, row


def _kind(grade: Grade, key: str) -> str:
    result = json.loads((grade.out / "cells" / key[:2] / key / "result.json").read_text())
    return str(result["kind"])


def test_warm_regrade_compiles_nothing(graded: Graded) -> None:
    """A warm re-run runs no tool at all (no configure, build, compile or ctest line);
    then the repository case is pinned by `doit freeze` and grades under its lock."""
    out = graded.grade.out
    log = out / "compiler-calls.log"
    before = log.read_text()
    again = run_grade(out, library=graded.library)
    assert again.returncode == 0, again.output[-2000:]
    assert compiles(out) == graded.cold
    assert log.read_text() == before
    frozen = run_doit(out, "freeze", "allow_bump=1", library=graded.library)
    assert frozen.returncode == 0, frozen.output[-2000:]
    lock = (graded.library / "identity.lock").read_text()
    assert "calc:" in lock and "case.yaml:" in lock and "test.patch:" in lock
    locked = run_grade(out, library=graded.library)
    assert locked.returncode == 0, locked.output[-2000:]
    assert log.read_text() == before


def test_project_flags_are_read_from_the_compile_database(tmp_path: Path) -> None:
    """-I inside the project's tree becomes this tree's, in either spelling; a generated
    include folder (the build's) and other flags are left out; -D, -U and -std stay."""
    tree = tmp_path / "tree"
    argv = [
        "/usr/bin/c++", "-DA=1", "-I/src/project/include", "-isystem", "/src/project/third",
        "-I/src/build/generated", "-iquote/usr/include", "-UB", "-std=gnu++17", "-O2",
        "-o", "x.o", "-c", "/src/project/src/a.cpp",
    ]  # fmt: skip
    assert _kept(argv, tree, "/src/project") == [
        "-DA=1", f"-I{tree}/include", f"-isystem{tree}/third", "-UB", "-std=gnu++17",
    ]  # fmt: skip


def test_compile_commands_exported(graded: Graded) -> None:
    key = next(iter(cell_keys(graded.grade, f"{CASE}/reference")))
    cells = [
        graded.grade.out / "cells" / k[:2] / k for k in cell_keys(graded.grade, f"{CASE}/reference")
    ]
    db = [c / "compile_commands.json" for c in cells if (c / "compile_commands.json").is_file()]
    assert db, key
    text = db[0].read_text()
    assert "/src/project/src/parse.cpp" in text and "CALC_LIMIT=1000" in text


def test_probes_compile_with_the_project_flags(graded: Graded) -> None:
    """The header #errors without CALC_LIMIT, which only the project's CMakeLists.txt
    defines: the header probes and the symbols gate's library compile with the flags of
    the project's compile database (a configure-only cmake cell)."""
    rows = graded.grade.rows
    for row in ("reference", "good"):
        assert rows[f"{CASE}/{row}"]["gates"]["headers"]["class"] == "accept", row
        assert rows[f"{CASE}/{row}"]["gates"]["symbols"]["class"] == "accept", row
    assert rows[f"{CASE}/no_compile"]["gates"]["symbols"]["class"] == "library_broken"
    out = graded.grade.out
    probes = [
        json.loads((out / "cells" / k[:2] / k / "result.json").read_text())
        for k in cell_keys(graded.grade, f"{CASE}/good")
        - cell_keys(graded.grade, f"{CASE}/reference")  # its own cells, not the reference's
    ]
    kinds = {p["kind"]: p for p in probes}
    assert kinds["cmake"]["detail"] in {"configured", "seeded"}
    argv = kinds["syntax"]["steps"][0]["argv"]
    assert "-DCALC_LIMIT=1000" in argv
    assert any(a.startswith("-I") and a.endswith("/include") for a in argv)


def test_bundle_and_bad_repos(tmp_path: Path) -> None:
    repo, base, _ = make_repo(tmp_path)
    bundle = tmp_path / "calc.bundle"
    git(repo, "bundle", "create", str(bundle), "--all")
    case_file = tmp_path / "case.yaml"
    tree, digest = base_tree(case_file, RepoSpec(path=str(bundle), commit=base), tmp_path / "c")
    assert (tree / "src/parse.cpp").read_text() == textwrap.dedent(FILES["src/parse.cpp"])
    again = base_tree(case_file, RepoSpec(path=str(repo), commit=base), tmp_path / "c")
    assert again[1] == digest  # same commit, same content: same digest from a clone
    with pytest.raises(InputError, match="is not a commit"):
        base_tree(case_file, RepoSpec(path=str(bundle), commit="0" * 40), tmp_path / "c")
    # export-ignore and export-subst (git archive's attributes) change nothing: the tree
    # is the commit's, as a checkout has it.
    (repo / ".gitattributes").write_text(".gitignore export-ignore\nsrc/* export-subst\n")
    (repo / ".gitignore").write_text("build/\n")
    (repo / "src/version.cpp").write_text("// $Format:%H$\n")
    git(repo, "add", ".gitattributes", ".gitignore", "src/version.cpp")
    git(repo, "commit", "-q", "-m", "attributes")
    head = git(repo, "rev-parse", "HEAD")
    tree, _ = base_tree(case_file, RepoSpec(path=str(repo), commit=head), tmp_path / "c")
    assert (tree / ".gitignore").read_text() == "build/\n"
    assert (tree / "src/version.cpp").read_text() == "// $Format:%H$\n"
    os.symlink("/etc/passwd", repo / "leak")
    git(repo, "add", "leak")
    git(repo, "commit", "-q", "-m", "link")
    head = git(repo, "rev-parse", "HEAD")
    with pytest.raises(InputError, match="leak is a symlink"):
        base_tree(case_file, RepoSpec(path=str(repo), commit=head), tmp_path / "c")


# One ctest test per test program, as fmt registers `format-test` (add_test, no
# discovery), and a plain program that is no GoogleTest program at all.
PER_PROGRAM = {
    "CMakeLists.txt": """\
        cmake_minimum_required(VERSION 3.16)
        project(half CXX)
        add_library(half src/half.cpp)
        target_include_directories(half PUBLIC include)
        enable_testing()
        find_package(GTest REQUIRED)
        add_executable(half-test test/half-test.cpp)
        target_link_libraries(half-test half GTest::gtest_main)
        add_test(NAME half-test COMMAND half-test)
        add_executable(plain-test test/plain-test.cpp)
        target_link_libraries(plain-test half GTest::gtest)  # what a patched half may need
        add_test(NAME plain-test COMMAND plain-test)
        """,
    "include/half.hpp": "#pragma once\nint half(int n);\n",
    "src/half.cpp": '#include "half.hpp"\nint half(int n) { return n / 2; }\n',
    "test/half-test.cpp": """\
        #include <gtest/gtest.h>
        #include "half.hpp"
        TEST(Half, Even) { EXPECT_EQ(half(4), 2); }
        """,
    "test/plain-test.cpp": '#include "half.hpp"\nint main() { return half(2) == 1 ? 0 : 1; }\n',
}
# Every test the library's program runs is skipped before its body starts.
SKIP_ENV = """\
#include <gtest/gtest.h>
namespace {
struct Skip : ::testing::Environment {
    void SetUp() override { GTEST_SKIP(); }
};
[[maybe_unused]] auto* const skip = ::testing::AddGlobalTestEnvironment(new Skip);
}  // namespace
"""


def test_one_ctest_test_per_program(tmp_path: Path) -> None:
    """fmt's style: ctest knows `half-test`, GoogleTest's report knows `Half.Even` and
    `Half.Odd`. The reference passes (each program's report is read whole: every case the
    reference ran must pass), the base tree fails, a library that skips every test in a
    GoogleTest environment is framework_tamper (its objects name GoogleTest symbols the
    reference's do not), and the plain program passes on its exit status, which its check
    says."""
    repo = tmp_path / "half.git"
    base = new_repo(repo, PER_PROGRAM)
    source = (repo / "src/half.cpp").read_text()
    fixed = source.replace("return n / 2;", "return n >= 0 ? n / 2 : -((1 - n) / 2);")
    tests = (repo / "test/half-test.cpp").read_text()
    case = tmp_path / "cases" / "half"
    (case / "patches").mkdir(parents=True)
    shutil.copy(SHIPPED / "envelopes.yaml", case.parent)
    (case / "gold.patch").write_text(diff(repo, "src/half.cpp", fixed))
    odd = "TEST(Half, Negative) { EXPECT_EQ(half(-3), -2); }\n"
    (case / "test.patch").write_text(diff(repo, "test/half-test.cpp", tests + odd))
    skipping = diff(repo, "src/half.cpp", SKIP_ENV + fixed)
    (case / "patches/skips.patch").write_text(skipping)
    (case / "case.yaml").write_text(
        "summary: half rounds towards minus infinity\n"
        f"repo: {{path: {repo}, commit: {base}}}\n"
        "build: {options: []}\n"
        'writable: ["src/**", "include/**"]\n'
        "reference: gold.patch\n"
        "limits: {run_seconds: 5}\n"
        "gates:\n"
        "  tests: {test_patch: test.patch, fail_to_pass: [half-test], pass_to_pass: [plain-test]}\n"
        "patches:\n"
        "  - {file: patches/skips.patch, expect: {verdict: reject, tests: framework_tamper}}\n"
    )
    grade = run_grade(tmp_path / "out", library=tmp_path / "cases")
    assert grade.returncode == 0, grade.output[-3000:]
    rows = grade.rows
    assert rows["half/reference"]["class"] == "accept"
    assert rows["half/base"]["gates"]["tests"]["class"] == "f2p_fail:half-test"
    assert rows["half/skips"]["gates"]["tests"]["class"] == "framework_tamper"
    result = grade.out / "results" / "half" / "reference" / "tests.json"
    detail = {c["name"]: c["detail"] for c in json.loads(result.read_text())["checks"]}
    assert "2 GoogleTest cases" in detail["half-test"]
    assert "exit status only" in detail["plain-test"]


def _half_case(tmp_path: Path, repo: Path, base: str) -> None:
    """The case `half` in tmp_path/cases on a PER_PROGRAM-like repository: the gold fix,
    a fail-to-pass GoogleTest case, and `floor`, another correct fix."""
    source = (repo / "src/half.cpp").read_text()
    fixed = source.replace("return n / 2;", "return n >= 0 ? n / 2 : -((1 - n) / 2);")
    tests = (repo / "test/half-test.cpp").read_text()
    odd = "TEST(Half, Negative) { EXPECT_EQ(half(-3), -2); }\n"
    patches = {
        "gold": diff(repo, "src/half.cpp", fixed),
        "test": diff(repo, "test/half-test.cpp", tests + odd),
        "floor": diff(repo, "src/half.cpp", source.replace("n / 2;", "(n - (n & 1)) / 2;")),
    }
    shutil.copy(SHIPPED / "envelopes.yaml", tmp_path)
    cmake_case(
        tmp_path / "cases" / "half", "half rounds towards minus infinity", repo, base,
        patches, {"fail_to_pass": ["half-test"], "pass_to_pass": ["plain-test"]},
        {"floor": "accept"},
    )  # fmt: skip


def test_a_test_unit_no_system_driver_compiles(tmp_path: Path) -> None:
    """fmt on a machine with nvcc: CMake finds it and builds the CUDA test, which no listed
    test runs; the harness runs no compiler but the system's, so it reads nothing of that
    unit on any side and cannot link its program as the reference does. Here a C tool
    under test/, compiled and linked by a script of the project's. The fixed candidate is
    accepted and the base tree fails its fail-to-pass test only (before: the base
    baseline_red on `macros:test/c-tool.c`, every candidate framework_redefined and
    library_bypassed)."""
    files = dict(PER_PROGRAM)
    files["CMakeLists.txt"] = (
        'cmake_minimum_required(VERSION 3.16)\n'
        'set(CMAKE_C_COMPILER "${CMAKE_CURRENT_SOURCE_DIR}/tools/cc")\n'
        + textwrap.dedent(files["CMakeLists.txt"]).replace("half CXX", "half C CXX")
        + "add_executable(c-tool test/c-tool.c)\nadd_test(NAME c-tool COMMAND c-tool)\n"
    )  # fmt: skip
    files["test/c-tool.c"] = "int main(void) { return 0; }\n"
    files["tools/cc"] = '#!/bin/sh\nexec /usr/bin/gcc "$@"\n'
    repo = tmp_path / "half.git"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, files)
    (repo / "tools/cc").chmod(0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    _half_case(tmp_path, repo, base)
    grade = run_grade(tmp_path / "out", library=tmp_path / "cases")
    assert grade.returncode == 0, grade.output[-3000:]
    rows = grade.rows
    assert rows["half/reference"]["class"] == "accept"
    assert rows["half/floor"]["gates"]["tests"]["class"] == "accept"
    assert rows["half/base"]["gates"]["tests"]["class"] == "f2p_fail:half-test"
    commands = json.loads(next((grade.out / "cells").glob("*/*/commands.json")).read_text())
    tool = [e for e in commands["commands"] if str(e["file"]).endswith("c-tool.c")]
    assert tool and "tools/cc" in str(tool[0].get("command", tool[0].get("arguments")))
    records = [json.loads(p.read_text()) for p in (grade.out / "cells").glob("*/*/crossed.json")]
    said = {p: s for record in records for p, s in record["programs"].items()}
    assert said.get("c-tool") == "unused", said


def test_a_configure_failure_is_made_again(tmp_path: Path) -> None:
    """json 1.x's configure stops without lcov (find_program in CodeCoverage.cmake). The
    cell's key holds the tree, the options and the toolchain, not the host's programs: once
    the tool is installed, the same build folder must configure again (before, the failure
    was kept and every row stayed build_fail)."""
    bin_dir = Path("/usr/local/bin")
    if not os.access(bin_dir, os.W_OK):
        pytest.skip(f"{bin_dir} is not writable: the host tool cannot be installed")
    name = f"cxxgate-host-tool-{os.getpid()}-{tmp_path.name}"
    files = dict(PER_PROGRAM)
    files["CMakeLists.txt"] = textwrap.dedent(files["CMakeLists.txt"]) + (
        f"find_program(HOST_TOOL {name})\n"
        f'if(NOT HOST_TOOL)\n  message(FATAL_ERROR "{name} is not installed")\nendif()\n'
    )
    repo = tmp_path / "half.git"
    base = new_repo(repo, files)
    _half_case(tmp_path, repo, base)
    before = run_grade(tmp_path / "out", library=tmp_path / "cases")
    said = {r.split("/")[1]: v["gates"]["tests"]["class"] for r, v in before.rows.items()}
    # A candidate is not judged against a reference that did not build.
    assert said == {"reference": "build_fail", "base": "build_fail", "floor": "baseline_red"}
    tool = bin_dir / name
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    try:
        after = run_grade(tmp_path / "out", library=tmp_path / "cases")
    finally:
        tool.unlink()
    assert after.returncode == 0, after.output[-3000:]
    assert after.rows["half/reference"]["class"] == "accept"
    assert after.rows["half/floor"]["gates"]["tests"]["class"] == "accept"
    assert after.rows["half/base"]["gates"]["tests"]["class"] == "f2p_fail:half-test"
