"""Exported symbols of an ELF shared object, read with pyelftools.

Mangled names are the truth (they are what a client binds to); demangled text is kept
beside them for humans only, since `c++filt` output changes between implementations.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from cxxgate.util import atomic

EXPORTS_FILE = "exports.json"

# Bindings and types a client can bind to through the dynamic symbol table.
# pyelftools names the GNU values by their range: binding 10 (STB_GNU_UNIQUE) is
# STB_LOOS, type 10 (STT_GNU_IFUNC) is STT_LOOS.
_GNU = {"STB_LOOS": "STB_GNU_UNIQUE", "STT_LOOS": "STT_GNU_IFUNC"}
_BINDINGS = {"STB_GLOBAL", "STB_WEAK", "STB_GNU_UNIQUE"}
_TYPES = {"STT_FUNC", "STT_OBJECT", "STT_TLS", "STT_GNU_IFUNC", "STT_COMMON"}


@dataclass(frozen=True)
class Export:
    name: str  # mangled: the truth
    kind: str  # nm's letter: T (text), D (data), B (bss), R (read-only), W/V (weak), u, i
    demangled: str = ""  # for humans

    @property
    def shown(self) -> str:
        return self.demangled or self.name


def dynamic_exports(path: Path) -> list[Export]:
    """Defined, visible symbols of `.dynsym`, as `nm -D --defined-only` would list them."""
    found: dict[str, Export] = {}
    with path.open("rb") as fh:
        elf = ELFFile(fh)
        dynsym = elf.get_section_by_name(".dynsym")
        if not isinstance(dynsym, SymbolTableSection):
            return []
        for sym in dynsym.iter_symbols():
            bind = _GNU.get(sym["st_info"]["bind"], sym["st_info"]["bind"])
            kind = _GNU.get(sym["st_info"]["type"], sym["st_info"]["type"])
            shndx = sym["st_shndx"]
            if not sym.name or shndx == "SHN_UNDEF" or bind not in _BINDINGS or kind not in _TYPES:
                continue
            if sym["st_other"]["visibility"] not in {"STV_DEFAULT", "STV_PROTECTED"}:
                continue
            found[sym.name] = Export(sym.name, _letter(elf, bind, kind, shndx))
    return [found[n] for n in sorted(found)]


def _letter(elf: ELFFile, bind: str, kind: str, shndx: object) -> str:
    if bind == "STB_WEAK":
        return "V" if kind == "STT_OBJECT" else "W"
    if bind == "STB_GNU_UNIQUE":
        return "u"
    if kind == "STT_GNU_IFUNC":
        return "i"
    if kind == "STT_FUNC":
        return "T"
    if not isinstance(shndx, int):
        return "A" if shndx == "SHN_ABS" else "C"
    section = elf.get_section(shndx)
    flags = section["sh_flags"]
    if section["sh_type"] == "SHT_NOBITS":
        return "B"
    if not flags & SH_FLAGS.SHF_WRITE:
        return "R"
    return "D"


def save(exports: list[Export], folder: Path) -> None:
    text = json.dumps([asdict(e) for e in exports], indent=1) + "\n"
    atomic.write_text(folder / EXPORTS_FILE, text)


def load(folder: Path) -> list[Export]:
    return [Export(**e) for e in json.loads((folder / EXPORTS_FILE).read_text())]
