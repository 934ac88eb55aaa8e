"""Gate `census`: the shipped case `witness` (read from the shared cold grade) reaches every
class, and the parser's edge cases on strings: multi-line calls, comments, strings,
Catch2 sections, wrappers and pasted names."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import PROJECT, SHIPPED, Grade, exclusive

from cxxgate.gates.census import census, survive, witness
from cxxgate.gates.census.census import Allow
from cxxgate.gates.census.witness_data import FileInventory
from cxxgate.gates.shared import cppsource
from cxxgate.runs.scan import ScanResult
from cxxgate.toolchain.envelope import Envelope, identify

# Every class of the gate, each reached by a shipped patch of `witness`.
REACHED = {
    "witness/reference": "accept",
    "witness/good_refactor": "accept",
    "witness/rename": "accept",
    "witness/allowlisted": "accept",
    "witness/commented_out": "witness_removed",
    "witness/if0": "witness_disabled",
    "witness/ifdef_never": "witness_disabled",
    "witness/ndebug": "witness_disabled",
    "witness/empty_macro": "witness_disabled",
    "witness/weakened": "witness_weakened",
    "witness/wrapper": "grammar_miss",
    "witness/early_return": "witness_disabled",
    "witness/attic": "witness_removed",
    "witness/dead_branch": "witness_disabled",
    "witness/rename_function": "accept",
    "witness/quiet_header": "witness_disabled",
    "witness/public_macro": "witness_redefined",
    "witness/helper_specialised": "witness_redefined",
    "witness/guarded_specialised": "witness_redefined",
    "witness/guarded_shortcut": "witness_unexecuted",
    "witness/guarded_overload": "witness_redefined",
    "witness/guarded_fabs": "witness_redefined",
    "witness/scratch_header": "witness_redefined",
    "witness/compiler_branch": "witness_redefined",
    "witness/gnuc_branch": "witness_redefined",
    "witness/compiler_define": "witness_redefined",
    "witness/system_link": "witness_redefined",
    "witness/gcc_include": "witness_redefined",
    "witness/gnuc_include": "witness_redefined",
    "witness/clang_define": "witness_redefined",
    "witness/macro_arg_branch": "witness_redefined",
    "witness/backslash_header": "witness_redefined",
    "witness/raw_comment_linemarker": "witness_redefined",
    "witness/framework_macro": "witness_redefined",
    "witness/sizeof": "witness_unexecuted",
    "witness/short_circuit": "witness_unexecuted",
    "witness/local_struct": "witness_unexecuted",
    "witness/odr_near": "witness_redefined",
    "witness/odr_all": "witness_redefined",
    "witness/assert_fail": "witness_redefined",
    "witness/fixture": "witness_weakened",
    "witness/fixture_body": "witness_weakened",
    "witness/helper_move": "accept",
    "witness/split_test": "accept",
    "witness/param_rename": "accept",
    "witness/bug_only": "suite_red",
    "witness/exit_dtor": "suite_red",
    "witness/exit_inside": "suite_red",
    "witness/main_twice": "suite_red",
    "witness/atexit_defer": "witness_removed",
    "witness/fork_child": "witness_removed",
    "witness/odr_test": "witness_redefined",
    "witness/string_label": "accept",
    "witness/version_string": "accept",
    "witness/rename_grow": "accept",
}


def _result(grade: Grade, row: str) -> dict[str, object]:
    case, patch = row.split("/")
    data: dict[str, object] = json.loads(
        (grade.out / "results" / case / patch / "census.json").read_text()
    )
    return data


def _findings(grade: Grade, row: str) -> list[tuple[str, str, int, str]]:
    found = _result(grade, row)["findings"]
    assert isinstance(found, list)
    return [(f["rule"], f["path"], f["line"], f["message"]) for f in found]


@pytest.mark.parametrize("row", sorted(REACHED))
def test_class_reached(shipped: Grade, row: str) -> None:
    got = shipped.gate(row, "census")
    assert got["class"] == REACHED[row], got
    assert not shipped.rows[row].get("expect_problems")


def test_every_class_is_reached() -> None:
    assert set(REACHED.values()) == {*census.SEVERITY, "accept"}


def test_code_only_the_compiler_kept_is_named(shipped: Grade) -> None:
    """Where g++'s and libclang's preprocessors did otherwise with a tree line, the line is
    named with its file, text and reason (witness.unseen): `#define RELAXED eq`, which g++
    kept in a block libclang skipped, and `#define RELAXED relaxed_unused`, which libclang
    took and g++ did not. The reference has none."""
    found = [f for f in _findings(shipped, "witness/compiler_define") if "parser" in f[3]]
    assert sorted((r, p, line) for r, p, line, _ in found) == [
        ("witness_redefined", "tests/stats_test.cpp", 13),
        ("witness_redefined", "tests/stats_test.cpp", 15),
    ], found
    said = " ".join(message for *_, message in found)
    assert "'#define RELAXED eq' is compiled, and skipped by the census's parser" in said
    assert "'#define RELAXED relaxed_unused' is a directive the census's parser took" in said
    assert _result(shipped, "witness/reference")["findings"] == []


def test_findings_carry_file_and_line(shipped: Grade) -> None:
    weakened = _findings(shipped, "witness/weakened")
    assert [(r, p, line) for r, p, line, _ in weakened] == [
        ("witness_weakened", "tests/stats_test.cpp", 14),
        ("witness_weakened", "tests/stats_test.cpp", 24),
    ]
    assert "EXPECT_EQ(mean(four), 2.5) became EXPECT_TRUE(true)" in weakened[0][3]
    assert weakened[1][3].endswith("became EXPECT_NEAR(stddev(four), 1.118034, 0.5)")
    # The comment still holds the assertion's text: a regex census would count it.
    removed = _findings(shipped, "witness/commented_out")
    assert removed == [
        (
            "witness_removed",
            "tests/stats_test.cpp",
            20,
            "EXPECT_EQ(median(four), 2.5) in Stats.Median removed (reference line)",
        )
    ]


def test_disabled_witnesses_and_the_macros_that_disable_them(shipped: Grade) -> None:
    ndebug = _findings(shipped, "witness/ndebug")
    assert ("witness_disabled", "tests/stats_test.cpp", 26) in [f[:3] for f in ndebug]
    assert any(f[3].startswith("#define NDEBUG") and f[2] == 1 for f in ndebug)
    emptied = _findings(shipped, "witness/empty_macro")
    messages = [f[3] for f in emptied]
    assert any(m.startswith("#undef EXPECT_EQ") for m in messages)
    assert any(m.startswith("#define EXPECT_EQ(a, b)((void)0)") for m in messages)
    assert sum("gone after preprocessing" in m for m in messages) == 4
    # One finding for the test under #if 0, not one per assertion inside it.
    assert _findings(shipped, "witness/if0") == [
        (
            "witness_disabled",
            "tests/stats_test.cpp",
            19,
            "TEST Stats.Median is in the source but gone after preprocessing",
        )
    ]
    section = [f[:3] for f in _findings(shipped, "witness/ifdef_never")]
    assert section[0] == ("witness_disabled", "tests/stats_catch.cpp", 10)
    # The statements the preprocessor dropped named the data a live check reads, so that
    # check reads other data too (less severe: the row stays witness_disabled).
    assert section[1:] in ([], [("witness_weakened", "tests/stats_catch.cpp", 8)])
    assert shipped.gate("witness/ifdef_never", "census")["class"] == "witness_disabled"


def test_renames_and_allowlisted_removals_are_listed(shipped: Grade) -> None:
    rename = _result(shipped, "witness/rename")
    assert "renamed: TEST Stats.Median -> TEST Stats.MedianOfOddAndEvenCounts" in str(
        rename["evidence"]
    )
    assert rename["summary"] == "22/22 witnesses kept; 1 renamed"
    function = _result(shipped, "witness/rename_function")
    assert "renamed: check_two -> check_two_value (tests/stats_plain.cpp)" in str(
        function["evidence"]
    )
    allowed = _result(shipped, "witness/allowlisted")
    assert "approved removal: TEST Stats.LegacyRounding" in str(allowed["evidence"])
    wrapper = _findings(shipped, "witness/wrapper")
    assert ("grammar_miss", "tests/stats_test.cpp", 11) in [f[:3] for f in wrapper]


def test_warm_grade_scans_nothing(shipped: Grade) -> None:
    """Parses are scans: on the shared folder, doit itself says every scan of the two
    source-gate cases is up to date (`list --status`: U), so a warm grade parses nothing.
    (`list` writes no verdict, so asking about two cases leaves the folder whole.)"""
    cmd = [sys.executable, "-m", "doit", "-f", str(PROJECT / "dodo.py"), "list", "--all"]
    cmd += ["--status", f"cases={SHIPPED}", f"out={shipped.out}", "case=witness,answer_key"]
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    with exclusive(shipped):
        listed = subprocess.run(
            cmd, capture_output=True, text=True, cwd=PROJECT, env=env, check=True, timeout=300
        ).stdout.splitlines()
    scans = [line.split()[:2] for line in listed if " scan:" in line]
    assert len(scans) >= 15  # witness: 13 trees; answer_key: 4 trees' sources, the oracle
    assert {status for status, _ in scans} == {"U"}, scans


# ---- the parser, on strings ----------------------------------------------------------

NAMES = witness.Names.of(["GOLDEN"], ["CHECK_LIMIT"])


def _read(text: str) -> FileInventory:
    return witness.read("t.cpp", text.encode(), NAMES)


def test_multi_line_call_has_the_one_line_fingerprint() -> None:
    one = _read("TEST(A, B) { EXPECT_NEAR(f(x), 1.5, 1e-3); }").witnesses
    many = _read(
        "TEST(A, B) {\n  EXPECT_NEAR(f(x),  // the value\n"
        "              1.5, /* tolerance */\n              1e-3);\n}"
    ).witnesses
    assert [w.fp for w in one] == [w.fp for w in many]
    assert many[1].text == "EXPECT_NEAR(f(x), 1.5, 1e-3)" and many[1].test == "A.B"


def test_comments_and_strings_hold_no_witness() -> None:
    inv = _read(
        "// EXPECT_EQ(a, b);\n/* ASSERT_TRUE(x); */\n"
        'const char* s = "REQUIRE(x)";\nauto r = R"(CHECK(y))";\nchar c = \'"\';\n'
    )
    assert inv.witnesses == [] and inv.misses == []


def test_catch2_tests_and_sections_nest() -> None:
    inv = _read(
        'TEST_CASE("vectors", "[v]") {\n  REQUIRE(v.empty());\n'
        '  SECTION("push") {\n    CHECK(v.size() == 1);\n  }\n}\n'
    )
    got = [(w.kind, w.macro, w.name or w.test) for w in inv.witnesses]
    assert got == [
        ("test", "TEST_CASE", "vectors"),
        ("check", "REQUIRE", "vectors"),
        ("test", "SECTION", "vectors/push"),
        ("check", "CHECK", "vectors/push"),
    ]


def test_kinds_prefixes_and_enclosing_functions() -> None:
    inv = _read(
        "#include <cassert>\nstatic_assert(sizeof(int) == 4);\n"
        "void helper() { assert(ok()); GOLDEN_MATCH(out, 7); }\n"
        "TEST_F(Fixture, Works) { ASSERT_TRUE(ready()); }\n"
        "int limit = CHECK_LIMIT;\n"
    )
    got = [(w.kind, w.macro, w.test) for w in inv.witnesses]
    assert got == [
        ("static_assert", "static_assert", ""),
        ("assert", "assert", "fn:helper"),
        ("check", "GOLDEN_MATCH", "fn:helper"),
        ("test", "TEST_F", ""),
        ("check", "ASSERT_TRUE", "Fixture.Works"),
    ]
    assert inv.misses == []  # CHECK_LIMIT is declared not a witness


def test_what_cannot_be_keyed_is_a_miss() -> None:
    inv = _read(
        "#define SAME(a, b) EXPECT_EQ(a, b)\n"
        "#define PASTE(x) EXPECT_##x\n"
        "void f() { APPLY(EXPECT_TRUE, ok); auto p = &ASSERT_EQ; }\n"
        'TEST_CASE("no body");\n'
    )
    got = [(m.name, m.line) for m in inv.misses]
    assert got == [("EXPECT_EQ", 1), ("EXPECT_", 2), ("EXPECT_TRUE", 3), ("ASSERT_EQ", 3),
                   ("TEST_CASE", 4)]  # fmt: skip


def test_control_flow_around_a_check_is_part_of_what_is_compared() -> None:
    inv = _read(
        "void f() {\n  if (false) { EXPECT_EQ(a, b); } else EXPECT_TRUE(c);\n"
        "  for (int i = 0; i < 3; ++i) EXPECT_TRUE(i);\n  auto l = [&] { EXPECT_EQ(x, 1); };\n"
        "  switch (k) { case 2: EXPECT_TRUE(z); break; }\n  EXPECT_TRUE(plain);\n}\n"
    )
    assert [w.guard for w in inv.witnesses] == [
        "if_statement:if(false)",
        "if_statement:if(false) / else_clause:else",
        "for_statement:for(int i = 0;i<3;++i)",
        "lambda_expression:[&]",
        "switch_statement:switch(k) / case_statement:case 2:",
        "",
    ]
    wrapped = BASE | {
        "t.cpp": BASE["t.cpp"].replace("EXPECT_EQ(f(1), 2);", "[&] { EXPECT_EQ(f(1), 2); };")
    }
    assert _classes(wrapped) == ["witness_disabled"]


def test_witness_macro_definitions_are_listed() -> None:
    inv = _read(
        "#define NDEBUG\n#undef EXPECT_EQ\n#define EXPECT_EQ(a, b) ((void)0)\n"
        "#define REQUIRE(x) EXPECT_TRUE(x)\n"
    )
    assert [(m.name, m.kind) for m in inv.macros] == [
        ("NDEBUG", "define"),
        ("EXPECT_EQ", "undef"),
        ("EXPECT_EQ", "define"),
        ("REQUIRE", "define"),
    ]
    assert inv.misses == []  # a witness macro may expand to another


def test_markers_go_where_the_scan_says() -> None:
    src = b"TEST(A, B) { EXPECT_EQ(f(x), 2); }"
    inv = witness.read("t.cpp", src, witness.Names())
    out = survive.marked(src, [witness.spot(w) for w in inv.witnesses], "t")
    assert out == (
        b" cxxgate_t_s0 TEST(A, B)  cxxgate_t_e0 { cxxgate_t_m0   cxxgate_t_s1 "
        b"EXPECT_EQ( cxxgate_t_m1 f(x) cxxgate_t_c1 , 2) cxxgate_t_e1 ; }"
    )
    assert cppsource.has_identifier(b"x = cxxgate_t_live1 + 1;", "cxxgate_t_live1")
    assert not cppsource.has_identifier(b'puts("cxxgate_t_live1");', "cxxgate_t_live1")


# ---- the comparison, on inventories --------------------------------------------------


def _inventory(files: dict[str, str]) -> dict[str, object]:
    witnesses, macros, misses = [], [], []
    for name, text in files.items():
        inv = witness.read(name, text.encode(), witness.Names())
        for w in inv.witnesses:
            w.live = True
        witnesses += [w.__dict__ for w in inv.witnesses]
        macros += [m.__dict__ for m in inv.macros]
        misses += [m.__dict__ for m in inv.misses]
    return {"witnesses": witnesses, "macros": macros, "misses": misses}


BASE = {
    "t.cpp": "TEST(S, Keep) { EXPECT_EQ(f(1), 2); }\nTEST(S, Old) { EXPECT_EQ(g(), 3); }\n",
    "s.cpp": "static_assert(sizeof(long) == 8);\n",
}


def _classes(files: dict[str, str], allow: list[Allow] | None = None) -> list[str]:
    result = census.compare(_inventory(BASE), _inventory(files), allow or [])
    return [klass for klass, _ in result.findings]


def test_a_renamed_test_with_an_emptied_body_is_a_removal() -> None:
    renamed = BASE | {"t.cpp": BASE["t.cpp"].replace("S, Old", "S, New")}
    assert _classes(renamed) == []
    emptied = BASE | {
        "t.cpp": BASE["t.cpp"].replace("S, Old) { EXPECT_EQ(g(), 3); }", "S, New) {}")
    }
    assert _classes(emptied) == ["witness_removed"]


def test_moves_between_files_are_refactors() -> None:
    moved = {"t.cpp": BASE["t.cpp"] + BASE["s.cpp"], "s.cpp": ""}
    assert _classes(moved) == []
    test_moved = {"u.cpp": BASE["t.cpp"], "s.cpp": BASE["s.cpp"]}
    assert _classes(test_moved) == []


def test_allowlist_names_a_test_or_a_macro_in_it() -> None:
    gone = BASE | {"t.cpp": "TEST(S, Keep) { EXPECT_EQ(f(1), 2); }\n"}
    assert _classes(gone) == ["witness_removed"]
    assert _classes(gone, [Allow(test="S.Old", reason="retired with g() in task 7")]) == []
    by_macro = Allow(test="S.Keep", macro="EXPECT_EQ", reason="f is rewritten, see task 9")
    weakened = BASE | {"t.cpp": BASE["t.cpp"].replace("f(1), 2", "f(1), 3")}
    assert _classes(weakened) == ["witness_weakened"]
    assert _classes(weakened, [by_macro]) == []


def test_weakened_in_place() -> None:
    weakened = BASE | {"t.cpp": BASE["t.cpp"].replace("EXPECT_EQ(f(1), 2)", "EXPECT_TRUE(true)")}
    result = census.compare(_inventory(BASE), _inventory(weakened), [])
    assert [(k, f.message) for k, f in result.findings] == [
        ("witness_weakened", "EXPECT_EQ(f(1), 2) became EXPECT_TRUE(true)")
    ]


def test_census_module_has_no_line_patterns() -> None:
    """The gate reads C++ with a parser: none of its modules compiles a regex."""
    for module in (
        "census/census", "census/witness", "census/survive", "shared/cppsource",
        "census/callees", "census/executed",
    ):  # fmt: skip
        text = (PROJECT / "gates" / f"{module}.py").read_text()
        assert "import re\n" not in text, module


def test_scan_asks_the_preprocessor(tmp_path: Path) -> None:
    """The scan function as the scan task calls it: a real g++ -E says which witness
    survives, in a scratch folder it removes."""
    tree = tmp_path / "trees" / "k"
    tree.mkdir(parents=True)
    (tree / "t.cpp").write_text(
        "#if 0\nstatic_assert(1 == 1);\n#endif\nstatic_assert(2 == 2);\n"
        "#define NDEBUG\n#include <cassert>\nvoid f() { assert(3 == 3); }\n"
    )
    tc = identify("gcc", "g++", "gcc")
    env = Envelope("gcc", tc, "c++20", ("-Wall", "-Werror"), (), (), ())
    params = {
        "prefixes": [],
        "ignore": [],
        "files": ["*"],
        "include_dirs": [],
        "compile_seconds": 60,
        "envelope": survive.envelope_params(env),
        "clang": {"std": "c++20", "include_dirs": [], "defines": [], "system_dirs": []},
        "program": None,
    }
    data = witness.scan(tree, params)
    assert [(w["macro"], w["live"]) for w in data["witnesses"]] == [
        ("static_assert", False),
        ("static_assert", True),
        ("assert", False),
    ]
    assert data["preprocess"] == {"t.cpp": ""}
    assert not any((tmp_path / "scans" / "scratch").iterdir())
    (tree / "t.cpp").write_text('#include "missing.hpp"\nstatic_assert(true);\n')
    broken = witness.scan(tree, params)
    assert broken["witnesses"][0]["live"] is None
    assert "missing.hpp" in broken["preprocess"]["t.cpp"]


def test_the_framework_is_not_writable(shipped: Grade) -> None:
    """A report() that never fails would hide every witness: the case keeps its test
    framework outside the writable set, so that patch stops at intake."""
    assert shipped.rows["witness/edit_framework"]["class"] == "path_violation"


def test_an_allowance_that_names_nothing_fails_every_row() -> None:
    ref = ScanResult("s", "census inventory", "ok", "", _inventory(BASE))
    typo = Allow(test="S.Olde", reason="a typo approves nothing at all")
    checks = census._unused_allowances(ref, [typo, Allow(test="S.Old", reason="retired in task 7")])
    assert [(c.name, c.klass) for c in checks] == [("allow_removed[0]", "grammar_miss")]


# ---- expansion, bindings and execution, on a small tree with real g++ ------------------

FRAMEWORK = """#pragma once
#include <cstdlib>
namespace fw {
using Fn = void (*)();
int add(const char* name, Fn fn);
bool report(bool ok, const char* what);
template <class A, class B>
bool eq(const A& a, const B& b, const char* what) { return report(std::abs(a - b) == 0, what); }
}  // namespace fw
#define TEST(s, n) static void s##_##n(); static int s##_##n##_r = ::fw::add(#s "." #n, s##_##n); \\
  static void s##_##n()
#define EXPECT_EQ(a, b) ::fw::eq((a), (b), #a " == " #b)
"""
MAIN = """#include "fw.hpp"
#include <cstdio>
namespace { fw::Fn tests[64]; int count = 0; int failed = 0; }
int fw::add(const char*, Fn fn) { tests[count++] = fn; return count; }
bool fw::report(bool ok, const char* what) {
  if (!ok) { std::printf("failed: %s\\n", what); ++failed; }
  return ok;
}
int main() { for (int i = 0; i < count; ++i) tests[i](); return failed != 0; }
"""
TESTS = """#include "fw.hpp"
#include "helpers.hpp"
static void check_two() { EXPECT_EQ(twice(1), 2); }
TEST(T, Two) {
  check_two();
  check_four();
}
TEST(T, Three) {
  EXPECT_EQ(twice(3), 6);
  EXPECT_EQ(twice(4), 8);
}
static_assert(sizeof(int) >= 2);
"""
LIB = "#pragma once\ninline int twice(int x) { return 2 * x; }\n"
# Checks in a header: a helper the tests call, and an assert in a constexpr function that
# a static_assert evaluates (its marker must stay a constant expression).
HELPERS = """#pragma once
#include <cassert>
#include "fw.hpp"
#include "lib.hpp"
inline void check_four() { EXPECT_EQ(twice(2), 4); }
constexpr int half(int x) {
  assert(x % 2 == 0);
  return x / 2;
}
static_assert(half(4) == 2);
"""
FORGER = """
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
static int forged = [] {
  const char* fds = std::getenv("CXXGATE_REPORT_FDS");
  int fd = fds ? std::atoi(std::strchr(fds, ',') ? std::strchr(fds, ',') + 1 : fds) : 1;
  for (int i = 0; i < 8; ++i) {
    char line[32];
    int n = std::snprintf(line, sizeof line, "%d\\n", i);
    (void)!write(fd, line, n);
    std::printf("%s", line);
    std::fprintf(stderr, "%s", line);
  }
  return 0;
}();
"""
SMALL = {
    "fw.hpp": FRAMEWORK,
    "main.cpp": MAIN,
    "t.cpp": TESTS,
    "helpers.hpp": HELPERS,
    "include/lib.hpp": LIB,
}

# Each variant of the small tree, and the classes the census must give it.
VARIANTS: dict[str, tuple[dict[str, str], list[str]]] = {
    "renamed_function": (
        {"t.cpp": TESTS.replace("check_two", "check_two_value")},
        [],
    ),
    # A header outside `files:` (sub/) that the test reads: its EXPECT_EQ is another one.
    "quiet_header": (
        {
            "sub/quiet.hpp": "#undef EXPECT_EQ\n#define EXPECT_EQ(a, b) ((void)(a), true)\n",
            "t.cpp": TESTS.replace(
                '#include "helpers.hpp"', '#include "helpers.hpp"\n#include "sub/quiet.hpp"'
            ),
        },
        ["witness_disabled"] * 2 + ["witness_redefined"] * 3,  # #undef, #define; 3 checks
    ),
    # No witness name anywhere: a public header rewrites the checked call.
    "public_macro": (
        {"include/lib.hpp": LIB + "#define twice(x) (2 * (x))\n"},
        # its 4 checks; t.cpp and helpers.hpp, unchanged, read otherwise (helpers.hpp in
        # both units that read it)
        ["witness_redefined"] * 7,
    ),
    "specialised": (
        {
            "t.cpp": TESTS.replace(
                '#include "helpers.hpp"',
                "template <> bool fw::eq<int, int>(const int&, const int&, const char*) "
                '{ return true; }\n#include "helpers.hpp"',
            )
        },
        # the 3 checks of t.cpp, and helpers.hpp's as t.cpp sees it
        ["witness_redefined"] * 4,
    ),
    # The same, in the helper's own file: the declaration it binds to is another one.
    "specialised_in_place": (
        {
            "fw.hpp": FRAMEWORK.replace(
                "#define TEST",
                "template <> inline bool fw::eq<int, int>(const int&, const int&, const char*) "
                "{ return true; }\n#define TEST",
            )
        },
        ["witness_redefined"] * 4,  # helpers.hpp's check too
    ),
    "sizeof": (
        {
            "t.cpp": TESTS.replace(
                "EXPECT_EQ(twice(3), 6);", "(void)sizeof(EXPECT_EQ(twice(3), 6));"
            )
        },
        ["witness_unexecuted"],
    ),
    # The same, and a static initialiser writes id lines wherever a report could go: the
    # report descriptor (it is named in the environment), stdout, stderr.
    "sizeof_forged": (
        {
            "t.cpp": TESTS.replace(
                "EXPECT_EQ(twice(3), 6);", "(void)sizeof(EXPECT_EQ(twice(3), 6));"
            )
            + FORGER
        },
        ["witness_unexecuted"],
    ),
    "short_circuit": (
        {"t.cpp": TESTS.replace("EXPECT_EQ(twice(4), 8);", "twice(0) && EXPECT_EQ(twice(4), 8);")},
        ["witness_unexecuted"],
    ),
    "uncalled_member": (
        {
            "t.cpp": TESTS.replace(
                "  EXPECT_EQ(twice(3), 6);\n",
                "  struct L { static void f() { EXPECT_EQ(twice(3), 6); } };\n",
            )
        },
        ["witness_unexecuted"],
    ),
    # A macro above the framework's header rewrites the helper's body, not the witnesses.
    "framework_macro": (
        {"t.cpp": "#include <cstdlib>\n#define abs(x) abs(0)\n" + TESTS},
        ["witness_redefined"],
    ),
    # The same macro, with the tests moved to a new unit: no unit of the reference reads
    # fw.hpp that way.
    "framework_macro_moved": (
        {"t.cpp": "", "u.cpp": "#include <cstdlib>\n#define abs(x) abs(0)\n" + TESTS},
        ["witness_redefined"],
    ),
    # The static_assert kept only where `__LINE__` is 0, as in the census's expansion view:
    # liveness is the compiler's own view.
    "line_zero": (
        {
            "t.cpp": TESTS.replace(
                "static_assert(sizeof(int) >= 2);",
                "#if __LINE__ == 0\nstatic_assert(sizeof(int) >= 2);\n#endif",
            )
        },
        ["witness_disabled"],
    ),
    # The header's check put under sizeof: headers are marked in the program's tree too.
    "header_sizeof": (
        {
            "helpers.hpp": HELPERS.replace(
                "{ EXPECT_EQ(twice(2), 4); }", "{ (void)sizeof(EXPECT_EQ(twice(2), 4)); }"
            )
        },
        ["witness_unexecuted"],
    ),
    # The header edited (so its code is not compared unit by unit) and, above its include,
    # a macro that rewrites its check and keeps every call: the check as t.cpp sees it.
    "header_context": (
        {
            "helpers.hpp": "// edited\n" + HELPERS,
            "t.cpp": TESTS.replace(
                '#include "helpers.hpp"',
                '#include "lib.hpp"\n#define twice(x) twice(x) * 0 + 4\n'
                '#include "helpers.hpp"\n#undef twice',
            ),
        },
        ["witness_redefined"],
    ),
    # The test's registration dropped: the test and every check in it never run.
    "unregistered": (
        {"t.cpp": TESTS.replace("TEST(T, Three)", "static void never()")},
        ["witness_removed"],
    ),
}


def _small_params() -> dict[str, object]:
    from cxxgate.gates.ledger import ledger

    tc = identify("gcc", "g++", "gcc")
    env = Envelope("gcc", tc, "c++20", ("-O0", "-Wall", "-Werror"), (), (), ())
    return {
        "prefixes": [],
        "ignore": [],
        "files": ["/*.cpp", "/*.hpp", "include/"],  # not sub/: the scan follows what units read
        "include_dirs": ["include"],
        "compile_seconds": 60,
        "envelope": survive.envelope_params(env),
        "clang": {
            "std": "c++20",
            "include_dirs": ["include"],
            "defines": [],
            "system_dirs": list(ledger.system_dirs(tc.path or "g++", "c++20")),
        },
        "program": {
            "units": ["*.cpp"],
            "args": [],
            "sources": [],
            "run_seconds": 10,
            "output_bytes": 1 << 16,
            "memory_mib": 1024,
            "file_mib": 16,
            "processes": 16,
        },
    }


def _small_scan(
    root: Path, name: str, files: dict[str, str], sources: bool = False
) -> dict[str, object]:
    tree = root / "trees" / name
    for rel, text in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    params = _small_params()
    if sources:  # the tests are the top folder's units; src/ is the library
        params["program"] |= {"units": ["/*.cpp"], "sources": ["src/*.cpp"]}  # type: ignore[operator]
    return witness.scan(tree, params)


@pytest.fixture(scope="module")
def small_reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    root = tmp_path_factory.mktemp("small")
    return root, _small_scan(root, "reference", SMALL)


def test_the_reference_program_runs_every_witness(
    small_reference: tuple[Path, dict[str, object]],
) -> None:
    _, ref = small_reference
    assert ref["execution"] == ""
    rows = [(w["text"], w["live"], w["ran"], bool(w["callees"])) for w in ref["witnesses"]]  # type: ignore[attr-defined]
    assert rows == [
        ("EXPECT_EQ(twice(2), 4)", True, True, True),
        ("assert(x%2 == 0)", True, False, False),  # only in a constant expression
        ("static_assert(half(4) == 2);", True, None, True),
        ("EXPECT_EQ(twice(1), 2)", True, True, True),
        ("TEST T.Two", True, True, True),
        ("TEST T.Three", True, True, True),
        ("EXPECT_EQ(twice(3), 6)", True, True, True),
        ("EXPECT_EQ(twice(4), 8)", True, True, True),
        ("static_assert(sizeof(int) >= 2);", True, None, False),
    ]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variants_of_the_small_tree(
    small_reference: tuple[Path, dict[str, object]], variant: str
) -> None:
    root, ref = small_reference
    changes, expected = VARIANTS[variant]
    new = _small_scan(root, variant, SMALL | changes)
    found = census.compare(ref, new, [])
    assert sorted(k for k, _ in found.findings) == sorted(expected), [
        (k, f.message) for k, f in found.findings
    ]
    if variant == "quiet_header":
        assert new["read"] == ["sub/quiet.hpp"]
    if variant == "renamed_function":
        assert found.renames == ["check_two -> check_two_value (t.cpp)"]


# The data a check reads, moved checks, and calls spelt in a check's arguments.
DATA_TESTS = """#include "fw.hpp"
#include "lib.hpp"
static int base = 3;
TEST(D, Base) {
  EXPECT_EQ(twice(base), 6);
  EXPECT_EQ(twice(5), 10);
}
TEST(D, Local) {
  int v = 4;
  EXPECT_EQ(twice(v), 8);
}
"""
DATA = {"fw.hpp": FRAMEWORK, "main.cpp": MAIN, "t.cpp": DATA_TESTS, "include/lib.hpp": LIB}
DATA_VARIANTS: dict[str, tuple[dict[str, str], list[str]]] = {
    # The file-scope data a check reads, changed (with a library bug it hides).
    "file_data": ({"t.cpp": DATA_TESTS.replace("base = 3", "base = 0")}, ["witness_weakened"]),
    # A test's local, changed by an assignment the test gains before its check.
    "local_assigned": (
        {"t.cpp": DATA_TESTS.replace("int v = 4;", "int v = 4;\n  v = 0;")},
        ["witness_weakened"],
    ),
    # The file-scope data written by a static initialiser before any test runs.
    "file_data_written": (
        {
            "t.cpp": DATA_TESTS.replace(
                "TEST(D, Base)",
                "static const int zero = (base = 0);\nTEST(D, Base)",
            )
        },
        ["witness_weakened"],
    ),
    # Behind `base == 0 &&`: never run (the statement also names its data: one finding).
    "short_circuit_data": (
        {
            "t.cpp": DATA_TESTS.replace(
                "  EXPECT_EQ(twice(base), 6);", "  base == 0 && EXPECT_EQ(twice(base), 6);"
            )
        },
        ["witness_unexecuted"],
    ),
    # A check moved, unchanged, into a helper the test calls: it ran, a move.
    "helper_move": (
        {
            "t.cpp": DATA_TESTS.replace(
                "TEST(D, Base) {\n  EXPECT_EQ(twice(base), 6);",
                "static void base_check() { EXPECT_EQ(twice(base), 6); }\n"
                "TEST(D, Base) {\n  base_check();",
            )
        },
        [],
    ),
    # The same helper, never called: not a move.
    "helper_uncalled": (
        {
            "t.cpp": DATA_TESTS.replace(
                "TEST(D, Base) {\n  EXPECT_EQ(twice(base), 6);",
                "[[maybe_unused]] static void base_check() { EXPECT_EQ(twice(base), 6); }\n"
                "TEST(D, Base) {",
            )
        },
        ["witness_removed"],
    ),
    # A test renamed, a check added: its checks moved.
    "rename_grow": (
        {
            "t.cpp": DATA_TESTS.replace(
                "TEST(D, Base) {", "TEST(D, Based) {\n  EXPECT_EQ(twice(0), 0);"
            )
        },
        [],
    ),
    # The same, and one of its checks left out: that one is removed.
    "rename_shrink": (
        {
            "t.cpp": DATA_TESTS.replace("TEST(D, Base) {", "TEST(D, Based) {").replace(
                "  EXPECT_EQ(twice(5), 10);\n", ""
            )
        },
        ["witness_removed"],
    ),
    # A test split in two, each check unchanged.
    "split": (
        {
            "t.cpp": DATA_TESTS.replace(
                "  EXPECT_EQ(twice(5), 10);\n}", "}\nTEST(D, Five) { EXPECT_EQ(twice(5), 10); }"
            )
        },
        [],
    ),
    # A parameter renamed in the library's header: the check's call is keyed by its
    # qualified name and declaring file.
    "param_rename": (
        {"include/lib.hpp": LIB.replace("int x) { return 2 * x;", "int n) { return 2 * n;")},
        [],
    ),
}


@pytest.fixture(scope="module")
def data_reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    root = tmp_path_factory.mktemp("data")
    return root, _small_scan(root, "reference", DATA)


@pytest.mark.parametrize("variant", sorted(DATA_VARIANTS))
def test_data_moves_and_argument_calls(
    data_reference: tuple[Path, dict[str, object]], variant: str
) -> None:
    root, ref = data_reference
    changes, expected = DATA_VARIANTS[variant]
    new = _small_scan(root, variant, DATA | changes)
    found = census.compare(ref, new, [])
    assert sorted(k for k, _ in found.findings) == sorted(expected), [
        (k, f.message) for k, f in found.findings
    ]
    if variant in ("helper_move", "split", "rename_grow"):
        assert found.moves, found.moves


def test_reference_keys_the_data_and_the_argument_calls(
    data_reference: tuple[Path, dict[str, object]],
) -> None:
    _, ref = data_reference
    rows = {w["text"]: (w["data"], w["callees"]) for w in ref["witnesses"]}  # type: ignore[attr-defined]
    data, calls = rows["EXPECT_EQ(twice(base), 6)"]
    assert [d.split(" #")[0] for d in data] == ["data base"]
    assert "twice @ include/lib.hpp" in calls  # the argument's call: name and file only
    assert rows["EXPECT_EQ(twice(5), 10)"][0] == []


# What the linker bound: a definition in a library source replaces what the tests call.
LINKED = DATA | {"src/lib.cpp": '#include "lib.hpp"\nint thrice(int x) { return twice(x) + x; }\n'}
EVIL_EQ = (
    "bool fw::eq<int, int>(const int&, const int&, const char* w) { return fw::report(true, w); }"
)
LINK_VARIANTS: dict[str, tuple[str, list[str]]] = {
    # A strong explicit specialisation replaces the test objects' inline instantiations.
    "strong_specialisation": (f'#include "../fw.hpp"\ntemplate <>\n{EVIL_EQ}\n', ["eq"]),
    # The same, declared weak by hand: the linker meets it first.
    "weak_specialisation": (
        f'#include "../fw.hpp"\ntemplate <>\n__attribute__((weak)) {EVIL_EQ}\n',
        ["eq"],
    ),
    # An ODR-violating inline copy (an explicit instantiation of another body): COMDAT,
    # and the library's object comes first in the link.
    "inline_copy": (
        "namespace fw {\nbool report(bool ok, const char* what);\n"
        "template <class A, class B>\n"
        "bool eq(const A&, const B&, const char* w) { return report(true, w); }\n"
        "template bool eq<int, int>(const int&, const int&, const char*);\n}\n",
        ["eq"],
    ),
    # The runtime's printf replaced for every caller (interposition).
    "interposed": ('extern "C" int printf(const char*, ...) { return 0; }\n', ["printf"]),
    # The library's own inline copies of what the tests use too (same bytes): nothing.
    "honest_copies": (
        '#include "lib.hpp"\nint thrice(int x) { return twice(x) + x; }\n'
        "int (*keep)(int) = &twice;\n",
        [],
    ),
}


@pytest.fixture(scope="module")
def link_reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    root = tmp_path_factory.mktemp("linked")
    return root, _small_scan(root, "reference", LINKED, sources=True)


@pytest.mark.parametrize("variant", sorted(LINK_VARIANTS))
def test_what_the_linker_bound(
    link_reference: tuple[Path, dict[str, object]], variant: str
) -> None:
    from cxxgate.gates.census import linked

    root, ref = link_reference
    assert ref["link"]["held"]["_Z5twicei"] == "comdat"  # type: ignore[index]
    text, expected = LINK_VARIANTS[variant]
    new = _small_scan(root, variant, LINKED | {"src/lib.cpp": text}, sources=True)
    assert new["execution"] == "", new["execution"]  # built, linked and ran
    found = linked.rebound(ref["link"], new["link"])  # type: ignore[arg-type]
    names = sorted("eq" if name.startswith("_ZN2fw2eq") else name for name, _, _ in found)
    assert names == expected, found
    assert all(file == "src/lib.cpp" for _, file, _ in found)
    assert census.compare(ref, new, []).findings == []  # every witness is the reference's


# A test unit of the patch's own, linked first (its name sorts first), holding its own
# copy of the framework's `fw::eq<int, int>` (round 29); and an honest one using the
# framework's.
OWN_COPY = """#include <cstdlib>
namespace fw {
bool report(bool ok, const char* what);
template <class A, class B>
bool eq(const A& a, const B& b, const char* what) { return report(std::abs(a - b) < 2, what); }
}  // namespace fw
bool sane() { return fw::eq(1, 1, "1 == 1"); }
"""
HONEST_COPY = '#include "fw.hpp"\nbool sane() { return fw::eq(1, 1, "1 == 1"); }\n'


@pytest.mark.parametrize("text", [OWN_COPY, HONEST_COPY], ids=["own", "honest"])
def test_a_test_units_own_inline_copy_is_named(
    link_reference: tuple[Path, dict[str, object]], text: str
) -> None:
    from cxxgate.gates.census import linked

    root, ref = link_reference
    name = "own" if text == OWN_COPY else "honest"
    new = _small_scan(root, f"copy_{name}", LINKED | {"aa.cpp": text}, sources=True)
    assert new["execution"] == "", new["execution"]
    found = linked.rebound(ref["link"], new["link"])  # type: ignore[arg-type]
    if text == OWN_COPY:
        assert [(n.startswith("_ZN2fw2eq"), f) for n, f, _ in found] == [(True, "aa.cpp")]
    else:
        assert found == []


def test_a_failing_program_is_suite_red(data_reference: tuple[Path, dict[str, object]]) -> None:
    root, ref = data_reference
    assert ref["exit"] == ""
    bug = {"include/lib.hpp": LIB.replace("2 * x", "2 * x + (x == 5)")}
    new = _small_scan(root, "failing", DATA | bug)
    assert [c.klass for c in census._suite(ref, new)] == ["suite_red"]
    assert census._suite(ref, ref) == []
    assert ref["main"] == "returned 0"


# The same bug, the exit status forged (round 28): by a static destructor after main
# returned 1, and inside main once every witness recorded itself (twice(4) is the last
# check's call).
FORGED_EXITS = {
    "destructor": "#include <cstdlib>\nstruct Q { ~Q() { std::_Exit(0); } } q;\n",
    "inside_main": "#include <cstdlib>\n",
    # main run once more, from a static initialiser, before the tests register (round 29)
    "twice": (
        "#include <cstdlib>\nint main();\n"
        "struct W { int ok = main(); ~W() { if (ok == 0) std::_Exit(0); } };\ninline W warm;\n"
    ),
}


@pytest.mark.parametrize("how", sorted(FORGED_EXITS))
def test_an_exit_status_forged_around_main_is_suite_red(
    data_reference: tuple[Path, dict[str, object]], how: str
) -> None:
    root, ref = data_reference
    body = "2 * x + (x == 5)"
    if how == "inside_main":
        body = "x == 4 ? (std::_Exit(0), 0) : 2 * x + (x == 3)"
    lib = FORGED_EXITS[how] + LIB.replace("2 * x", body).replace("#pragma once\n", "")
    new = _small_scan(root, f"forged_{how}", DATA | {"include/lib.hpp": "#pragma once\n" + lib})
    assert new["exit"] == "" and new["main"] != "returned 0"  # exit 0, but not main's
    assert all(w["ran"] is not False for w in new["witnesses"])  # type: ignore[union-attr]
    checks = census._suite(ref, new)
    assert [c.klass for c in checks] == ["suite_red"]
    assert "exited 0, but its main " in checks[0].detail


# A test's checks moved, unchanged, into a helper the test runs where its failures do not
# reach main's status (round 29): after main returned, or in a forked child.
BASE_END = "  EXPECT_EQ(twice(5), 10);\n}\n"
ELSEWHERE_RUNS = {
    "atexit": "TEST(D, Base) { std::atexit(base_checks); }\n",
    "fork": (
        "TEST(D, Base) {\n  if (fork() == 0) { base_checks(); _exit(0); }\n"
        "  int s = 0;\n  wait(&s);\n}\n"
    ),
}


@pytest.mark.parametrize("how", sorted(ELSEWHERE_RUNS))
def test_checks_run_outside_main_do_not_count(
    data_reference: tuple[Path, dict[str, object]], how: str
) -> None:
    root, ref = data_reference
    tests = "#include <sys/wait.h>\n#include <unistd.h>\n" + DATA_TESTS.replace(
        "TEST(D, Base) {", "static void base_checks() {"
    ).replace(BASE_END, BASE_END + ELSEWHERE_RUNS[how])
    new = _small_scan(root, f"elsewhere_{how}", DATA | {"t.cpp": tests})
    assert new["exit"] == "" and new["main"] == "returned 0"
    ran = {w["text"]: w["ran"] for w in new["witnesses"]}  # type: ignore[union-attr]
    assert ran["EXPECT_EQ(twice(base), 6)"] is False and ran["EXPECT_EQ(twice(5), 10)"] is False
    assert census.compare(ref, new, []).findings


# Library code told apart by the flags the census compiles with (round 30): only there is
# `always_inline` a macro, and -fno-inline defines __NO_INLINE__ (at -O0 the build defines
# it too). The program is refused; an honest always_inline function is not.
AS_BUILT = {
    "ifdef": "#ifdef always_inline\ninline int twice(int x) { return 2 * x; }\n#else\n"
    "inline int twice(int x) { return 2 * x + (x == 5); }\n#endif\n",
    "stringized": "#define S2(x) #x\n#define S(x) S2(x)\n"
    "inline int twice(int x) { return 2 * x + (sizeof(S(always_inline)) == 14 && x == 5); }\n",
    # A name the census's define renames, shadowed there by a local (round 31).
    "identifier": "constexpr int always_inline = 1;\ninline int twice(int x) {\n"
    "  [[maybe_unused]] constexpr int noinline = 0;\n"
    "  return 2 * x + (x == 5) * always_inline;\n}\n",
    # One flag set stops the unit: the census's build would not be the tests' (round 31).
    "error": "#ifdef always_inline\n#error profiling build\n#endif\n"
    "inline int twice(int x) { return 2 * x + (x == 5); }\n",
    "honest": "[[gnu::always_inline]] inline int twice(int x) { return 2 * x; }\n"
    # the clock read: two preprocessor runs may straddle a second (round 31)
    'inline const char* stamp() { return __DATE__ " " __TIME__; }\n',
}


@pytest.mark.parametrize("how", sorted(AS_BUILT))
def test_code_the_census_flags_change_refuses_the_program(
    data_reference: tuple[Path, dict[str, object]], how: str
) -> None:
    root, _ = data_reference
    lib = "#pragma once\n" + AS_BUILT[how]
    new = _small_scan(root, f"as_built_{how}", DATA | {"include/lib.hpp": lib})
    if how == "honest":
        assert new["execution"] == "" and new["main"] == "returned 0", new["execution"]
        return
    if how == "error":
        assert str(new["execution"]).startswith(
            "the test program is refused: t.cpp does not preprocess under the census's"
        ), new["execution"]
        assert "include/lib.hpp:3: error: #error profiling build" in str(new["execution"])
    else:
        assert str(new["execution"]).startswith("the test program is refused: include/lib.hpp:")
        assert "census's compile flags" in str(new["execution"])
    assert all(w["ran"] is None for w in new["witnesses"])  # type: ignore[union-attr]


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the stub is x86-64 assembly")
def test_a_local_symbol_shadowing_the_frameworks_is_named(
    data_reference: tuple[Path, dict[str, object]],
) -> None:
    """A test unit's top-level asm defines a local `fw::report` that returns true: the
    unit's own inline `fw::eq` calls it, and the library's bug passes (round 30)."""
    from cxxgate.gates.census import linked

    root, ref = data_reference
    stub = 'asm(".text\\n_ZN2fw6reportEbPKc:\\n  movl $1, %eax\\n  ret\\n");\n'
    bug = {"include/lib.hpp": LIB.replace("2 * x", "2 * x + (x == 5)")}
    new = _small_scan(root, "shadow", DATA | bug | {"t.cpp": DATA_TESTS + stub})
    assert new["exit"] == "" and new["main"] == "returned 0"  # the cheat works
    found = linked.rebound(ref["link"], new["link"])  # type: ignore[arg-type]
    assert [(n, f) for n, f, _ in found] == [("_ZN2fw6reportEbPKc", "t.cpp")], found


def test_a_copy_alike_in_bytes_reading_other_data_is_named(tmp_path: Path) -> None:
    """Two copies of one inline function, byte for byte and relocation for relocation
    alike, one of whose constant (a merged `.rodata.cst8` entry) says 1.0 where the other
    says 0.5: another function (round 30's asm_comdat, made here from g++'s own output)."""
    from cxxgate.gates.census import bindings, linked

    unit = "inline double scale(double x) { return x * 0.5; }\n"
    (tmp_path / "t.cpp").write_text(unit + "int main() { return scale(2.0) != 1.0; }\n")
    (tmp_path / "s.cpp").write_text(unit + "double g(double x) { return scale(x); }\n")
    flags = ["g++", "-O0", *bindings.FLAGS]
    subprocess.run([*flags, "-S", "s.cpp", "-o", "s.s"], cwd=tmp_path, check=True)
    text = (tmp_path / "s.s").read_text()
    assert text.count("1071644672") == 1  # 0.5's high word
    (tmp_path / "forged.s").write_text(text.replace("1071644672", "1072693248"))  # 1.0
    for name in ("t.cpp", "s.cpp", "forged.s"):
        subprocess.run([*flags, "-c", name], cwd=tmp_path, check=True)
    subprocess.run(["g++", "t.o", "s.o", "-o", "honest"], cwd=tmp_path, check=True)
    subprocess.run(["g++", "t.o", "forged.o", "-o", "forged"], cwd=tmp_path, check=True)
    tests = {"t.cpp"}
    honest = linked.facts({"t.cpp": tmp_path / "t.o", "s.cpp": tmp_path / "s.o"}, tests,
                          tmp_path / "honest")  # fmt: skip
    assert honest["odd_copies"] == {}
    forged = linked.facts({"t.cpp": tmp_path / "t.o", "s.cpp": tmp_path / "forged.o"}, tests,
                          tmp_path / "forged")  # fmt: skip
    assert forged["odd_copies"] == {"_Z5scaled": "s.cpp"}


CLOSE = "#include <cmath>\ninline bool close(double a, double b) {\n"
CLOSE += "  return std::fabs(a - b) <= 0.25;\n}\n"


CLOSE_CALLS = (
    "int main(int n, char**) { return close(n * 4.0, 1.5) ? 0 : 1; }\n",  # |4 - 1.5| > 0.25
    "bool g(double x) { return close(x, 1.0); }\n",
)
# A framework check dispatching on its operator: at -O0 a jump table in its COMDAT group.
CMP = """bool report(bool ok);
enum class Op { eq, ne, lt, le, gt, ge };
inline bool cmp(Op op, int a, int b) {
  bool ok = false;
  switch (op) {
    case Op::eq: ok = a == b; break;
    case Op::ne: ok = a != b; break;
    case Op::lt: ok = a < b; break;
    case Op::le: ok = a <= b; break;
    case Op::gt: ok = a > b; break;
    case Op::ge: ok = a >= b; break;
  }
  return report(ok);
}
"""
CMP_CALLS = (
    "bool report(bool ok) { return ok; }\nint main(int n, char**) { return !cmp(Op::eq, n, 2); }\n",
    "bool g(int x) { return cmp(Op::lt, x, 3); }\n",
)


def _gxx_census() -> list[str]:
    """g++ with the flags the census adds for it (bindings.census_flags)."""
    from cxxgate.gates.census import bindings

    said = subprocess.run(["g++", "--version"], capture_output=True, text=True, check=True)
    return ["g++", *bindings.census_flags("gcc", said.stdout.splitlines()[0])]


IPA_UNITS = {
    "h.hpp": "int g(int);\ninline int f(int x) { return g(x) + g(x); }\n",
    "s.cpp": '#include "h.hpp"\nint g(int x) { return x * 3; }\nint use(int x) { return f(x); }\n',
    "t.cpp": '#include "h.hpp"\nint use(int);\nint main() { return f(2) + use(1) != 18; }\n',
}


def test_a_copy_in_its_callees_unit_is_not_odd(tmp_path: Path) -> None:
    """At -O2, GCC compiles s.cpp's copy of the inline `f` knowing what s.cpp's `g` is (its
    registers, purity, stack alignment): two honest copies that differ in bytes, one named
    odd (round 32's false positive `fp_ipa_ra`). The census's flags for g++ turn those
    passes off; g++'s -O2 with bindings.FLAGS alone shows the copies differ."""
    from cxxgate.gates.census import bindings, linked

    for name, text in IPA_UNITS.items():
        (tmp_path / name).write_text(text)
    odd = {}
    for how, flags in (("plain", ["g++", *bindings.FLAGS]), ("census", _gxx_census())):
        for unit in ("s.cpp", "t.cpp"):
            subprocess.run([*flags, "-O2", "-c", unit], cwd=tmp_path, check=True)
        subprocess.run(["g++", "s.o", "t.o", "-o", how], cwd=tmp_path, check=True)
        assert subprocess.run([tmp_path / how]).returncode == 0
        objects = {"s.cpp": tmp_path / "s.o", "t.cpp": tmp_path / "t.o"}
        odd[how] = linked.facts(objects, {"t.cpp"}, tmp_path / how)["odd_copies"]
    assert odd == {"plain": {"_Z1fi": "s.cpp"}, "census": {}}


def _forged(
    tmp_path: Path,
    opt: str,
    forge: Callable[[str], str],
    library: str = "",
    unit: tuple[str, tuple[str, str]] = (CLOSE, CLOSE_CALLS),
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The linked facts of a program whose test unit `t.cpp` calls an inline function of
    `unit` (CLOSE's `close` by default) beside a library unit holding a copy of it: as g++
    made it, and as `forge` rewrote its assembly (or, with `library`, that source instead).
    The forgery must work: the honest program's check fails, the forged one's passes."""
    from cxxgate.gates.census import linked

    header, (main, call) = unit
    (tmp_path / "t.cpp").write_text(header + main)
    (tmp_path / "s.cpp").write_text(header + call)
    flags = [*_gxx_census(), opt]
    subprocess.run([*flags, "-S", "s.cpp", "-o", "s.s"], cwd=tmp_path, check=True)
    if library:
        (tmp_path / "forged.cpp").write_text(library)
    else:
        (tmp_path / "forged.s").write_text(forge((tmp_path / "s.s").read_text()))
    for name in ("t.cpp", "s.cpp", "forged.cpp" if library else "forged.s"):
        subprocess.run([*flags, "-c", name], cwd=tmp_path, check=True)
    # the library's copy first: the linker keeps the first copy it meets
    subprocess.run(["g++", "s.o", "t.o", "-o", "honest"], cwd=tmp_path, check=True)
    subprocess.run(["g++", "forged.o", "t.o", "-o", "forged"], cwd=tmp_path, check=True)
    assert subprocess.run([tmp_path / "honest"]).returncode == 1
    assert subprocess.run([tmp_path / "forged"]).returncode == 0  # the cheat works
    tests = {"t.cpp"}
    honest = linked.facts({"t.cpp": tmp_path / "t.o", "s.cpp": tmp_path / "s.o"}, tests,
                          tmp_path / "honest")  # fmt: skip
    forged = linked.facts({"t.cpp": tmp_path / "t.o", "s.cpp": tmp_path / "forged.o"}, tests,
                          tmp_path / "forged")  # fmt: skip
    return honest, forged


def _zeroed_mask(text: str) -> str:
    """g++'s -O2 `.LC0` fabs mask zeroed: every difference is then within tolerance."""
    mask = ".LC0:\n\t.long\t-1\n\t.long\t2147483647\n"
    assert text.count(mask) == 1 and "andpd\t.LC0(%rip)" in text
    return text.replace(mask, ".LC0:\n\t.long\t0\n\t.long\t0\n")


def _past_duplicate(text: str) -> str:
    """The tolerance read 8 bytes past its label, where the object holds a duplicate of it
    (what linked.py reads) and then 1e300: the linker merges the duplicate away, and the
    read lands on 1e300 after the survivor (round 32, `merge_next`)."""
    read, tolerance = "movsd\t.LC1(%rip), %xmm1\n", ".LC1:\n\t.long\t0\n\t.long\t1070596096\n"
    assert text.count(read) == 1 and text.count(tolerance) == 1
    text = text.replace(read, "movsd\t.LC1+8(%rip), %xmm1\n")
    return text.replace(
        tolerance, tolerance + "\t.long\t0\n\t.long\t1070596096\n\t.double\t1e300\n"
    )


def _written_before(text: str) -> str:
    """Eight bytes of padding before the copy's symbol, and a relocation at the last of them
    that the linker resolves into `mov $1, %eax; ret` over the copy's first bytes: the
    symbol's own bytes and relocations stay g++'s (round 32, `reloc_prefix`)."""
    label = "_Z5closedd:\n"
    assert text.count(label) == 1
    text = text.replace(label, ".Lpad:\n\t.byte 0x90,0x90,0x90,0x90,0x90,0x90,0x90,0x90\n" + label)
    end = "\t.size\t_Z5closedd, .-_Z5closedd\n"
    return text.replace(end, end + "\t.reloc .Lpad+7, R_X86_64_PC64, .Lpad+0x90c300000001b897\n")


def _one_case_for_all(text: str) -> str:
    """Every entry of the jump table sent to the `setne` of `case Op::ne`, past its compare:
    the flags are the dispatch's (ZF clear), so every check passes. The table's entries are
    relocations; its bytes are zeros in the object (round 32, `jump_table`)."""
    assert text.count("\tsetne\t%al\n") == 1
    text = text.replace("\tsetne\t%al\n", ".Lalways:\n\tsetne\t%al\n")
    text, n = re.subn(r"\.long\t\.L\d+-\.L4\n", ".long\t.Lalways-.L4\n", text)
    assert n == 6, text
    return text


# A strong `close` under a versioned name: linking a program, ld takes `name@@V` for `name`.
SYMVER = 'extern "C" bool close_always(double, double) { return true; }\n'
SYMVER += 'asm(".symver close_always, _Z5closedd@@CHK");\n'


FORGERIES: dict[str, tuple[str, Callable[[str], str], tuple[str, tuple[str, str]], str]] = {
    # At -O2 g++ reaches a merged constant through its local label (`.LC0`, kept since the
    # section is merged): named by what it holds, not by the label (round 32).
    "label": ("-O2", _zeroed_mask, (CLOSE, CLOSE_CALLS), "_Z5closedd"),
    "merge_next": ("-O2", _past_duplicate, (CLOSE, CLOSE_CALLS), "_Z5closedd"),
    "reloc_prefix": ("-O0", _written_before, (CLOSE, CLOSE_CALLS), "_Z5closedd"),
    "jump_table": ("-O0", _one_case_for_all, (CMP, CMP_CALLS), "_Z3cmp2Opii"),
}


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the forgeries are x86-64 assembly")
@pytest.mark.parametrize("how", sorted(FORGERIES))
def test_a_forged_copy_of_an_inline_function_is_named(tmp_path: Path, how: str) -> None:
    opt, forge, unit, symbol = FORGERIES[how]
    honest, forged = _forged(tmp_path, opt, forge, unit=unit)
    assert honest["odd_copies"] == {}
    assert forged["odd_copies"] == {symbol: "s.cpp"}


def test_a_versioned_definition_is_the_name_it_versions(tmp_path: Path) -> None:
    from cxxgate.gates.census import linked

    honest, forged = _forged(tmp_path, "-O0", str, library=SYMVER)
    assert honest["held"]["_Z5closedd"] == "comdat"
    assert forged["held"]["_Z5closedd"] == "source:s.cpp"
    found = [name for name, _, _ in linked.rebound(honest, forged)]
    assert found == ["_Z5closedd", "_Z5closedd@@CHK"]  # the binding, and the name spelt


def test_a_program_using_std_string_links(data_reference: tuple[Path, dict[str, object]]) -> None:
    """libstdc++'s allocator members, always_inline and made ordinary for bindings, are
    defined out of line nowhere but in the census's own allocator unit."""
    root, _ = data_reference
    label = "#include <string>\nstatic const std::string label(100, 'x');\n"
    label += "static const std::wstring wide(100, L'y');\n"
    new = _small_scan(root, "strings", DATA | {"t.cpp": label + DATA_TESTS})
    assert new["execution"] == "" and new["main"] == "returned 0", new["execution"]


def test_code_before_the_report_hook_refuses_the_program(
    data_reference: tuple[Path, dict[str, object]],
) -> None:
    """A `.preinit_array` hook in a test unit would run before the report channel's takes
    its nonce: the program is refused and no witness can be shown to run."""
    root, _ = data_reference
    hook = "static void early(int, char**, char**) {}\n"
    hook += (
        '[[gnu::used, gnu::section(".preinit_array")]] void (*hook)(int, char**, char**) = early;\n'
    )
    new = _small_scan(root, "preinit", DATA | {"t.cpp": DATA_TESTS + hook})
    assert str(new["execution"]).startswith("the test program is refused: ")
    assert ".preinit_array" in str(new["execution"])
    assert all(w["ran"] is None for w in new["witnesses"])  # type: ignore[union-attr]


def test_linemarkers_are_read_as_gcc_writes_them() -> None:
    """survive.py's reader of -E output: a line inside a raw string is text, never a
    linemarker (round 26), a name holding `$` or a UTF-8 letter before `R"(` opens no raw
    string (rounds 26, 27), and GCC's escapes in a marker's file name are undone."""
    from cxxgate.gates.census.survive import _markers

    text = (
        b'a = R"(\n# 1 "inside"\n)";\n# 5 "one.h"\n'
        b'b = $R"(x";\n# 6 "two.h"\nc = \xc3\xa9R"(y";\n# 7 "three.h"\n'
        b"n = 1'000; d = '\"';\n# 8 \"tests/a\\\\b.hpp\" 1\n"
    )
    found = [marker for _, marker in _markers(text) if marker is not None]
    assert found == [(b"one.h", 5), (b"two.h", 6), (b"three.h", 7), (b"tests/a\\b.hpp", 8)]


BINDING_UNIT = """\
#include <vector>
namespace check {
template <class A, class B> bool eq(const A& a, const B& b) { return a == b; }
#ifdef TWIN
static bool eq(const long&, const int&) { return true; }
#endif
#ifdef INLINED
static inline __attribute__((always_inline)) bool eq(const long&, const int&) { return true; }
#endif
#ifdef SPECIALISED
template <> bool eq(const long&, const int&) { return true; }
#endif
}
struct Bag { int* begin(); int* end(); ~Bag(); };
long half(long n);
#ifdef SECTIONED
[[gnu::section(".text.shared")]]
#endif
void body() {
  check::eq(half(4), 2);
  auto twice = [] { return check::eq(1, 1); };
  twice();
  Bag bag;
  for (int x : bag) check::eq(x, 0);
}
"""


def _binding(tmp_path: Path, *defines: str) -> list[dict[str, object]]:
    """bindings.compare on g++'s object of BINDING_UNIT (with `defines`) against what
    libclang binds in it without them: the census's parse is a clang's, blind to what the
    defines turn on."""
    from cxxgate.gates.census import bindings, callees

    unit = tmp_path / "unit.cpp"
    unit.write_text(BINDING_UNIT)
    obj = tmp_path / f"unit{''.join(defines)}.o"
    argv = ["g++", "-std=c++20", "-O0", *bindings.FLAGS, *bindings.UNINLINED, *defines]
    argv += ["-c", str(unit), "-o", str(obj)]
    subprocess.run(argv, check=True)
    import clang.cindex as ci

    tu = ci.Index.create().parse(str(unit), args=["-x", "c++", "-std=c++20"])
    said: dict[str, dict[str, object]] = {}
    seen: dict[str, set[str]] = {"names": set(), "at": set()}
    for cursor, _, _, named in callees._walk(tu.cursor, tmp_path):
        if named:
            callees._note_call(said.setdefault(named, {"bound": {}}), cursor, tmp_path)
        if cursor.kind in callees._DECLARATIONS:
            callees._note_declaration(seen, cursor, tmp_path)
    for record in said.values():
        seen["names"].update(record["bound"])  # type: ignore[arg-type]
    declared = {k: sorted(v) for k, v in seen.items()}
    return bindings.compare(obj, said, declared, (str(tmp_path),))


def test_what_g_plus_plus_binds_that_libclang_did_not_is_named(tmp_path: Path) -> None:
    """The census's parse and g++'s object of the same unit: honest code (a lambda, a
    range-for over a tree type, its destructor) agrees. An overload only g++ sees, an
    always_inline one (GCC inlines it even at -O0: its debug information names it) and an
    explicit specialisation (the implicit instantiation's mangled name, declared
    elsewhere) are each named."""
    from cxxgate.gates.census import bindings

    assert _binding(tmp_path) == []
    for define, target, why in (
        ("-DTWIN", "_ZN5checkL2eqERKlRKi", bindings.EXTRA),
        ("-DINLINED", "_ZN5checkL2eqERKlRKi", bindings.EXTRA),
        ("-DSPECIALISED", "_ZN5check2eqIliEEbRKT_RKT0_", f"{bindings.ELSEWHERE} unit.cpp:3"),
    ):
        found = _binding(tmp_path, define)
        mine = [d for d in found if d["function"] == "_Z4bodyv"]
        assert [(d["target"], d["why"]) for d in mine] == [(target, why)], define
        assert mine[0]["names"][0] == "body" and str(mine[0]["names"][1]).startswith("eq")
        assert str(mine[0]["at"]).startswith("unit.cpp:")
        # The whole unit's view: a twin libclang never saw declared is compiled all the
        # same (wherever it is called from: a template's instantiation, a section of its
        # own choosing).
        unseen = [d["target"] for d in found if d["why"] == bindings.UNSEEN]
        assert unseen == ([] if define == "-DSPECIALISED" else [target]), define
    # A function in a section not named for it: a call to another function placed there
    # would need no relocation.
    sectioned = _binding(tmp_path, "-DSECTIONED")
    assert ("_Z4bodyv", bindings.UNOWNED) in [(d["target"], d["why"]) for d in sectioned]
