"""Symbols a link takes two definitions of, from files the build made.

A linker takes an archive member only for a symbol still undefined, so a program that
links a fixed `parse` (an object of its own, or a library listed first) and the
project's library, whose member defines the same `parse`, builds without a word: the
tests run the fixed copy while the library keeps the bug. The shadow shows in the
inputs themselves: two of them define the same strong global symbol. For each link
command of the build (Ninja's, cxxgate/cells/ctest.py), the objects, archives and shared
objects it names that lie in the build folder are read (pyelftools; an archive's members
by its fixed-width `ar` headers, which no library we depend on reads) and every strong
global symbol two of them define is kept. Weak and common definitions (inline
functions, template instances, C tentative definitions) are many by design and left out.
The gate compares each test program's shadows with the reference's
(cxxgate/gates/tests/testunits.py).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from cxxgate.cells.testframeworks import open_regular

_AR = b"!<arch>\n"
_THIN = b"!<thin>\n"
_LIMIT = 256 << 20  # bytes read from one input


def members(data: bytes, folder: Path, inside: Path) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of each member of a GNU / System V archive; a thin archive's members
    are read from their paths (relative to `folder`) when they lie in `inside`."""
    thin = data.startswith(_THIN)
    at, names = 8, b""
    while at + 60 <= len(data):
        header = data[at : at + 60]
        raw, size = header[:16].decode(errors="replace").rstrip(), int(header[48:58] or 0)
        at += 60
        body = b"" if thin and raw not in ("/", "//", "/SYM64/") else data[at : at + size]
        at += 0 if thin and raw not in ("/", "//", "/SYM64/") else size + size % 2
        if raw in ("/", "/SYM64/"):
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
            opened = open_regular(folder / name, inside)
            if opened is None:
                continue
            with opened as f:
                body = f.read(_LIMIT)
        yield name, body


def strong_definitions(data: bytes) -> set[str]:
    """The strong global symbols an ELF file defines for a link: a relocatable object's
    symbol table, a shared object's exports (.dynsym, default or protected visibility:
    its hidden symbols bind nothing outside it)."""
    try:
        elf = ELFFile(io.BytesIO(data))
        shared = elf["e_type"] == "ET_DYN"
        table = elf.get_section_by_name(".dynsym" if shared else ".symtab")
        if not isinstance(table, SymbolTableSection):
            return set()
        return {
            sym.name
            for sym in table.iter_symbols()
            if sym.name
            and sym["st_info"]["bind"] == "STB_GLOBAL"
            and sym["st_info"]["type"] not in ("STT_FILE", "STT_SECTION")
            and sym["st_shndx"] not in ("SHN_UNDEF", "SHN_COMMON")
            and (not shared or sym["st_other"]["visibility"] in ("STV_DEFAULT", "STV_PROTECTED"))
        }
    except (ELFError, ValueError, OSError):
        return set()


def _input(word: str, copy: Path) -> Path | None:
    """The build-folder file a link word names (spelt `<build>/...` or relative to the
    build folder), when it is an object, an archive or a shared object."""
    name = PurePosixPath(word).name
    if word.startswith("-") or not (name.endswith((".o", ".obj", ".a", ".so")) or ".so." in name):
        return None
    if word.startswith("<build>/"):
        return copy / word.removeprefix("<build>/")
    if word.startswith(("/", "<")):
        return None  # outside the build (a system library): its own check
    return copy / word


def shadowed(links: dict[str, list[str]], copy: Path, limit: int = 20) -> dict[str, list[str]]:
    """Per link output (not an archive), up to `limit` `symbol: input, input` for each
    strong symbol two of its build-made inputs define."""
    read: dict[Path, dict[str, set[str]]] = {}  # input -> member -> definitions

    def definitions(path: Path) -> dict[str, set[str]]:
        if path not in read:
            opened = open_regular(path, copy)
            data = b""
            if opened is not None:
                with opened as f:
                    data = f.read(_LIMIT)
            label = path.relative_to(copy).as_posix()
            if data.startswith((_AR, _THIN)):
                read[path] = {
                    f"{label}({name})": strong_definitions(body)
                    for name, body in members(data, path.parent, copy)
                }
            else:
                read[path] = {label: strong_definitions(data)}
        return read[path]

    found: dict[str, list[str]] = {}
    for output, words in sorted(links.items()):
        if output.endswith(".a"):
            continue
        owners: dict[str, list[str]] = {}
        for word in words:
            path = _input(word, copy)
            if path is None:
                continue
            for label, names in definitions(path).items():
                for name in names:
                    if label not in owners.setdefault(name, []):
                        owners[name].append(label)
        two = sorted(f"{n}: {', '.join(o)}" for n, o in owners.items() if len(o) > 1)
        if two:
            found[output] = two[:limit]
    return found
