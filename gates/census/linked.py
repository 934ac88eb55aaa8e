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
- `versioned`: each symbol name a tree object spells with a version (`f@V`, `f@@V`): only
  `.symver` in assembly makes one, and the linker binds it apart from `f` or as `f`
  (rounds 32 and 33);
- `shadows`: a global name of the program that an object also defines as a local symbol
  (top-level `asm`, `.set`): that object's references to the name reach its own local
  definition, not the program's (the test objects' `check::report` made a stub returning
  true, round 30). A compiler names internal-linkage entities apart (`_ZL`, an anonymous
  namespace), so no honest C++ object does this;
- `defined`: every global symbol a tree object defines (strong or weak), with its file;
- `instances`: those defined only by COMDAT instances the compiler made (a library
  template's member `std::string::size` the tree's code instantiates at -O0);
- `imports` / `exports`: the binary's undefined and defined dynamic symbols.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from pathlib import Path
from typing import Any

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection
from elftools.elf.sections import SymbolTableSection

from cxxgate.cells.premain import unversioned
from cxxgate.store import codehash

_GLOBAL = {"STB_GLOBAL", "STB_LOOS"}  # STB_LOOS: pyelftools' name for STB_GNU_UNIQUE


Symbol = tuple[str, str, bool, str]  # name, binding, defined, shape of a weak definition


def _symbols(path: Path, section: str) -> list[Symbol]:
    """(name, binding, defined, shape) of each global or weak named symbol of `section`; a
    weak definition's shape is its bytes and relocations (`_shape`), "" otherwise."""
    return _read(path, section)[0]


def _read(path: Path, section: str) -> tuple[list[Symbol], set[str], set[str]]:
    """`_symbols`, the names of the local function, object or untyped symbols defined in
    `section`, and the names that carry a symbol version (`f@V`, `f@@V`), as spelt."""
    with path.open("rb") as fh:
        elf = ELFFile(fh)
        table = elf.get_section_by_name(section)
        if not isinstance(table, SymbolTableSection):
            return [], set(), set()
        out = []
        local: set[str] = set()
        versioned: set[str] = set()
        reader: _Reader | None = None
        for sym in table.iter_symbols():
            bind = sym["st_info"]["bind"]
            if not sym.name or sym["st_info"]["type"] in ("STT_SECTION", "STT_FILE"):
                continue
            name = unversioned(sym.name)
            if name != sym.name:
                versioned.add(sym.name)
            defined = sym["st_shndx"] != "SHN_UNDEF"
            if bind == "STB_LOCAL":
                if defined:
                    local.add(name)
                continue
            if bind not in (*_GLOBAL, "STB_WEAK"):
                continue
            # A UNIQUE definition (an inline variable, a static of an inline function) is
            # a COMDAT copy too: the linker keeps the first it meets (round 33).
            weak = bind in ("STB_WEAK", "STB_LOOS")
            shape = ""
            if weak and defined and section == ".symtab":
                reader = reader or _Reader(elf, table)
                shape = reader.shape(sym)
            out.append((name, "weak" if weak else "strong", defined, shape))
        return out, local, versioned


# Relocations whose addend counts from the end of the 4-byte field they patch (x86-64's
# PC-relative ones): the data they reach starts 4 bytes past the addend. Elsewhere (AArch64's
# page and low-12-bit pairs, absolute ones) the addend is the offset itself.
_FROM_FIELD_END = {"EM_X86_64": {2, 4, 9, 24, 41, 42}}  # PC32, PLT32, GOTPCREL, PC64, GOTPCRELX
_REACH = 256  # bytes of an unmerged section read at most, from where a relocation points
_WHOLE = 1 << 20  # bytes of one variable read at most
# What a shape is reading, outermost first: code sections by index, data by (index, offset).
_Path = tuple[int | tuple[int, int], ...]
_Relocation = tuple[int, int, int, int]  # offset, type, symbol, addend
# .eh_frame: bytes, relocations in order, their offsets, FDE starts by the section unwound.
_Frame = tuple[bytes, list[_Relocation], list[int], dict[int, list[int]]]


class _Reader:
    """Shapes of one object's weak definitions: the relocations read once (a test object
    holds thousands of weak inline copies)."""

    def __init__(self, elf: ELFFile, table: SymbolTableSection) -> None:
        self.elf, self.table = elf, table
        self.pc = _FROM_FIELD_END.get(elf["e_machine"], set())
        self.relocations: dict[int, list[tuple[int, int, int, int]]] = {}
        for rel in elf.iter_sections():
            # What the program holds: a debugger's relocations (.debug_*) begin nothing
            # the code reads.
            if isinstance(rel, RelocationSection) and self._allocated(rel["sh_info"]):
                self.relocations.setdefault(rel["sh_info"], []).extend(
                    (e["r_offset"], e["r_info_type"], e["r_info_sym"], e.entry.get("r_addend", 0))
                    for e in rel.iter_relocations()
                )
        self._bounds: dict[int, list[int]] | None = None
        self._frame: _Frame | None = None  # `_read_frame`
        self._objects: dict[int, list[tuple[int, int]]] | None = None

    def _allocated(self, index: int) -> bool:
        return bool(index) and bool(self.elf.get_section(index)["sh_flags"] & SH_FLAGS.SHF_ALLOC)

    def _code(self, index: int) -> bool:
        return bool(self.elf.get_section(index)["sh_flags"] & SH_FLAGS.SHF_EXECINSTR)

    def shape(self, sym: Any) -> str:
        """What a weak definition is: its bytes and the relocations within them, each by
        its target's name, or, for a section's (a string, a constant, a table the code
        reads), by the bytes it reaches: a copy of `check::near` byte for byte the test
        objects' whose one relocation points at a zeroed mask is another function (round
        30). Whether it sits in a COMDAT group (an inline function or a template's
        instantiation) or was declared weak by hand (`__attribute__((weak))`: never the
        test objects' copy)."""
        index = sym["st_shndx"]
        if not isinstance(index, int):
            return "abs"
        where = self.elf.get_section(index)
        if not where["sh_flags"] & SH_FLAGS.SHF_GROUP:
            return "ungrouped"
        return self._body(index, sym["st_value"], sym["st_size"], (index,))

    def _body(self, index: int, start: int, size: int, path: _Path) -> str:
        """A section's bytes and relocations whole, and where in it the symbol lies (round
        32: a relocation just before a copy's symbol wrote over its first bytes at link
        time; a compiler's COMDAT section holds the one function or object). `path`: what
        is being shaped, code by its section's index (never by name, which the object
        chooses), data by its section's index and the offset read, so that a reach back
        into one of them is named by its place on the path."""
        where = self.elf.get_section(index)
        data = b"" if where["sh_type"] == "SHT_NOBITS" else where.data()
        data = f"{start}:{size}:{where['sh_size']}:".encode() + data
        relocs = []
        for offset, kind, symbol, addend in self.relocations.get(index, ()):
            target = self.table.get_symbol(symbol)
            past = 4 if kind in self.pc else 0
            relocs.append(f"{offset - start}:{kind}:{self._target(target, addend, past, path)}")
        unwind = self._unwind(index, path) if self._code(index) else ""
        return codehash.of_text(data + "\n".join([*sorted(relocs), unwind]).encode())

    def _unwind(self, index: int, path: _Path) -> str:
        """How code in section `index` is unwound: each `.eh_frame` FDE whose start is
        there, with its CIE, their bytes and relocations (the personality, the LSDA and its
        landing pads). A copy byte for byte g++'s with an FDE and LSDA of its own landed a
        thrown failure in itself and returned normally (round 34, `lsda_cleanup`)."""
        if self._frame is None:
            self._frame = self._read_frame()
        data, relocations, offsets, fdes = self._frame
        said = []
        for start in fdes.get(index, ()):
            if not 0 <= start <= len(data) - 8:
                continue
            cie = start + 4 - int.from_bytes(data[start + 4 : start + 8], "little")
            for first in (cie, start):
                if not 0 <= first <= len(data) - 4:
                    continue
                end = first + 4 + int.from_bytes(data[first : first + 4], "little")
                named = [
                    f"{offset - first}:{kind}:"
                    + self._target(self.table.get_symbol(symbol), addend, 0, path)
                    for offset, kind, symbol, addend in relocations[
                        bisect_right(offsets, first) : bisect_left(offsets, end)
                    ]
                    if offset != start + 8
                ]
                said.append(data[first + 8 : end].hex() + "|" + ",".join(sorted(named)))
        return "unwind:" + ";".join(said)

    def _read_frame(self) -> _Frame:
        """`.eh_frame` once per object: its bytes, its relocations in order (and their
        offsets), and the FDE starts by the section each one's start address lies in."""
        frame = self.elf.get_section_index(".eh_frame")
        if frame is None:
            return b"", [], [], {}
        relocations = sorted(self.relocations.get(frame, ()))
        fdes: dict[int, list[int]] = {}
        for offset, _, symbol, _ in relocations:
            target = self.table.get_symbol(symbol)
            if isinstance(target["st_shndx"], int):
                fdes.setdefault(target["st_shndx"], []).append(offset - 8)
        offsets = [offset for offset, *_ in relocations]
        return self.elf.get_section(frame).data(), relocations, offsets, fdes

    def _target(self, target: Any, addend: int, past: int, path: _Path) -> str:
        """What a relocation reaches: a global symbol by its name as the object spells it
        (a version kept: `f@V` is not `f` to the linker, round 33), anything else by what
        it is. Code (a local function, called at -O0 through its section's symbol, round
        33's `helper_const`; an asm label) is shaped like the copy, whole; data by the
        bytes read."""
        index = target["st_shndx"]
        local = target["st_info"]["bind"] == "STB_LOCAL"
        if not local and target["st_info"]["type"] != "STT_SECTION":
            return f"{target.name}{addend:+d}"
        if not isinstance(index, int):  # an absolute or common local: its value is what it is
            return f"{index}:{target['st_value']}{addend:+d}"
        section = target["st_info"]["type"] == "STT_SECTION"
        value = 0 if section else target["st_value"]
        at = value + addend + past
        if self._code(index):
            if index in path:
                return f"on path {path.index(index)}@{at}"
            return f"code@{at}:" + self._body(index, value, 0, (*path, index))
        if (index, at) in path:
            return f"on path {path.index((index, at))}"
        # The merged entry ld looks up: a section symbol's addend, a label's own place.
        lookup = addend if section else value
        return self._reached(index, lookup, at, (*path, (index, at))).hex()

    def _reached(self, index: int, addend: int, at: int, path: _Path) -> bytes:
        """The bytes a section relocation reaches (`at`): a merged string or constant
        whole, with the entry holding `addend` too, since that is the one the linker
        looks up and the code then reads past it (round 31's `asm_merge`: a duplicate
        entry merged away, the read landing on the zeros after its survivor); in another
        section, up to where the next thing the object names or points at in it begins (at
        most _REACH bytes, padding dropped), since what follows is another unit's own. The
        section's flags and entry size are part of it."""
        section = self.elf.get_section(index)
        flags, entry = section["sh_flags"], section["sh_entsize"]
        head = f"{section.name}:{flags:x}:{entry}:".encode()
        if section["sh_type"] == "SHT_NOBITS":  # where in it (round 34: a read 8 bytes on)
            return head + b"zero@%d" % at
        data = section.data()
        # Where the read starts from the entry the linker looks up: after merging, a read
        # past that entry lands on whatever follows its survivor (round 32: a duplicate
        # entry merged away, the read reaching the zeros after it).
        if flags & SH_FLAGS.SHF_MERGE and flags & SH_FLAGS.SHF_STRINGS:
            nul = b"\0" * max(entry, 1)
            held = _string(data, addend, nul)
            return head + held + b"|" + _string(data, at, nul) + b"@%d" % (at - addend)
        if flags & SH_FLAGS.SHF_MERGE and entry:
            first = addend - addend % entry
            held = data[first : first + entry] if first >= 0 else b"<"
            return head + held + b"|" + data[at : at + entry] + b"@%d" % (at - first)
        whole = self._object_at(index, at)
        if whole is not None:
            # A variable's extent, as its symbol says: what else the object points at inside
            # it begins nothing (round 34's `pad_split`: `&exact.abs` cut a window short).
            end = min(whole, at + _WHOLE, len(data))
        else:
            later = [b for b in self._starts(index) if b > at]
            end = min([at + _REACH, len(data), *later])
        # What the bytes read point at: a table's entries are relocations whose bytes are
        # zero in the object (round 32: a jump table's cases sent elsewhere), each named by
        # what it reaches (round 33: into a second section of the same name).
        inside = [
            (offset, kind, symbol, plus)
            for offset, kind, symbol, plus in self.relocations.get(index, ())
            if at - 8 < offset < end
        ]
        last = max((o + 8 - at for o, *_ in inside), default=0)
        reached = data[at:end] if whole is not None else _unpadded(data[at:end], last)
        named = []
        for offset, kind, symbol, plus in sorted(inside):
            target = self.table.get_symbol(symbol)
            past = 4 if kind in self.pc else 0
            what = self._target(target, plus, past, path)
            named.append(f"{offset - at}:{kind}:{what}".encode())
        return head + reached + b"|" + b",".join(named)

    def _object_at(self, index: int, at: int) -> int | None:
        """Where the variable holding offset `at` of section `index` ends, if a symbol
        with a size says so."""
        if self._objects is None:
            self._objects = {}
            for sym in self.table.iter_symbols():
                where, size = sym["st_shndx"], sym["st_size"]
                if sym["st_info"]["type"] == "STT_OBJECT" and isinstance(where, int) and size:
                    self._objects.setdefault(where, []).append((sym["st_value"], size))
        ends = [v + n for v, n in self._objects.get(index, ()) if v <= at < v + n]
        return max(ends, default=None)

    def _starts(self, index: int) -> list[int]:
        """Where symbols and section relocations begin things in section `index`."""
        if self._bounds is None:
            self._bounds = {}
            for sym in self.table.iter_symbols():
                if isinstance(sym["st_shndx"], int) and sym["st_info"]["type"] != "STT_SECTION":
                    self._bounds.setdefault(sym["st_shndx"], []).append(sym["st_value"])
            for found in self.relocations.values():
                for _, kind, symbol, addend in found:
                    target = self.table.get_symbol(symbol)
                    if target["st_info"]["type"] == "STT_SECTION":
                        at = addend + (4 if kind in self.pc else 0)
                        self._bounds.setdefault(target["st_shndx"], []).append(at)
        return self._bounds.get(index, [])


def _unpadded(reached: bytes, last: int) -> bytes:
    """A window without the padding before the next thing: 8-byte runs of zeros at its end
    (never below 8 bytes, nor into the last relocation's bytes: a constant's own zeros
    stay), or, for a string (text, its NUL, then zeros only), all past its NUL (round 33:
    a literal followed by padding in one object and by the next literal in another). The
    text must print: a constant read whole whose bytes are text, NUL and zeros would lose
    its high zeros, which no compiler-made number of a check has."""
    nul = reached.find(b"\0")
    text = reached[:nul]
    if nul > 0 and not any(reached[nul:]) and last <= nul and all(
        (c >= 0x20 and c != 0x7F) or c in b"\t\n\r" for c in text
    ):
        return reached[: nul + 1]
    while len(reached) > max(8, last) and len(reached) % 8 == 0 and not any(reached[-8:]):
        reached = reached[:-8]  # alignment padding before the next constant
    return reached


def _string(data: bytes, at: int, nul: bytes) -> bytes:
    """The string of a merged string section from `at` ("<": before the section)."""
    if at < 0:
        return b"<"
    end = data.find(nul, at)
    return data[at : end if end >= 0 else len(data)]


def facts(objects: dict[str, Path], tests: set[str], binary: Path) -> dict[str, Any]:
    """The binding facts of one link: `objects` by tree file, `tests` the test units."""
    strong: dict[str, str] = {}
    weak: dict[str, str] = {}
    held: set[str] = set()
    weak_in_tests: set[str] = set()
    copies: dict[str, list[tuple[str, str]]] = {}  # weak definitions: (file, shape)
    named: set[str] = set()  # every global name an object defines or refers to
    local: dict[str, str] = {}
    versioned: dict[str, str] = {}
    for rel, path in sorted(objects.items()):
        symbols, own, spelt = _read(path, ".symtab")
        for name in own:
            local.setdefault(name, rel)
        for name in spelt:
            versioned.setdefault(name, rel)
        for name, bind, defined, shape in symbols:
            named.add(name)
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
    named |= {name for name, *_ in dynamic}
    shadows = {name: rel for name, rel in local.items() if name in named}
    return {
        "held": {name: binder(name) for name in sorted(held)},
        "weak_in_tests": sorted(weak_in_tests),
        "odd_copies": dict(sorted(odd.items())),
        "shadows": dict(sorted(shadows.items())),
        "versioned": dict(sorted(versioned.items())),
        "defined": dict(sorted({**weak, **strong}.items())),
        "instances": instances,
        "imports": sorted(n for n, _, defined, _ in dynamic if not defined),
        "exports": sorted(n for n, _, defined, _ in dynamic if defined),
    }


# Facts by file the patched program holds and the reference's need not: what each says.
_NEW = {
    "odd_copies": "holds a weak or inline copy unlike the test objects' (the linker keeps one "
    "copy for the program: it may be the one the tests call)",
    "shadows": "defines a local symbol of that name (assembler-made), which its own "
    "references reach in place of the program's",
    "versioned": "names a symbol with a version (`.symver`, which only assembly writes): the "
    "linker binds it apart from, or in place of, the unversioned name",
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
    for fact, what in _NEW.items():
        for name, file in new.get(fact, {}).items():
            if name not in ref.get(fact, {}):
                out.append((name, file, f"{name}: {file} {what}"))
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
