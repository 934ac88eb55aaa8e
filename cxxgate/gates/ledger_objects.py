"""The ledger's second witness: what the tree's compiled objects bind, read with pyelftools.

The oracle program's library objects (the `objects` cell of its sources, for the
candidate's tree and the reference's) are compiled by g++ in the case's envelope; their
undefined symbols are what the linker must bind, however the source spelt it: a lock
declared by hand, an asm label, a call inside an inline header function (emitted at -O0
as a weak definition in the same object, its own calls undefined there), a call from an
asm statement that names its target. ledger_rules.facility_of_symbol maps each to a
facility. A finding points at the tree function whose code holds the reference (followed
back through the object's own helper functions), by its mangled name as libclang gives it.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection
from elftools.elf.sections import SymbolTableSection

from cxxgate.cellspec import CellResult
from cxxgate.layout import Layout


def undefined_symbols(cell: CellResult, functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every undefined symbol of the objects `cell` (an `objects` cell) linked, with the
    tree file it came from and the line of the tree function that references it (0 when
    none is found). `functions`: the ledger scan's function records of the same tree."""
    layout = Layout(Path(cell.tree_root).parent.parent)  # trees live at <build>/trees/<key>
    defined = {f["mangled"]: f for f in functions if f.get("mangled")}
    out: list[dict[str, Any]] = []
    for key in cell.parts:
        part = CellResult.load(layout.cell_result(key))
        if part.binary is None or not part.steps:
            continue
        source = part.steps[0].source
        for symbol, holder in _read(Path(part.binary)):
            at = _tree_function(holder, defined)
            entry: dict[str, Any] = {
                "symbol": symbol,
                "path": at["path"] if at else source,
                "line": at["line"] if at else 0,
            }
            if entry not in out:
                out.append(entry)
    return sorted(out, key=lambda e: (e["path"], e["line"], e["symbol"]))


def _read(path: Path) -> list[tuple[str, list[str]]]:
    """(undefined symbol, the chains of defined functions that reach it, nearest first)."""
    with path.open("rb") as fh:
        elf = ELFFile(fh)
        symtab = elf.get_section_by_name(".symtab")
        if not isinstance(symtab, SymbolTableSection):
            return []
        symbols = list(symtab.iter_symbols())
        undefined = {
            s.name
            for s in symbols
            if s.name
            and s["st_shndx"] == "SHN_UNDEF"
            and s["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK")
        }
        funcs: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
        for s in symbols:
            if s["st_info"]["type"] == "STT_FUNC" and isinstance(s["st_shndx"], int):
                funcs[s["st_shndx"]].append((s["st_value"], s["st_value"] + s["st_size"], s.name))
        # callers[name]: the defined functions whose code refers to `name`.
        callers: dict[str, set[str]] = defaultdict(set)
        for section in elf.iter_sections():
            if not isinstance(section, RelocationSection):
                continue
            target = section["sh_info"]
            for rel in section.iter_relocations():
                name = symbols[rel["r_info_sym"]].name
                holder = next(
                    (n for lo, hi, n in funcs.get(target, []) if lo <= rel["r_offset"] < hi),
                    None,
                )
                if name and holder:
                    callers[name].add(holder)
    return [(name, _back(name, callers)) for name in sorted(undefined)]


def _back(name: str, callers: dict[str, set[str]]) -> list[str]:
    """Functions that reach `name`, breadth first (a weak inline function's callers after
    the function itself)."""
    seen: list[str] = []
    frontier = sorted(callers.get(name, ()))
    while frontier:
        nxt: list[str] = []
        for f in frontier:
            if f not in seen:
                seen.append(f)
                nxt += sorted(callers.get(f, ()))
        frontier = nxt
    return seen


def _tree_function(holders: list[str], defined: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The first holder that is a tree function, or a local entity (a lambda, a static
    local's guard) of one: `_ZZ<encoding>E...` names the function `_Z<encoding>`."""
    for holder in holders:
        if holder in defined:
            return defined[holder]
        if holder.startswith("_ZZ"):
            for mangled, f in defined.items():
                if holder.startswith("_ZZ" + mangled[2:] + "E"):
                    return f
    return None
