"""Symbols a link takes two definitions of, from files the build made; the sources a
linked program holds code from.

A linker takes an archive member only for a symbol still undefined, so a program that
links a fixed `parse` (an object of its own, or a library listed first) and the
project's library, whose member defines the same `parse`, builds without a word: the
tests run the fixed copy while the library keeps the bug. The shadow shows in the
inputs themselves: two of them define the same symbol with different bytes. For each
link command of the build (Ninja's, cxxgate/cells/ctest.py), the objects, archives and
shared objects it names that lie in the build folder are read (pyelftools; an archive's
members by its fixed-width `ar` headers, which no library we depend on reads) and every
symbol two of them define is kept: global, or weak or GNU unique outside a COMDAT group
(a fixed twin made weak still wins when it comes first), by its name without a version.
Inline functions and template instances (in COMDAT groups) and common symbols are many
by design and left out. A file is read by its contents, as the linker reads it, whatever
its name; one whose symbols cannot be read (a slim LTO object, a linker script, ELF
pyelftools refuses, an archive whose headers and index disagree) is named as unread,
and so is a file a link names outside the build folder and the system's (/tmp). What
the linker did put in is the linker's own map, from a harness re-link
(cxxgate/cells/relink.py). The gate compares both with the reference's program
(cxxgate/gates/tests/testunits.py).
"""

from __future__ import annotations

import hashlib
import io
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import Relocation, RelocationSection
from elftools.elf.sections import Symbol, SymbolTableSection

from cxxgate.cells.testframeworks import open_regular
from cxxgate.util.elfread import ELF_ERRORS

_AR = b"!<arch>\n"
_THIN = b"!<thin>\n"
_LIMIT = 256 << 20  # bytes read from one input
SLIM_LTO = "__gnu_lto_slim"  # the symbol a slim LTO object defines, and stands for
_EXPORTED = ("STV_DEFAULT", "STV_PROTECTED")
_NOT_CODE = ("STT_FILE", "STT_SECTION")
_SYSTEM = ("/usr/", "/lib/", "/lib64/")  # read-only in the build's sandbox
_WORK = 256 << 20  # bytes and relocations _group_digest may go through in one object


def members(data: bytes, folder: Path, inside: Path) -> list[tuple[str, bytes]]:
    """(name, bytes) of each member of a GNU / System V archive; a thin archive's members
    are read from their paths (relative to `folder`), which must be regular files in
    `inside`. Raises ValueError for an archive the linker might read otherwise: a header
    that does not parse, a member the archive's symbol index points to that the headers
    do not reach (a size that hides a member), a thin member out of reach."""
    thin = data.startswith(_THIN)
    at, names, index = 8, b"", b""
    found: list[tuple[str, bytes]] = []
    starts: set[int] = set()
    seen: set[str] = set()
    total = 0
    while at < len(data):
        header = data[at : at + 60]
        size_field = header[48:58].strip()
        if len(header) < 60 or header[58:60] != b"`\n" or not size_field.isdigit():
            raise ValueError(f"a member header at byte {at} does not parse")
        starts.add(at)
        raw, size = header[:16].decode(errors="replace").rstrip(), int(size_field)
        table = raw in ("/", "//", "/SYM64/")
        at += 60
        body = data[at : at + size] if table or not thin else b""
        at += size + size % 2 if table or not thin else 0
        if raw in ("/", "/SYM64/"):
            # The index is the first member or none: GNU ld reads a later `/` as an object.
            if len(starts) > 1:
                raise ValueError(f"a symbol index as member {len(starts)}, not the first")
            index = (b"8" if raw == "/SYM64/" else b"4") + body
            continue
        if raw == "//":
            names = body
            continue
        name = raw
        if raw.startswith("/") and raw[1:].isdigit():
            start = int(raw[1:])
            name = names[start : names.find(b"\n", start)].decode(errors="replace")
        name = name.rstrip("/")
        if thin:
            if name in seen:  # one file, however many headers name it
                continue
            seen.add(name)
            opened = open_regular(folder / name, inside)
            if opened is None:
                raise ValueError(f"its member {name} is not a file of the build")
            with opened as f:
                body = f.read(_LIMIT)
            total += len(body)
            if total > _LIMIT:
                raise ValueError(f"its members pass {_LIMIT >> 20} MiB")
        found.append((name, body))
    width = int(index[:1] or b"4")
    count = int.from_bytes(index[1 : 1 + width], "big") if index else 0
    offsets = index[1 + width : 1 + width + count * width]
    if any(int.from_bytes(offsets[i : i + width], "big") not in starts
           for i in range(0, len(offsets), width)):  # fmt: skip
        raise ValueError("its symbol index points to a member the headers do not reach")
    return found


class Symbols(NamedTuple):
    """What an ELF file's symbol table says a link would take from it."""

    names: set[str]  # what a second definition would shadow (definitions)
    grouped: dict[str, str]  # weak or unique in a COMDAT group -> that group's digest
    needs: set[str]  # undefined: what it calls or reads from elsewhere
    why: str = ""  # why it could not be read ("" when it was)
    sections: frozenset[str] = frozenset()  # the names of its sections


def definitions(data: bytes) -> Symbols:
    """The symbols an ELF file defines for a link that a second definition would shadow,
    and why it could not be read ("" when it was). Every binding but local counts
    (global; weak and GNU unique outside a COMDAT group), by name without its version
    (`parse@@V1` binds `parse`). Inline functions, template instances and their statics
    are in a COMDAT group, in every object that uses them: those are `grouped`, each with
    the digest of its group's contents (bytes and relocations, _group_digest), so that
    two copies of one inline function compiled alike read as one. A shared object: its
    exports (.dynsym, default or protected visibility). A slim LTO object holds its
    symbols in GCC's own sections, a linker script or any other file is not ELF: unread."""
    if not data.startswith(b"\x7fELF"):
        return Symbols(set(), {}, set(), "not an ELF object or an archive (a linker script?)")
    try:
        elf = ELFFile(io.BytesIO(data))
        shared = elf["e_type"] == "ET_DYN"
        # By type, as the linker finds it (a table renamed `.symtaX` is still the table).
        kind = "SHT_DYNSYM" if shared else "SHT_SYMTAB"
        tables = [t for t in elf.iter_sections() if t["sh_type"] == kind]
        if len(tables) != 1 or not isinstance(tables[0], SymbolTableSection):
            return Symbols(set(), {}, set(), f"{len(tables)} symbol tables" if tables else "")
        table = tables[0]
        group_of: dict[int, str] = {}  # section index -> its COMDAT group's digest
        obj = _Object(elf, table)
        for section in elf.iter_sections():
            if section["sh_type"] == "SHT_GROUP":
                if section["sh_size"] > len(data):
                    return Symbols(set(), {}, set(), "a section group larger than the file")
                order = "<" if elf.little_endian else ">"
                words = struct.unpack(f"{order}{section['sh_size'] // 4}I", section.data())
                if words and words[0] & 1:  # GRP_COMDAT
                    digest = _group_digest(obj, words[1:])
                    group_of.update(dict.fromkeys(words[1:], digest))
        names: set[str] = set()
        grouped: dict[str, str] = {}
        needs: set[str] = set()
        for sym in table.iter_symbols():
            bind, shndx = sym["st_info"]["bind"], sym["st_shndx"]
            if sym.name == SLIM_LTO:  # a common symbol
                return Symbols(set(), {}, set(), "slim LTO: its symbols are in GCC's own sections")
            name = sym.name.partition("@")[0]
            if not name or bind == "STB_LOCAL" or sym["st_info"]["type"] in _NOT_CODE:
                continue
            if shndx == "SHN_UNDEF":
                needs.add(name)
            elif shndx == "SHN_COMMON" or (shared and not _exported(sym)):
                continue
            elif bind != "STB_GLOBAL" and shndx in group_of:
                grouped[name] = group_of[shndx]
            else:
                names.add(name)
        sections = frozenset(str(section.name) for section in elf.iter_sections())
        return Symbols(names, grouped, needs, "", sections)
    except ELF_ERRORS as err:
        return Symbols(set(), {}, set(), f"its ELF does not read ({err})"[:120])


def _exported(sym: Symbol) -> bool:
    return sym["st_other"]["visibility"] in _EXPORTED


@dataclass
class _Object:
    """One ELF object as _group_digest reads it."""

    elf: ELFFile
    table: SymbolTableSection
    seen: dict[tuple[int, int], str] = field(default_factory=dict)  # (symbol, depth) -> digest
    work: int = 0  # bytes hashed and relocations looked at, against _WORK
    _relocations: dict[int, list[Relocation]] | None = None
    _data: dict[int, bytes] = field(default_factory=dict)

    def data(self, index: int) -> bytes:
        """A section's bytes, read once."""
        if index not in self._data:
            section = self.elf.get_section(index)
            self._data[index] = b"" if section["sh_type"] == "SHT_NOBITS" else section.data()
        return self._data[index]

    def spend(self, amount: int) -> None:
        """Count work; an object that asks for more than _WORK (relocations against
        labels that each reach the rest of a large section) is not read."""
        self.work += amount
        if self.work > _WORK:
            raise ValueError("its inline functions' relocations ask too much reading")

    def relocations(self, section: int) -> list[Relocation]:
        """The relocations applied to a section (all read once, when first asked)."""
        if self._relocations is None:
            self._relocations = {}
            for rel in self.elf.iter_sections():
                if isinstance(rel, RelocationSection):
                    self._relocations.setdefault(rel["sh_info"], []).extend(rel.iter_relocations())
        return self._relocations.get(section, [])


def _group_digest(obj: _Object, members: tuple[int, ...]) -> str:
    """A COMDAT group's contents: its sections' names, types and bytes, and each of its
    relocations by offset, type, addend and target: two copies whose bytes agree may
    still call different functions through a relocation. A global target is its name; a
    local one (a static function of the object, a section) is its bytes and, in turn, the
    targets of the relocations inside them, a few levels deep."""
    hashed = hashlib.sha256()
    for index in members:
        section = obj.elf.get_section(index)
        hashed.update(f"{section.name}\0{section['sh_type']}\0{section['sh_size']}\0".encode())
        if isinstance(section, RelocationSection):
            continue  # read below, by the section it applies to, listed in the group or not
        hashed.update(obj.data(index))
        for reloc in obj.relocations(index):
            target = _target(obj, reloc["r_info_sym"], 3)
            addend = reloc["r_addend"] if reloc.is_RELA() else ""
            hashed.update(f"{reloc['r_offset']}\0{reloc['r_info_type']}\0{addend}\0".encode())
            hashed.update(target.encode() + b"\0")
    return hashed.hexdigest()


def _target(obj: _Object, index: int, depth: int) -> str:
    """What a relocation's symbol stands for (_group_digest), each answer kept: an object
    whose sections point at one another costs one pass per level."""
    if (index, depth) not in obj.seen:
        obj.seen[index, depth] = _target_of(obj, index, depth)
    return obj.seen[index, depth]


def _target_of(obj: _Object, index: int, depth: int) -> str:
    sym = obj.table.get_symbol(index)
    shndx = sym["st_shndx"]
    if sym["st_info"]["bind"] != "STB_LOCAL" or not isinstance(shndx, int):
        return f"{sym.name}@{shndx if not isinstance(shndx, int) else ''}"
    section = obj.elf.get_section(shndx)
    start, size = (0, section["sh_size"]) if not sym.name else (sym["st_value"], sym["st_size"])
    if sym.name and section["sh_type"] != "SHT_NOBITS" and size == 0:
        size = section["sh_size"] - start  # a label without a size: the rest of its section
    data = obj.data(shndx)[start : start + size]
    obj.spend(len(data) + len(obj.relocations(shndx)) * (depth > 0))
    hashed = hashlib.sha256(f"{section.name}\0".encode() + data)
    if depth > 0:
        for reloc in obj.relocations(shndx):
            if start <= reloc["r_offset"] < start + size and reloc["r_info_sym"] != index:
                target = _target(obj, reloc["r_info_sym"], depth - 1)
                hashed.update(f"{reloc['r_offset'] - start}\0{target}\0".encode())
    return hashed.hexdigest()


def _input(word: str, output: str, copy: Path) -> Path | str | None:
    """The build-folder file a link word names (spelt `<build>/...` or relative to the
    build folder; `@file`, a response file, as itself), whatever its name: the linker
    reads a file by its contents (a twin archive named `libcalc_t.lib` links); why it
    cannot be read, for an absolute path outside the build and the system."""
    word = word.removeprefix("@")
    if word.startswith("-") or word == output:
        return None
    if word.startswith("<build>/"):
        return copy / word.removeprefix("<build>/")
    if word.startswith(_SYSTEM) or word.startswith("<"):
        return None  # the system's, or the tree's (a new link word: its own check)
    if word.startswith("/"):
        return "outside the build and the system"  # the build made it elsewhere (/tmp)
    return copy / word


class Part(NamedTuple):
    label: str  # `lib.a(m.o)`, or the file's path in the build
    digest: str
    symbols: Symbols


class Reader:
    """Each build file a link reads, as a Part per member of an archive (`lib.a(m.o)`) or
    for the file itself; read once per path. None: not a regular file of the build."""

    def __init__(self, copy: Path) -> None:
        self.copy = copy
        self.read: dict[Path, list[Part] | None] = {}

    def __call__(self, path: Path) -> list[Part] | None:
        if path not in self.read:
            self.read[path] = self._parts(path)
        return self.read[path]

    def _parts(self, path: Path) -> list[Part] | None:
        opened = open_regular(path, self.copy)
        if opened is None:
            return None
        with opened as f:
            data = f.read(_LIMIT)
        label = path.relative_to(self.copy).as_posix()
        try:
            parts = (
                [(f"{label}({name})", body) for name, body in members(data, path.parent, self.copy)]
                if data.startswith((_AR, _THIN))
                else [(label, data)]
            )
        except ValueError as err:
            unread = Symbols(set(), {}, set(), f"an archive that does not read: {err}")
            return [Part(label, "", unread)]
        return [Part(n, hashlib.sha256(body).hexdigest(), definitions(body)) for n, body in parts]


def shadowed(links: dict[str, list[str]], read: Reader, limit: int = 20) -> dict[str, list[str]]:
    """Per link output (not an archive), up to `limit` `symbol: input, input` for each
    symbol two of its build-made inputs define with different bytes (the same object
    archived twice, one source in two libraries, is one definition), and `input is
    unread: why` for each input whose symbols are not read."""
    found: dict[str, list[str]] = {}
    for output, words in sorted(links.items()):
        if output.endswith(".a"):
            continue
        owners: dict[str, dict[str, str]] = {}  # symbol -> digest -> label
        unread: list[str] = []
        for word in words:
            path = _input(word, output, read.copy)
            if isinstance(path, str):
                unread.append(f"{word} is unread: {path}")
                continue
            for label, digest, symbols in (read(path) if path else None) or []:
                for name in symbols.names:
                    owners.setdefault(name, {}).setdefault(digest, label)
                if symbols.why:
                    unread.append(f"{label} is unread: {symbols.why}")
        two = [f"{n}: {', '.join(o.values())}" for n, o in owners.items() if len(o) > 1]
        said = sorted(set(unread)) + sorted(two)
        if said:
            found[output] = said[:limit]
    return found
