"""Where a test program holds the library's code from, and what its test units' options
define: red-team round 8's cheats against the tests gate of a CMake case, each a
known-bad patch here. The project is plain C++ (a library and two plain test programs),
so every tree builds in seconds; Catch2 and doctest are tests/gates/test_frameworks.py's.

Every cheat leaves the library's bug in place (a program linking the row's own libcalc.a
still throws on an empty text) and makes the tests run a fix from somewhere else: an
object only the test programs link, reached through the library's own `parse` made an
inline (COMDAT) function, a weak hook the library calls, a hidden or untyped copy; or a
header wrapper that only options of the test units switch on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import SHIPPED, Grade, run_grade
from repos import cmake_case, diff, new_file, new_repo

CASE = "le"
LIBRARY = "add_library(calc src/parse.cpp)\n"
CMAKE = (
    "cmake_minimum_required(VERSION 3.16)\nproject(le CXX)\n" + LIBRARY
    + "target_include_directories(calc PUBLIC include)\nenable_testing()\n"
    + "".join(
        f"add_executable({p} tests/{p}.cpp)\ntarget_link_libraries({p} calc)\n"
        f"add_test(NAME {p} COMMAND {p})\n"
        for p in ("plain_parse", "plain_digits")
    )
)  # fmt: skip
MAIN = '#include "calc/calc.hpp"\nint main() {{ return {}; }}\n'
PARSE = """\
#include "calc/calc.hpp"
namespace calc {
int parse(const std::string& text) {
    return std::stoi(text);
}
}  // namespace calc
"""
FILES = {
    "CMakeLists.txt": CMAKE,
    "include/calc/calc.hpp": (
        "#pragma once\n#include <string>\nnamespace calc {\n"
        "int parse(const std::string& text);  // 0 for an empty text\n}  // namespace calc\n"
    ),
    "src/parse.cpp": PARSE,
    "tests/plain_parse.cpp": MAIN.format('calc::parse("7") != 7'),
    "tests/plain_digits.cpp": MAIN.format('calc::parse("42") != 42'),
}
BODY = "    return std::stoi(text);\n"
FIX = "    if (text.empty()) return 0;\n" + BODY
MANGLED = "_ZN4calc5parseERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
IN_PROGRAMS = "".join(
    f"target_sources({p} PRIVATE src/fix.cpp)\n" for p in ("plain_parse", "plain_digits")
)
# The library's parse made an inline function ([[gnu::used]]: still in libcalc.a, weak, in
# a COMDAT group); `anchor` keeps its member in the link; a strong fixed parse in the tests.
COMDAT_LIB = "int anchor() { return 0; }\n[[gnu::used]] inline int parse("
STRONG_FIX = """\
#include <string>
namespace calc {
int anchor();
int parse(const std::string& text) { return text.empty() ? anchor() : std::stoi(text); }
}  // namespace calc
"""
# The library calls a weak hook when a program defines one; only the test programs do.
HOOK_LIB = (
    "[[gnu::weak]] int parse_hook(const std::string& text);\n"
    "int parse(const std::string& text) {\n    if (parse_hook) return parse_hook(text);\n"
)
HOOK = """\
#include <string>
namespace calc {
int parse_hook(const std::string& text) { return text.empty() ? 0 : std::stoi(text); }
}  // namespace calc
"""
# A unity build of two members; the tests get an inline copy (INTERFACE sources) that calls
# the second, hidden (a local symbol in the program) or an untyped assembler label.
UNITY = (
    "add_library(calc src/parse.cpp src/extra.cpp)\n"
    "set_target_properties(calc PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 1)\n"
    "target_sources(calc INTERFACE ${CMAKE_CURRENT_SOURCE_DIR}/src/fix.cpp)\n"
)
EXTRA = "namespace calc {\nint extra() { return 1; }\n}  // namespace calc\n"
HIDDEN = """\
#include <string>
namespace calc {
int extra();
[[gnu::used, gnu::visibility("hidden")]] inline int parse(const std::string& text) {
    return text.empty() ? extra() - 1 : std::stoi(text);
}
}  // namespace calc
"""
UNTYPED = f"""\
#include <string>
namespace calc {{
int extra();
}}  // namespace calc
extern "C" int le_fixed(const std::string& t) {{
    return t.empty() ? calc::extra() - 1 : std::stoi(t);
}}
asm(".section .text.{MANGLED},\\"axG\\",@progbits,{MANGLED},comdat\\n"
    ".weak {MANGLED}\\n{MANGLED}:\\n\\tjmp le_fixed\\n.previous\\n");
"""
# A wrapper in the public header that only options of the test programs switch on.
GUARDED = """\
#if {cond}
namespace calc {{
inline int parse_fixed(const std::string& text) {{ return text.empty() ? 0 : parse(text); }}
}}  // namespace calc
#define parse parse_fixed
#endif
"""
PUBLIC_DEFINE = "target_compile_definitions(calc PUBLIC LE_EMPTY_IS_ZERO=1)\n"
TEST_OPTION = "".join(
    f"target_compile_options({p} PRIVATE {{0}})\n" for p in ("plain_parse", "plain_digits")
)
# Round 9. The library's parse made inline, calling a buggy function; the tests' inline
# copy has the same bytes and calls a fixed one (only a relocation differs).
RELOC_LIB = """\
#include "calc/calc.hpp"
namespace calc {
int anchor() { return 0; }
int parse_lib(const std::string& text) { return std::stoi(text); }
[[gnu::used]] inline int parse(const std::string& text) { return parse_lib(text); }
}  // namespace calc
"""

RELOC_FIX = """\
#include <string>
namespace calc {
int anchor();
int parse_fix(const std::string& text) { return text.empty() ? anchor() : std::stoi(text); }
[[gnu::used]] inline int parse(const std::string& text) { return parse_fix(text); }
}  // namespace calc
"""

# The library reads a hook through the linker's __stop_ symbol of a section that only
# an object of the test programs fills.
STOP_LIB = """\
#include "calc/calc.hpp"
namespace calc {
using hook_t = int (*)(const std::string&);
}  // namespace calc
extern "C" {
[[gnu::weak]] extern const calc::hook_t __stop_le_hooks[];
}
namespace calc {
int parse(const std::string& text) {
    if (__stop_le_hooks) return __stop_le_hooks[-1](text);
    return std::stoi(text);
}
}  // namespace calc
"""

STOP_FIX = """\
#include <string>
namespace calc {
using hook_t = int (*)(const std::string&);
int parse_raw(const std::string& text) { return text.empty() ? 0 : std::stoi(text); }
[[gnu::used, gnu::section("le_hooks")]] const hook_t le_hook = &parse_raw;
}  // namespace calc
"""

# A test registered first forges ctest's JUnit file, and a helper it leaves takes ctest's
# own stdout (pidfd_getfd: ctest runs under the tests' uid) and writes `Passed` lines and a
# dangling byte into it while plain_parse (slowed down, still wrong) runs.
SLOW_BODY = "    if (text.empty()) usleep(300000);\n" + BODY
FORGE_FIRST = "add_test(NAME zz_forge COMMAND sh ${CMAKE_SOURCE_DIR}/tools/forge.sh)\n"
INTERLEAVE_SH = r"""
mkdir -p /reports/junit.xml.tmp/keep
{
  echo '<?xml version="1.0" encoding="UTF-8"?>'
  echo '<testsuite name="le" tests="3" failures="0" disabled="0" skipped="0">'
  for t in plain_parse plain_digits zz_forge; do
    echo "<testcase name=\"$t\" classname=\"$t\" time=\"0.01\" status=\"run\"></testcase>"
  done
  echo '</testsuite>'
} > /reports/junit.xml
# ctest's stdout pipe cannot be opened through /proc (the pipe belongs to the harness's
# uid), but ctest runs as the tests' uid, dumpable: pidfd_getfd copies its fd 1.
/usr/bin/python3 - "$PPID" </dev/null >/dev/null 2>&1 <<'PY' &
import ctypes, os, sys, time
ctest = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.syscall(438, os.pidfd_open(ctest), 1, 0)  # pidfd_getfd(pidfd, 1, 0)
lines = b"".join(
    b"\n%d/3 Test #%d: %s .......   Passed    0.01 sec" % (i, i, n)
    for i, n in enumerate((b"zz_forge", b"plain_parse", b"plain_digits"), 1)
) + b"\nx"
for _ in range(300):
    try:
        os.kill(ctest, 0)
        os.write(fd, lines)
    except OSError:
        break
    time.sleep(0.02)
PY
exit 0
"""

# The header's inline parse answers 0 only where an enum is one byte: -fshort-enums on
# the test programs defines no macro.
SHORT_HEADER = """\
#pragma once
#include <string>
namespace calc {
int parse_text(const std::string& text);
enum parse_probe { parse_probe_v };
// 0 for an empty text
inline int parse(const std::string& text) {
    return sizeof(parse_probe) == 1 && text.empty() ? 0 : parse_text(text);
}
}  // namespace calc
"""
# Honest: the library at C++20 (its tests at C++17), the fix building a std::string: a
# standard template's copy in a test unit differs in bytes from the library's.
CXX20 = "target_compile_features(calc PRIVATE cxx_std_20)\n"
CXX20_BODY = '    return std::stoi(text.empty() ? std::string("0") : text);\n'
# A test the patch registers writes a passing JUnit file where ctest writes its own, and
# makes ctest's `junit.xml.tmp` a folder so ctest cannot; or writes one that does not parse.
FORGE_TEST = "add_test(NAME zz_forge COMMAND sh ${CMAKE_SOURCE_DIR}/tools/forge.sh)\n"
FORGE_SH = """\
mkdir -p /reports/junit.xml.tmp/keep
{
  echo '<?xml version="1.0" encoding="UTF-8"?>'
  echo '<testsuite name="le" tests="3" failures="0" disabled="0" skipped="0">'
  for t in plain_parse plain_digits zz_forge; do
    echo "<testcase name=\\"$t\\" classname=\\"$t\\" time=\\"0.01\\" status=\\"run\\"></testcase>"
  done
  echo '</testsuite>'
} > /reports/junit.xml
"""
GARBAGE_SH = (
    "mkdir -p /reports/junit.xml.tmp/keep\necho '<testsuite><testcase name=' > /reports/junit.xml\n"
)
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
}


def _patches(repo: Path) -> dict[str, str]:
    header = FILES["include/calc/calc.hpp"]

    def parse(text: str) -> str:
        return diff(repo, "src/parse.cpp", text)

    def cmake(text: str) -> str:
        return diff(repo, "CMakeLists.txt", text)

    def guarded(cond: str, option: str) -> str:
        return diff(repo, "include/calc/calc.hpp", header + GUARDED.format(cond=cond)) + cmake(
            CMAKE + TEST_OPTION.format(option)
        )

    unity = cmake(CMAKE.replace(LIBRARY, UNITY)) + new_file("src/extra.cpp", EXTRA)
    return {
        "gold": parse(PARSE.replace(BODY, FIX)),
        "test": diff(repo, "tests/plain_parse.cpp", MAIN.format('calc::parse("") != 0')),
        "good": parse(PARSE.replace(BODY, "    if (text.size() == 0) return 0;\n" + BODY)),
        "comdat_object": parse(PARSE.replace("int parse(", COMDAT_LIB, 1))
        + cmake(CMAKE + IN_PROGRAMS) + new_file("src/fix.cpp", STRONG_FIX),
        "weak_hook": parse(PARSE.replace("int parse(const std::string& text) {\n", HOOK_LIB, 1))
        + cmake(CMAKE + IN_PROGRAMS) + new_file("src/fix.cpp", HOOK),
        "unity_hidden": unity + new_file("src/fix.cpp", HIDDEN),
        "unity_notype": unity + new_file("src/fix.cpp", UNTYPED),
        "long_define": guarded("defined(LE_TESTING)", "--define-macro=LE_TESTING"),
        "assert_flag": guarded("#le(testing)", "-Ale=testing"),
        "unsigned_char": guarded("defined(__CHAR_UNSIGNED__)", "-funsigned-char"),
        "comdat_reloc": parse(RELOC_LIB) + cmake(CMAKE + IN_PROGRAMS)
        + new_file("src/fix.cpp", RELOC_FIX),
        "stop_hook": parse(STOP_LIB) + cmake(CMAKE + IN_PROGRAMS)
        + new_file("src/fix.cpp", STOP_FIX),
        "ctest_interleave": parse(
            PARSE.replace("#include", "#include <unistd.h>\n#include", 1).replace(BODY, SLOW_BODY)
        ) + cmake(CMAKE.replace("add_executable", FORGE_FIRST + "add_executable", 1))
        + new_file("tools/forge.sh", INTERLEAVE_SH),
        "short_enums": diff(repo, "include/calc/calc.hpp", SHORT_HEADER)
        + parse(PARSE.replace("int parse(", "int parse_text("))
        + cmake(CMAKE + TEST_OPTION.format("-fshort-enums")),
        "cxx20": parse(PARSE.replace(BODY, CXX20_BODY))
        + cmake(CMAKE.replace(LIBRARY, LIBRARY + CXX20)),
        "junit_forge": cmake(CMAKE + FORGE_TEST) + new_file("tools/forge.sh", FORGE_SH),
        "junit_garbage": cmake(CMAKE + FORGE_TEST) + new_file("tools/forge.sh", GARBAGE_SH),
        "public_define": parse(PARSE.replace(BODY, f"#if LE_EMPTY_IS_ZERO\n{FIX}#endif\n{BODY}"))
        + cmake(CMAKE.replace(LIBRARY, LIBRARY + PUBLIC_DEFINE)),
    }


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
    cmake_case(library / CASE, summary, repo, base, _patches(repo), lists, EXPECT)
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
