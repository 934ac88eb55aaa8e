"""Catch2, doctest and plain executables in a repository case: per-test proof from the
framework's own XML report, asked of each named test's command by the harness
(cxxgate/cells/testframeworks.py, cxxgate/gates/tests/frameworkreports.py), and the exit
status named as the only proof of a plain program. One CMake project of our own (Catch2
v2 registered per program and by catch_discover_tests, doctest by doctest_discover_tests,
a plain program), graded once by the real doit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import LONG_NICE, SHIPPED, Grade, run_grade
from repos import cmake_case, diff, git, new_file, new_repo

from cxxgate.host import sandbox

pytestmark = pytest.mark.skipif(
    not Path("/usr/include/catch2/catch.hpp").is_file()
    or not Path("/usr/include/doctest/doctest.h").is_file(),
    reason="Debian's catch2 and doctest-dev are needed",
)

CASE = "fw"
CMAKE = """\
    cmake_minimum_required(VERSION 3.16)
    project(fw CXX)
    add_library(calc src/parse.cpp)
    target_include_directories(calc PUBLIC include)
    enable_testing()
    find_package(Catch2 REQUIRED)
    find_package(doctest REQUIRED)
    include(Catch)
    include(doctest)
    add_executable(catch_tests tests/catch_main.cpp tests/catch_parse.cpp)
    target_link_libraries(catch_tests calc Catch2::Catch2)
    add_test(NAME catch_tests COMMAND catch_tests)
    catch_discover_tests(catch_tests)
    # Passed by ctest's own criterion, as Catch2's self-tests are: a spec that matches
    # nothing (exit 0, no case ran), a run that fails and must say why.
    add_test(NAME catch_nomatch COMMAND catch_tests "no such case")
    add_test(NAME catch_warns COMMAND catch_tests -w NoAssertions "has no assertions")
    set_tests_properties(catch_warns PROPERTIES PASS_REGULAR_EXPRESSION "No assertions in test")
    add_test(NAME catch_willfail COMMAND catch_tests -w NoAssertions "has no assertions")
    set_tests_properties(catch_willfail PROPERTIES WILL_FAIL ON)
    add_executable(doc_tests tests/doc_parse.cpp)
    target_link_libraries(doc_tests calc doctest::doctest)
    add_test(NAME doc_tests COMMAND doc_tests)
    doctest_discover_tests(doc_tests)
    add_executable(plain_parse tests/plain_parse.cpp)
    target_link_libraries(plain_parse calc)
    add_test(NAME plain_parse COMMAND plain_parse)
    """
FILES = {
    "CMakeLists.txt": CMAKE,
    "include/calc/calc.hpp": """\
        #pragma once
        #include <string>
        namespace calc {
        int parse(const std::string& text);  // 0 for an empty text
        }
        """,
    "src/parse.cpp": """\
        #include "calc/calc.hpp"
        #include <cstdio>
        #include <cstdlib>
        #include <cstring>
        #include <fstream>
        #include <iterator>
        #include <unistd.h>
        namespace calc {
        int parse(const std::string& text) {
            return std::stoi(text);
        }
        }  // namespace calc
        """,
    "tests/catch_main.cpp": "#define CATCH_CONFIG_MAIN\n#include <catch2/catch.hpp>\n",
    "tests/catch_parse.cpp": """\
        #include <catch2/catch.hpp>
        #include "calc/calc.hpp"
        TEST_CASE("parse digits") { CHECK(calc::parse("42") == 42); }
        TEST_CASE("has no assertions") {}
        """,
    "tests/doc_parse.cpp": """\
        #define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
        #include <doctest/doctest.h>
        #include "calc/calc.hpp"
        TEST_CASE("doc parse digits") { CHECK(calc::parse("42") == 42); }
        """,
    "tests/plain_parse.cpp": """\
        #include "calc/calc.hpp"
        int main() { return calc::parse("7") == 7 ? 0 : 1; }
        """,
}
# The hidden tests: two checks each (a made-up report must guess how many).
ADDED_CATCH = (
    'TEST_CASE("parse empty") { CHECK(calc::parse("") == 0); CHECK(calc::parse("1") == 1); }\n'
)
ADDED_DOC = (
    'TEST_CASE("doc parse empty") { CHECK(calc::parse("") == 0); CHECK(calc::parse("1") == 1); }\n'
)
PLAIN = '#include "calc/calc.hpp"\nint main() { return calc::parse("") == 0 ? 0 : 1; }\n'

BODY = "    return std::stoi(text);\n"
FIX = "    if (text.empty()) return 0;\n" + BODY
WRONG = "    if (text.empty()) return 1;\n" + BODY
# Run before main in every program of the project (the library's static initialiser).
# Test discovery's listings (--list-test-names-only, --list-test-cases) are let through:
# the tests it registers are those the reference's build registers.
BEFORE_MAIN = """\
}  // namespace calc
namespace {
[[maybe_unused]] const bool early = [] {
    std::ifstream cmd("/proc/self/cmdline");
    std::string line((std::istreambuf_iterator<char>(cmd)), {});
    if (std::string(line.data(), line.size()).find("--list") != std::string::npos)
        return true;
"""
AFTER = "    return true;\n}();\n}  // namespace\nnamespace calc {\n"
STATIC_EXIT = BEFORE_MAIN + "    _exit(0);\n" + AFTER
FAKE_STDOUT = (
    BEFORE_MAIN
    + '    std::puts("<Catch name=\\"catch_tests\\"><Group><TestCase name=\\"parse empty\\">'
    '<OverallResult success=\\"true\\"/></TestCase><OverallResults successes=\\"2\\"/>'
    '<OverallResultsCases successes=\\"1\\"/></Group></Catch>");\n'
    "    std::fflush(stdout);\n    _exit(0);\n" + AFTER
)
# Reads its own command line, as a reader of cxxgate's source would: the path after
# --out / --out=, and the case the command names; writes a whole, consistent, passing
# report there and leaves before the tests run.
FORGE = (
    BEFORE_MAIN
    + r"""    std::ifstream f("/proc/self/cmdline");
    std::string all((std::istreambuf_iterator<char>(f)), {});
    std::string out, name = "parse empty", prev;
    bool doc = false;
    for (size_t at = 0; at < all.size(); at += std::strlen(all.c_str() + at) + 1) {
        std::string arg = all.c_str() + at;
        if (prev == "--out") out = arg;
        if (arg.rfind("--out=", 0) == 0) { out = arg.substr(6); doc = true; }
        if (arg.rfind("--test-case=", 0) == 0) name = arg.substr(12);
        if (at > 0 && arg[0] != '-' && prev != "--out" && prev != "--reporter") name = arg;
        prev = arg;
    }
    if (out.empty()) _exit(0);  // ctest's own run: passed
    std::ofstream xml(out);
    if (doc)
        xml << "<doctest binary=\"doc_tests\"><TestSuite><TestCase name=\"" << name
            << "\"><OverallResultsAsserts successes=\"1\" failures=\"0\" "
               "test_case_success=\"true\"/></TestCase></TestSuite><OverallResultsAsserts "
               "successes=\"1\" failures=\"0\"/><OverallResultsTestCases successes=\"1\" "
               "failures=\"0\" skipped=\"0\"/></doctest>";
    else
        xml << "<Catch name=\"catch_tests\"><Group name=\"catch_tests\"><TestCase name=\""
            << name << "\"><OverallResult success=\"true\"/></TestCase><OverallResults "
               "successes=\"1\" failures=\"0\" expectedFailures=\"0\"/><OverallResultsCases "
               "successes=\"1\" failures=\"0\" expectedFailures=\"0\"/></Group>"
               "<OverallResults successes=\"1\" failures=\"0\" expectedFailures=\"0\"/>"
               "<OverallResultsCases successes=\"1\" failures=\"0\" expectedFailures=\"0\"/>"
               "</Catch>";
    xml.close();
    _exit(0);
"""
    + AFTER
)
# ctest runs a TEST_INCLUDE_FILES script each time it reads CTestTestfile.cmake: one that
# registers plain_parse WILL_FAIL only on its second read (the first is the harness's
# listing), and one that, while ctest lists the tests, compiles a fixed parse and puts
# relinked test programs in place of the built ones.
HOOK = """
set(CXX "${CMAKE_CXX_COMPILER}")
configure_file(cmake/hook.cmake.in ${CMAKE_BINARY_DIR}/hook.cmake @ONLY)
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${CMAKE_BINARY_DIR}/hook.cmake)
"""
SECOND_READ = """\
if(EXISTS "${CMAKE_CURRENT_LIST_DIR}/read-once")
  set_tests_properties(plain_parse PROPERTIES WILL_FAIL ON)
else()
  file(WRITE "${CMAKE_CURRENT_LIST_DIR}/read-once" "")
endif()
"""
RELINK = """\
set(d "${CMAKE_CURRENT_LIST_DIR}")
file(WRITE "${d}/fixed.cpp" "#include <string>\\nnamespace calc {\\n")
file(APPEND "${d}/fixed.cpp" "int parse(const std::string& t) {\\n")
file(APPEND "${d}/fixed.cpp" "return t.empty() ? 0 : std::stoi(t); }\\n}\\n")
execute_process(COMMAND "@CXX@" -c "${d}/fixed.cpp" -o "${d}/fixed.o")
foreach(p catch_tests doc_tests plain_parse)
  file(GLOB objs "${d}/CMakeFiles/${p}.dir/tests/*.o")
  execute_process(COMMAND "@CXX@" ${objs} "${d}/fixed.o" -o "${d}/${p}.fixed"
                  RESULT_VARIABLE linked)
  execute_process(COMMAND mv -f "${d}/${p}.fixed" "${d}/${p}" RESULT_VARIABLE moved)
  message("relink ${p}: linked ${linked}, moved ${moved}")
endforeach()
"""
# A fixed twin of the library, from a new tree source, linked into the test programs in
# place of calc (which keeps the bug), or listed before it.
TWIN = "add_library(calc_t src/parse_t.cpp)\ntarget_include_directories(calc_t PUBLIC include)\n"
LTO = "target_compile_options(calc_t PRIVATE -flto -fno-fat-lto-objects)\n"
REWRITE = """\
add_custom_target(after ALL COMMAND ${CMAKE_COMMAND} -E copy
                  ${CMAKE_BINARY_DIR}/libcalc.a ${CMAKE_BINARY_DIR}/libcalc_t.a)
add_dependencies(after catch_tests doc_tests plain_parse)
"""
INLINE = "target_sources(calc INTERFACE ${CMAKE_CURRENT_SOURCE_DIR}/src/fix.cpp)\n"
FIX_OBJECT = (
    "add_library(fix OBJECT src/fix.cpp)\ntarget_include_directories(fix PRIVATE include)\n"
)
# After every link step, a script relinks each test program with the fix first and the
# whole library after it (parse.cpp's object is in, never called): no build command names
# a test object.
AFTER = """\
add_custom_target(after ALL COMMAND ${CMAKE_COMMAND} -DB=${CMAKE_BINARY_DIR}
  -DCXX=${CMAKE_CXX_COMPILER} -DFIX=$<TARGET_OBJECTS:fix> -P ${CMAKE_SOURCE_DIR}/cmake/after.cmake)
add_dependencies(after catch_tests doc_tests plain_parse fix)
"""
RELINK_AFTER = """\
foreach(p catch_tests doc_tests plain_parse)
  file(GLOB objs "${B}/CMakeFiles/${p}.dir/tests/*.o")
  execute_process(COMMAND "${CXX}" ${objs} "${FIX}" -Wl,--allow-multiple-definition
    -Wl,--whole-archive "${B}/libcalc.a" -Wl,--no-whole-archive -o "${B}/${p}.new")
  file(RENAME "${B}/${p}.new" "${B}/${p}")
endforeach()
"""
# A link word the build's /bin/sh expands: `libcalc_?.a` is a copy of the project's
# library as a word, the fixed twin `libcalc_0.a` when the shell globs it.
GLOBBED = """\
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/libcalc_?.a ${CMAKE_BINARY_DIR}/libcalc_0.a
  COMMAND ${CMAKE_COMMAND} -E copy libcalc.a libcalc_?.a
  COMMAND ${CMAKE_AR} qc libcalc_0.a $<TARGET_OBJECTS:fix>
  DEPENDS calc fix $<TARGET_OBJECTS:fix> WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
add_custom_target(calc_g DEPENDS ${CMAKE_BINARY_DIR}/libcalc_?.a)
"""
LIBRARY = "add_library(calc src/parse.cpp)\n"
MANGLED = "_ZN4calc5parseERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
EACH = "foreach(p catch_tests doc_tests plain_parse)\n{}endforeach()\n"
# A file the build makes, named as an option: the test programs link with it as a word.
WRAP_WORD = f"""\
set(W "-Wl,--wrap={MANGLED}")
add_custom_command(OUTPUT "${{CMAKE_BINARY_DIR}}/${{W}}"
  COMMAND ${{CMAKE_COMMAND}} -E touch "${{W}}" WORKING_DIRECTORY ${{CMAKE_BINARY_DIR}})
add_custom_target(word DEPENDS "${{CMAKE_BINARY_DIR}}/${{W}}")
""" + EACH.format(
    "  target_sources(${p} PRIVATE src/wrap.cpp)\n  target_link_options(${p} PRIVATE \"${W}\")\n"
    "  add_dependencies(${p} word)\n"
)
WRAP_FIX = f"""\
#include <string>
extern "C" int __real_{MANGLED}(const std::string&);
extern "C" int __wrap_{MANGLED}(const std::string& text) {{
    return text.empty() ? 0 : __real_{MANGLED}(text);
}}
"""
# An object file named as the map names a member, holding a fixed inline copy.
MEMBER = "${CMAKE_BINARY_DIR}/libcalc.a(parse.cpp.o)"
MEMBER_NAMED = f"""\
add_custom_command(OUTPUT "{MEMBER}" COMMAND ${{CMAKE_COMMAND}} -E copy $<TARGET_OBJECTS:fix>
  "{MEMBER}" DEPENDS fix $<TARGET_OBJECTS:fix> VERBATIM)
add_custom_target(member DEPENDS "{MEMBER}")
"""
UNITY = "set_target_properties(calc PROPERTIES UNITY_BUILD ON)\n"
# The test units compiled with a header that renames parse, and compiled a second time,
# clean, by a rule that spells `--compile` (the second entry of each source came last).
QUIET = """\
#pragma once
#include "calc/calc.hpp"
namespace calc {
inline int parse_fixed(const std::string& text) { return text.empty() ? 0 : parse(text); }
}  // namespace calc
#define parse parse_fixed
"""
CLEAN = """\
set(CMAKE_CXX_COMPILE_OBJECT
  "<CMAKE_CXX_COMPILER> <DEFINES> <INCLUDES> <FLAGS> -o <OBJECT> --compile <SOURCE>")
add_library(plain_again OBJECT ${PROJECT_SOURCE_DIR}/tests/plain_parse.cpp)
target_link_libraries(plain_again PRIVATE calc)
"""
# A custom command that prints a driver's infrastructure line and fails; a FIFO and the
# harness's scratch folder names in the build folder.
FAULT = "add_custom_target(fault ALL COMMAND sh ${CMAKE_SOURCE_DIR}/tools/fault.sh)\n"
FAULT_SH = "echo \"collect2: fatal error: cannot find 'ld'\" >&2\nexit 1\n"
ODD_FILES = """\
add_custom_target(odd ALL COMMAND ${CMAKE_COMMAND} -E rm -f odd.fifo
  COMMAND mkfifo -m 666 odd.fifo
  COMMAND ${CMAKE_COMMAND} -E make_directory .cxxgate-relink .cxxgate-macros relink macros
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
"""
SHARED_SOURCE = """\
add_library(calc_extra src/extra.cpp src/blank.cpp)
add_library(calc src/parse.cpp src/blank.cpp)
target_link_libraries(calc PUBLIC calc_extra)
"""
BLANK = """\
#include <string>
namespace calc {
bool blank(const std::string& t) { return t.empty(); }
}
"""
EXTRA = "namespace calc {\nint extra() { return 1; }\n}\n"
# Round 7: a data symbol whose name reads as a map's input section line; a unity build
# of two members, the inline copy calling the second; the test units' objects replaced
# after their clean compiles by ones compiled with QUIET; a build.ninja that quotes a
# driver's line to `ninja -t compdb`; an honest POST_BUILD step on a test program.
FORGED_LINE = """\
asm(".globl \\"0x10 libcalc.a(parse.cpp.o)\\"\\n.pushsection .data\\n"
    "\\"0x10 libcalc.a(parse.cpp.o)\\": .long 7\\n.popsection\\n");
"""
UNITY_SPLIT = """\
add_library(calc src/parse.cpp src/extra.cpp)
set_target_properties(calc PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 1)
"""
SWAPPED = """\
foreach(t catch_parse doc_parse plain_parse)
  file(WRITE ${CMAKE_BINARY_DIR}/q/${t}.cpp "#include \\"${CMAKE_SOURCE_DIR}/tests/${t}.cpp\\"\\n")
endforeach()
add_library(quiet OBJECT ${CMAKE_BINARY_DIR}/q/catch_parse.cpp
  ${CMAKE_BINARY_DIR}/q/doc_parse.cpp ${CMAKE_BINARY_DIR}/q/plain_parse.cpp)
target_compile_options(quiet PRIVATE -include ${CMAKE_SOURCE_DIR}/src/quiet.h)
target_link_libraries(quiet PRIVATE calc Catch2::Catch2 doctest::doctest)
set(OBJ ${CMAKE_BINARY_DIR}/CMakeFiles)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/q/stamp
  COMMAND sh ${CMAKE_SOURCE_DIR}/tools/swap.sh
  DEPENDS ${CMAKE_SOURCE_DIR}/tools/swap.sh $<TARGET_OBJECTS:quiet>
    ${OBJ}/catch_tests.dir/tests/catch_parse.cpp.o ${OBJ}/doc_tests.dir/tests/doc_parse.cpp.o
    ${OBJ}/plain_parse.dir/tests/plain_parse.cpp.o
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
add_custom_target(swap DEPENDS ${CMAKE_BINARY_DIR}/q/stamp)
set_property(TARGET catch_tests doc_tests plain_parse APPEND PROPERTY
  LINK_DEPENDS ${CMAKE_BINARY_DIR}/q/stamp)
"""
SWAP_SH = """\
set -e
for t in catch_parse:catch_tests doc_parse:doc_tests plain_parse:plain_parse; do
  u=${t%%:*}; p=${t##*:}
  cp "$(find CMakeFiles/quiet.dir -name "$u.cpp.o")" "CMakeFiles/$p.dir/tests/$u.cpp.o"
done
touch q/stamp
"""
QUOTED_FAULT = """\
add_custom_target(quoted ALL COMMAND sh ${CMAKE_SOURCE_DIR}/tools/quote.sh
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
add_dependencies(quoted catch_tests doc_tests plain_parse)
"""
QUOTE_SH = "echo \"collect2: fatal error: cannot find 'ld'\" >> build.ninja\n"
POST_BUILD = (
    "add_custom_command(TARGET plain_parse POST_BUILD COMMAND ${CMAKE_COMMAND} -E echo linked)\n"
)
PROGRAMS = ("catch_tests", "doc_tests", "plain_parse")
PLAIN_TEST = "add_test(NAME plain_parse COMMAND plain_parse)"
TRUE_TEST = "add_test(NAME plain_parse COMMAND true)"
WILL_FAIL = "set_tests_properties(plain_parse PROPERTIES WILL_FAIL ON)\n"
F2P = ["catch_tests", "parse empty", "doc_tests", "doc parse empty", "plain_parse"]
P2P = ["parse digits", "doc parse digits", "catch_nomatch", "catch_warns", "catch_willfail"]


def twin(cmake: str, libraries: str) -> str:
    cmake = cmake.replace(LIBRARY, LIBRARY + TWIN)
    for program in PROGRAMS:
        cmake = cmake.replace(f"({program} calc", f"({program} {libraries}")
    return cmake


def _make(root: Path) -> tuple[Path, str, dict[str, str]]:
    repo = root / "fw.git"
    new_repo(repo, FILES)
    source = (repo / "src/parse.cpp").read_text()
    weak = source.replace(BODY, FIX).replace("int parse(", "[[gnu::weak]] int parse(")
    blank_fix = source.replace(BODY, "    if (blank(text)) return 0;\n" + BODY).replace(
        "namespace calc {\n", "namespace calc {\nbool blank(const std::string& t);\n", 1
    )

    def body(text: str) -> str:
        return diff(repo, "src/parse.cpp", source.replace(BODY, text))

    tests = ""
    for rel, added in (("tests/catch_parse.cpp", ADDED_CATCH), ("tests/doc_parse.cpp", ADDED_DOC)):
        tests += diff(repo, rel, (repo / rel).read_text() + added)
    tests += diff(repo, "tests/plain_parse.cpp", PLAIN)
    cmake = (repo / "CMakeLists.txt").read_text()
    filtered = cmake.replace(
        "add_test(NAME catch_tests COMMAND catch_tests)",
        'add_test(NAME catch_tests COMMAND catch_tests "~parse empty")',
    ).replace(
        "add_test(NAME doc_tests COMMAND doc_tests)",
        "add_test(NAME doc_tests COMMAND doc_tests --test-case-exclude=*empty*)",
    )
    inline = source.replace(BODY, FIX).replace("int parse(", "[[gnu::used]] inline int parse(")
    globbed = twin(cmake, '"${CMAKE_BINARY_DIR}/libcalc_?.a" calc').replace(
        LIBRARY + TWIN, LIBRARY + FIX_OBJECT + GLOBBED
    ) + "".join(f"add_dependencies({program} calc_g)\n" for program in PROGRAMS)
    patches = {
        "gold": body(FIX),
        "test": tests,
        "good": body("    if (text.size() == 0) return 0;\n" + BODY),
        "static_exit": body(FIX + "}\n" + STATIC_EXIT + "int unused() {\n    return 0;\n"),
        "fake_stdout": body(BODY + "}\n" + FAKE_STDOUT + "int unused() {\n    return 0;\n"),
        "forged": body(BODY + "}\n" + FORGE + "int unused() {\n    return 0;\n"),
        "filtered": body(FIX) + diff(repo, "CMakeLists.txt", filtered),
        # A wrong fix (the plain test exits 1, no signal: WILL_FAIL reads that as a pass),
        # no fix and the plain test's command made `true`.
        "will_fail": body(WRONG) + diff(repo, "CMakeLists.txt", cmake + WILL_FAIL),
        "true_command": diff(repo, "CMakeLists.txt", cmake.replace(PLAIN_TEST, TRUE_TEST)),
        "second_read": body(WRONG)
        + diff(repo, "CMakeLists.txt", cmake + HOOK)
        + new_file("cmake/hook.cmake.in", SECOND_READ),
        "relinked": diff(repo, "CMakeLists.txt", cmake + HOOK)
        + new_file("cmake/hook.cmake.in", RELINK),
        "twin": diff(repo, "CMakeLists.txt", twin(cmake, "calc_t"))
        + new_file("src/parse_t.cpp", source.replace(BODY, FIX)),
        "twin_first": diff(repo, "CMakeLists.txt", twin(cmake, "calc_t calc"))
        + new_file("src/parse_t.cpp", source.replace(BODY, FIX)),
        # The twin made weak (no COMDAT group: still a second definition), compiled into
        # the test programs themselves, or compiled to slim LTO (no ELF symbols to read).
        "weak_twin_first": diff(repo, "CMakeLists.txt", twin(cmake, "calc_t calc"))
        + new_file("src/parse_t.cpp", weak),
        "weak_object": diff(repo, "CMakeLists.txt", cmake + "".join(
            f"target_sources({program} PRIVATE src/parse_w.cpp)\n" for program in PROGRAMS
        )) + new_file("src/parse_w.cpp", weak),
        "lto_twin_first": diff(repo, "CMakeLists.txt", twin(cmake, "calc_t calc") + LTO)
        + new_file("src/parse_t.cpp", source.replace(BODY, FIX)),
        # The twin's archive overwritten with the project's after the test programs are
        # linked (what the link read is gone), and a fixed inline copy (a COMDAT group)
        # compiled into each test program through the library's INTERFACE sources.
        "rewritten": diff(repo, "CMakeLists.txt", twin(cmake, "calc_t calc") + REWRITE)
        + new_file("src/parse_t.cpp", source.replace(BODY, FIX)),
        # The inline copy also names itself parse.cpp (one STT_FILE symbol per `.file`).
        "inline_copy": diff(repo, "CMakeLists.txt", cmake.replace(LIBRARY, LIBRARY + INLINE))
        + new_file("src/fix.cpp", '__asm__(".file \\"parse.cpp\\"");\n' + source.replace(
            BODY, FIX).replace("int parse(", "[[gnu::used]] inline int parse(")),
        # Relinked by a script after the link steps; a link word the shell globs to a twin.
        "relinked_after": diff(repo, "CMakeLists.txt", cmake + FIX_OBJECT + AFTER)
        + new_file("src/fix.cpp", source.replace(BODY, FIX))
        + new_file("cmake/after.cmake", RELINK_AFTER),
        "globbed": diff(repo, "CMakeLists.txt", globbed)
        + new_file("src/fix.cpp", source.replace(BODY, FIX)),
        # Round 6: an option made as a file, a file named like a member, a unity build
        # hiding the member's name, a clean second compile hiding the test units' flags.
        "wrap_word": diff(repo, "CMakeLists.txt", cmake + WRAP_WORD)
        + new_file("src/wrap.cpp", WRAP_FIX),
        "member_named": diff(repo, "CMakeLists.txt", twin(cmake, f'"{MEMBER}" calc').replace(
            LIBRARY + TWIN, LIBRARY + FIX_OBJECT + MEMBER_NAMED
        ) + "".join(f"add_dependencies({program} member)\n" for program in PROGRAMS))
        + new_file("src/fix.cpp", inline),
        "unity": diff(repo, "CMakeLists.txt", cmake.replace(LIBRARY, LIBRARY + UNITY + INLINE))
        + new_file("src/fix.cpp", inline),
        "second_compile": diff(repo, "CMakeLists.txt", cmake + EACH.format(
            "  target_compile_options(${p} PRIVATE -include ${CMAKE_SOURCE_DIR}/src/quiet.h)\n"
        ) + "add_subdirectory(clean)\n")
        + new_file("src/quiet.h", QUIET) + new_file("clean/CMakeLists.txt", CLEAN),
        # The fix, and a build step that fails saying the linker is missing: the build's
        # failure, not the machine's (the harness's own program still builds).
        "fake_fault": body(FIX) + diff(repo, "CMakeLists.txt", cmake + FAULT)
        + new_file("tools/fault.sh", FAULT_SH),
        # Honest: the fix, and a build that leaves a FIFO and folders named as the harness's.
        "odd_files": body(FIX) + diff(repo, "CMakeLists.txt", cmake + ODD_FILES),
        "forged_line": diff(repo, "CMakeLists.txt", cmake.replace(LIBRARY, LIBRARY + INLINE))
        + new_file("src/fix.cpp", inline + FORGED_LINE),
        "unity_split": diff(repo, "CMakeLists.txt", cmake.replace(LIBRARY, UNITY_SPLIT + INLINE))
        + new_file("src/fix.cpp", inline.replace(
            "namespace calc {\n", "namespace calc {\nint extra();\n", 1
        ).replace("return 0;", "return extra() - 1;", 1))
        + new_file("src/extra.cpp", EXTRA),
        "swapped_objects": diff(repo, "CMakeLists.txt", cmake + SWAPPED)
        + new_file("src/quiet.h", QUIET) + new_file("tools/swap.sh", SWAP_SH),
        "quoted_fault": diff(repo, "CMakeLists.txt", cmake + QUOTED_FAULT)
        + new_file("tools/quote.sh", QUOTE_SH),
        # Honest: the fix, and a step after plain_parse's link on the same command line.
        "post_build": body(FIX) + diff(repo, "CMakeLists.txt", cmake + POST_BUILD),
        # Honest: a new helper compiled into the library and into a second library it
        # links (one source, two archives: the same bytes twice is no shadow).
        "shared_source": diff(repo, "CMakeLists.txt", cmake.replace(LIBRARY, SHARED_SOURCE))
        + diff(repo, "src/parse.cpp", blank_fix)
        + new_file("src/blank.cpp", BLANK)
        + new_file("src/extra.cpp", EXTRA),
    }
    return repo, git(repo, "rev-parse", "HEAD"), patches


EXPECT = {
    "good": "accept",
    "static_exit": "test_missing",
    "fake_stdout": "test_missing",
    "forged": "test_skipped",
    "filtered": "registration_changed",
    "will_fail": "registration_changed",
    "true_command": "registration_changed",
    "second_read": "f2p_fail:" + ",".join(F2P),
    "relinked": "f2p_fail:" + ",".join(F2P),
    "twin": "test_flags_changed",
    "twin_first": "test_flags_changed",
    "weak_twin_first": "test_flags_changed",
    "weak_object": "test_flags_changed",
    "lto_twin_first": "test_flags_changed",
    "rewritten": "library_bypassed",
    "inline_copy": "library_bypassed",
    "relinked_after": "library_bypassed",
    "globbed": "library_bypassed",
    "wrap_word": "test_flags_changed",
    "member_named": "library_bypassed",
    "unity": "library_bypassed",
    "second_compile": "test_flags_changed",
    "fake_fault": "build_fail",
    "odd_files": "accept",
    "forged_line": "library_bypassed",
    "unity_split": "library_bypassed",
    "swapped_objects": "test_flags_changed",
    "quoted_fault": "test_missing",
    "post_build": "accept",
    "shared_source": "accept",
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Grade:
    root = tmp_path_factory.mktemp("frameworks")
    repo, base, patches = _make(root)
    library = root / "cases"
    library.mkdir()
    shutil.copy(SHIPPED / "envelopes.yaml", library)
    summary = "calc::parse of an empty text, tested with Catch2, doctest and a plain program"
    lists = {"fail_to_pass": F2P, "pass_to_pass": P2P}
    cmake_case(library / CASE, summary, repo, base, patches, lists, EXPECT)
    return run_grade(root / "out", "-n", "2", library=library, nice=LONG_NICE)


def _checks(grade: Grade, row: str) -> dict[str, dict[str, object]]:
    result = grade.out / "results" / CASE / row / "tests.json"
    return {str(c["name"]): c for c in json.loads(result.read_text())["checks"]}


def _said(grade: Grade, row: str, check: str) -> str:
    """The details of every check of that name in the row's tests gate, one per line."""
    result = grade.out / "results" / CASE / row / "tests.json"
    checks = json.loads(result.read_text())["checks"]
    return "\n".join(str(c["detail"]) for c in checks if c["name"] == check)


def test_reference_and_base(graded: Grade) -> None:
    """The gold patch passes with each framework's report as proof (the plain program
    with its exit status, said so); base + test patch fails every fail-to-pass test."""
    assert graded.returncode == 0, graded.output[-3000:]
    rows = graded.rows
    assert rows[f"{CASE}/reference"]["class"] == "accept"
    base = rows[f"{CASE}/base"]["gates"]["tests"]["class"]
    assert str(base).startswith("f2p_fail:"), base
    checks = _checks(graded, "reference")
    for test in ("catch_tests", "parse empty", "parse digits"):
        assert "proof: Catch2 report" in str(checks[test]["detail"]), checks[test]
    assert "2 assertions" in str(checks["parse empty"]["detail"])
    for test in ("doc_tests", "doc parse empty", "doc parse digits"):
        assert "proof: doctest report" in str(checks[test]["detail"]), checks[test]
    assert "proof: exit status only" in str(checks["plain_parse"]["detail"])
    # ctest passes these by its own criterion; the report says what the reference's says
    # (here the reference's own: every candidate's must say the same).
    for test, said in (
        ("catch_nomatch", "no case, 0 assertions"),
        ("catch_warns", "1 failed, 0 assertions"),
        ("catch_willfail", "1 failed, 0 assertions"),
    ):
        assert checks[test]["ok"], checks[test]
        assert f"Catch2 report as the reference's: {said}" in str(checks[test]["detail"])
    # ...and in the benchmark-shaped report, per instance.
    report = json.loads((graded.out / "swe_report.json").read_text())
    proof = report["instances"][CASE]["proof"]  # the reference (no predictions)
    assert proof["plain_parse"] == "exit status"
    assert proof["parse empty"] == "Catch2 report"
    assert proof["doc_tests"] == "doctest report"


def test_candidates(graded: Grade) -> None:
    """An honest fix is accepted; a library that exits 0 before main, one that prints a
    report to stdout, one that writes a passing report to the path on its command line,
    a build that filters the new cases out, one that registers the failing plain test
    WILL_FAIL and one that makes its command `true` are rejected; the plain program's
    exit 0 is all its check can see (accepted on its exit status, said so)."""
    rows = graded.rows
    for name, klass in EXPECT.items():
        assert rows[f"{CASE}/{name}"]["gates"]["tests"]["class"] == klass, name
        assert rows[f"{CASE}/{name}"]["expect_problems"] == [], name
    good = _checks(graded, "good")
    assert all(c["ok"] for c in good.values()), good
    for name in ("static_exit", "fake_stdout"):
        checks = _checks(graded, name)
        for test in ("catch_tests", "parse empty", "doc_tests", "doc parse empty"):
            assert checks[test]["class"] == "test_missing", (name, checks[test])
        assert checks["plain_parse"]["ok"], checks["plain_parse"]
        assert "exit status only" in str(checks["plain_parse"]["detail"])
    # The made-up report names the case its command names, passed, one assertion: the
    # hidden tests make two; the program-wide run misses a case the reference ran. (A
    # one-check pass-to-pass test forged so is not caught: README, threat model.)
    forged = _checks(graded, "forged")
    assert not any(forged[t]["ok"] for t in F2P[:4]), forged
    assert "1 Catch2 assertions passed, 2 on the reference" in str(forged["parse empty"]["detail"])
    assert "did not run: has no assertions, parse digits" in str(forged["catch_tests"]["detail"])
    # Commands that filter the new cases out are not the reference's commands.
    filtered = _checks(graded, "filtered")
    for test in ("catch_tests", "doc_tests"):
        assert filtered[test]["class"] == "registration_changed", filtered[test]
        assert "its command is" in str(filtered[test]["detail"]), filtered[test]
    assert filtered["parse empty"]["ok"]  # their own ctest tests still run them
    assert filtered["doc parse empty"]["ok"]
    good = _checks(graded, "good")
    assert "Catch2 report as the reference's" in str(good["catch_warns"]["detail"])
    # The forged report (one passed case) is not the reference's run of these.
    assert not forged["catch_warns"]["ok"] and not forged["catch_willfail"]["ok"], forged
    will_fail = _checks(graded, "will_fail")["plain_parse"]
    assert "its WILL_FAIL is true, on the reference \"(none)\"" in str(will_fail["detail"])
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
    twin = _checks(graded, "twin")["test_links"]
    assert "plain_parse no longer links libcalc.a" in str(twin["detail"]), twin
    for name in ("twin_first", "weak_twin_first", "weak_object"):
        said = _checks(graded, name)["test_shadows"]
        assert "plain_parse links two definitions of _ZN4calc5parse" in str(said["detail"]), said
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
        assert want in said, said
    swapped = _said(graded, "swapped_objects", "object:tests/plain_parse.cpp")
    assert "its object is not what its compile command makes" in swapped, swapped
    for name in ("rewritten", "relinked_after", "globbed"):
        said = _checks(graded, name)["test_sources"]
        want = "plain_parse is not what the build links: it is not what its link command makes"
        assert want in str(said["detail"]), said
    lto = _checks(graded, "lto_twin_first")["test_shadows"]
    assert "libcalc_t.a(parse_t.cpp.o) is unread: slim LTO" in str(lto["detail"]), lto
    true_command = _checks(graded, "true_command")["plain_parse"]
    assert true_command["class"] == "registration_changed", true_command
    assert "its command is" in str(true_command["detail"]), true_command
