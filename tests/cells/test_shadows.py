"""Two definitions of one symbol in a link's inputs (cxxgate/cells/shadows.py), on objects
and archives made by the real g++ and ar: a fixed twin listed before the project's
library is seen whether it is an object, an archive or a thin archive; inline functions
and template instances (weak) are not shadows."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cxxgate.cells import shadows

pytestmark = pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("ar") is None, reason="g++ and ar are needed"
)

PARSE = """\
#include <string>
namespace calc {
inline int twice(int x) { return 2 * x; }
template <class T> T same(T x) { return x; }
int parse(const std::string& t) { return %s; }
int use() { return twice(same(1)); }
}
"""
LONG = "a_member_name_longer_than_sixteen_bytes"


def _object(build: Path, name: str, body: str) -> str:
    (build / f"{name}.cpp").write_text(PARSE % body)
    subprocess.run(["g++", "-c", f"{name}.cpp", "-o", f"{name}.o"], cwd=build, check=True)
    return f"{name}.o"


def test_a_twin_before_the_library_is_a_shadow(tmp_path: Path) -> None:
    build = tmp_path / "build"
    build.mkdir()
    bug = _object(build, "parse", "std::stoi(t)")
    fix = _object(build, LONG, "t.empty() ? 0 : std::stoi(t)")
    subprocess.run(["ar", "qc", "libcalc.a", bug], cwd=build, check=True)
    subprocess.run(["ar", "qc", "libtwin.a", fix], cwd=build, check=True)
    subprocess.run(["ar", "qcT", "libthin.a", fix], cwd=build, check=True)
    links = {
        "libcalc.a": ["ar", "qc", "libcalc.a", bug],  # an archive's own command: skipped
        "plain": ["c++", "main.o", "-o", "plain", "libcalc.a"],
        "object_first": ["c++", fix, "-o", "object_first", "libcalc.a"],
        "archive_first": ["c++", "-o", "archive_first", "libtwin.a", "libcalc.a"],
        "thin_first": ["c++", "-o", "thin_first", "libthin.a", "<build>/libcalc.a"],
        "outside": ["c++", "-o", "outside", "/usr/lib/libtwin.a", "libcalc.a"],
        # Words that name a folder or nothing are no input (nlohmann/json's links).
        "folders": ["c++", ".", "-o", "folders", "CMakeFiles", "missing.o", "libcalc.a"],
    }
    found = shadows.shadowed(links, shadows.Reader(build))
    assert set(found) == {"object_first", "archive_first", "thin_first"}, found
    parse = "_ZN4calc5parseERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
    assert found["archive_first"] == [
        f"_ZN4calc3useEv: libtwin.a({LONG}.o), libcalc.a(parse.o)",
        f"{parse}: libtwin.a({LONG}.o), libcalc.a(parse.o)",
    ]
    assert found["thin_first"][1] == f"{parse}: libthin.a({LONG}.o), libcalc.a(parse.o)"
    for output in found:
        names = {said.partition(":")[0] for said in found[output]}
        # twice() and same<int>() are weak in both: not counted.
        assert names == {parse, "_ZN4calc3useEv"}, (output, names)


def test_weak_twins_slim_lto_and_one_object_twice(tmp_path: Path) -> None:
    """A fixed twin made `__attribute__((weak))` still shadows (no COMDAT group); one
    object archived into two libraries is one definition; a slim LTO object is named as
    unread."""
    build = tmp_path / "build"
    build.mkdir()
    bug = _object(build, "parse", "std::stoi(t)")
    (build / "weak.cpp").write_text(
        (PARSE % "t.empty() ? 0 : std::stoi(t)").replace("int parse", "[[gnu::weak]] int parse")
    )
    subprocess.run(["g++", "-c", "weak.cpp", "-o", "weak.o"], cwd=build, check=True)
    subprocess.run(["g++", "-flto", "-fno-fat-lto-objects", "-c", "weak.cpp", "-o", "lto.o"],
                   cwd=build, check=True)  # fmt: skip
    for lib in ("libcalc.a", "libsame.a"):
        subprocess.run(["ar", "qc", lib, bug], cwd=build, check=True)
    links = {
        "weak_first": ["c++", "weak.o", "-o", "weak_first", "libcalc.a"],
        "twice": ["c++", "-o", "twice", "libsame.a", "libcalc.a"],
        "lto": ["c++", "lto.o", "-o", "lto", "libcalc.a"],
    }
    found = shadows.shadowed(links, shadows.Reader(build))
    assert set(found) == {"weak_first", "lto"}, found
    assert any(s.startswith("_ZN4calc5parse") and "weak.o" in s for s in found["weak_first"])
    assert found["lto"] == ["lto.o is unread: slim LTO: its symbols are in GCC's own sections"]


def test_twins_by_another_name_binding_version_or_script(tmp_path: Path) -> None:
    """A twin archive named `.lib`, a twin `parse` bound GNU unique or versioned
    `parse@@V1`, and a linker script named like an archive: each is seen."""
    build = tmp_path / "build"
    build.mkdir()
    bug = _object(build, "parse", "std::stoi(t)")
    fix = _object(build, "fixed", "t.empty() ? 0 : std::stoi(t)")
    mangled = "_ZN4calc5parseERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
    for name, asm in (
        ("unique", f'asm(".type {mangled}, @gnu_unique_object");'),
        ("versioned", f'asm(".symver {mangled}, {mangled}@@V1");'),
    ):
        (build / f"{name}.cpp").write_text(
            (PARSE % "t.empty() ? 0 : std::stoi(t)") + asm
        )
        subprocess.run(["g++", "-c", f"{name}.cpp", "-o", f"{name}.o"], cwd=build, check=True)
    subprocess.run(["ar", "qc", "libcalc.a", bug], cwd=build, check=True)
    subprocess.run(["ar", "qc", "libtwin.lib", fix], cwd=build, check=True)
    (build / "libscript.a").write_text(f"INPUT({fix})\n")
    links = {
        "suffix": ["c++", "-o", "suffix", "libtwin.lib", "libcalc.a"],
        "unique": ["c++", "unique.o", "-o", "unique", "libcalc.a"],
        "versioned": ["c++", "versioned.o", "-o", "versioned", "libcalc.a"],
        "script": ["c++", "-o", "script", "libscript.a", "libcalc.a"],
    }
    found = shadows.shadowed(links, shadows.Reader(build))
    for output in ("suffix", "unique", "versioned"):
        assert any(s.startswith(mangled) for s in found[output]), (output, found.get(output))
    assert found["script"] == [
        "libscript.a is unread: not an ELF object or an archive (a linker script?)"
    ]


def test_archives_that_do_not_read_are_unread_and_never_raise(tmp_path: Path) -> None:
    """A header whose size hides the next member from the walk (the linker still finds it
    by the archive's index), a size that is not a number or is negative, a thin member
    outside the build, a NUL in a link word: named unread, never an exception or a loop."""
    build = tmp_path / "build"
    build.mkdir()
    bug = _object(build, "parse", "std::stoi(t)")
    fix = _object(build, "fixed", "t.empty() ? 0 : std::stoi(t)")
    subprocess.run(["ar", "qcs", "libboth.a", bug, fix], cwd=build, check=True)
    data = (build / "libboth.a").read_bytes()
    first = data.index(b"parse.o/")  # the first member's header
    size = int(data[first + 48 : first + 58])
    whole = size + size % 2 + 60 + len(data) - (first + 60 + size + size % 2)
    hidden = data[: first + 48] + str(whole - 60).ljust(10).encode() + data[first + 58 :]
    (build / "libhidden.a").write_bytes(hidden)
    for name, field in (("libjunk.a", b"zz".ljust(10)), ("libneg.a", b"-60".ljust(10))):
        (build / name).write_bytes(data[: first + 48] + field + data[first + 58 :])
    outside = tmp_path / "outside.o"
    outside.write_bytes((build / fix).read_bytes())
    subprocess.run(["ar", "qcT", "libthin.a", str(outside)], cwd=build, check=True)
    links = {
        name: ["c++", "-o", name, f"lib{name}.a", "\0", "libcalc.a"]
        for name in ("hidden", "junk", "neg", "thin")
    }
    found = shadows.shadowed(links, shadows.Reader(build))
    why = {
        "hidden": "its symbol index points to a member the headers do not reach",
        "junk": f"a member header at byte {first} does not parse",
        "neg": f"a member header at byte {first} does not parse",
        "thin": f"its member {outside} is not a file of the build",
    }
    for name, said in why.items():
        assert found[name] == [f"lib{name}.a is unread: an archive that does not read: {said}"]


def test_round_five_archives_and_objects_are_read_as_the_linker_reads_them(
    tmp_path: Path,
) -> None:
    """A second symbol index `/` holding the fix (GNU ld reads it as an object), a twin
    whose `.symtab` is renamed (ld finds the table by its type), a section group whose
    size overflows, a file the build made in /tmp: seen or unread, never an exception.
    One thin member named by thousands of headers is read once."""
    build = tmp_path / "build"
    build.mkdir()
    bug = _object(build, "parse", "std::stoi(t)")
    fix = _object(build, "fixed", "t.empty() ? 0 : std::stoi(t)")
    subprocess.run(["ar", "qc", "libcalc.a", bug], cwd=build, check=True)
    subprocess.run(["ar", "qcs", "libtwin.a", fix], cwd=build, check=True)
    twin = (build / "libtwin.a").read_bytes()
    member = twin.index(b"fixed.o/")
    hidden = twin[:member] + b"/".ljust(16) + twin[member + 16 :]  # the fix, named `/`
    (build / "libhidden.a").write_bytes(hidden)
    subprocess.run(
        ["objcopy", "--rename-section", ".symtab=.symtaX", fix, "renamed.o"],
        cwd=build, check=True,
    )  # fmt: skip
    elf = bytearray((build / bug).read_bytes())
    (build / "group.o").write_bytes(_group_size(elf, 1 << 63))
    thin = b"!<thin>\n" + (b"fixed.o/".ljust(16) + b"0".ljust(24) + b"644".ljust(8)
                          + str(len((build / fix).read_bytes())).ljust(10).encode() + b"`\n") * 4000
    (build / "libmany.a").write_bytes(thin)
    links = {
        "hidden": ["c++", "-o", "hidden", "libhidden.a", "libcalc.a"],
        "renamed": ["c++", "renamed.o", "-o", "renamed", "libcalc.a"],
        "group": ["c++", "group.o", "-o", "group"],
        "tmp": ["c++", "-o", "tmp", "/tmp/rt5/libfix.a", "libcalc.a"],
        "many": ["c++", "-o", "many", "libmany.a", "libcalc.a"],
    }
    found = shadows.shadowed(links, shadows.Reader(build))
    assert found["hidden"] == [
        "libhidden.a is unread: an archive that does not read: "
        "a symbol index as member 2, not the first"
    ]
    mangled = "_ZN4calc5parseERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
    assert any(s.startswith(f"{mangled}: renamed.o, libcalc.a") for s in found["renamed"])
    assert found["group"] == ["group.o is unread: a section group larger than the file"]
    assert found["tmp"] == ["/tmp/rt5/libfix.a is unread: outside the build and the system"]
    assert any(s.startswith(f"{mangled}: libmany.a(fixed.o)") for s in found["many"])
    assert len(shadows.members(thin, build, build)) == 1  # not 4,000 reads of one file


def _group_size(elf: bytearray, size: int) -> bytes:
    """The ELF64 object with its first SHT_GROUP section's sh_size set to `size`."""
    shoff = int.from_bytes(elf[0x28:0x30], "little")
    count = int.from_bytes(elf[0x3C:0x3E], "little")
    for i in range(count):
        at = shoff + i * 64
        if int.from_bytes(elf[at + 4 : at + 8], "little") == 17:  # SHT_GROUP
            elf[at + 32 : at + 40] = size.to_bytes(8, "little")
            return bytes(elf)
    raise AssertionError("no section group: PARSE's inline function makes one")
