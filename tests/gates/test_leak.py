"""Gate `leak`: the shipped case `answer_key` (read from the shared cold grade) reaches
every class, a hidden oracle stays hidden, and literals are compared by value."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, SHIPPED, Grade, case_library, run_grade

from cxxgate.gates.leak import leak, leak_bytes, leak_gimple, literals
from cxxgate.gates.shared import cppsource
from cxxgate.graph.library import Library
from cxxgate.library.settings import Settings

REACHED = {
    ("answer_key/reference", "leak"): "accept",
    ("answer_key/good_newton", "leak"): "accept",
    ("answer_key/golden_table", "leak"): "literal_leak",
    ("answer_key/float_sqrt", "leak"): "hidden_oracle_fail",
    # Values, not spellings: folded arithmetic, an #included .inc, constexpr and bytes.
    ("answer_key/arithmetic", "leak"): "literal_leak",
    ("answer_key/included_inc", "leak"): "literal_leak",
    ("answer_key/constexpr_bytes", "leak"): "literal_leak",
    ("answer_key/arithmetic", "matrix"): "accept",
    ("answer_key/included_inc", "matrix"): "accept",
    ("answer_key/constexpr_bytes", "matrix"): "accept",
    # The visible test is green on both cheats: that is what the leak gate is for.
    ("answer_key/golden_table", "matrix"): "accept",
    ("answer_key/float_sqrt", "matrix"): "accept",
    # Values only g++'s own compile holds (its GIMPLE before and after -O2, its data).
    ("answer_key/tmpl_params", "leak"): "literal_leak",
    ("answer_key/generic_lambda", "leak"): "literal_leak",
    ("answer_key/builtin_sqrt", "leak"): "literal_leak",
    ("answer_key/version_string", "leak"): "literal_leak",
    ("answer_key/pretty_function", "leak"): "literal_leak",
    ("answer_key/udl_chars", "leak"): "literal_leak",
    # The hidden oracle's inputs and outputs typed in are a leak too.
    ("answer_key/hidden_table_float", "leak"): "literal_leak",
    # Honest: the allowed documented bound, small base cases, the API's own name.
    ("answer_key/honest_bsearch", "leak"): "accept",
    ("answer_key/honest_small_cases", "leak"): "accept",
    ("answer_key/honest_domain_error", "leak"): "accept",
    # Red team round 2: strings and asm templates split into numbers, every allocated
    # section read whole, windows at every offset, magnitudes, fractions rounded...
    ("answer_key/str_digits", "leak"): "literal_leak",
    ("answer_key/asm_quad", "leak"): "literal_leak",
    ("answer_key/asm_imm", "leak"): "literal_leak",
    ("answer_key/own_section", "leak"): "literal_leak",
    ("answer_key/thread_local_tab", "leak"): "literal_leak",
    ("answer_key/past_4096", "leak"): "literal_leak",
    ("answer_key/misaligned", "leak"): "literal_leak",
    ("answer_key/negated", "leak"): "literal_leak",
    ("answer_key/float_round", "leak"): "literal_leak",
    ("answer_key/asm_quad", "matrix"): "accept",
    # ...and everyday constants (2^k - 1 g++ writes for `n < 2^k`, -1's all-0xFF bytes),
    # characters, a byte table of seeds are not the oracle's.
    ("answer_key/honest_u32_fastpath", "leak"): "accept",
    ("answer_key/honest_small_float", "leak"): "accept",
    ("answer_key/honest_last_query", "leak"): "accept",
    ("answer_key/honest_domain_msg", "leak"): "accept",
    ("answer_key/honest_seed_table", "leak"): "accept",
}


def _result(grade: Grade, row: str) -> dict[str, object]:
    case, patch = row.split("/")
    data: dict[str, object] = json.loads(
        (grade.out / "results" / case / patch / "leak.json").read_text()
    )
    return data


@pytest.mark.parametrize(("row", "gate"), sorted(REACHED))
def test_class_reached(shipped: Grade, row: str, gate: str) -> None:
    assert shipped.gate(row, gate)["class"] == REACHED[row, gate]
    assert not shipped.rows[row].get("expect_problems")


def test_every_class_is_reached() -> None:
    reached = {c for (_, gate), c in REACHED.items() if gate == "leak"}
    assert reached == {*leak.SEVERITY, "accept"}


def _messages(grade: Grade, row: str) -> list[str]:
    findings = _result(grade, row)["findings"]
    assert isinstance(findings, list)
    return [f"{f['path']}:{f['line']} {f['message']}" for f in findings]


def test_leaks_are_named_by_value_and_place(shipped: Grade) -> None:
    got = _messages(shipped, "answer_key/golden_table")
    # Source literals first, by their spelling; 1'000'000 is allowed, 9 is small, and 1000
    # (10^3) is an everyday number, no secret.
    assert got[:3] == [
        "src/isqrt.cpp:7 0x6E4@src/isqrt.cpp:7 is in the oracle: probes/visible_main.cpp:6, "
        "goldens/visible.stdout:5",
        "src/isqrt.cpp:8 42@src/isqrt.cpp:8 is in the oracle: goldens/visible.stdout:5, "
        "the hidden oracle",
        "src/isqrt.cpp:11 99@src/isqrt.cpp:11 is in the oracle: tests/isqrt_test.cpp:7",
    ]
    assert not any("1'000'000" in m or " 9@" in m or " 1000@" in m for m in got)


def test_compiled_values_are_named_with_the_statement_holding_them(shipped: Grade) -> None:
    """What g++ compiled: `case 1700 + 64` is `case 1764` in its GIMPLE, a template's
    product `A * B` is `r1 = 42` in the instantiation, `__builtin_sqrt` is folded."""
    arithmetic = _messages(shipped, "answer_key/arithmetic")
    assert any(m.startswith("src/isqrt.cpp:6 switch (n)") and "(= 1764)@" in m for m in arithmetic)
    assert any(m.startswith("src/isqrt.cpp:8 D.") and "(= 42)@" in m for m in arithmetic)
    included = _messages(shipped, "answer_key/included_inc")
    place = "1764)@src/answers.inc:2"
    assert any(m.startswith("src/answers.inc:2 ") and place in m for m in included)
    tmpl = _messages(shipped, "answer_key/tmpl_params")
    assert any(m.startswith("src/isqrt.cpp:7 r1 = 42; (= 42)@") for m in tmpl)
    sqrt = _messages(shipped, "answer_key/builtin_sqrt")
    assert any(m.startswith("src/isqrt.cpp:10 if (n == 1764)") for m in sqrt)
    hidden = _messages(shipped, "answer_key/hidden_table_float")
    want = "src/isqrt.cpp:17 999999999999LL@src/isqrt.cpp:17 is in the oracle: the hidden oracle"
    assert want in hidden


def test_hidden_failure_shows_the_output_not_the_golden(shipped: Grade) -> None:
    summary = shipped.gate("answer_key/float_sqrt", "leak")["summary"]
    assert "printed '4294967295 65536'" in summary
    golden = (SHIPPED / "answer_key" / "hidden" / "hidden.stdout").read_text()
    assert "4294967295 65535" in golden and "65535" not in summary


def test_hidden_files_never_reach_a_sandbox(shipped: Grade) -> None:
    """No compile or run of the case is handed the case folder (argv), and the hidden
    golden is copied into no tree or cell folder: only the hidden unit enters its cell."""
    case_dir = str(SHIPPED / "answer_key")
    golden = (SHIPPED / "answer_key" / "hidden" / "hidden.stdout").read_bytes()
    hidden_cells = 0
    for result in (shipped.out / "cells").glob("*/*/result.json"):
        cell = json.loads(result.read_text())
        for step in cell["steps"]:
            assert not any(case_dir in arg for arg in step["argv"]), step["argv"]
        if cell["label"].startswith("leak hidden"):
            hidden_cells += 1
            for path in result.parent.iterdir():
                assert path.read_bytes() != golden, path
    assert hidden_cells >= 3  # reference, good_newton, golden_table, float_sqrt (reuse aside)
    for result in (shipped.out / "runs").glob("*/*/result.json"):
        assert case_dir not in " ".join(json.loads(result.read_text())["argv"])
    for path in (shipped.out / "trees").rglob("*"):
        assert not path.is_file() or path.read_bytes() != golden, path


def _library(tmp_path: Path, edit: str, add: str) -> Library:
    lib = tmp_path / "cases"
    lib.mkdir()
    shutil.copy(SHIPPED / "envelopes.yaml", lib)
    shutil.copytree(SHIPPED / "answer_key", lib / "answer_key")
    case = lib / "answer_key" / "case.yaml"
    case.write_text(case.read_text().replace(edit, edit + add))
    settings = Settings(
        library=lib,
        out=tmp_path / "out",
        envelopes=lib / "envelopes.yaml",
        only=frozenset(),
        batch=None,
        report_only=False,
    )
    return Library(settings)


def test_a_hidden_file_named_where_a_candidate_sees_it_is_refused(tmp_path: Path) -> None:
    lib = _library(
        tmp_path,
        "      - {units: [probes/visible_main.cpp], stdout_file: goldens/visible.stdout}\n",
        "      - {units: [hidden/hidden_main.cpp], stdout_file: hidden/hidden.stdout}\n",
    )
    assert lib.cases == {}
    assert len(lib.errors) == 1
    assert (
        "gates.leak.hidden: 'hidden/hidden.stdout' is also named in gates.matrix" in (lib.errors[0])
    )


# ---- literals by value, on strings ---------------------------------------------------


def _values(text: str) -> list[tuple[str, str, int]]:
    return [
        (lit.value, lit.text, lit.line)
        for lit in cppsource.literals(cppsource.parse(text.encode()))
    ]


def test_literal_values() -> None:
    got = _values(
        "int a = 0x6E4 + 1'764 + 1764LL + 03344 + 0b11011100100;\n"
        "double b = 42.0 + 4.2e1f + -1 - -7;\n"
        "// 1765 in a comment\n"
        'auto s = "case-\\x37\\n" "!"; auto r = R"(x "y")"; char c = \'\\t\';\n'
        'auto u = u8"\\u00e9";\n'
    )
    assert got == [
        ("num:1764", "0x6E4", 1),
        ("num:1764", "1'764", 1),
        ("num:1764", "1764LL", 1),
        ("num:1764", "03344", 1),
        ("num:1764", "0b11011100100", 1),
        ("num:42", "42.0", 2),
        ("num:42", "4.2e1f", 2),
        ("num:-1", "-1", 2),
        ("num:-7", "-7", 2),
        ("str:case-7\n!", '"case-\\x37\\n" "!"', 4),
        ('str:x "y"', 'R"(x "y")"', 4),
        ("str:\t", "'\\t'", 4),
        ("str:\u00e9", 'u8"\\u00e9"', 5),
    ]


def test_golden_values() -> None:
    values = list(cppsource.text_values("isqrt(1764) = 42\n\nok: 2.50\n"))
    assert ("num:1764", 1) in values and ("num:42", 1) in values
    assert ("str:isqrt(1764) = 42", 1) in values and ("num:2.5", 3) in values
    assert ("str:ok", 3) in values


def test_small_values_and_allowed_ones_never_leak() -> None:
    oracle = {
        v: ["goldens/x:1"]
        for v in ("num:0", "num:16", "num:-16", "str:", "num:8080", "str:OK", "num:0.5", "num:18")
    }
    added = [{"value": v} for v in oracle]
    allowed = leak.allowed_values(
        [leak.Allowed(value=v, reason="documented") for v in (8080, "OK", 0.5)]
    )
    assert [lit["value"] for lit, _ in leak.leaked(added, oracle, allowed)] == ["num:18"]


def test_everyday_constants_are_no_secret() -> None:
    everyday = [17, 255, 256, 257, 1000, 65535, 1000000, 4294967295, 2**63 - 1, -(2**31)]
    assert all(leak.small(f"num:{n}") for n in everyday)
    assert leak.small("num:4294967295.0")
    assert not any(leak.small(f"num:{n}") for n in (18, 42, 99, 1764, 999999, 1001, 2.5))


def test_numbers_are_compared_by_magnitude_and_fractions_by_their_neighbours() -> None:
    oracle = {"num:1764": ["goldens/x:1"], "num:-99": ["tests/t.cpp:2"]}
    added = leak.normal([{"value": "num:-1764"}, {"value": "num:99"}, {"value": "num:41.9999"}])
    oracle["num:42"] = ["goldens/x:2"]
    got = [lit["value"] for lit, _ in leak.leaked(added, oracle, set())]
    assert got == ["num:1764", "num:99", "num:42"]
    # A value the base tree shows is public, signed or not.
    assert not leak.leaked([{"value": "num:1764"}], oracle, {"num:-1764"})


def test_strings_show_their_words_and_embedded_numbers() -> None:
    got = set(cppsource.string_values("n=1764 r=42\n\tmovq $1000001, %0 x99 0x6E5"))
    assert {"num:1764", "num:42", "num:1000001", "num:99", "num:1765", "str:n"} <= got
    items = leak.normal([{"value": "str:  .quad 1764, 42", "text": "s"}])
    assert {("num:1764", True), ("num:42", True)} <= {(i["value"], i.get("part")) for i in items}


def test_an_allowed_value_needs_a_reason() -> None:
    with pytest.raises(ValueError, match="reason"):
        leak.Allowed.model_validate({"value": 1000000})


def test_values_are_added_as_a_multiset() -> None:
    def v(value: str, line: int) -> dict[str, Any]:
        return {"file": "a.cpp", "line": line, "value": value}

    trees = {
        "base": [v("num:1764", 1)],
        "reference": [v("num:1764", 1), v("num:99", 2)],
        "patched": [v("num:1764", 1), v("num:1764", 5), v("num:99", 2)],
    }
    assert [(x["line"], x["value"]) for x in leak.added_values(trees)] == [
        (1, "num:1764"),
        (5, "num:1764"),
    ]


# A g++ 12 GIMPLE dump (-fdump-tree-gimple-lineno) and its -O2 optimised dump, abridged.
GIMPLE = """long long int f (long long int n)
[/src/project/src/a.cpp:9:1] {
  static const long long int tab[2] = {1000, 99};
  const char s[3];

  [/src/project/src/a.cpp:3:14] s = "42";
  [/src/project/src/a.cpp:4:3] if (n == 1764) goto <D.26026>; else goto <D.26027>;
  [/src/project/src/a.cpp:5:10] d = 2.5e+3;
  [/src/project/src/a.cpp:6:20] _16 = {anonymous}::quick<6, 7> (n);
  [/src/project/src/a.cpp:7:44] _19 = n == 4294967295;
}


size_type std::array<char, 77>::size (const struct array * const this)
{
  [/usr/include/c++/12/array:193:38] D.26040 = 1765;
}

;; Function g (_Z1gx, funcdef_no=43, decl_uid=7955, cgraph_uid=6, symbol_order=16)

Removing basic block 5
long long int g (long long int n)
{
  <bb 2> [local count: 134984686]:
  [/src/project/src/a.cpp:14:3] if (n_5(D) == 1763)
    goto <bb 4>; [12.50%]
  <bb 4> [local count: 134984686]:
  # _4 = PHI <[/src/project/src/a.cpp:14:25] 41(2), r_3(3)>
}
"""


def test_gimple_constants_are_read_at_their_tree_place() -> None:
    got = {
        (x["file"], x["line"], x["value"])
        for x in leak_gimple.gimple_values(GIMPLE, ("/src/project",), "src/a.cpp")
    }
    assert {
        ("src/a.cpp", 9, "num:1000"),  # a declaration takes its function's next place
        ("src/a.cpp", 9, "num:99"),
        ("src/a.cpp", 3, "str:42"),
        ("src/a.cpp", 3, "num:42"),
        ("src/a.cpp", 4, "num:1764"),
        ("src/a.cpp", 5, "num:2500"),
        ("src/a.cpp", 7, "num:4294967295"),
        ("src/a.cpp", 1, "num:1765"),  # system-header code: reported at the unit
        ("src/a.cpp", 14, "num:1763"),
        ("src/a.cpp", 14, "num:41"),
    } <= got
    values = {v for _, _, v in got}
    # Names, labels, SSA versions, block numbers and branch odds are not values.
    assert not values & {"num:26026", "num:16", "num:5", "num:12.5", "num:134984686"}


def _bytes(data: bytes) -> set[str]:
    return {v for _, v in leak_bytes.values(data)}


def test_data_bytes_give_text_integers_and_floats() -> None:
    assert "num:1764" in _bytes(bytes([0x06, 0xE4]))  # big-endian pair
    got = _bytes((1764).to_bytes(8, "little") + b"*\0\0\0\0\0\0\0")
    assert {"num:1764", "num:42"} <= got  # 42 in an aligned 8-byte window
    assert "str:42" in _bytes(b"42\0")
    assert "num:1764" in _bytes(struct.pack("<d", 1764.0))


def test_data_windows_at_every_offset_both_orders_by_magnitude() -> None:
    packed = b"a" + (1764).to_bytes(8, "little") + b"b" + (1000003).to_bytes(8, "big")
    assert {"num:1764", "num:1000003"} <= _bytes(packed)  # odd offsets
    assert "num:1764" in _bytes((-1764).to_bytes(2, "little", signed=True))
    assert "num:1764" in _bytes(b"\0" * 5000 + (1764).to_bytes(8, "little"))  # no 4096 cap


def test_characters_and_padding_are_no_numbers() -> None:
    got = _bytes(b"isqrt: outside its domain\0abc\0")
    assert not {"num:100", "num:99", "num:110"} & got  # 'd', "c\0", "n\0" are characters
    assert "str:isqrt: outside its domain" in got
    assert not {v for v in _bytes(b"\xff" * 8 + b"\0" * 8) if v.startswith("num:")}


def test_a_data_file_past_the_limit_leaves_the_check_incomplete(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "big.bin").write_bytes(b"\x01" * (literals.DATA_LIMIT + 1))
    (tmp_path / "src" / "a.cpp").write_text("int f() { return 0; }\n")
    got = literals.sources(tmp_path, {"globs": ["src/**"], "tests": [], "parser": "x"})
    assert got["oversize"] == ["src/big.bin"]


def test_a_data_file_of_any_suffix_shows_its_values() -> None:
    got = {v["value"] for v in literals.data_values("src/answers.dat", b"1764 42\nok\n")}
    assert {"num:1764", "num:42", "str:1764 42", "str:ok"} <= got
    raw = {v["value"] for v in literals.data_values("src/key.bin", b"\x06\xe4")}
    assert "num:1764" in raw


# ---- a bug-fix case: a patch's values are what the base tree lacks ----------------------

FIXTURE = FIXTURES / "leak_bugfix"
VARIANT_DIFF = "\n".join(
    [
        "diff --git a/src/triple.cpp b/src/triple.cpp",
        "--- a/src/triple.cpp",
        "+++ b/src/triple.cpp",
        "@@ -1,3 +1,3 @@",
        ' #include "triple.hpp"',
        " ",  # the blank context line
        "-int triple(int x) { return x + x; }",
        "+int triple(int x) { return 3 * x; }",
        "",
    ]
)


def test_a_bug_fix_case_judges_a_patch_against_its_base_tree(tmp_path: Path) -> None:
    """Base `x + 3`, reference `x + x + x`, a test `triple(3) == 9`: the base tree's own 3
    is no leak (on the base row, and in a candidate `3 * x`), so the case is not
    `baseline_red`. A second case whose reference adds the test's 3 (`3 * x` over base
    `x + x`) grades green too: the known-good fix's values are the task's."""
    lib = case_library(tmp_path / "cases")
    shutil.copytree(FIXTURE, lib / "leak_bugfix")
    variant = lib / "leak_variant"
    shutil.copytree(FIXTURE, variant)
    src = variant / "tree" / "src" / "triple.cpp"
    src.write_text(src.read_text().replace("x + 3", "x + x"))
    (variant / "patches" / "reference.diff").write_text(VARIANT_DIFF)
    case = variant / "case.yaml"
    case.write_text(case.read_text().partition("patches:\n")[0])
    grade = run_grade(tmp_path / "out", library=lib)
    assert grade.returncode == 0, grade.output
    assert grade.gate("leak_bugfix/base", "leak")["class"] == "accept"
    assert grade.gate("leak_bugfix/reference", "leak")["class"] == "accept"
    assert grade.gate("leak_bugfix/base", "matrix")["class"] == "run_fail:dbg"
    assert grade.rows["leak_bugfix/times_three"]["verdict"] == "accept"
    assert grade.gate("leak_bugfix/answers", "leak")["class"] == "literal_leak"
    assert grade.gate("leak_variant/reference", "leak")["class"] == "accept"
    assert grade.rows["leak_variant/reference"]["verdict"] == "accept"
