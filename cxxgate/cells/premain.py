"""Code that would run before the harness's own: refused at the link, from the objects.

A program the harness links with its entry (templates/entry/entry.cpp) takes its
nonces in a `.preinit_array` hook: the first code of the program to run. What could run
earlier, or first among equals, is refused here, read from the object files the compiler
made (pyelftools), never from the source text:

- a `.preinit_array` section (by name or by type): a hook beside the harness's own;
- an IFUNC (STT_GNU_IFUNC symbol, or an IRELATIVE relocation): its resolver runs while
  the dynamic linker relocates the program, before any hook;
- a constructor priority at or below the harness's (`.init_array.NNNNN` with NNNNN <=
  HARNESS_PRIORITY, `.ctors.NNNNN` likewise once turned into a priority), an init
  array under a name the linker's script does not sort, or a section the script takes
  for constructors whose name holds no priority (`.ctors.x`, whatever its type);
- a global definition of a harness name (`cxxgate_*`) or of libgcov's (`__gcov*`): it
  would stand in for the harness's entry points or the counters' reset; and, in an
  object of the tree, a reference to a harness name or to a libgcov entry point the
  compiler's own instrumentation never calls (`__gcov_reset`, `__gcov_dump`, ...).

- in an object of the tree, a global or weak definition of a name the libraries the
  program links export (libc, libm, libstdc++, libgcc_s, libc++ where installed: their
  `.dynsym`, read once per toolchain, `library_exports`): the program's own definition
  interposes the library's for every caller, the harness's driver and entry included (a
  tree `strtoull` bends the driver's parse of its stage, a tree `__assert_fail` turns the
  census's failed assertions into nothing). The replaceable allocation functions
  (`operator new`/`delete`, `_Znw*`, `_Zna*`, `_Zdl*`, `_Zda*`) are the C++ standard's
  to replace and stay allowed; a libstdc++ name the compiler emits as a weak inline
  instance (a COMDAT template member) is not refused, only a strong definition of one.

Then the linked program: a dynamically linked one has no IRELATIVE relocation at all
(whatever object or library it came from).

Each problem is one line naming the object and what it holds; a cell with any is refused
with status `premain_hook` (cxxgate/cells/cell.py), which every gate reports as that class
(cxxgate/graph/actions.py).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection
from elftools.elf.sections import Section, SymbolTableSection

from cxxgate.toolchain import toolquery
from cxxgate.util.elfread import ELF_ERRORS

# Priorities 0-100 are the implementation's; 101 is the first a program may use, and the
# harness keeps it: a candidate's constructor must come strictly after.
HARNESS_PRIORITY = 101
_INIT_PRIORITY = re.compile(r"\.(init_array|ctors)\.(\d+)")
# The static constructors the compiler makes for its own instrumentation, in the
# implementation's priorities (0-100): `_sub_I_00100_0` registers gcov's counters,
# `_sub_I_00099_1` starts ASan. The compiler refuses those priorities to a program
# (-Wprio-ctor-dtor, an error under the envelopes' -Werror).
_COMPILER_CTOR = re.compile(r"_sub_I_(\d{5})_\d+")
# STT_GNU_IFUNC is 10, which pyelftools names by its range (STT_LOOS).
_IFUNC = frozenset({"STT_GNU_IFUNC", "STT_LOOS"})
_IRELATIVE = {"EM_X86_64": 37, "EM_AARCH64": 1032, "EM_386": 42}
# What the compiler's instrumentation references in libgcov (-fprofile-arcs and the value
# profilers); any other libgcov name in a tree object is a call the candidate wrote.
_GCOV_CALLED_BY_COMPILER = re.compile(
    r"__gcov_(init|exit|fork|exec\w*|merge_\w+|\w*_profiler\w*|indirect_call\w*"
    r"|time_profiler_counter|kvp_\w+)"
)


# The libraries a program links by default (the C library through its versioned file: libc.so
# is a linker script). `-print-file-name` answers with the bare name when it finds none.
_LIBRARIES = ("libc.so.6", "libm.so.6", "libstdc++.so", "libgcc_s.so.1", "libc++.so.1")
# The replaceable global allocation and deallocation functions ([new.delete]).
_REPLACEABLE = re.compile(r"_Z(nw|na|dl|da)\w*")
_C_LIBRARIES = ("libc.so", "libm.so", "libgcc_s.so")


@cache
def library_exports(
    compiler: str, binds: tuple[tuple[str, str], ...] = ()
) -> tuple[frozenset[str], frozenset[str]]:
    """The names the toolchain's default libraries define in their `.dynsym`: (C
    libraries' names, C++ runtime's names), unversioned. Asked once per toolchain."""
    c_names: set[str] = set()
    cxx_names: set[str] = set()
    for lib in _LIBRARIES:
        status, text = toolquery.query([compiler, f"-print-file-name={lib}"], binds=binds)
        found = Path(text.strip())
        if status != 0 or not found.is_absolute() or not found.is_file():
            continue
        names = c_names if found.name.startswith(_C_LIBRARIES) else cxx_names
        with found.resolve().open("rb") as fh:
            table = ELFFile(fh).get_section_by_name(".dynsym")
            if not isinstance(table, SymbolTableSection):
                continue
            for sym in table.iter_symbols():
                if sym["st_shndx"] != "SHN_UNDEF" and sym["st_info"]["bind"] != "STB_LOCAL":
                    names.add(sym.name.partition("@")[0])
    return frozenset(c_names), frozenset(cxx_names)


def object_problems(
    path: Path,
    *,
    tree_code_only: bool,
    exports: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset()),
) -> list[str]:
    """What in one object could run before the harness or stand in for it. A harness
    unit's object (a test or driver: grader code plus the tree's headers) may reference
    the harness's names; an object of the tree (`tree_code_only`) may not, nor define a
    name the program's libraries export (`exports`, from `library_exports`)."""
    found: list[str] = []
    try:
        with path.open("rb") as fh:
            elf = ELFFile(fh)
            irelative = _IRELATIVE.get(elf["e_machine"])
            for section in elf.iter_sections():
                found += _section_problems(elf, section)
                if _has_relocation(section, irelative):
                    found.append(f"an IRELATIVE relocation in {section.name}")
                if isinstance(section, SymbolTableSection):
                    found += _symbol_problems(section, tree_code_only)
                    if tree_code_only:
                        found += _interposed(section, exports)
    except ELF_ERRORS as exc:
        return [f"not an object the harness can read: {exc}"]
    return [f"{path.name}: {p}" for p in dict.fromkeys(found)]


def program_problems(path: Path) -> list[str]:
    """The linked program: a dynamically linked one has no IRELATIVE relocation (a static
    one carries the C library's own). Its `.preinit_array` is not counted: the sanitizer
    runtimes add an entry of their own (libasan's preinit object), and every object that
    could add one is checked by `object_problems` before the link."""
    found: list[str] = []
    try:
        with path.open("rb") as fh:
            elf = ELFFile(fh)
            irelative = _IRELATIVE.get(elf["e_machine"])
            if elf.get_section_by_name(".interp") is not None:
                for section in elf.iter_sections():
                    if _has_relocation(section, irelative):
                        found.append(f"an IRELATIVE relocation in {section.name} (an IFUNC)")
    except ELF_ERRORS as exc:
        return [f"not a program the harness can read: {exc}"]
    return [f"the linked program: {p}" for p in dict.fromkeys(found)]


def _section_problems(elf: ELFFile, section: Section) -> list[str]:
    name: str = section.name
    kind: str = section["sh_type"]
    if kind == "SHT_PREINIT_ARRAY" or name.startswith(".preinit_array"):
        return [f"a .preinit_array entry (section {name})"]
    m = _INIT_PRIORITY.fullmatch(name)
    if m is not None:
        number = int(m[2])
        priority = number if m[1] == "init_array" else 65535 - number
        if priority > HARNESS_PRIORITY:
            return []
        targets = _targets(elf, section)
        if all(_instrumentation(t) for t in targets) and targets:
            return []  # the compiler's own (gcov's counters, a sanitizer's runtime)
        shown = ", ".join(t or "?" for t in targets)
        return [
            f"a constructor of priority {priority} (section {name}: {shown}): the "
            f"harness's priorities end at {HARNESS_PRIORITY}"
        ]
    if kind == "SHT_INIT_ARRAY" and name != ".init_array":
        return [f"an init array the linker does not sort by priority (section {name})"]
    if name.startswith((".init_array.", ".ctors.")):
        # ld's script takes `.ctors.*` whatever its type and sorts a name with no priority
        # in it ahead of every numbered one (round 33: `.ctors.x`, `.ctors.00100.x`).
        return [f"a constructor section with no priority of its own (section {name})"]
    return []


def _symbol_problems(table: SymbolTableSection, tree_code_only: bool) -> list[str]:
    found: list[str] = []
    for sym in table.iter_symbols():
        name = sym.name
        kind = sym["st_info"]["type"]
        bind = sym["st_info"]["bind"]
        defined = sym["st_shndx"] != "SHN_UNDEF"
        if kind in _IFUNC:
            found.append(f"an IFUNC symbol {name!r} (its resolver runs before any hook)")
            continue
        harness = name.startswith("cxxgate_")
        gcov = name.startswith("__gcov")
        if defined and bind != "STB_LOCAL" and (harness or gcov):
            found.append(f"defines {name!r}, a name the harness or libgcov owns")
        elif not defined and tree_code_only and harness:
            found.append(f"refers to the harness's {name!r}")
        elif not defined and gcov and not _GCOV_CALLED_BY_COMPILER.fullmatch(name):
            found.append(f"calls libgcov's {name!r} (resets or writes the counts)")
    return found


def unversioned(name: str) -> str:
    """A symbol's name without its version (`.symver`): linking a program, ld takes a
    definition of `name@@V` for one of `name` (round 32: a strong `check::eq@@V` in a library
    source replaced the tests' inline copies, `strtol@@X` libc's, under names nothing
    compared)."""
    return name.split("@", 1)[0]


def _interposed(
    table: SymbolTableSection, exports: tuple[frozenset[str], frozenset[str]]
) -> list[str]:
    """A tree object's definitions of library names: every caller in the program, the
    harness's code included, would call the tree's instead of the library's."""
    c_names, cxx_names = exports
    found = []
    for sym in table.iter_symbols():
        name, bind = unversioned(sym.name), sym["st_info"]["bind"]
        if sym["st_shndx"] == "SHN_UNDEF" or bind == "STB_LOCAL" or _REPLACEABLE.fullmatch(name):
            continue
        if name in c_names or (name in cxx_names and bind == "STB_GLOBAL"):
            found.append(
                f"defines {name!r}, which the program's libraries export: it would replace "
                "the library's for every caller, the harness's included"
            )
    return found


def _instrumentation(target: str) -> bool:
    m = _COMPILER_CTOR.fullmatch(target)
    return m is not None and int(m[1]) < HARNESS_PRIORITY


def _targets(elf: ELFFile, section: Section) -> list[str]:
    """The functions an init array's entries point to: each relocation's symbol, or for a
    section-relative one the function symbol at that offset; "" when none is found."""
    relocations = elf.get_section_by_name(".rela" + section.name)
    symtab = elf.get_section_by_name(".symtab")
    if not isinstance(relocations, RelocationSection) or not isinstance(symtab, SymbolTableSection):
        return [""]
    out = []
    for rel in relocations.iter_relocations():
        sym = symtab.get_symbol(rel["r_info_sym"])
        if sym["st_info"]["type"] != "STT_SECTION":
            out.append(sym.name)
            continue
        at = rel["r_addend"] if rel.is_RELA() else 0
        named = [
            s.name
            for s in symtab.iter_symbols()
            if s["st_shndx"] == sym["st_shndx"]
            and s["st_info"]["type"] == "STT_FUNC"
            and s["st_value"] == at
        ]
        out.append(named[0] if len(named) == 1 else "")
    return out


def _has_relocation(section: Section, kind: int | None) -> bool:
    if kind is None or not isinstance(section, RelocationSection):
        return False
    return any(r["r_info_type"] == kind for r in section.iter_relocations())
