"""The leak gate's compiler evidence: the values g++ itself put into a tree's library
objects, read from the compile's own GIMPLE dump and the object's data.

Each library unit is compiled by the leak's `objects` cell (toolcall, the case's envelope
with `-O0 -fdump-tree-gimple-lineno` added: GIMPLE_FLAGS). The GIMPLE dump is written after
template instantiation and g++'s own folding (constexpr calls, `__builtin_sqrt` of a
constant, `sizeof(__VERSION__)`, `__PRETTY_FUNCTION__`, generic lambdas), one statement a
line, each carrying `[file:line:col]`: its integer, real and string constants are the
values the code computes with, attributed to the tree file and line the dump names (code
instantiated in a system header counts too: `std::array<char, 1764>::size` returns 1764).
Static data (a namespace-scope table, a constant-initialised variable) is not a statement:
its bytes are read (pyelftools) from every allocated section with contents that is not
code, whatever its name, whole (a table an `asm` block placed under a bare label counts),
as leak_bytes.py reads bytes, and attributed to the symbol covering them. -O0 keeps
every referenced variable in the object (at -O2 a never-written table is folded into the
code and dropped). ccache never caches a compile that dumps (it is `uncacheable`), so the
dump is always this compile's.
"""

from __future__ import annotations

import bisect
import codecs
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from cxxgate.gates.leak import leak_bytes
from cxxgate.gates.shared import cppsource
from cxxgate.host.sandbox import NEUTRAL_TREE
from cxxgate.store.layout import Layout
from cxxgate.toolchain.cellspec import CellResult
from cxxgate.util.lines import physical_lines

GIMPLE_FLAGS = ("-O2", "-fdump-tree-gimple-lineno", "-fdump-tree-optimized-lineno")
DUMPS = ("gimple", "optimized")  # the dumps' suffixes: before and after g++'s optimisers
# Bytes of data read per object: a hostile random table of 256 KiB costs ~7 s to read;
# an object holding more leaves the check incomplete (never silently green).
DATA_LIMIT = 1 << 18
TEXT_SHOWN = 60
_WHERE = re.compile(r"\[([^\[\]\s]+):(\d+):(\d+)\] ?")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
# A number token of the dump: not part of a name (`_1`, `D.2602`, `kData.0_4`, `auto:11`).
_NUMBER = re.compile(r"(?<![\w.:$])(-?)(\d+(?:\.\d*)?(?:e[+-]?\d+)?)[uUlLB]*(?![\w.])")


def values(cell: CellResult, tree: Path) -> dict[str, Any]:
    """Every constant of the objects `cell` compiled (an `objects` cell of GIMPLE_FLAGS):
    [{file, line, column, value, text, kind}], the units read, and those whose compile
    gave no dump (the gate cannot vouch for them)."""
    layout = Layout(Path(cell.tree_root).parent.parent)
    found: list[dict[str, Any]] = []
    units: list[str] = []
    missing: list[str] = []
    oversize: list[str] = []
    roots = (str(tree.resolve()), str(tree), str(Path(cell.tree_root)), NEUTRAL_TREE)
    for key in cell.parts:
        part = CellResult.load(layout.cell_result(key))
        source = _rel(part.steps[0].source, roots) if part.steps else key
        units.append(source)
        folders = [layout.cell(key)] + ([layout.cell(part.reused_from)] if part.reused_from else [])
        dumps = {
            kind: next((d for f in folders for d in sorted(f.glob(f"*.{kind}"))), None)
            for kind in DUMPS
        }
        if part.status != "ok" or part.binary is None or None in dumps.values():
            missing.append(source)
            continue
        for kind, dump in dumps.items():
            assert dump is not None
            text = dump.read_text(errors="replace")
            found += [{**v, "kind": kind} for v in gimple_values(text, roots, source)]
        data, whole = data_values(Path(part.binary), source)
        found += [{**item, "line": _declared(tree / source, item["symbol"])} for item in data]
        if not whole:
            oversize.append(source)
    return {"units": units, "missing": missing, "oversize": oversize, "constants": found}


def _rel(path: str, roots: tuple[str, ...]) -> str:
    """A dump's path as a tree path; a path outside the tree is kept as it is."""
    for root in roots:
        if path.startswith(root.rstrip("/") + "/"):
            return path[len(root.rstrip("/")) + 1 :]
    return path


# The optimised dump's annotations: block names and counts, branch odds, PHI edges
# (`42(2)`: 42 from block 2), default definitions (`n_5(D)`).
_NOTES = re.compile(
    r"<bb \d+>|\[local count: \d+\]|\[(?:count: )?\d+(?:\.\d+)?%\]|(?<=[\w\]])\((?:\d+|D)\)"
)


def _bodies(text: str) -> Iterator[str]:
    """The lines of the dump's functions (each header and its `{` ... `}` at column 0):
    the optimiser's notes between functions (`Removing basic block 5`) are not code."""
    lines = text.splitlines()
    inside = False
    for i, raw in enumerate(lines):
        bare = _WHERE.sub("", raw)
        if not inside and bare.rstrip() == "{":
            inside = True
            yield lines[i - 1] if i else ""
        if inside:
            yield raw
            if raw.rstrip() == "}":
                inside = False
                yield ""


def gimple_values(text: str, roots: tuple[str, ...], unit: str) -> list[dict[str, Any]]:
    """The constants of a GIMPLE dump, each at the tree place its statement names. A line
    with no place (a declaration, a function's header) takes the next place of its function;
    a place outside the tree (a system header's code) is reported at the unit, line 1."""
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    last: tuple[str, int, int] | None = None
    for raw in _bodies(text):
        if not raw.strip():  # functions are separated by blank lines
            for item in pending:
                item["file"], item["line"], item["column"] = last or (unit, 1, 1)
            out += pending
            pending, last = [], None
            continue
        places = _WHERE.findall(raw)
        stmt = _NOTES.sub("", _WHERE.sub("", raw)).strip()
        here: tuple[str, int, int] | None = None
        if places:
            path, line, col = places[0]
            rel = _rel(path, roots)
            here = (rel, int(line), int(col)) if not rel.startswith("/") else (unit, 1, 1)
            for item in pending:
                item["file"], item["line"], item["column"] = here
            out += pending
            pending, last = [], here
        shown = stmt if len(stmt) <= TEXT_SHOWN else stmt[: TEXT_SHOWN - 3] + "..."
        items: list[dict[str, Any]] = [
            {"value": v, "text": shown, "kind": "gimple"} for v in _statement_values(stmt)
        ]
        if here is None:
            pending += items
        else:
            for item in items:
                item["file"], item["line"], item["column"] = here
            out += items
    for item in pending:
        item["file"], item["line"], item["column"] = last or (unit, 1, 1)
    return out + pending


def _statement_values(stmt: str) -> Iterator[str]:
    for m in _STRING.finditer(stmt):
        try:
            text = codecs.escape_decode(m.group(1).encode())[0].decode(errors="replace")
        except ValueError:
            text = m.group(1)
        text = text.rstrip("\0")
        if text:
            yield "str:" + text
            number = cppsource.number_value(text) if text.strip() else None
            if number is not None:
                yield "num:" + number
    rest = _STRING.sub(" ", stmt)
    for m in _NUMBER.finditer(rest):
        number = cppsource.number_value(m.group(1) + m.group(2))
        if number is not None:
            yield "num:" + number


def data_values(obj: Path, unit: str) -> tuple[list[dict[str, Any]], bool]:
    """The values the object's allocated sections with contents store, whatever their
    name (.data, .rodata, .tdata, a `section("x")` of the patch's, a table an `asm`
    block placed with no symbol at all), whole sections, read as leak_bytes.py reads
    bytes; each attributed to the symbol covering it. False when the object holds more
    than DATA_LIMIT bytes of them (the rest was not read)."""
    out: list[dict[str, Any]] = []
    budget = DATA_LIMIT
    with obj.open("rb") as fh:
        elf = ELFFile(fh)
        owners = _owners(elf)
        for index, section in enumerate(elf.iter_sections()):
            if not _data_section(section):
                continue
            data = section.data()[:budget]
            budget -= len(data)
            starts, names = owners.get(index, ([], []))
            seen: set[tuple[str, str]] = set()
            for offset, value in leak_bytes.values(data):
                at = bisect.bisect_right(starts, offset) - 1
                name = names[at] if at >= 0 else section.name
                if (name, value) in seen:
                    continue
                seen.add((name, value))
                out.append(
                    {
                        "file": unit,
                        "line": 1,
                        "column": 1,
                        "value": value,
                        "text": f"data of {name} ({section.name})"[:TEXT_SHOWN],
                        "symbol": _simple_name(name),
                        "kind": "object",
                    }
                )
            if budget <= 0:
                return out, False
    return out, True


def _data_section(section: Any) -> bool:
    """Allocated, with contents, not code; .eh_frame aside (it spells every function's
    length: a 100-byte function is no leak)."""
    flags = section["sh_flags"]
    return (
        bool(flags & SH_FLAGS.SHF_ALLOC)
        and not flags & SH_FLAGS.SHF_EXECINSTR
        and section["sh_type"] != "SHT_NOBITS"
        and section["sh_size"] > 0
        and not section.name.startswith(".eh_frame")
    )


def _owners(elf: ELFFile) -> dict[int, tuple[list[int], list[str]]]:
    """Per section index: its named symbols' start offsets, sorted, and their names."""
    symtab = elf.get_section_by_name(".symtab")
    found: dict[int, list[tuple[int, str]]] = {}
    if isinstance(symtab, SymbolTableSection):
        for sym in symtab.iter_symbols():
            index = sym["st_shndx"]
            if isinstance(index, int) and sym.name and sym["st_info"]["type"] != "STT_SECTION":
                found.setdefault(index, []).append((sym["st_value"], sym.name))
    out = {}
    for index, items in found.items():
        items.sort()
        out[index] = ([a for a, _ in items], [b for _, b in items])
    return out


def _simple_name(symbol: str) -> str:
    """The last name of a mangled symbol (`_ZN12_GLOBAL__N_15kDataE` -> `kData`)."""
    if not symbol.startswith("_Z"):
        return symbol
    names, i = [], 2
    while i < len(symbol):
        m = re.match(r"\d+", symbol[i:])
        if m is None:
            i += 1
            continue
        size = int(m.group())
        i += len(m.group())
        names.append(symbol[i : i + size])
        i += size
    return names[-1] if names else symbol


def _declared(path: Path, name: str) -> int:
    """The first line of the unit that spells `name` (a data symbol's place), else 1."""
    try:
        lines = physical_lines(path.read_text(errors="replace"))
    except OSError:
        return 1
    word = re.compile(rf"\b{re.escape(name)}\b")
    return next((no for no, line in enumerate(lines, 1) if word.search(line)), 1)
