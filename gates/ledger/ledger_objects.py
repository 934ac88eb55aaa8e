"""The ledger's second witness: what the tree's compiled objects bind, read with pyelftools.

The oracle program's library objects (the `objects` cell of its sources, for the
candidate's tree and the reference's) are compiled by g++ in the case's envelope; their
undefined symbols are what the linker must bind, however the source spelt it: a lock
declared by hand, an asm label, a call inside an inline header function (emitted at -O0
as a weak definition in the same object, its own calls undefined there), a call from an
asm statement that names its target. ledger_rules.facility_of_symbol maps each to a
facility. A finding points at the tree function whose code holds the reference (followed
back through the object's own helper functions), by its mangled name as libclang gives it.

Two more facts come from the same objects. Their writable data (`writable_data`): every
symbol in a section the loader maps writable (.data, .bss, .tdata, .tbss, a named section
with SHF_WRITE; not .data.rel.ro, read-only after relocation), which is new mutable state
however the source spelt it (a const object with a `mutable` member, a const pointer to a
heap object, a header whose text a macro makes non-const in one unit). And the toolchain's
own shared libraries' alias groups (`aliases`): glibc exports one function under several
names (`__nanosleep`, `nanosleep`; `__poll`, `poll`; `__clone`, `clone`), found by equal
addresses in each library's dynamic symbol table, so a listed facility is known by any
of its names.
"""

from __future__ import annotations

from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection
from elftools.elf.sections import SymbolTableSection

from cxxgate.store.layout import Layout
from cxxgate.toolchain import toolquery
from cxxgate.toolchain.cellspec import CellResult

# The shared libraries g++ links a C++ program against: where every name an object leaves
# undefined is bound (unless another object of the tree defines it).
LINKED_LIBRARIES = ("libc.so.6", "libstdc++.so.6", "libm.so.6", "libgcc_s.so.1")


def undefined_symbols(cell: CellResult, functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every undefined symbol of the objects `cell` (an `objects` cell) linked, with the
    tree file it came from and the line of the tree function that references it (0 when
    none is found). `functions`: the ledger scan's function records of the same tree."""
    defined = {f["mangled"]: f for f in functions if f.get("mangled")}
    objects = _objects(cell)
    # A name one object of the tree leaves undefined and another defines is a call
    # inside the library, not a binding to the outside.
    inside = {name for path, _ in objects for name in _defined(path)}
    out: list[dict[str, Any]] = []
    for path, source in objects:
        for symbol, holder in _read(path):
            if symbol in inside:
                continue
            at = _tree_function(holder, defined)
            entry: dict[str, Any] = {
                "symbol": symbol,
                "path": at["path"] if at else source,
                "line": at["line"] if at else 0,
            }
            if entry not in out:
                out.append(entry)
    return sorted(out, key=lambda e: (e["path"], e["line"], e["symbol"]))


def _objects(cell: CellResult) -> list[tuple[Path, str]]:
    """(object file, the tree source it was compiled from) of each part of `cell`."""
    layout = Layout(Path(cell.tree_root).parent.parent)  # trees live at <build>/trees/<key>
    out = []
    for key in cell.parts:
        part = CellResult.load(layout.cell_result(key))
        if part.binary is not None and part.steps:
            out.append((Path(part.binary), part.steps[0].source))
    return out


def _defined(path: Path) -> set[str]:
    with path.open("rb") as fh:
        symtab = ELFFile(fh).get_section_by_name(".symtab")
        if not isinstance(symtab, SymbolTableSection):
            return set()
        return {
            s.name
            for s in symtab.iter_symbols()
            if s.name
            and s["st_shndx"] != "SHN_UNDEF"
            and s["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK", "STB_GNU_UNIQUE")
        }


def writable_data(cell: CellResult, statics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every data symbol the objects of `cell` place in writable memory, with the tree file
    it came from and the line of the tree variable of that symbol (0 when none matches).
    `statics`: the ledger scan's static records of the same tree (their `mangled` names)."""
    known = {s["mangled"]: s for s in statics if s.get("mangled")}
    out: list[dict[str, Any]] = []
    for path, source in _objects(cell):
        for symbol, section in _writable(path):
            # A static local's guard word (`_ZGV<name>`) points at the static itself.
            at = known.get(symbol) or known.get(
                "_Z" + symbol[4:] if symbol.startswith("_ZGV") else ""
            )
            entry = {
                "symbol": symbol,
                "section": section,
                "path": at["path"] if at else source,
                "line": at["line"] if at else 0,
            }
            if entry not in out:
                out.append(entry)
    return sorted(out, key=lambda e: (e["path"], e["line"], e["symbol"]))


def _writable(path: Path) -> list[tuple[str, str]]:
    """(symbol, section) of the object's data in writable sections, or common."""
    with path.open("rb") as fh:
        elf = ELFFile(fh)
        symtab = elf.get_section_by_name(".symtab")
        if not isinstance(symtab, SymbolTableSection):
            return []
        out = []
        for s in symtab.iter_symbols():
            kind, index = s["st_info"]["type"], s["st_shndx"]
            if not s.name or kind not in ("STT_OBJECT", "STT_TLS", "STT_COMMON", "STT_NOTYPE"):
                continue
            if index == "SHN_COMMON":
                out.append((s.name, "COMMON"))
                continue
            if not isinstance(index, int):
                continue
            section = elf.get_section(index)
            relro = section.name.startswith(".data.rel.ro")
            if section["sh_flags"] & SH_FLAGS.SHF_WRITE and not relro:
                if kind == "STT_NOTYPE" and s.name.startswith("."):
                    continue  # an assembler-local label, not an object
                if s.name.startswith("DW.ref."):
                    continue  # g++'s pointer to the EH personality: no C++ name has a '.'
                if s.name == "_ZStL8__ioinit":
                    continue  # <iostream>'s own per-unit ios_base::Init object
                out.append((s.name, section.name))
        return sorted(set(out))


@cache
def aliases(compiler: str, binds: tuple[tuple[str, str], ...] = ()) -> dict[str, frozenset[str]]:
    """name -> every name the toolchain's shared libraries export at the same address
    (its alias group). Each library's path is asked of the compiler through
    cxxgate/toolchain/toolquery.py (`-print-file-name`); a library it cannot name or that cannot be
    read gives no groups (its names then stay unknown: unlisted, never benign)."""
    groups: dict[str, frozenset[str]] = {}
    for lib in LINKED_LIBRARIES:
        code, text = toolquery.query([compiler, f"-print-file-name={lib}"], binds=binds)
        path = Path(text.strip().splitlines()[-1]) if code == 0 and text.strip() else None
        if path is None or not path.is_absolute() or not path.is_file():
            continue
        for group in _groups(path):
            for name in group:
                groups[name] = groups.get(name, frozenset()) | group
    return groups


def _groups(path: Path) -> list[frozenset[str]]:
    by_address: dict[int, set[str]] = defaultdict(set)
    with path.open("rb") as fh:
        dynsym = ELFFile(fh).get_section_by_name(".dynsym")
        if not isinstance(dynsym, SymbolTableSection):
            return []
        for s in dynsym.iter_symbols():
            function = s["st_info"]["type"] in ("STT_FUNC", "STT_GNU_IFUNC")
            if function and s.name and s["st_shndx"] != "SHN_UNDEF" and s["st_value"]:
                by_address[s["st_value"]].add(s.name.partition("@")[0])
    return [frozenset(names) for names in by_address.values() if len(names) > 1]


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
        runtime: dict[str, bool] = {}  # guard / __dso_handle: every reference the compiler's
        for section in elf.iter_sections():
            if not isinstance(section, RelocationSection):
                continue
            target = section["sh_info"]
            relocs = sorted(
                (
                    (r["r_offset"], symbols[r["r_info_sym"]].name, r["r_info_type"])
                    for r in section.iter_relocations()
                ),
            )
            for i, (_, name, _) in enumerate(relocs):
                if name.startswith(_GUARD) or name == _DSO:
                    ok = _compilers(name, relocs, i)
                    runtime[name] = runtime.get(name, True) and ok
            for rel in section.iter_relocations():
                name = symbols[rel["r_info_sym"]].name
                holder = next(
                    (n for lo, hi, n in funcs.get(target, []) if lo <= rel["r_offset"] < hi),
                    None,
                )
                if name and holder:
                    callers[name].add(holder)
    return [
        (name, _back(name, callers)) for name in sorted(undefined) if not runtime.get(name, False)
    ]


_GUARD = "__cxa_guard_"
_DSO = "__dso_handle"
_ATEXIT = ("__cxa_atexit", "__cxa_thread_atexit")
_CALL_RELOCATIONS = (4,)  # R_X86_64_PLT32: a call's target


def _compilers(name: str, relocs: list[tuple[int, str, int]], i: int) -> bool:
    """Whether the reference at `relocs[i]` is one the compiler emits for static
    initialisation: a guard call whose guard word (the relocation just before it) is a
    static local's `_ZGV` guard, or `__dso_handle` handed to the next call, `__cxa_atexit`.
    Anything else (a guard call on a word of the patch's, `__dso_handle` written) binds
    the runtime's mutex or global by hand."""
    if name.startswith(_GUARD):
        return i > 0 and relocs[i - 1][1].startswith("_ZGV")
    for _, later, kind in relocs[i + 1 :]:
        if kind in _CALL_RELOCATIONS:
            return later in _ATEXIT
    return False


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
