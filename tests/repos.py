"""A small CMake + GoogleTest project of our own (calc), made a git repository by the
tests that grade repository cases (tests/e2e/test_repo_cases.py, test_swe_grade.py,
tests/gates/test_frameworks.py): its files and the git helpers that build it."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

FILES = {
    "CMakeLists.txt": """\
        cmake_minimum_required(VERSION 3.16)
        project(calc CXX)
        add_library(calc src/add.cpp src/mul.cpp src/parse.cpp)
        target_include_directories(calc PUBLIC include)
        target_compile_definitions(calc PUBLIC CALC_LIMIT=1000)
        enable_testing()
        find_package(GTest REQUIRED)
        include(GoogleTest)
        add_executable(calc_tests tests/test_calc.cpp)
        target_link_libraries(calc_tests calc GTest::gtest_main)
        gtest_discover_tests(calc_tests)
        """,
    "include/calc/calc.hpp": """\
        #pragma once
        #include <string>
        #ifndef CALC_LIMIT  // the build defines it (CMakeLists.txt): probes need its flags
        #error "CALC_LIMIT comes from the project's build"
        #endif
        #define CALC_API __attribute__((visibility("default")))
        namespace calc {
        CALC_API int add(int a, int b);
        CALC_API int mul(int a, int b);
        // The number in `text`; 0 for an empty text.
        CALC_API int parse(const std::string& text);
        }  // namespace calc
        """,
    "src/add.cpp": """\
        #include "calc/calc.hpp"
        namespace calc {
        int add(int a, int b) { return a + b; }
        }  // namespace calc
        """,
    "src/mul.cpp": """\
        #include "calc/calc.hpp"
        namespace calc {
        int mul(int a, int b) { return a * b; }
        }  // namespace calc
        """,
    "src/parse.cpp": """\
        #include "calc/calc.hpp"
        #include <cstdlib>
        #include <fstream>
        #include <iterator>
        namespace calc {
        int parse(const std::string& text) {
            return std::stoi(text);
        }
        }  // namespace calc
        """,
    "tests/test_calc.cpp": """\
        #include <gtest/gtest.h>
        #include "calc/calc.hpp"
        TEST(Add, Small) { EXPECT_EQ(calc::add(2, 3), 5); }
        TEST(Mul, Small) { EXPECT_EQ(calc::mul(2, 3), 6); }
        """,
}

PARSE_BODY = "    return std::stoi(text);\n"
# Each candidate rewrites the body of parse(), except where it says otherwise.


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    proc = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return proc.stdout.strip()


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def diff(repo: Path, rel: str, new: str) -> str:
    """A patch of one file of the base commit, made by git in the work tree."""
    path = repo / rel
    old = path.read_text()
    path.write_text(new)
    try:
        return git(repo, "diff", "--", rel) + "\n"
    finally:
        path.write_text(old)


def new_file(rel: str, text: str) -> str:
    """A patch that adds file `rel` holding `text`."""
    lines = text.splitlines()
    head = f"diff --git a/{rel} b/{rel}\nnew file mode 100644\n--- /dev/null\n+++ b/{rel}\n"
    return head + f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}\n" for line in lines)


def new_repo(repo: Path, files: dict[str, str]) -> str:
    """A git repository at `repo` whose one commit holds `files`; that commit's sha."""
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return git(repo, "rev-parse", "HEAD")


def cmake_case(
    case: Path,
    summary: str,
    repo: Path,
    base: str,
    patches: dict[str, str],
    tests: dict[str, list[str]],
    expect: dict[str, str],
    test_files: list[str] | None = None,
) -> None:
    """A CMake case folder graded by the tests gate: `patches` (gold and test beside
    case.yaml, the rest under patches/), `tests` its fail_to_pass / pass_to_pass lists,
    each candidate's expected tests class (`accept`, or the reject's class), and the
    gate's `test_files` when given."""
    (case / "patches").mkdir(parents=True)
    for name, text in patches.items():
        folder = case if name in {"gold", "test"} else case / "patches"
        (folder / f"{name}.patch").write_text(text)
    lines = [
        f"summary: {summary}",
        f"repo: {{path: {repo}, commit: {base}}}",
        "build: cmake",
        'writable: ["**"]',
        "reference: gold.patch",
        "limits: {run_seconds: 5}",
        "gates:",
        "  tests:",
        "    test_patch: test.patch",
        f"    fail_to_pass: {json.dumps(tests['fail_to_pass'])}",
        f"    pass_to_pass: {json.dumps(tests['pass_to_pass'])}",
        *([f"    test_files: {json.dumps(test_files)}"] if test_files else []),
        "patches:",
    ]
    for name, klass in expect.items():
        said = {"verdict": "accept" if klass == "accept" else "reject", "tests": klass}
        lines.append(f"  - {{file: patches/{name}.patch, expect: {json.dumps(said)}}}")
    (case / "case.yaml").write_text("\n".join(lines) + "\n")
