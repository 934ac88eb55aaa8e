"""What the linker bound in the census test program: read from its objects and its binary.

Every witness can keep its text, its expansion and the declaration its calls name, and the
program still run other code: a strong definition of `check::near` in a library source
replaces the weak (inline, COMDAT) copies the test objects hold; a strong explicit
specialisation of `check::eq<double, double>` replaces their implicit instantiations; an
`extern "C" __assert_fail` replaces glibc's. None of that is in a witness's unit; all of it
is in the objects handed to the linker (pyelftools reads their `.symtab`) and in the
binary's dynamic symbols (`.dynsym`: what it still imports, what it exports to the shared
libraries it loads).

Facts per tree (the gate compares the reference's with the patched tree's):
- `held`: every global symbol a test object references or defines weakly, and which kind of
  definition binds it: `test:<file>` or `source:<file>` (a strong definition in that
  object), `comdat` (weak copies only), `outside` (no tree object defines it: a shared
  library does);
- `weak_in_tests`: the symbols test objects define weakly (an inline copy a strong
  definition elsewhere would override);
- `odd_copies`: what test objects hold weakly and a library object, or another test
  object, defines weakly too, by hand (`__attribute__((weak))`) or as an inline copy
  whose bytes and relocations are not the test objects' (an ODR-violating `inline bool
  check::near` in a source or a test unit: the linker keeps whichever copy it meets
  first);
- `defined`: every global symbol a tree object defines (strong or weak), with its file;
- `instances`: those defined only by COMDAT instances the compiler made (a library
  template's member `std::string::size` the tree's code instantiates at -O0);
- `imports` / `exports`: the binary's undefined and defined dynamic symbols.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection
from elftools.elf.sections import SymbolTableSection

from cxxgate.store import codehash

_GLOBAL = {"STB_GLOBAL", "STB_LOOS"}  # STB_LOOS: pyelftools' name for STB_GNU_UNIQUE


Symbol = tuple[str, str, bool, str]  # name, binding, defined, shape of a weak definition


def _symbols(path: Path, section: str) -> list[Symbol]:
    """(name, binding, defined, shape) of each global or weak named symbol of `section`; a
    weak definition's shape is its bytes and relocations (`_shape`), "" otherwise."""
    with path.open("rb") as fh:
        elf = ELFFile(fh)
        table = elf.get_section_by_name(section)
        if not isinstance(table, SymbolTableSection):
            return []
        out = []
        relocations: dict[int, list[tuple[int, int, int]]] | None = None
        for sym in table.iter_symbols():
            bind = sym["st_info"]["bind"]
            if not sym.name or bind not in (*_GLOBAL, "STB_WEAK"):
                continue
            if sym["st_info"]["type"] in ("STT_SECTION", "STT_FILE"):
                continue
            defined = sym["st_shndx"] != "SHN_UNDEF"
            weak = bind == "STB_WEAK"
            shape = ""
            if weak and defined and section == ".symtab":
                relocations = relocations if relocations is not None else _relocations(elf)
                shape = _shape(elf, table, sym, relocations)
            out.append((sym.name, "weak" if weak else "strong", defined, shape))
        return out


def _relocations(elf: ELFFile) -> dict[int, list[tuple[int, int, int]]]:
    """(offset, type, symbol index) of every relocation, by the section it applies to: read
    once per object (a test object holds thousands of weak inline copies)."""
    found: dict[int, list[tuple[int, int, int]]] = {}
    for rel in elf.iter_sections():
        if isinstance(rel, RelocationSection):
            found.setdefault(rel["sh_info"], []).extend(
                (e["r_offset"], e["r_info_type"], e["r_info_sym"]) for e in rel.iter_relocations()
            )
    return found


def _shape(
    elf: ELFFile,
    table: SymbolTableSection,
    sym: Any,
    relocations: dict[int, list[tuple[int, int, int]]],
) -> str:
    """What a weak definition is: its bytes and the relocations within them (by target
    name; a section's by section name, since string-pool offsets differ by unit), and
    whether it sits in a COMDAT group (an inline function or a template's instantiation)
    or was declared weak by hand (`__attribute__((weak))`: never the test objects' copy)."""
    index = sym["st_shndx"]
    if not isinstance(index, int):
        return "abs"
    where = elf.get_section(index)
    grouped = bool(where["sh_flags"] & SH_FLAGS.SHF_GROUP)
    if not grouped:
        return "ungrouped"
    start, size = sym["st_value"], sym["st_size"]
    data = b"" if where["sh_type"] == "SHT_NOBITS" else where.data()[start : start + size]
    relocs = []
    for offset, kind, symbol in relocations.get(index, ()):
        if not start <= offset < start + size:
            continue
        target = table.get_symbol(symbol)
        name = target.name
        if target["st_info"]["type"] == "STT_SECTION":
            name = elf.get_section(target["st_shndx"]).name
        relocs.append(f"{offset - start}:{kind}:{name}")
    return codehash.of_text(data + "\n".join(sorted(relocs)).encode())


def facts(objects: dict[str, Path], tests: set[str], binary: Path) -> dict[str, Any]:
    """The binding facts of one link: `objects` by tree file, `tests` the test units."""
    strong: dict[str, str] = {}
    weak: dict[str, str] = {}
    held: set[str] = set()
    weak_in_tests: set[str] = set()
    copies: dict[str, list[tuple[str, str]]] = {}  # weak definitions: (file, shape)
    for rel, path in sorted(objects.items()):
        for name, bind, defined, shape in _symbols(path, ".symtab"):
            if defined:
                (strong if bind == "strong" else weak).setdefault(name, rel)
                if bind == "weak":
                    copies.setdefault(name, []).append((rel, shape))
            if rel in tests and (not defined or bind == "weak"):
                held.add(name)
                if defined:
                    weak_in_tests.add(name)

    def binder(name: str) -> str:
        if name in strong:
            kind = "test" if strong[name] in tests else "source"
            return f"{kind}:{strong[name]}"
        return "comdat" if name in weak else "outside"

    # A weak copy of what the test objects hold weakly, unlike theirs: the linker keeps one
    # copy (whichever it meets first), so it may be the one every test calls. Outside the
    # test objects, any copy not theirs; among them (a test unit of the patch's own
    # defining `check::near` its way, round 29), the first copy that is not the one most
    # of them hold, or the one the linker keeps when no shape has a majority.
    odd: dict[str, str] = {}
    for name in weak_in_tests:
        in_tests = [(rel, shape) for rel, shape in copies.get(name, []) if rel in tests]
        theirs = Counter(shape for _, shape in in_tests)
        for rel, shape in copies.get(name, []):
            if rel not in tests and (shape not in theirs or shape in ("ungrouped", "abs")):
                odd.setdefault(name, rel)
        if len(theirs) > 1:
            kept_rel, kept = in_tests[0]
            if theirs[kept] * 2 <= len(in_tests):
                odd.setdefault(name, kept_rel)
            else:
                odd.setdefault(name, next(rel for rel, shape in in_tests if shape != kept))
    # What only the compiler's COMDAT instances define (a library template's member the
    # tree's code instantiates, `std::string::size`): no interposition of the library's.
    by_hand = {
        n for n, found in copies.items() if any(sh in ("ungrouped", "abs") for _, sh in found)
    }
    instances = sorted(set(weak) - set(strong) - by_hand)
    dynamic = _symbols(binary, ".dynsym")
    return {
        "held": {name: binder(name) for name in sorted(held)},
        "weak_in_tests": sorted(weak_in_tests),
        "odd_copies": dict(sorted(odd.items())),
        "defined": dict(sorted({**weak, **strong}.items())),
        "instances": instances,
        "imports": sorted(n for n, _, defined, _ in dynamic if not defined),
        "exports": sorted(n for n, _, defined, _ in dynamic if defined),
    }


def rebound(ref: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(symbol, file, why) for each binding of the patched program that is not the
    reference's: a strong definition now binds what a test object holds where the
    reference's bound something of another kind; a tree object defines what the reference's
    program took from a shared library (interposition)."""
    if not ref or not new:
        return []
    out: list[tuple[str, str, str]] = []
    weak_copies = set(new["weak_in_tests"])
    for name, now in new["held"].items():
        kind, _, file = now.partition(":")
        if kind not in ("test", "source"):
            continue
        was = ref["held"].get(name)
        was_kind = was.partition(":")[0] if was else None
        if was_kind == kind or (was is None and name not in weak_copies):
            continue
        how = f"bound, in the reference's program, to {_said(was)}" if was else "new"
        why = (
            f"{name}: the test objects' copy or call now binds to a strong definition in "
            f"{file} at link ({how})"
        )
        out.append((name, file, why))
    for name, file in new.get("odd_copies", {}).items():
        if name in ref.get("odd_copies", {}):
            continue
        why = (
            f"{name}: {file} holds a weak or inline copy unlike the test objects' (the "
            "linker keeps one copy for the program: it may be the one the tests call)"
        )
        out.append((name, file, why))
    said = {name for name, _, _ in out} | set(new.get("instances", []))
    imported = set(ref["imports"])
    exported = set(new["exports"]) - set(ref["exports"])
    for name, file in new["defined"].items():
        if name in said or name in ref["defined"]:
            continue
        if name not in imported and name not in exported:
            continue
        why = (
            f"{name}: defined in {file}, replacing the runtime library's definition the "
            "reference's program bound (interposition)"
        )
        out.append((name, file, why))
    return out


def _said(binder: str) -> str:
    kind, _, file = binder.partition(":")
    return {
        "comdat": "the test objects' own inline copies",
        "outside": "a shared library",
        "test": f"a test object ({file})",
        "source": f"a library source ({file})",
    }[kind]
