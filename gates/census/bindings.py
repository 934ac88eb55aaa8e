"""What g++ bound each tree function's calls to, against what libclang bound them to.

The census reads witnesses with libclang (callees.py), a clang; the test program is built
by g++. Every preprocessor trick that shows the two compilers different code (a static
overload of the comparison helper under `#ifndef __clang__`, a `%:define` digraph, a
`#pragma pop_macro` only clang takes, a parameter only clang sees, a header GCC's
`#pragma once` skips) and every language difference with no preprocessor in it (a
`requires(__GNUC__ >= 5)` overload, a `__GNUC__` test steering `enable_if`) ends the same
way: g++'s code binds what libclang's parse did not bind there. So this reads g++'s own
word: each unit of the census program is compiled with `-ffunction-sections
-fdata-sections -g -fno-inline` and `always_inline` made ordinary, so each function's
code lies in a section of its own, every function or variable it refers to is named by a
relocation (a local one by its own section), and g++'s debug information says where each
is declared. Per unit:

- per tree function libclang parsed (by mangled name, or, where clang and GCC name it
  otherwise, by where it is defined; a template's function against each instantiation g++
  compiled of it), g++'s code must not refer to what libclang bound nowhere in it
  (`EXTRA`), nor to what libclang bound under the same name but declared elsewhere
  (`ELSEWHERE`: an explicit specialisation, or a constrained overload GCC 12 mangles
  alike); a function found by neither name nor place is not compared (g++ did not emit
  it: a member of a local class nobody calls, whose checks never run);
- whatever g++ compiled from the tree or refers to there must be something libclang's
  parse declared or bound (`UNSEEN`: by name, or by the place g++ says it is declared);
- no function's code may lie in a section not named for it (`UNOWNED`: a `section`
  attribute, top-level asm), where what it refers to cannot be told apart.

A function's lambdas and local classes (`_ZZ<function>E...`) are its own. Destructors, a
range-for's begin/end/increment/compare, and in a template the names it resolves per
instantiation and operators are not `EXTRA` (libclang's cursors do not show what they
bind); nor are the compiler's and the runtime's own names unless the tree declares them.
Each finding is keyed by function, target and what differs: the reference's own (two
compilers that mangle or place a case otherwise) are not the patch's (census.py).
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from pathlib import Path
from typing import Any

from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection
from elftools.elf.sections import SymbolTableSection

from cxxgate.gates.census.callees import TEMPLATE
from cxxgate.util.elfread import ELF_ERRORS

# Each function's and variable's code in a section of its own, described, never inlined.
FLAGS = ("-ffunction-sections", "-fdata-sections", "-g", "-fno-inline", "-U_FORTIFY_SOURCE")
# GCC inlines an always_inline function even at -O0, leaving no call and, at -O0, no
# record of it in the debug information: the objects bindings reads make every such
# function an ordinary one (however spelt: `__attribute__((always_inline))`, `[[gnu::
# __always_inline__]]`, glibc's `__always_inline`), and no fortified wrapper needs it.
# libstdc++'s extern templates hold always_inline members (`std::allocator<char>::
# allocate`) no library defines out of line: executed.py links an instantiation of them.
UNINLINED = ("-D__always_inline__=__noinline__", "-Dalways_inline=noinline")
EXTRA = "is referred to by the compiled code, and bound by the census's parser nowhere in it"
UNSEEN = "is compiled from the tree, and the census's parser never declared or bound it"
UNOWNED = "is compiled into a section not its own, where what it refers to cannot be told"
ELSEWHERE = "is the compiled code's; the census's parser bound the one declared at"
# Sections of one function's or variable's own (-ffunction-sections, -fdata-sections, and
# the cold, hot and start-up parts GCC may split a function into).
_OWN = (".text.unlikely.", ".text.hot.", ".text.startup.", ".text.exit.", ".text.",
        ".data.rel.ro.local.", ".data.rel.ro.", ".data.rel.local.", ".data.rel.", ".data.",
        ".bss.", ".rodata.", ".tdata.", ".tbss.")  # fmt: skip
# Call relocations per machine, where a reference to an undefined symbol must be a call
# to be a function's (an undefined symbol's type is not known: `__dso_handle` is data).
_CALLS = {"EM_X86_64": {4}, "EM_AARCH64": {282, 283}}  # PLT32; JUMP26, CALL26
# The compiler's own names: vtables, VTTs, typeinfo and its names, guard variables,
# reference temporaries, thread-local init and wrapper functions.
_SPECIAL = ("_ZTV", "_ZTT", "_ZTI", "_ZTS", "_ZGV", "_ZGR", "_ZTH", "_ZTW")
# What a range-for calls that libclang does not show.
_RANGE_FOR = frozenset({"begin", "end", "operator++", "operator!=", "operator==", "operator*"})
# The runtime's, which the compiler calls for code no cursor spells (exceptions, stack
# protection, unwinding).
_RUNTIME = ("__cxa_", "_Unwind_", "__stack_chk_", "__gxx_personality")
# GCC's interprocedural passes compile a caller in the unit that defines its callee with
# what they learnt of it there (its registers, stack alignment, purity, the memory it
# touches): a library unit's copy of an inline function would differ from the test
# units' copy, and linked.py would name an honest copy odd (round 32, `fp_ipa_ra`). Clang
# has none of these switches (an unknown one is an error); its inference of a callee's
# attributes is a known false positive (README).
GCC_NO_IPA = ("-fno-ipa-ra", "-fno-ipa-stack-alignment", "-fno-ipa-pure-const",
              "-fno-ipa-reference")  # fmt: skip
GCC_NO_MODREF = "-fno-ipa-modref"  # GCC 11 and later


def census_flags(family: str, version: str) -> tuple[str, ...]:
    """The flags the census adds to a unit's own (`version`: the compiler's first
    `--version` line, as the toolchain's identity holds it)."""
    if family != "gcc":
        return FLAGS + UNINLINED
    number = version.split()[-1] if version.split() else ""
    major = number.split(".")[0]
    modref = (GCC_NO_MODREF,) if not major.isdigit() or int(major) >= 11 else ()
    return FLAGS + GCC_NO_IPA + modref + UNINLINED


class Compiled:
    """One object's functions (by the name of their own section) and what each refers to;
    `canon` names every symbol defined here by its section's name (a constructor's C1
    alias is its C2 code's; a lambda's code is its own section's)."""

    def __init__(self) -> None:
        self.refs: dict[str, set[str]] = defaultdict(set)
        self.canon: dict[str, str] = {}
        self.defined: set[str] = set()  # every function and variable defined here
        # Functions whose code lies in a section not named for them (a `section`
        # attribute, top-level asm): what they refer to cannot be told apart.
        self.unowned: set[str] = set()

    def name(self, symbol: str) -> str:
        return self.canon.get(symbol, symbol)


def referenced(obj: Path) -> Compiled:
    """Per function defined in the object, every function and variable its code refers
    to, with what its lambdas and local classes refer to; nothing for an object that
    cannot be read."""
    out = Compiled()
    try:
        with obj.open("rb") as fh:
            elf = ELFFile(fh)
            symtab = elf.get_section_by_name(".symtab")
            if not isinstance(symtab, SymbolTableSection):
                return out
            owner = {i: _own_name(sec.name) for i, sec in enumerate(elf.iter_sections())}
            for i, sec in enumerate(elf.iter_sections()):
                if owner[i] and sec.name.startswith(".text"):
                    out.refs.setdefault(owner[i], set())  # a function that refers to nothing
            starts: dict[int, set[str]] = defaultdict(set)  # section -> functions at 0
            for sym in symtab.iter_symbols():
                where = sym["st_shndx"]
                kind = sym["st_info"]["type"]
                if not sym.name or not isinstance(where, int):
                    continue
                if owner.get(where):
                    out.canon.setdefault(sym.name, owner[where])
                if kind in ("STT_FUNC", "STT_OBJECT", "STT_GNU_IFUNC", "STT_TLS"):
                    out.defined.add(out.name(sym.name))
                if kind in ("STT_FUNC", "STT_GNU_IFUNC"):
                    if sym["st_value"] == 0:
                        starts[where].add(sym.name)
                    else:  # a section shared: a call within it needs no relocation
                        out.unowned.add(sym.name)
            for where, names in starts.items():
                if owner.get(where) not in {n.partition(".")[0] for n in names}:  # not its own
                    out.unowned |= names
            calls = _CALLS.get(elf["e_machine"])
            for section in elf.iter_sections():
                if not isinstance(section, RelocationSection):
                    continue
                target = section.name.removeprefix(".rela").removeprefix(".rel")
                function = _own_name(target) if target.startswith(".text") else ""
                if not function:
                    continue
                for rel in section.iter_relocations():
                    sym = symtab.get_symbol(rel["r_info_sym"])
                    if sym["st_info"]["type"] == "STT_SECTION":
                        name = owner.get(sym["st_shndx"], "") if isinstance(
                            sym["st_shndx"], int) else ""  # fmt: skip
                    elif (
                        sym["st_shndx"] == "SHN_UNDEF"
                        and calls is not None
                        and rel["r_info_type"] not in calls
                    ):
                        continue
                    else:
                        name = out.name(sym.name)
                    if name and name != function:
                        out.refs[function].add(name)
    except ELF_ERRORS:
        return Compiled()
    _fold_locals(out.refs)
    return out


def _own_name(section: str) -> str:
    """The name a section of one function or variable is named for, else "". A code
    section's is any name (`extern "C"`, an asm label); a data section's a mangled one
    (`.rodata.str1.1` holds string literals)."""
    for prefix in _OWN:
        if section.startswith(prefix):
            name = section.removeprefix(prefix).partition(".")[0]  # `.constprop.0`: a clone
            return name if prefix.startswith(".text") or name.startswith("_Z") else ""
    return ""


def _fold_locals(refs: dict[str, set[str]]) -> None:
    """Each function's references with those of its local entities (`_ZZ<enc>E...`: its
    lambdas' call operators, its local classes' members) folded in; a local entity of the
    function is the function's own, not a reference."""
    for name in [n for n in refs if n.startswith("_ZZ")]:
        host = next((f for f in refs if name.startswith(f"_ZZ{f[2:]}E")), None)
        if host is not None and host != name:
            refs[host] |= refs[name]
    for function in refs:
        local = f"_ZZ{function[2:]}E"
        refs[function] = {r for r in refs[function] if not r.startswith(local)}


class Debug:
    """What g++'s debug information says: per linkage name, where it is declared (file as
    the compile named it, unqualified name, line); per function (by its section's name),
    what g++ inlined into it: (linkage name or "", name, file, line) of each."""

    def __init__(self) -> None:
        self.where: dict[str, tuple[str, str, int]] = {}
        self.inlined: dict[str, set[tuple[str, str, str, int]]] = defaultdict(set)


def debug(obj: Path, compiled: Compiled) -> Debug:
    """The object's DWARF read (nothing without it, or for what cannot be read)."""
    out = Debug()
    try:
        with obj.open("rb") as fh:
            elf = ELFFile(fh)
            if not elf.has_dwarf_info():
                return out
            pc = _code_of(elf, compiled)
            dwarf = elf.get_dwarf_info()
            for cu in dwarf.iter_CUs():
                files = _file_names(dwarf, cu)
                for die in cu.iter_DIEs():
                    if die.tag in ("DW_TAG_subprogram", "DW_TAG_variable"):
                        link, name, file, line = _described(die)
                        low = die.attributes.get("DW_AT_low_pc")
                        if not link and low is not None:  # internal linkage: by its code
                            link = pc.get(low.offset, "")
                        if (
                            link
                            and file is not None
                            and ("DW_AT_low_pc" in die.attributes or link not in out.where)
                        ):  # a definition's place over a declaration's: libclang's choice
                            out.where[link] = (files.get(file, "?"), name, line)
                    elif die.tag == "DW_TAG_inlined_subroutine":
                        host = _host(die, pc, compiled)
                        if "DW_AT_abstract_origin" in die.attributes and host:
                            origin = die.get_DIE_from_attribute("DW_AT_abstract_origin")
                            link, name, file, line = _described(origin)
                            said = files.get(file, "?") if file is not None else ""
                            out.inlined[host].add((link, name, said, line))
    except ELF_ERRORS:
        return Debug()
    return out


def _code_of(elf: ELFFile, compiled: Compiled) -> dict[int, str]:
    """Per offset in .debug_info that a relocation fills (a DW_AT_low_pc), the function
    whose code it points at: how a DIE of a function GCC names with no linkage name
    (internal linkage) is tied to its section."""
    out: dict[int, str] = {}
    for section in elf.iter_sections():
        if not isinstance(section, RelocationSection) or not section.name.endswith(".debug_info"):
            continue
        symtab = elf.get_section(section["sh_link"])
        if not isinstance(symtab, SymbolTableSection):
            continue
        for rel in section.iter_relocations():
            sym = symtab.get_symbol(rel["r_info_sym"])
            where = sym["st_shndx"]
            if sym["st_info"]["type"] == "STT_SECTION" and isinstance(where, int):
                name = _own_name(elf.get_section(where).name)
            else:
                name = compiled.name(sym.name)
            if name:
                out[rel["r_offset"]] = name
    return out


def _host(die: Any, pc: dict[int, str], compiled: Compiled) -> str:
    """The function (by its section's name) whose code an inlined subroutine lies in."""
    parent = die.get_parent()
    while parent is not None and parent.tag != "DW_TAG_subprogram":
        parent = parent.get_parent()
    if parent is None:
        return ""
    link = _described(parent)[0]
    if link:
        return compiled.name(link)
    low = parent.attributes.get("DW_AT_low_pc")
    return pc.get(low.offset, "") if low is not None else ""


def _described(die: Any) -> tuple[str, str, int | None, int]:
    """A DIE's linkage name, name, declaring file index and line, through the
    declaration it specifies or the abstract instance it is of."""
    link, name, file, line = "", "", None, 0
    for _ in range(4):
        at = die.attributes
        linkage = at.get("DW_AT_linkage_name") or at.get("DW_AT_MIPS_linkage_name")
        if not link and linkage is not None:
            link = _text(linkage.value)
        if not name and "DW_AT_name" in at:
            name = _text(at["DW_AT_name"].value)
        if file is None and "DW_AT_decl_file" in at:
            file = int(at["DW_AT_decl_file"].value)
            line = int(at["DW_AT_decl_line"].value) if "DW_AT_decl_line" in at else 0
        origin = next((a for a in ("DW_AT_specification", "DW_AT_abstract_origin") if a in at), "")
        if not origin:
            break
        die = die.get_DIE_from_attribute(origin)
    return link, name, file, line


def _file_names(dwarf: Any, cu: Any) -> dict[int, str]:
    """The compile unit's file table: DW_AT_decl_file index -> absolute, normalised path
    (DWARF 5 counts from 0, earlier versions from 1). Normalised: `#include
    "/src/./project/x.hpp"` names a tree file however it is spelt."""
    program = dwarf.line_program_for_CU(cu)
    if program is None:
        return {}
    top = cu.get_top_DIE().attributes.get("DW_AT_comp_dir")
    comp = _text(top.value) if top is not None else "/"
    version = program.header["version"]
    dirs = [_text(d) for d in program["include_directory"]]
    out: dict[int, str] = {}
    for i, entry in enumerate(program["file_entry"]):
        d = entry.dir_index if version >= 5 else entry.dir_index - 1
        folder = dirs[d] if 0 <= d < len(dirs) else ""
        name = posixpath.normpath(posixpath.join(comp, folder, _text(entry.name)))
        out[i if version >= 5 else i + 1] = name
    return out


def _text(raw: Any) -> str:
    return raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)


def compare(
    obj: Path,
    parsed: dict[str, dict[str, Any]],
    declared: dict[str, list[str]],
    tree_at: tuple[str, ...],
) -> list[dict[str, Any]]:
    """Where g++'s object of a unit and libclang's parse of it (callees.Bound.calls and
    .declared) disagree on what a tree function refers to, or on what the tree declares;
    `tree_at` are the tree's paths as the compile saw it."""
    compiled = referenced(obj)
    info = debug(obj, compiled)
    out = _per_function(compiled, info, parsed, tree_at)
    out += _unit(compiled, info, declared, tree_at)
    return out


def _unit(
    compiled: Compiled, info: Debug, declared: dict[str, list[str]], tree_at: tuple[str, ...]
) -> list[dict[str, Any]]:
    """What g++ compiled from the tree that libclang's parse of the unit never declared or
    bound (by linkage name, or by the place g++ says it is declared: a template's
    instantiations, a class's implicit members), wherever it lies (a template's
    instantiation, a function in a section of its own choosing); and every function whose
    code lies in a section not named for it."""
    names = {_external(n) for n in declared.get("names", [])}
    places = set(declared.get("at", []))
    used = set(compiled.defined).union(*compiled.refs.values()) if compiled.refs else set()
    out: list[dict[str, Any]] = []
    for target in sorted(used):
        file, name, line = _lookup(info.where, target)
        if not file or not file.startswith(tree_at) or _external(target) in names:
            continue  # not described (the runtime's, a builtin), outside the tree, or seen
        at = f"{_tree_relative(file, tree_at)}:{line}"
        if at in places or target.startswith(tuple(f"_ZZ{n[2:]}E" for n in names)):
            continue
        out.append({"function": "(unit)", "target": target, "why": UNSEEN, "at": at,
                    "names": ["", name or _last_name(target)[0]]})  # fmt: skip
    for target in sorted(compiled.unowned):
        out.append({"function": "(unit)", "target": target, "why": UNOWNED, "at": "",
                    "names": ["", _last_name(target)[0]]})  # fmt: skip
    return out


def _external(mangled: str) -> str:
    """A mangled name without its internal-linkage marks and ABI tags: clang marks a static
    function template's instantiation `_ZL...`, GCC `_Z...`; clang tags a variable of type
    std::string `B5cxx11`, GCC does not (where it lies is compared instead)."""
    if not mangled.startswith("_Z"):
        return mangled
    head, rest = mangled[:2], mangled[2:]
    out = []
    for i, ch in enumerate(rest):
        if (
            ch == "L"
            and i + 1 < len(rest)
            and rest[i + 1].isdigit()
            and (i == 0 or rest[i - 1] in "N0123456789" or rest[i - 1].isalpha())
        ):
            continue
        out.append(ch)
    return head + _untagged("".join(out))


def _untagged(rest: str) -> str:
    """`rest` without the ABI tags (`B<length><tag>`) that follow its source names."""
    out, i, named = [], 0, False  # named: a source name ended right before i
    while i < len(rest):
        j = i
        while j < len(rest) and rest[j].isdigit():
            j += 1
        if j == i or (i > 0 and rest[i - 1].isdigit() and not named):
            out.append(rest[i])
            i, named = i + 1, False
            continue
        end = j + int(rest[i:j])
        out.append(rest[i:end])
        i, named = end, True
        while i < len(rest) and rest[i] == "B" and rest[i + 1 : i + 2].isdigit():
            k = i + 1
            while k < len(rest) and rest[k].isdigit():
                k += 1
            i = k + int(rest[i + 1 : k])
    return "".join(out)


def _per_function(
    compiled: Compiled, info: Debug, parsed: dict[str, dict[str, Any]], tree_at: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Per tree function libclang parsed, what g++'s code of it refers to that libclang
    bound nowhere in it, or bound to a declaration elsewhere; a template's function is
    held against each instantiation g++ compiled of it (by where it is defined)."""
    out: list[dict[str, Any]] = []
    # Where g++ says each function it compiled is defined: clang and GCC name some alike
    # nowhere (a static function in an `extern "C"` block: `_ZL10Stats_Meanv`, `Stats_Mean`),
    # and a template's instantiations are found by their template's place.
    placed: dict[str, set[str]] = defaultdict(set)
    for link, (file, _, line) in info.where.items():
        if compiled.name(link) in compiled.refs and file.startswith(tree_at):
            placed[f"{_tree_relative(file, tree_at)}:{line}"].add(compiled.name(link))
    for function, said in sorted(parsed.items()):
        template = function.startswith(TEMPLATE)
        if template:
            hosts = sorted(placed.get(function.removeprefix(TEMPLATE), set()))
        elif compiled.name(function) in compiled.refs:
            hosts = [compiled.name(function)]
        else:
            hosts = sorted(placed.get(said.get("at", ""), set()))[:1]
        for host in hosts:  # none: not emitted (a member of a local class nobody calls)
            out += _function(compiled, info, function, host, said, tree_at)
    return out


def _function(
    compiled: Compiled,
    info: Debug,
    function: str,
    host: str,
    said: dict[str, Any],
    tree_at: tuple[str, ...],
) -> list[dict[str, Any]]:
    """One function's disagreements: g++'s code `host` against libclang's `said`."""
    out: list[dict[str, Any]] = []
    bound: dict[str, str] = {compiled.name(b): at for b, at in said["bound"].items()}
    bound |= {_external(b): at for b, at in bound.items()}
    internal = {name for name, marked in map(_last_name, said["bound"]) if marked}
    dependent = set(said.get("dependent", []))
    seen = {r: _lookup(info.where, r) for r in compiled.refs.get(host, set())}
    seen = {
        r: said_of
        for r, said_of in seen.items()
        if not r.startswith(_SPECIAL + _RUNTIME) or said_of[0].startswith(tree_at)
    }  # the compiler's and the runtime's own names, unless the tree declares one
    for link, name, file, line in sorted(info.inlined.get(host, set())):
        # What GCC inlined leaves no call (an always_inline twin only g++ sees). One with
        # internal linkage has no linkage name: held against libclang's internal-linkage
        # bindings by name.
        if link:
            seen[compiled.name(link)] = (file, name, line)
        elif name not in internal:
            seen[f"{name} (inlined)"] = (file, name, line)
    for target, (file, name, line) in sorted(seen.items()):
        if file and not file.startswith(tree_at):
            continue  # declared outside the tree: a patch cannot make it
        at = f"{_tree_relative(file, tree_at)}:{line}" if file else ""
        target = _external(target) if _external(target) in bound else target
        if target in bound:
            # The same name, declared elsewhere: an explicit specialisation only g++ sees
            # has the implicit instantiation's mangled name.
            if not (at and bound[target] and at != bound[target]):
                continue
            why = f"{ELSEWHERE} {bound[target]}"
        elif name.startswith("~") or (not name and _destructor(target)):
            continue  # destructors: no cursor shows their calls
        elif said.get("for_range") and name in _RANGE_FOR:
            continue
        elif function.startswith(TEMPLATE) and (
            name.partition("<")[0] in dependent or name.startswith("operator")
        ):
            continue  # a name the template resolves per instantiation, or an operator
        else:
            why = EXTRA
        names = [_lookup(info.where, host)[1] or _last_name(host)[0],
                 name or _last_name(target)[0]]  # fmt: skip
        out.append({"function": function, "target": target, "why": why, "at": at,
                    "names": names})  # fmt: skip
    return out


def _last_name(mangled: str) -> tuple[str, bool]:
    """The last source name of a mangled name (`_ZN5checkL2eqERKlRKi` -> `eq`), and
    whether an `L` (internal linkage) marks it; ("", False) where the name holds none."""
    i, found, internal = 2 + (mangled[2:3] == "N"), "", False
    while i < len(mangled) and mangled[i] in "rVK":
        i += 1
    while i < len(mangled) and (mangled[i].isdigit() or mangled[i] == "L"):
        marked = mangled[i] == "L"
        i += marked
        j = i
        while j < len(mangled) and mangled[j].isdigit():
            j += 1
        if j == i:
            break
        size = int(mangled[i:j])
        found, internal, i = mangled[j : j + size], marked, j + size
    return found, internal


def message(d: dict[str, Any]) -> str:
    """A disagreement, for a reader: the unit, the function, what it refers to."""
    names = d.get("names") or ["", ""]
    function = f"{names[0]} ({d['function']})" if names[0] else d["function"]
    target = f"{names[1]} ({d['target']})" if names[1] else d["target"]
    at = f", declared at {d['at']}," if d.get("at") else ""
    if not d["target"]:
        return f"{d.get('unit', '?')}: {function}{at} {d['why']}"
    return f"{d.get('unit', '?')}: in {function}, {target}{at} {d['why']}"


def _lookup(where: dict[str, tuple[str, str, int]], name: str) -> tuple[str, str, int]:
    """What the debug information says of `name`; a constructor or destructor called by
    its complete-object or base-object name is declared under GCC's unified one (C4, D4)."""
    if name in where:
        return where[name]
    for marker, unified in (("C1E", "C4E"), ("C2E", "C4E"), ("D0E", "D4E"), ("D1E", "D4E"),
                            ("D2E", "D4E")):  # fmt: skip
        if marker in name and name.replace(marker, unified, 1) in where:
            return where[name.replace(marker, unified, 1)]
    return "", "", 0


def _destructor(name: str) -> bool:
    """A destructor's mangled name, for one the debug information does not describe: its
    marker ends the name, before the empty parameter list."""
    return name.endswith(("D0Ev", "D1Ev", "D2Ev"))


def _tree_relative(file: str, tree_at: tuple[str, ...]) -> str:
    for root in tree_at:
        if file.startswith(f"{root}/"):
            return file.removeprefix(f"{root}/")
    return file


def new_in(ref: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The patched tree's disagreements the reference does not have (by function, target
    and direction: a test moved to another unit is the same function)."""
    old = {(d["function"], d["target"], d["why"]) for d in ref}
    return [d for d in new if (d["function"], d["target"], d["why"]) not in old]
