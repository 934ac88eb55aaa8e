"""The coverage gate's joins and rules (gates/coverage/coverage.py, gcovjson.py, hunks.py):
gcov's JSON as gcov 12 prints it, the scan on real files, and a real doit grade of a copy
of cases/port with the branch rule relaxed by the case."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import SHIPPED, case_library, run_grade
from pydantic import ValidationError

from cxxgate.contract.program import Program
from cxxgate.gates.coverage import coverage, gcovjson
from cxxgate.gates.shared import addedcode, hunks


def _line(
    n: int, count: int, *, unexecuted: bool = False, branches: tuple[int, ...] = ()
) -> dict[str, Any]:
    return {
        "line_number": n,
        "count": count,
        "unexecuted_block": unexecuted,
        "branches": [{"count": b, "throw": False, "fallthrough": True} for b in branches],
    }


def _fn(name: str, start: int, end: int, count: int, column: int = 1) -> dict[str, Any]:
    return {
        "name": name,
        "demangled_name": name,
        "start_line": start,
        "start_column": column,
        "end_line": end,
        "end_column": 1,
        "execution_count": count,
    }


def _unit(unit: str, files: list[dict[str, Any]], cwd: str = "/src/build") -> str:
    return json.dumps({"data_file": unit, "current_working_directory": cwd, "files": files})


def test_gcov_names_are_normalised_before_the_join() -> None:
    """`#include "../src/sign.hpp"` from src/port.cpp: gcov names the header
    src/../src/sign.hpp; a relative name is under the compile's working directory."""
    text = "\n".join(
        [
            _unit(
                "tu1",
                [
                    {"file": "/src/project/src/../src/sign.hpp", "lines": [_line(8, 0)]},
                    {"file": "/src/project/./src//port.cpp", "lines": [_line(3, 2)]},
                    {"file": "../project/include/port.hpp", "lines": [_line(5, 1)]},
                    {"file": "main.cpp", "lines": [_line(1, 1)]},
                    {"file": "/src/project/../build/x.cpp", "lines": [_line(1, 1)]},
                ],
            )
        ]
    )
    counts = gcovjson.parse(text)
    assert counts.lines == {
        "src/sign.hpp": {8: 0},
        "src/port.cpp": {3: 2},
        "include/port.hpp": {5: 1},
    }
    assert gcovjson.tree_path("/src/project/src/../../etc/passwd", "/") is None


def test_functions_merge_by_span_over_units_and_runs() -> None:
    """`keep` and `skip` on one line: the line has hits, `skip` never ran. An inline
    function's copies in two units, and a second run, are one function."""
    port = {
        "file": "/src/project/src/port.cpp",
        "functions": [_fn("keep", 5, 5, 4, column=30), _fn("skip", 5, 5, 0, column=80)],
        "lines": [_line(5, 4)],
    }
    header = {
        "file": "/src/project/include/port.hpp",
        "functions": [_fn("inl", 10, 12, 0)],
        "lines": [_line(10, 0)],
    }
    called = dict(header, functions=[_fn("inl", 10, 12, 2)], lines=[_line(10, 2)])
    first = gcovjson.parse(_unit("tu1", [port, header]))
    first.merge(gcovjson.parse(_unit("tu2", [called])))
    assert first.unexecuted_functions("src/port.cpp", {5}) == [(5, "skip")]
    assert first.unexecuted_functions("src/port.cpp", {6}) == []  # no added line in it
    assert first.unexecuted_functions("include/port.hpp", {11}) == []  # tu2's copy ran
    again = gcovjson.parse(_unit("tu1", [dict(port, functions=[_fn("skip", 5, 5, 1, 80)])]))
    first.merge(again)
    assert first.unexecuted_functions("src/port.cpp", {5}) == []


def test_functions_at_one_span_are_told_apart_by_source_name() -> None:
    """One macro expansion defines `keep` and `skip` at one span (gcov 12 gives both the
    macro's line and column); constructor symbols C1/C2 and a template's instantiations
    share theirs and are one source function."""
    fns = [
        _fn("keep(char const*)", 9, 9, 4),
        _fn("skip(char const*)", 9, 9, 0),
        _fn("B::B()", 12, 12, 1),
        _fn("B::B()", 12, 12, 0),
        _fn("int twice<int>(int)", 14, 14, 2),
        _fn("long twice<long>(long)", 14, 14, 0),
    ]
    counts = gcovjson.parse(_unit("tu1", [{"file": "/src/project/a.cpp", "functions": fns}]))
    assert counts.unexecuted_functions("a.cpp", {9, 12, 14}) == [(9, "skip(char const*)")]


@pytest.mark.parametrize(
    ("demangled", "name"),
    [
        ("long twice<long>(long)", "twice"),
        ("std::vector<int, std::allocator<int> >::push_back(int const&)", "std::vector::push_back"),
        ("net::(anonymous namespace)::skip(char const*)", "net::(anonymous namespace)::skip"),
        ("main::{lambda(int)#1}::operator()(int) const", "main::{lambda(int)#1}::operator#2829"),
        ("bool operator< <int>(X<int> const&, X<int> const&)", "operator#3c"),
        ("operator>(B const&, B const&)", "operator#3e"),
        ("S::operator int() const", "S::operator:int"),
        ("main", "main"),
    ],
)
def test_source_names(demangled: str, name: str) -> None:
    assert gcovjson.source_name(demangled) == name


def test_a_line_runs_whole_when_one_copy_ran_whole() -> None:
    partial = {"file": "/src/project/a.cpp", "lines": [_line(3, 1, unexecuted=True)]}
    whole = {"file": "/src/project/a.cpp", "lines": [_line(3, 1)]}
    unrun = {"file": "/src/project/a.cpp", "lines": [_line(3, 0, unexecuted=True)]}
    counts = gcovjson.parse(_unit("tu1", [partial]))
    counts.merge(gcovjson.parse(_unit("tu2", [unrun])))  # a copy that never ran: no say
    assert counts.part_run("a.cpp", 3)
    counts.merge(gcovjson.parse(_unit("tu1", [whole])))
    assert not counts.part_run("a.cpp", 3)


def test_every_changed_file_is_read_whatever_its_suffix(tmp_path: Path) -> None:
    base, tree = tmp_path / "base", tmp_path / "tree"
    for root in (base, tree):
        (root / "src").mkdir(parents=True)
        (root / "src/port.cpp").write_text("int f() { return 1; }\n")
    (tree / "src/sign.def").write_text(
        "// skips a sign\nstatic const char* skip(const char* t) {\n"
        "  if (*t == '+') ++t;  // LCOV_EXCL_LINE\n  return t;\n}\nint g();\n"
    )
    (tree / "NOTES.txt").write_text("plain words\n")
    data = hunks.added_lines(tree, {"base": str(base)})
    sign = data["files"]["src/sign.def"]
    assert sign["code"] is False and sign["cosmetic"] is False
    assert sign["hunks"] == [[1, 2, 3, 4, 5, 6]]
    assert sign["functions"] == [[2, 1, 5, 2]]  # the definition, not the declaration of g
    assert data["tamper"] == [["src/sign.def", 3, "LCOV_EXCL_LINE"]]
    assert data["files"]["NOTES.txt"]["functions"] == []


@pytest.mark.parametrize(
    ("line", "tampers"),
    [
        ('# 1 "<built-in sign>"', True),
        ('  #  12 "src/port.cpp" 2', True),
        ('%:line 3 "x.cpp"', True),
        ("#include <cstdint>", False),
        ("#if 1", False),
        ("int x = 1;  # not a directive", False),
    ],
)
def test_linemarkers_are_tamper(line: str, tampers: bool) -> None:
    assert bool(hunks.TAMPER.search(line)) is tampers


def test_relaxing_branches_needs_a_reason() -> None:
    tests = [{"units": ["probes/test_valid.cpp"]}]
    with pytest.raises(ValidationError, match="branches_reason"):
        coverage.Config.model_validate({"tests": tests, "branches": "lines"})
    ok = coverage.Config.model_validate(
        {"tests": tests, "branches": "lines", "branches_reason": "guards nothing can reach"}
    )
    assert ok.branches == "lines"
    assert coverage.Config.model_validate({"tests": tests}).branches == "every"


def test_a_case_relaxes_branches_lines_and_functions_still_count(tmp_path: Path) -> None:
    """cases/port with `branches: lines`: the honest defensive guard and the one-line
    untested branch are accepted (listed as evidence); the untested body in sign.def (a
    zero-hit line) and the function reached only through a table are still rejected."""
    library = case_library(tmp_path / "cases", "port")
    case_file = library / "port/case.yaml"
    case = yaml.safe_load(case_file.read_text())
    case["gates"]["coverage"]["branches"] = "lines"
    case["gates"]["coverage"]["branches_reason"] = "null guards no caller can reach"
    expect = {
        "honest_defensive": {"verdict": "accept"},
        "plus_sign_one_line": {"verdict": "accept"},
        "def_suffix": {"verdict": "reject", "coverage": "zero_hit"},
        "table_dispatch": {"verdict": "reject", "coverage": "function_unexecuted"},
    }
    case["patches"] = [{"file": f"patches/{n}.diff", "expect": e} for n, e in expect.items()]
    case_file.write_text(yaml.safe_dump(case, sort_keys=False))
    grade = run_grade(tmp_path / "out", "case=port", library=library)
    assert grade.returncode == 0, grade.output
    for name in expect:
        assert not grade.rows[f"port/{name}"]["expect_problems"], grade.rows[f"port/{name}"]
    result = json.loads((grade.out / "results/port/honest_defensive/coverage.json").read_text())
    assert any("branches not scored (null guards" in e for e in result["evidence"])
    assert result["findings"] == []
    # The shipped case keeps the strict rule.
    shipped = yaml.safe_load((SHIPPED / "port/case.yaml").read_text())
    assert "branches" not in shipped["gates"]["coverage"]


def test_lines_that_expand_a_changed_macro_are_scored(tmp_path: Path) -> None:
    """gcov counts a macro's code where it expands: a patch that defines CHECK_SIGN in a
    header changes the unchanged line of port.cpp that names it (and TWICE, defined in
    terms of it), never a comment or a string that mentions it."""
    base, tree = tmp_path / "base", tmp_path / "tree"
    port = (
        '#include "sign.hpp"\n'
        "#define TWICE(t) CHECK_SIGN(CHECK_SIGN(t))\n"
        "int f(const char* t) {\n"
        '  // CHECK_SIGN in a comment, and "CHECK_SIGN" in a string\n'
        "  t = CHECK_SIGN(t);\n"
        "  return *TWICE(t);\n"
        "}\n"
    )
    for root in (base, tree):
        (root / "src").mkdir(parents=True)
        (root / "src/port.cpp").write_text(port)
    (base / "src/sign.hpp").write_text("#define CHECK_SIGN(t) \\\n  (t)\n")
    # Only the continuation line changes.
    (tree / "src/sign.hpp").write_text(
        "#define CHECK_SIGN(t) \\\n  ((*(t) == '+') ? (t) + 1 : (t))\n"
    )
    data = hunks.added_lines(tree, {"base": str(base)})
    assert data["expansions"] == {"src/port.cpp": [5, 6]}
    scored: dict[str, dict[str, Any]] = {}
    coverage._add_expansions(scored, data["expansions"], {"src/port.cpp"})
    assert scored == {"src/port.cpp": {"hunks": [[5, 6]], "functions": []}}
    assert data["macros"] == ["CHECK_SIGN", "TWICE"]
    coverage._add_expansions(scored := {}, data["expansions"], set())  # no compile read it
    assert scored == {}
    plain = hunks.added_lines(tree, {"base": str(tree)})  # nothing defined: nothing more
    assert plain["expansions"] == {}


# ---- second review: line numbering, code the coverage build never held -----------------


@pytest.mark.parametrize(
    "char", ["\f", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r"]
)
def test_lines_are_numbered_as_gcc_numbers_them(tmp_path: Path, char: str) -> None:
    """Python's splitlines ends a line at each of these; gcc ends one only at a newline
    (a lone CR is one: read with universal newlines, as gcc does). The hunks, the
    statements tree-sitter finds and gcc's own __LINE__ must agree."""
    base, tree = tmp_path / "base", tmp_path / "tree"
    for root in (base, tree):
        root.mkdir()
    (base / "a.cpp").write_bytes(b"int f() {\n  return 0;\n}\n")
    patched = f"int f() {{\n  // one{char}// two\n  return __LINE__;\n}}\n"
    (tree / "a.cpp").write_bytes(patched.encode())
    data = hunks.added_lines(tree, {"base": str(base)})["files"]["a.cpp"]
    ran = subprocess.run(
        ["g++", "-E", "-P", "-x", "c++", str(tree / "a.cpp")], capture_output=True, check=True
    )
    said = int(ran.stdout.decode(errors="replace").split("return ")[1].split(";")[0])
    want = 4 if char == "\r" else 3  # a lone CR ends a line for gcc too
    assert said == want
    assert data["hunks"] == [list(range(2, want + 1))]
    assert data["statements"] == [[want, want, 0]]


def _facts(source: str, added: set[int] | None = None) -> dict[str, Any]:
    lines = set(range(1, source.count("\n") + 2)) if added is None else added
    return addedcode.analyse(source, lines)


def test_statements_that_must_have_code() -> None:
    """Code under a preprocessor branch or a discarded `if constexpr` is listed (the gate
    wants a gcov line in its span); `;`, `(void)x;`, a declaration with no initialiser,
    a constexpr or static one, a static_assert and labels are not."""
    src = (
        "template <class C> int f(const C* t) {\n"  # 1
        "#ifdef NDEBUG\n"  # 2
        "  if (*t == '+') ++t;\n"  # 3
        "#endif\n"  # 4
        "  if constexpr (sizeof(C) > 1) {\n"  # 5
        "    ++t;\n"  # 6
        "  }\n"  # 7
        "  int n;\n  constexpr int k = 2;\n  static int s = 0;\n  (void)n;\n  ;\n"  # 8-12
        "  static_assert(k == 2);\n"  # 13
        "  return *t - k;\n"  # 14
        "}\n"
    )
    facts = _facts(src)
    assert facts["functions"] == [[1, 20, 15, 2]]  # from the return type, after `template`
    assert sorted({a for a, _, _ in facts["statements"]}) == [3, 5, 6, 14]
    assert facts["bearing"] is True


@pytest.mark.parametrize(
    ("source", "defaults", "bearing"),
    [
        ("int f(int a, int skip = on && true ? 1 : 0);\n", [1], True),
        ("int f(int a, int skip = on || other);\n", [1], True),
        ("int f(int a, int (*g)(int) = [](int x) { return x; });\n", [1], True),
        ("int f(int a, int skip = 1);\n", [], True),  # a default argument bears code
        ("[[nodiscard]] int f(int a);\n", [], False),
        ("[[deprecated, maybe_unused]] int f(int a);\n", [], False),
        ("#ifndef G\n#define G\nint f(int a);\n#endif\n", [], False),
        ("__attribute__((constructor)) int f();\n", [], True),
        ("[[gnu::constructor]] int f();\n", [], True),
        ("inline bool lenient = false;\n", [], True),
        ("#define G 1\n", [], True),
        ("struct S { int m = 3; };\n", [], True),
        ("struct S { int m; };\n", [], False),
        ("#pragma once\n", [], False),
        ("#pragma pack(1)\n", [], True),
        ('#ifdef NDEBUG\n#include "plus.inc"\n#endif\n', [], True),  # never read by cov
    ],
)
def test_default_arguments_and_what_bears_code(
    source: str, defaults: list[int], bearing: bool
) -> None:
    facts = _facts(source)
    assert facts["defaults"] == defaults
    assert facts["bearing"] is bearing


def test_a_definition_is_held_by_a_record_at_its_line_and_column() -> None:
    """Two definitions on line 5: gcov's record for parse_port (its name at column 75)
    holds parse_port, not the template before it; a lambda's record holds the lambda, not
    the function around it."""
    template, parse = (5, 20, 5, 70), (5, 71, 15, 2)
    records = {(5, 75, 15, "net::parse_port"): ("parse_port", 3)}
    assert not coverage._held(template, [template, parse], records)
    assert coverage._held(parse, [template, parse], records)
    outer, inner = (1, 1, 9, 2), (3, 10, 3, 40)
    lam = {(3, 10, 3, "f::{lambda()#1}::operator#2829"): ("l", 0)}
    assert coverage._held(inner, [outer, inner], lam)
    assert not coverage._held(outer, [outer, inner], lam)


@pytest.mark.parametrize(
    ("old", "new", "same"),
    [
        (
            "if (text == nullptr || *text == '\\0') return -1;",
            "if (!text || !*text) return -1;",
            True,
        ),
        ("if (p != NULL) g(p);", "if (p) g(p);", True),
        ("if (0 == n) return;", "if (!n) return;", True),
        (
            "if (text == nullptr || *text == '\\0') return -1;",
            "if (*text == '+' || !*text) return -1;",
            False,
        ),
        ("if (n == 0) return;", "if (n == 1) return;", False),
        ("if (x) {", "if (x) {", False),  # no whole statement: nothing compared
    ],
)
def test_reworded_lines_are_the_same_code(old: str, new: str, same: bool) -> None:
    base = f"int f() {{\n  {old}\n  return 0;\n}}\n"
    tree = f"int f() {{\n  {new}\n  return 0;\n}}\n"
    assert hunks.same_as_removed(base, tree) == ({2: [2]} if same else {})


def test_an_untaken_branch_is_excused_only_where_the_base_left_it_untaken() -> None:
    def counts(branches: tuple[int, ...]) -> gcovjson.Counts:
        line = _line(2, 5, branches=branches)
        return gcovjson.parse(_unit("tu1", [{"file": "/src/project/a.cpp", "lines": [line]}]))

    info = {"same": {"2": [2]}}
    mine = counts((0, 5, 3, 2))
    assert coverage._inherited(mine, counts((0, 5, 4, 1)), info, "a.cpp", 2)
    assert not coverage._inherited(mine, counts((1, 4, 4, 1)), info, "a.cpp", 2)  # base took it
    assert not coverage._inherited(mine, counts((0, 5)), info, "a.cpp", 2)  # another shape
    assert not coverage._inherited(mine, None, info, "a.cpp", 2)  # no base run
    assert not coverage._inherited(mine, counts((0, 5, 4, 1)), {"same": {}}, "a.cpp", 2)


def test_grader_units_are_kept_under_their_own_key() -> None:
    """The grader's main.cpp (a relative name in the build folder) is kept as
    <grader>/probes/..., the harness entry and the standard library are not."""
    test = Program.model_validate({"units": ["probes/test_valid.cpp"]})
    harness = coverage._harness(test)
    assert harness == {"/src/build/main.cpp": "<grader>/probes/test_valid.cpp"}
    text = _unit(
        "tu0",
        [
            {"file": "main.cpp", "lines": [_line(11, 4, branches=(0, 4))]},
            {"file": "cxxgate_entry.cpp", "lines": [_line(3, 1)]},
        ],
    )
    counts = gcovjson.parse(text, harness)
    assert counts.lines == {"<grader>/probes/test_valid.cpp": {11: 4}}
    assert counts.untaken("<grader>/probes/test_valid.cpp", 11) == (1, 2)
    assert gcovjson.parse(text).lines == {}
