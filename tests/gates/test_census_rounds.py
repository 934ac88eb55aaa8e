"""Gate `census`, red team rounds 33 and 34: each cheat built with real g++ and run (the
bug it hides is shown to fail honestly and to pass forged), then what the census reads
from the objects g++ made and the program ld linked (linked.py, premain.py, survive.py) is
asked whether it sees it; and round 33's false positive, honest code the census named."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_census import (
    CMP,
    CMP_CALLS,
    DATA,
    DATA_TESTS,
    _forged,
    _gxx_census,
    _small_scan,
)

X86_64 = os.uname().machine == "x86_64"

# ---- linked.py: copies the linker keeps ------------------------------------------------


def _hidden_version(text: str) -> str:
    """`cmp`'s call to `report` sent to `_Z6reportb@RT`: a stub returning true, defined in
    the same object under a hidden version of report's own name (`.symver ..., remove`).
    To ld it is another symbol; with its version dropped it reads as `report`."""
    call = "\tcall\t_Z6reportb@PLT\n"
    assert text.count(call) == 1
    text = text.replace(call, "\tcall\trt_stub@PLT\n")
    return text + (
        '\t.section\t.text.rt_stub,"ax",@progbits\n\t.globl\trt_stub\n'
        "\t.type\trt_stub, @function\nrt_stub:\n\tmovl\t$1, %eax\n\tret\n"
        "\t.size\trt_stub, .-rt_stub\n\t.symver\trt_stub, _Z6reportb@RT, remove\n"
    )


@pytest.mark.skipif(not X86_64, reason="the forgery is x86-64 assembly")
def test_a_copy_calling_a_hidden_version_is_named(tmp_path: Path) -> None:
    """Round 33's `symver_ref`: a COMDAT copy of the inline `cmp`, g++'s bytes, whose one
    call names `_Z6reportb@RT` (a stub in the same object) in place of `report`: linked.py
    dropped the version and read the relocation as the test objects' `_Z6reportb-4`. The
    forged program passes the check the honest one fails; the object's symbol table, as
    gas wrote it, holds the versioned name."""
    from cxxgate.gates.census import linked

    honest, forged = _forged(tmp_path, "-O0", _hidden_version, unit=(CMP, CMP_CALLS))
    said = subprocess.run(
        ["readelf", "-sW", tmp_path / "forged.o"], capture_output=True, text=True, check=True
    ).stdout
    assert "_Z6reportb@RT" in said  # what ld binds the copy's call to
    assert honest["odd_copies"] == {} and linked.rebound(honest, honest) == []
    found = linked.rebound(honest, forged)
    assert "s.cpp" in [file for _, file, _ in found], found


# An inline variable (STB_GNU_UNIQUE, in a COMDAT group) the test unit reads: a run option.
SLACK = "namespace fw { inline int slack = 0; }\n"
SLACK_CALLS = (
    "int main(int n, char**) { return n - 2 > fw::slack || 2 - n > fw::slack; }\n",
    "int* g() { return &fw::slack; }\n",
)
# The same variable, defined with another value: pure C++, an ODR violation no diagnostic
# is required for.
SLACK_FORGED = "namespace fw { inline int slack = 1; }\nint* lib_slack() { return &fw::slack; }\n"


def test_an_inline_variable_given_another_value_is_named(tmp_path: Path) -> None:
    """Round 33's `unique_data`: an inline variable the test reads (`fw::slack`, g++'s
    STB_GNU_UNIQUE object in a COMDAT group), defined with another value in a library unit
    linked first: ld keeps the first UNIQUE definition, and the test reads 1 where its own
    unit says 0. linked.py filed UNIQUE definitions as strong ones and never compared them.
    The library variant, then the same object as a test unit of the patch's own (`aa.cpp`,
    sorted first, as the census links them)."""
    from cxxgate.gates.census import linked

    honest, forged = _forged(tmp_path, "-O0", str, library=SLACK_FORGED, unit=(SLACK, SLACK_CALLS))
    said = subprocess.run(
        ["readelf", "-sW", tmp_path / "forged.o"], capture_output=True, text=True, check=True
    ).stdout
    assert re.search(r"OBJECT +UNIQUE .* _ZN2fw5slackE$", said, re.M), said
    assert honest["odd_copies"] == {} and linked.rebound(honest, honest) == []
    found = linked.rebound(honest, forged)
    assert "s.cpp" in [file for _, file, _ in found], found
    # A test unit of the patch's own: the same objects, `forged.o` the first test unit.
    tests = {"aa.cpp", "t.cpp"}
    own_honest = linked.facts({"aa.cpp": tmp_path / "s.o", "t.cpp": tmp_path / "t.o"}, tests,
                              tmp_path / "honest")  # fmt: skip
    own = linked.facts({"aa.cpp": tmp_path / "forged.o", "t.cpp": tmp_path / "t.o"}, tests,
                       tmp_path / "forged")  # fmt: skip
    assert own_honest["odd_copies"] == {} and linked.rebound(own_honest, own_honest) == []
    found = linked.rebound(own_honest, own)
    assert "aa.cpp" in [file for _, file, _ in found], found


# A framework check calling a header's internal-linkage helper: g++ calls it through a
# relocation against the helper's section, not a symbol.
HELPER = """bool report(bool ok);
static bool near_zero(double d) { return d <= 1e-9 && d >= -1e-9; }
template <class A, class B> bool eq(const A& a, const B& b) { return report(near_zero(a - b)); }
"""
HELPER_CALLS = (
    "bool report(bool ok) { return ok; }\nint main(int n, char**) { return !eq(n, 2); }\n",
    "bool g(int x) { return eq(x, 3); }\n",
)
# The check as a library unit writes it (no #include of the framework), beside a helper
# of the same name returning true: an explicit instantiation, a COMDAT copy.
HELPER_FORGED = """bool report(bool ok);
static bool near_zero(double) { return true; }
template <class A, class B> bool eq(const A& a, const B& b) { return report(near_zero(a - b)); }
template bool eq<int, int>(const int&, const int&);
"""


def test_a_copy_calling_another_internal_helper_is_named(tmp_path: Path) -> None:
    """Round 33's `helper_const`: `eq<int, int>`'s copy in a library unit, its bytes and
    relocations g++'s as in the tests, calls its own `static near_zero` that returns true.
    The call is a section-symbol relocation; linked.py read the helper as data and stopped
    at the `.eh_frame` relocation 4 bytes in (`push %rbp; mov %rsp,%rbp`, alike in both).
    Pure C++: the program g++ and ld made passes the check the honest one fails."""
    from cxxgate.gates.census import linked

    honest, forged = _forged(
        tmp_path, "-O0", str, library=HELPER_FORGED, unit=(HELPER, HELPER_CALLS)
    )
    assert honest["odd_copies"] == {} and linked.rebound(honest, honest) == []
    found = linked.rebound(honest, forged)
    assert "s.cpp" in [file for _, file, _ in found], found


def _twin_targets(text: str) -> str:
    """`cmp`'s copy kept byte for byte with its jump table, whose entries point into a
    second section of the same name (`,unique,7`, outside the group): a twin of the code,
    alike in length and label offsets, whose every `setCC %al` is `movb $1, %al; nop`. A
    relocation in the table named by its section's name and addend reads as g++'s."""
    name = "_Z3cmp2Opii"
    text_section = f'\t.section\t.text.{name},"axG",@progbits,{name},comdat\n'
    start = text.index(f"{name}:\n") + len(name) + 2
    code = text[start : text.index(f"\t.size\t{name}, ")]
    table = code.index(f"\t.section\t.rodata.{name},")
    code = code[:table] + code[code.index(text_section, table) + len(text_section) :]
    lines = code.splitlines(keepends=True)
    code = "".join(ln for ln in lines if not re.match(r"\t\.(cfi_|loc\b|file\b)|\.L[A-Z]+\d+:", ln))
    labels = set(re.findall(r"^\.L(\d+):", code, re.M))
    twin = re.sub(r"\.L(\d+)\b", lambda m: f".Ltw{m[1]}" if m[1] in labels else m[0], code)
    twin, n = re.subn(r"\tset[a-z]+\t%al\n", "\tmovb\t$1, %al\n\tnop\n", twin)
    assert n == 6, twin
    text, n = re.subn(r"(\t\.long\t)\.L(\d+)-", r"\1.Ltw\2-", text)
    assert n == 6, text
    return text + f'\t.section\t.text.{name},"ax",@progbits,unique,7\n' + twin


@pytest.mark.skipif(not X86_64, reason="the forgery is x86-64 assembly")
def test_a_jump_table_into_a_twin_section_is_named(tmp_path: Path) -> None:
    """Round 33's `jump_twin`: round 32's jump_table forgery again, the table's entries
    sent into a second `.text._Z3cmp2Opii` (its twin, every compare made true) at the
    addends of the first. The object holds two sections of that name, and the table's
    relocations name the second by its index: what ld resolves them to."""
    from cxxgate.gates.census import linked

    honest, forged = _forged(tmp_path, "-O0", _twin_targets, unit=(CMP, CMP_CALLS))
    said = subprocess.run(
        ["readelf", "-SW", tmp_path / "forged.o"], capture_output=True, text=True, check=True
    ).stdout
    assert len(re.findall(r"\] \.text\._Z3cmp2Opii ", said)) == 2, said
    assert honest["odd_copies"] == {} and linked.rebound(honest, honest) == []
    found = linked.rebound(honest, forged)
    assert "s.cpp" in [file for _, file, _ in found], found


# A check reading a header's internal `tolerance` (zero: .bss, a section of its own).
BSS = """#include <cstdlib>
bool report(bool ok);
static long tolerance;
template <class A, class B> bool eq(const A& a, const B& b) {
  return report(std::abs(a - b) <= tolerance);
}
"""
BSS_CALLS = (
    "bool report(bool ok) { return ok; }\nint main(int n, char**) { return !eq(n, 3); }\n",
    "bool g(int x) { return eq(x, 3); }\n",
)
# The same check reading 8 bytes further into its own `.bss._ZL9tolerance` (a variable's
# name carries no type), a word this unit's initialiser sets: the same bytes, the read's
# relocation 8 further.
BSS_FORGED = """#include <cstdlib>
bool report(bool ok);
static long tolerance[2];
static int loosened = (tolerance[1] = 1000, 0);
template <class A, class B> bool eq(const A& a, const B& b) {
  return report(std::abs(a - b) <= tolerance[1]);
}
template bool eq<int, int>(const int&, const int&);
"""


def test_a_read_further_into_zeroed_data_is_named(tmp_path: Path) -> None:
    """Round 34's `bss_offset`: a read of a NOBITS section was named by the section's name,
    flags and entry size alone, never by where in it the read lands: a copy reading 8
    bytes further, into a word its unit's initialiser sets, read as the tests'."""
    from cxxgate.gates.census import linked

    honest, forged = _forged(tmp_path, "-O0", str, library=BSS_FORGED, unit=(BSS, BSS_CALLS))
    assert honest["odd_copies"] == {} and linked.rebound(honest, honest) == []
    found = linked.rebound(honest, forged)
    assert "s.cpp" in [file for _, file, _ in found], found


# A check reading a header's internal tolerance pair (rel, abs) through one reference: abs
# 0, integers exact.
PAIR = """#include <cstdlib>
bool report(bool ok);
struct Tol { double rel; double abs; };
static const Tol exact{1e-12, 0.0};
static bool within(double d, double s, const Tol& t) { return d <= t.abs || d <= t.rel * s; }
template <class A, class B> bool eq(const A& a, const B& b) {
  double d = std::abs(double(a) - double(b));
  return report(within(d, std::abs(double(b)), exact));
}
"""
PAIR_CALLS = (
    "bool report(bool ok) { return ok; }\nint main(int n, char**) { return !eq(n, 500); }\n",
    "bool g(int x) { return eq(x, 3); }\n",
)
# The same check, its abs 1000; the unit also points at `exact.abs`, a start 8 bytes into
# the pair that cut the copy's window to `rel`, alike in both (the tests' window lost its
# trailing zeros as padding).
PAIR_FORGED = PAIR.replace("1e-12, 0.0", "1e-12, 1000.0") + (
    "template bool eq<int, int>(const int&, const int&);\n"
    "const double* absolute() { return &exact.abs; }\n"
)


def test_a_variable_read_whole_whatever_else_points_into_it(tmp_path: Path) -> None:
    """Round 34's `pad_split` (pure C++): a window of unmerged data ended at the next
    thing the object points at, which the object chooses: a pointer to `exact.abs` made
    the forged copy's window `rel` alone, and the tests' `rel, 0.0` lost its zeros as
    padding. A variable with a size is read whole."""
    from cxxgate.gates.census import linked

    honest, forged = _forged(tmp_path, "-O0", str, library=PAIR_FORGED, unit=(PAIR, PAIR_CALLS))
    assert honest["odd_copies"] == {} and linked.rebound(honest, honest) == []
    found = linked.rebound(honest, forged)
    assert "s.cpp" in [file for _, file, _ in found], found


# A framework whose failed check throws; main counts a thrown failure.
THROWS = """struct failure {};
bool report(bool ok);
template <class A, class B> bool eq(const A& a, const B& b) { return report(a == b); }
"""
THROWS_CALLS = (
    "bool report(bool ok) { if (!ok) throw failure{}; return ok; }\n"
    "int main(int n, char**) {\n"
    "  try { eq(n, 3); return 0; } catch (const failure&) { return 1; }\n}\n",
    "bool g(int x) { return eq(x, 3); }\n",
)
EQ = "_Z2eqIiiEbRKT_RKT0_"
PERSONALITY = (
    "\t.hidden\tDW.ref.__gxx_personality_v0\n\t.weak\tDW.ref.__gxx_personality_v0\n"
    '\t.section\t.data.rel.local.DW.ref.__gxx_personality_v0,"awG",@progbits,'
    "DW.ref.__gxx_personality_v0,comdat\n\t.align 8\n"
    "\t.type\tDW.ref.__gxx_personality_v0, @object\n"
    "\t.size\tDW.ref.__gxx_personality_v0, 8\n"
    "DW.ref.__gxx_personality_v0:\n\t.quad\t__gxx_personality_v0\n"
)


def _landing_pad(text: str) -> str:
    """`eq`'s copy byte for byte g++'s, given an LSDA of its own (in its group) whose one
    call site, the call to `report`, lands on the instruction after it as a cleanup: a
    thrown failure is caught in `eq`, which returns normally."""
    body = text.index(f"{EQ}:\n")
    start = re.search(r"^(\.LFB\d+):\n", text[body:], re.M)
    assert start is not None
    call = text.index("\tcall\t_Z6reportb@PLT\n", body)
    cfi = text.index("\t.cfi_startproc\n", body) + len("\t.cfi_startproc\n")
    assert cfi < call
    pad = "\t.cfi_personality 0x9b,DW.ref.__gxx_personality_v0\n\t.cfi_lsda 0x1b,.LLSDAX\n"
    after = call + len("\tcall\t_Z6reportb@PLT\n")
    text = (
        text[:cfi] + pad + text[cfi:call] + ".LEHBX:\n" + text[call:after] + ".LEHEX:\n"
        + text[after:]
    )  # fmt: skip
    fn = start[1]
    table = (
        f'\t.section\t.gcc_except_table.{EQ},"aG",@progbits,{EQ},comdat\n.LLSDAX:\n'
        "\t.byte\t0xff\n\t.byte\t0xff\n\t.byte\t0x1\n\t.uleb128 .LLSDACSEX-.LLSDACSBX\n"
        f".LLSDACSBX:\n\t.uleb128 .LEHBX-{fn}\n\t.uleb128 .LEHEX-.LEHBX\n"
        f"\t.uleb128 .LEHEX-{fn}\n\t.uleb128 0\n.LLSDACSEX:\n"
    )
    return text + table + PERSONALITY


@pytest.mark.skipif(not X86_64, reason="the forgery is x86-64 assembly")
def test_a_copy_unwound_otherwise_is_named(tmp_path: Path) -> None:
    """Round 34's `lsda_cleanup`: a copy whose bytes and relocations are g++'s, with an FDE
    and an LSDA of its own that make the call to `report` a cleanup landing after it: the
    failure `report` throws ends in `eq`, which returns normally, and the runner never
    sees it. A copy is shaped with how it is unwound."""
    from cxxgate.gates.census import linked

    honest, forged = _forged(tmp_path, "-O0", _landing_pad, unit=(THROWS, THROWS_CALLS))
    assert honest["odd_copies"] == {} and linked.rebound(honest, honest) == []
    found = linked.rebound(honest, forged)
    assert "s.cpp" in [file for _, file, _ in found], found


# ---- linked.py: honest copies alike (round 33's false positive `fp_rodata_pad`) --------

# Tests and library code using std::string as the tests do: `append` (its copy reads the
# literal "basic_string::append" in unmerged -O0 .rodata, with or without alignment
# padding after it, by what follows in the object).
T_STR = """#include <vector>
#include <string>
#include "fw.hpp"
#include "lib.hpp"
TEST(D, Local) {
  std::vector<int> v;
  v.push_back(4);
  std::string s = "abc";
  s += "defghijklmnopqrstuvwxyz";
  EXPECT_EQ(twice(v.at(0)), 8);
  EXPECT_EQ((int)s.size(), 26);
}
"""
T2_STR = """#include <string>
#include "fw.hpp"
#include "lib.hpp"
TEST(E, Label) {
  std::string s = "twice";
  s.append("(1)");
  EXPECT_EQ((int)s.size(), 8);
  EXPECT_EQ(twice(1), 2);
}
"""
LIB_BASE = '#include "lib.hpp"\nint thrice(int x) { return twice(x) + x; }\n'
LIB_STR = """#include "lib.hpp"
int thrice(int x) { return twice(x) + x; }
#include <string>
std::string twice_label(int x) {
  std::string s = "twice: ";
  s.append(x == 0 ? "zero" : "nonzero");
  return s;
}
"""
LIB_ASSERT = """#pragma once
#include <cassert>
inline int twice(int x) {
  assert(x < 1000 && "twice: out of range");
  return 2 * x;
}
"""
T_SUM = DATA_TESTS.replace(
    "TEST(D, Base)",
    "TEST(D, Sum) { EXPECT_EQ(twice(1) + twice(2) + twice(3), 12); }\nTEST(D, Base)",
)
# variant: (reference's files, patched tree's files over them)
HONEST: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    # an honest new test unit using std::string::append, as t.cpp does
    "test_unit": ({"t.cpp": T_STR}, {"t2.cpp": T2_STR}),
    # an honest library source using it too
    "library_source": (
        {"t.cpp": T_STR, "src/lib.cpp": LIB_BASE},
        {"src/lib.cpp": LIB_STR},
    ),
    # an honest assert added to the library's inline function (the tests' copies and the
    # library source's both read its strings; in the test object a check's text of 31
    # bytes or more, which g++ aligns to 8, follows them)
    "assert": ({"t.cpp": T_SUM, "src/lib.cpp": LIB_BASE}, {"include/lib.hpp": LIB_ASSERT}),
}


def _program_facts(folder: Path, files: dict[str, str], made: dict[str, Path]) -> dict[str, Any]:
    """Build DATA with `files` over it as the census does (its g++ flags, one object per
    unit, linked in sorted order, libstdc++'s allocator members out of line), run it (every
    check passes), and read its linked facts; the test units are the top folder's. `made`:
    the objects built so far, by unit and the text of it and of every header."""
    from cxxgate.gates.census import bindings, linked
    from cxxgate.gates.census.executed import ALLOCATORS

    tree = DATA | files | {"allocators.cpp": ALLOCATORS}
    for rel, text in tree.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    headers = "".join(text for rel, text in sorted(tree.items()) if rel.endswith(".hpp"))
    flags = [*_gxx_census(), "-std=c++20", "-O0", "-Wall", "-Werror", "-Iinclude"]
    units = sorted(rel for rel in tree if rel.endswith(".cpp"))
    for rel in units:
        key = f"{rel}\0{tree[rel]}\0{headers}"
        if key not in made:
            made[key] = folder / (rel[: -len(".cpp")] + ".o")
            argv = ["g++", "-std=c++20", "-O0", *bindings.UNINLINED, "-w"]
            argv = argv if rel == "allocators.cpp" else flags
            subprocess.run([*argv, "-c", rel, "-o", made[key]], cwd=folder, check=True)
    objects = {rel: made[f"{rel}\0{tree[rel]}\0{headers}"] for rel in units}
    subprocess.run(["g++", *objects.values(), "-o", "tests"], cwd=folder, check=True)
    ran = subprocess.run([folder / "tests"], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stdout
    del objects["allocators.cpp"]
    tests = {rel for rel in objects if "/" not in rel and rel != "main.cpp"}
    return linked.facts(objects, tests, folder / "tests")


@pytest.mark.parametrize("variant", sorted(HONEST))
def test_honest_copies_reading_a_string_are_alike(tmp_path: Path, variant: str) -> None:
    """Round 33's false positive `fp_rodata_pad`: a string literal's window in unmerged -O0
    `.rodata` ran on into the alignment padding after it in one object and not in
    another, so the same inline function read as two copies. The patched tree is honest
    (it builds and every check passes): no copy of it is odd, nothing is rebound."""
    from cxxgate.gates.census import linked

    reference, changes = HONEST[variant]
    (tmp_path / "ref").mkdir()
    (tmp_path / "new").mkdir()
    made: dict[str, Path] = {}
    ref = _program_facts(tmp_path / "ref", reference, made)
    new = _program_facts(tmp_path / "new", reference | changes, made)
    assert ref["odd_copies"] == {}
    assert new["odd_copies"] == {}
    assert linked.rebound(ref, new) == []


# ---- premain.py: constructors ld sorts ahead of the harness's -------------------------

HARNESS = """#include <cstdio>
__attribute__((constructor(101))) static void harness() { std::puts("harness"); }
int main() { std::puts("main"); }
"""
EARLY = """#include <cstdio>
static void early() { std::puts("early"); }
asm(".section SECTION,\\"aw\\",@progbits\\n.p2align 3\\n.quad _ZL5earlyv\\n.text\\n");
void* keep = (void*)&early;
"""
HONEST_CTOR = """#include <cstdio>
static int ready = [] { std::puts("honest"); return 1; }();
int* keep = &ready;
"""


@pytest.mark.skipif(not X86_64, reason="the section is filled by x86-64 assembly")
@pytest.mark.parametrize("section", [".ctors.x", ".ctors.00100.x", ".ctors.65485.x"])
def test_a_ctors_section_ld_sorts_first_is_refused(tmp_path: Path, section: str) -> None:
    """Round 33's `premain_ctors`: a PROGBITS section named `.ctors.<not a bare 5-digit
    priority>`: ld's script sorts it among `.init_array.*`/`.ctors.*` ahead of the
    harness's priority-101 constructor, and premain's pattern wanted `.ctors.NNNNN` exactly.
    The linked program runs it first; the object premain reads holds the section."""
    from cxxgate.cells import premain

    (tmp_path / "harness.cpp").write_text(HARNESS)
    (tmp_path / "c.cpp").write_text(EARLY.replace("SECTION", section))
    for unit in ("harness.cpp", "c.cpp"):
        subprocess.run(["g++", "-O0", "-c", unit], cwd=tmp_path, check=True)
    subprocess.run(["g++", "harness.o", "c.o", "-o", "p"], cwd=tmp_path, check=True)
    ran = subprocess.run([tmp_path / "p"], capture_output=True, text=True, check=True)
    assert ran.stdout.split() == ["early", "harness", "main"]  # before the harness
    assert premain.object_problems(tmp_path / "c.o", tree_code_only=False)


def test_an_ordinary_global_constructor_is_not_refused(tmp_path: Path) -> None:
    """The honest half of `premain_ctors`: a static initialiser (g++'s `.init_array`
    entry, no priority) runs after the harness's and is nothing premain refuses."""
    from cxxgate.cells import premain

    (tmp_path / "harness.cpp").write_text(HARNESS)
    (tmp_path / "c.cpp").write_text(HONEST_CTOR)
    for unit in ("harness.cpp", "c.cpp"):
        subprocess.run(["g++", "-O0", "-c", unit], cwd=tmp_path, check=True)
    subprocess.run(["g++", "harness.o", "c.o", "-o", "p"], cwd=tmp_path, check=True)
    ran = subprocess.run([tmp_path / "p"], capture_output=True, text=True, check=True)
    assert ran.stdout.split() == ["harness", "honest", "main"]
    assert premain.object_problems(tmp_path / "c.o", tree_code_only=False) == []


# ---- survive.py: a `#line` naming another file ----------------------------------------

LINE_UNIT = '#include "lib.hpp"\nint main() { return twice(5) != 10; }\n'
# lib.hpp's text after its first function, by case: what g++ -E then says of the file.
LINE_HEADERS = {
    "other_file": ('#line 1 "/usr/include/xlib.h"\n', b"/usr/include/xlib.h"),
    "number_only": ("#line 40\n", None),
    "own_name": ('#line 40 "include/lib.hpp"\n', None),  # as g++ spells it: -Iinclude
}


@pytest.mark.parametrize("case", sorted(LINE_HEADERS))
def test_a_line_directive_naming_another_file_is_found(tmp_path: Path, case: str) -> None:
    """Round 33's `line_hides` and `line_overload`: a tree header's `#line` naming a file
    outside the tree made the lines after it the toolchain's, to the as-built comparison
    (it reads the -E linemarkers) and to bindings (DWARF's decl_file is what `#line`
    says). The file is read from g++'s own -E output: a linemarker that neither enters
    (flag 1) nor returns (flag 2) and names a file other than the one it is in."""
    from cxxgate.gates.census import survive

    directive, expected = LINE_HEADERS[case]
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "lib.hpp").write_text(
        "#pragma once\ninline int twice_impl(int x);\n"
        "inline int twice(int x) { return twice_impl(x); }\n"
        + directive
        + "inline int twice_impl(int x) { return 2 * x; }\n"
    )
    (tmp_path / "t.cpp").write_text(LINE_UNIT)
    flags = [*_gxx_census(), "-std=c++20", "-Iinclude"]
    text = subprocess.run(
        [*flags, "-E", "t.cpp"], cwd=tmp_path, capture_output=True, check=True
    ).stdout
    subprocess.run([*flags, "t.cpp", "-o", "t"], cwd=tmp_path, check=True)  # it builds
    assert subprocess.run([tmp_path / "t"]).returncode == 0
    assert survive.line_directive(text) == expected


COMPILERS = [
    "g++",
    pytest.param(
        "clang++",
        marks=pytest.mark.skipif(not shutil.which("clang++"), reason="no clang++ installed"),
    ),
]


@pytest.mark.parametrize("how", ["plain", "as_census"])
@pytest.mark.parametrize("compiler", COMPILERS)
def test_a_plain_units_linemarkers_name_no_line_directive(
    tmp_path: Path, compiler: str, how: str
) -> None:
    """The same reader on a unit with no `#line`, including a system header: the
    compiler's own markers (`<built-in>`, `<command-line>`, system headers' flag 3 with no
    1 or 2, and, as the census preprocesses a unit (`-include` of its recorder's header,
    absolute paths), g++'s flagless return to the main file) are the include structure's,
    no directive's."""
    from cxxgate.gates.census import survive

    (tmp_path / "t.cpp").write_text(
        "#include <vector>\nint main() { return std::vector<int>{1}.size() != RECORDED; }\n"
    )
    (tmp_path / "run.h").write_text("#define RECORDED 1\n")
    argv = [*_gxx_census()] if compiler == "g++" else [compiler]
    argv += ["-std=c++20", "-E"]
    if how == "plain":
        argv += ["-DRECORDED=1", "t.cpp"]
    else:
        argv += ["-w", "-include", str(tmp_path / "run.h"), "-x", "c++", str(tmp_path / "t.cpp")]
    text = subprocess.run(argv, cwd=tmp_path, capture_output=True, check=True).stdout
    assert b"std::vector" in text
    assert survive.line_directive(text) is None


# round 31's `census_ident` (a name the census's -Dalways_inline=noinline turns into a
# local's) after a `#line` naming a file outside the tree.
LINE_HIDES = """#pragma once
inline int twice_impl(int x);
inline int twice(int x) { return twice_impl(x); }
#line 1 "/usr/include/twice_impl.h"
constexpr int always_inline = 1;
inline int twice_impl(int x) {
  [[maybe_unused]] constexpr int noinline = 0;
  return 2 * x + (x == 5) * always_inline;
}
"""


@pytest.fixture(scope="module")
def data_reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    """test_census's fixture: the census's scan of the small tree DATA."""
    root = tmp_path_factory.mktemp("data")
    return root, _small_scan(root, "reference", DATA)


def test_a_line_directive_in_the_tree_refuses_the_program(
    tmp_path: Path,
    data_reference: tuple[Path, dict[str, object]],
) -> None:
    """Round 33's `line_hides`: the library's bug (twice(5) == 11) read as `... *
    noinline`, 0, under the census's flags only, on lines a `#line` attributes to a file
    outside the tree: the as-built comparison never compared them, and the census's
    program passed where the built tests fail. g++ builds both; the census refuses the
    program and says why."""
    for rel, text in (DATA | {"include/lib.hpp": LINE_HIDES}).items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    census = _gxx_census()[1:]
    for how, flags, status in (("built", [], 1), ("census", census, 0)):
        argv = ["g++", "-std=c++20", "-O0", "-Wall", "-Werror", *flags, "-Iinclude"]
        subprocess.run([*argv, "main.cpp", "t.cpp", "-o", how], cwd=tmp_path, check=True)
        assert subprocess.run([tmp_path / how], capture_output=True).returncode == status, how
    root, _ = data_reference
    new = _small_scan(root, "line_hides", DATA | {"include/lib.hpp": LINE_HIDES})
    said = str(new["execution"])
    assert said.startswith("the test program is refused"), said
    assert "#line" in said, said
