"""Code that runs before the harness's own (cxxgate/cells/premain.py), and where the nonces are
(cxxgate/runs/run.py, templates/entry/entry.cpp): real g++ objects and programs, real runs.

The shipped rows: cases/port (`preinit_hook`, `ifunc_thief`, `early_ctor` on
premain_hook; `nonce_thief` on suite_red), cases/intervals (`ifunc_forge` on premain_hook).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SHIPPED, make_tree

from cxxgate.cells import premain
from cxxgate.cells.cell import build
from cxxgate.gates.coverage.gcovjson import Counts
from cxxgate.host import process
from cxxgate.runs.run import REPORT_FDS, RETURN_FDS, RunSpec, execute
from cxxgate.store.layout import Layout
from cxxgate.toolchain.cellspec import ENTRY_SOURCE, CellSpec, Unit
from cxxgate.toolchain.envelope import Envelopes

ENVELOPES = Envelopes(SHIPPED / "envelopes.yaml")
STEAL = """
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>
int answer() { return 42; }
namespace {
// What a static initialiser of the tree can find: the environment, the descriptors.
const int seen = [] {
  const char* env = std::getenv("CXXGATE_RETURN_FDS");
  std::printf("env=%s in=%s\\n", env ? env : "none", fcntl(1000, F_GETFD) < 0 ? "closed" : "open");
  return 0;
}();
}
"""


def _object(tmp_path: Path, source: str, *flags: str) -> Path:
    src = tmp_path / "t.cpp"
    src.write_text(source)
    obj = tmp_path / "t.o"
    argv = ["g++", "-std=c++20", "-O0", "-c", *flags, str(src), "-o", str(obj)]
    subprocess.run(argv, check=True, capture_output=True)
    return obj


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ('[[gnu::used, gnu::section(".preinit_array")]] void (*h)() = +[] {};', ".preinit_array"),
        # A section of the type under another name: placed by type, refused by type.
        (
            'asm(".section .early,\\"aw\\",@preinit_array\\n.quad 0\\n.previous");',
            ".preinit_array entry (section .early)",
        ),
        (
            'int f() { return 1; }\nextern "C" int (*pick())() { return f; }\n'
            'extern "C" int g() __attribute__((ifunc("pick")));',
            "IFUNC",
        ),
        ("[[gnu::constructor(101)]] void early() {}", "priority 101"),
        # The implementation's priorities, spelt in assembly past the compiler's warning.
        (
            'extern "C" void early() {}\n'
            'asm(".section .init_array.00050,\\"aw\\"\\n.quad early\\n.previous");',
            "priority 50",
        ),
        ('extern "C" void __gcov_reset() {}', "defines '__gcov_reset'"),
        ('extern "C" void __gcov_dump();\nvoid f() { __gcov_dump(); }', "'__gcov_dump'"),
        (
            'extern "C" void cxxgate_report_line(const char*, unsigned long);\n'
            'void f() { cxxgate_report_line("held", 4); }',
            "cxxgate_report_line",
        ),
    ],
)
def test_an_object_with_code_before_the_harness_is_refused(
    tmp_path: Path, source: str, said: str
) -> None:
    found = premain.object_problems(_object(tmp_path, source), tree_code_only=True)
    assert any(said in p for p in found), found


def test_ordinary_objects_pass_instrumented_or_not(tmp_path: Path) -> None:
    """Static initialisers, a later priority, and the compiler's own constructors (gcov's
    counters at 100, ASan's at 99) are not the candidate's early code."""
    source = (
        "int g();\nstatic int x = g();\n[[gnu::constructor(102)]] void later() {}\n"
        "int f(int v) { return v > 0 ? v : -v; }\n"
    )
    for flags in ((), ("--coverage",), ("-fsanitize=address,undefined",)):
        assert premain.object_problems(_object(tmp_path, source, *flags), tree_code_only=True) == []
    # A harness unit (a driver) calls the report channel; an object of the tree may not.
    call = 'extern "C" int cxxgate_report_open();\nint f() { return cxxgate_report_open(); }'
    assert premain.object_problems(_object(tmp_path, call), tree_code_only=False) == []


def test_a_tree_definition_of_a_library_name_is_refused(tmp_path: Path) -> None:
    """A tree's `strtol` (or `__assert_fail`) would replace libc's for the harness's code
    too: refused in a tree object, read against the toolchain's own libraries' .dynsym.
    Replacing operator new/delete is the standard's to allow; a harness unit may define
    anything it likes."""
    exports = premain.library_exports("g++")
    assert {"strtol", "strtoull", "__assert_fail"} <= exports[0]
    bent = (
        'extern "C" long strtol(const char*, char**, int) { return 1; }\n'
        'extern "C" [[noreturn]] void __assert_fail(const char*, const char*, unsigned, '
        "const char*) { for (;;) {} }\n"
    )
    found = premain.object_problems(_object(tmp_path, bent), tree_code_only=True, exports=exports)
    assert any("'strtol'" in p for p in found) and any("'__assert_fail'" in p for p in found)
    # under a version of its own: ld takes `strtol@@X` for `strtol` (round 32)
    versioned = 'extern "C" long mine(const char*, char**, int) { return 1; }\n'
    versioned += 'asm(".symver mine, strtol@@X");\n'
    found = premain.object_problems(
        _object(tmp_path, versioned), tree_code_only=True, exports=exports
    )
    assert any("'strtol'" in p for p in found), found
    assert (
        premain.object_problems(_object(tmp_path, bent), tree_code_only=False, exports=exports)
        == []
    )
    allowed = (
        "#include <cstdlib>\n#include <new>\n#include <string>\n"
        "void* operator new(std::size_t n) { return std::malloc(n ? n : 1); }\n"
        "void operator delete(void* p) noexcept { std::free(p); }\n"
        "void operator delete(void* p, std::size_t) noexcept { std::free(p); }\n"
        "std::string f(const std::string& s) { return s + s.substr(1); }\n"
        "static long parse(const char* s) { return std::strtol(s, nullptr, 10); }\n"
        "long g(const char* s) { return parse(s); }\n"
    )
    obj = _object(tmp_path, allowed)
    assert premain.object_problems(obj, tree_code_only=True, exports=exports) == []


def _program(layout: Layout, tree: dict[str, str], envelope: str = "dbg") -> CellSpec:
    make_tree(layout, "a", tree)
    main = '#include <cstdio>\nint answer();\nint main() { std::printf("%d\\n", answer()); }\n'
    return CellSpec(
        kind="exe",
        tree_key="a",
        units=(Unit("main.cpp", main),),
        tree_sources=("src/*.cpp",),
        include_dirs=(),
        envelope=ENVELOPES.get(envelope),
        compile_seconds=120,
        entry=True,
    )


def test_the_nonce_is_gone_before_any_code_of_the_tree_runs(tmp_path: Path) -> None:
    """No environment variable names it, and its pipe is closed by the time a static
    initialiser runs; the entry still hands it back after main."""
    layout = Layout(tmp_path / "out")
    cell = build(_program(layout, {"src/lib.cpp": STEAL}), layout)
    assert cell.status == "ok", cell.detail
    run = execute(RunSpec(cell_key=cell.key, label="steal"), layout)
    assert run.stdout.decode() == "env=none in=closed\n42\n"
    assert run.returned is True


def test_a_tree_ifunc_refuses_the_program_for_every_gate(tmp_path: Path) -> None:
    ifunc = (
        'int real() { return 42; }\nextern "C" int (*pick())() { return real; }\n'
        'extern "C" int answer_() __attribute__((ifunc("pick")));\n'
        "int answer() { return answer_(); }\n"
    )
    layout = Layout(tmp_path / "out")
    cell = build(_program(layout, {"src/lib.cpp": ifunc}), layout)
    assert cell.status == "premain_hook"
    assert "src/lib.cpp: an IFUNC symbol 'answer_'" in cell.detail
    assert cell.binary is None


def test_fixed_descriptors_reach_the_child_at_their_numbers(tmp_path: Path) -> None:
    r, w = os.pipe()
    os.write(w, b"nonce")
    os.close(w)
    try:
        out = process.bounded(
            [sys.executable, "-c", f"import os; print(os.read({RETURN_FDS[0]}, 64).decode())"],
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin"},
            timeout=10,
            output_cap=1024,
            fixed_fds=((RETURN_FDS[0], r),),
        )
    finally:
        os.close(r)
    assert out.stdout == b"nonce\n"
    with pytest.raises(OSError):
        os.fstat(RETURN_FDS[0])  # only the child had it there


def test_a_line_is_covered_when_every_branch_was_taken_by_some_copy() -> None:
    counts = Counts()
    counts.add_branches("a.cpp", 3, "unit1", [1, 0])
    counts.add_branches("a.cpp", 3, "unit2", [0, 2])  # another TU's copy took the other
    counts.add_branches("a.cpp", 4, "unit1", [5, 0])
    counts.add_branches("a.cpp", 4, "unit1", [1, 0])  # a second run of the same unit
    assert counts.untaken("a.cpp", 3) == (0, 2)
    assert counts.untaken("a.cpp", 4) == (1, 2)
    assert counts.untaken("a.cpp", 5) == (0, 0)  # no branch: the line count decides


def test_the_templates_read_the_descriptors_the_harness_fills() -> None:
    """The numbers are spelt twice (run.py, the templates, which include nothing)."""
    entry = ENTRY_SOURCE.read_text()
    report = (ENTRY_SOURCE.parents[1] / "metamorphic" / "report.cpp").read_text()
    assert f"kNonceIn = {RETURN_FDS[0]};" in entry
    assert f"kNonceBack = {RETURN_FDS[1]};" in entry
    assert f"kNonceIn = {REPORT_FDS[0]};" in report
    assert f"kReport = {REPORT_FDS[1]};" in report
