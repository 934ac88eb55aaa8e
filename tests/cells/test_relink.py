"""The harness's re-link of a program (cxxgate/cells/relink.py) with the real g++ and GNU
ld: the map names the archive members the program holds, a program changed after its
link is not what its command makes, and only a system compiler driver is run."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from cxxgate.cells import relink, shadows, verified

pytestmark = pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("ar") is None, reason="g++ and ar are needed"
)

PARSE = "#include <string>\nnamespace calc { int parse(const std::string& t) { return %s; } }\n"
MAIN = (
    "#include <string>\nnamespace calc { int parse(const std::string&); }\n"
    'int main() { return calc::parse(""); }\n'
)
GXX = "/usr/bin/g++"
PARSE_SYMBOL = "_ZN4calc5parseERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"


def _build(build: Path) -> None:
    (build / "parse.cpp").write_text(PARSE % "std::stoi(t)")
    # The fix, compiled in another folder under the same name, and claiming it too.
    (build / "other").mkdir()
    (build / "other/parse.cpp").write_text('asm(".file \\"parse.cpp\\"");\n' + PARSE % "0")
    (build / "main.cpp").write_text(MAIN)
    for src, obj in (("parse.cpp", "parse.o"), ("other/parse.cpp", "other/parse.o"),
                     ("main.cpp", "main.o")):  # fmt: skip
        subprocess.run([GXX, "-c", src, "-o", obj], cwd=build, check=True)
    subprocess.run(["ar", "qc", "libcalc.a", "parse.o"], cwd=build, check=True)
    subprocess.run(["ar", "qc", "libtwin.a", "other/parse.o"], cwd=build, check=True)


def _runner(build: Path) -> relink.Runner:
    def run(argv: list[str], cd: str) -> tuple[int | None, str]:
        done = subprocess.run(argv, cwd=cd or build, capture_output=True, text=True, check=False)
        return done.returncode, done.stdout + done.stderr

    return run


def _link(build: Path, command: str, output: str) -> dict[str, object]:
    subprocess.run(["/bin/sh", "-c", command], cwd=build, check=True)
    scratch = build.parent / "scratch"
    scratch.mkdir(exist_ok=True)
    return relink.relink(
        output, command, build, str(build), str(scratch), scratch, _runner(build),
        shadows.Reader(build),
    )  # fmt: skip


def test_the_map_names_the_members_the_program_holds(tmp_path: Path) -> None:
    build = tmp_path / "build"
    build.mkdir()
    _build(build)
    plain = _link(build, f": && {GXX} main.o -o plain libcalc.a && :", "plain")
    assert plain == {"inputs": ["libcalc.a(parse.o)", "main.o"], "elsewhere": {}, "why": ""}
    # A twin listed first: the project's member is not taken, whatever the twin says it is,
    # and the program holds what libcalc.a defines from elsewhere.
    twinned = _link(build, f"{GXX} main.o -o twinned libtwin.a libcalc.a", "twinned")
    assert twinned == {
        "inputs": ["libtwin.a(parse.o)", "main.o"],
        "elsewhere": {PARSE_SYMBOL: "libtwin.a(parse.o) (not libcalc.a)"},
        "why": "",
    }
    # An absolute path inside the build is spelt build-relative; the system's are left out.
    spelt = _link(build, f"{GXX} {build}/main.o -o spelt {build}/libcalc.a", "spelt")
    assert spelt["inputs"] == ["libcalc.a(parse.o)", "main.o"]


def test_a_program_changed_after_its_link_is_not_what_its_command_makes(
    tmp_path: Path,
) -> None:
    build = tmp_path / "build"
    build.mkdir()
    _build(build)
    command = f": && {GXX} main.o -o plain libcalc.a && :"
    subprocess.run(["/bin/sh", "-c", command], cwd=build, check=True)
    subprocess.run([GXX, "main.o", "-o", "plain", "libtwin.a"], cwd=build, check=True)
    scratch = build.parent / "scratch"
    scratch.mkdir()
    run = _runner(build)
    found = relink.relink(
        "plain", command, build, str(build), str(scratch), scratch, run, shadows.Reader(build)
    )
    assert found["why"] == "it is not what its link command makes from the build"


def test_only_the_link_part_is_run_and_only_by_a_compiler_driver(tmp_path: Path) -> None:
    """A launcher in front is dropped, a `cd` is followed, the other commands of the line
    never run; a shell glob is a word (the build's /bin/sh expanded it: not the same
    program), and a program that is not a compiler driver is not run."""
    build = tmp_path / "build"
    build.mkdir()
    _build(build)
    argv = relink.link_argv(
        f"cd {build}/sub && /usr/bin/env X=1 {GXX} -O2 ../main.o -o {build}/prog && touch x",
        "prog", str(build),
    )  # fmt: skip
    assert argv == ([GXX, "-O2", "../main.o", "-o", f"{build}/prog"], 4, f"{build}/sub")
    assert relink.link_argv("/bin/cp plain -o prog", "prog", str(build)) == (
        "it is linked by /bin/cp, not a compiler driver of the system"
    )
    assert relink.link_argv(f"{build}/g++ main.o -o prog", "prog", str(build)) == (
        f"it is linked by {build}/g++, not a compiler driver of the system"
    )
    assert relink.link_argv(f"{GXX} main.o -o other", "prog", str(build)) == (
        "no part of its link command writes prog"
    )
    # A launcher's `-o prog` before the driver, the driver's own glued (`-oprog`).
    assert relink.link_argv(f"sh l.sh -o prog {GXX} main.o -oprog", "prog", str(build)) == (
        f"its compiler driver does not write prog (-o before {GXX})"
    )
    shutil.copy(build / "libtwin.a", build / "libcalc_0.a")
    globbed = _link(build, f"{GXX} main.o -o globbed libcalc_?.a libcalc.a", "globbed")
    assert str(globbed["why"]).startswith("its link does not run again: "), globbed


def test_a_link_line_splits_as_its_shell_splits_it() -> None:
    """Red-team round 21's honest `origin_rpath`: CMake writes a `$ORIGIN` build RPATH as
    `"\\$ORIGIN/..."`; sh drops that backslash (shlex kept it, so the re-link made other
    bytes). Single quotes keep it; `\\\\` in double quotes is one backslash."""
    words = r""""-Wl,-rpath,\$ORIGIN/../lib:" "a\\\$b" \$c '\$d'"""
    argv, _, _ = relink.link_argv(f"{GXX} main.o -o prog {words}", "prog", "/b")  # type: ignore[misc]
    assert argv[4:] == ["-Wl,-rpath,$ORIGIN/../lib:", r"a\$b", "$c", r"\$d"]
    shell = subprocess.run(["sh", "-c", f"printf '%s\\n' {words}"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    assert shell.stdout.splitlines() == argv[4:]


def test_sections_reads_only_the_aliased_names_byte_for_byte() -> None:
    alias = "/src/build-relink/0123abcd"
    text = "\n".join([
        "Archive member included to satisfy reference by file (symbol)",
        f"{alias}-a/libcalc.a(parse.o)            main.o (calc::parse)",
        relink.MAP_START,
        f"LOAD {alias}-o/main.o",
        f" .text          0x0000000000001139       0x2a {alias}-o/main.o",
        " .text._ZN4calc5parseERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
        f"                0x0000000000001170       0x40 {alias}-a/libcalc.a(parse.o)",
        f" .data          0x0000000000004000        0x0 {alias}-a/libempty.a(empty.o)",
        " *fill*         0x0000000000001165        0x3 ",
        "                0x0000000000001139                main",
        # A symbol named like an input section line, and one not through the alias.
        "                0x0000000000004010                0x10 libcalc.a(parse.o)",
        " .text          0x0000000000001200       0x10 libcalc.a(parse.o)",
        f" .text          0x0000000000001300       0x10 {alias}-o/odd.o\x1f",
        " .text          0x0000000000001040       0x26 /usr/lib/x86_64-linux-gnu/Scrt1.o",
    ])  # fmt: skip
    assert relink.sections(text.splitlines(), alias) == [
        (0x1139, 0x2A, "o", "main.o"),
        (0x1170, 0x40, "a", "libcalc.a(parse.o)"),
        (0x1300, 0x10, "o", "odd.o\x1f"),
    ]
    assert relink.sections(["no memory map here"], alias) is None


# The fix as an inline function (a COMDAT group, which shadows.py does not count as a
# second definition), a map-line forgery beside it: a symbol named like an input section.
INLINE_FIX = (
    "#include <string>\n"
    "namespace calc { [[gnu::used]] inline int parse(const std::string& t) { return 0; } }\n"
    'asm(".globl \\"0x10 libcalc.a(parse.o)\\"\\n.data\\n"\n'
    '    "\\"0x10 libcalc.a(parse.o)\\": .quad 0");\n'
)


@pytest.mark.parametrize("name", ["fix.o", "libcalc.a(parse.o)\x1f"])
def test_an_inline_copy_shows_as_held_elsewhere_whatever_its_file_or_symbols_say(
    tmp_path: Path, name: str
) -> None:
    """The map does not name the project's member (a symbol line shaped like one is not
    read, a file named like one plus a byte is not one), and the program holds what
    libcalc.a defines from the fix's object."""
    build = tmp_path / "build"
    build.mkdir()
    _build(build)
    (build / "fix.cpp").write_text(INLINE_FIX)
    subprocess.run([GXX, "-c", "fix.cpp", "-o", name], cwd=build, check=True)
    command = f"{GXX} {shlex.quote(name)} main.o -o fixed libcalc.a"
    found = _link(build, command, "fixed")
    if "(" in name:  # the inputs are compared by name: an object may not read as a member
        assert found["why"] == f"a file of the build is named like a member: {name!r}"
        return
    assert found["why"] == "" and "libcalc.a(parse.o)" not in found["inputs"], found
    assert found["elsewhere"] == {PARSE_SYMBOL: f"{name} (not libcalc.a)"}


def test_a_dependency_file_reads_as_gcc_writes_it() -> None:
    text = "x.o: a.cpp /usr/include/c++/12/string \\\n b\\ c.hpp d$$e.hpp \\\n  f.hpp\n"
    assert verified.depfile_paths(text) == [
        "a.cpp", "/usr/include/c++/12/string", "b c.hpp", "d$e.hpp", "f.hpp",
    ]  # fmt: skip
