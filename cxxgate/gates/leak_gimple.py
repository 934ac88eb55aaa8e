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
its bytes are read from the object's data sections (pyelftools), per data symbol, as text,
as integers of 1, 2, 4 and 8 bytes (aligned, both byte orders) and as floats. -O0 keeps
every referenced variable in the object (at -O2 a never-written table is folded into the
code and dropped). ccache never caches a compile that dumps (it is `uncacheable`), so the
dump is always this compile's.
"""

from __future__ import annotations

import codecs
import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from cxxgate.cellspec import CellResult
from cxxgate.gates import cppsource
from cxxgate.layout import Layout
from cxxgate.sandbox import NEUTRAL_TREE

GIMPLE_FLAGS = ("-O2", "-fdump-tree-gimple-lineno", "-fdump-tree-optimized-lineno")
DUMPS = ("gimple", "optimized")  # the dumps' suffixes: before and after g++'s optimisers
DATA_BYTES = 4096  # bytes read per data symbol: a table, not a blob
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
        found += [
            {**item, "line": _declared(tree / source, item["symbol"])}
            for item in data_values(Path(part.binary), source)
        ]
    return {"units": units, "missing": missing, "constants": found}


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


def data_values(obj: Path, unit: str) -> list[dict[str, Any]]:
    """The values the object's data symbols store (.data, .rodata, .bss aside): each as
    text, as aligned integers of 1, 2, 4 and 8 bytes in both byte orders, as floats."""
    out: list[dict[str, Any]] = []
    with obj.open("rb") as fh:
        elf = ELFFile(fh)
        symtab = elf.get_section_by_name(".symtab")
        if not isinstance(symtab, SymbolTableSection):
            return out
        for sym in symtab.iter_symbols():
            index = sym["st_shndx"]
            if sym["st_info"]["type"] != "STT_OBJECT" or not isinstance(index, int):
                continue
            section = elf.get_section(index)
            if section["sh_type"] != "SHT_PROGBITS" or not section.name.startswith(
                (".data", ".rodata")
            ):
                continue
            start = sym["st_value"]
            data = section.data()[start : start + min(sym["st_size"], DATA_BYTES)]
            name = sym.name
            for value in dict.fromkeys(byte_values(data)):
                out.append(
                    {
                        "file": unit,
                        "line": 1,
                        "column": 1,
                        "value": value,
                        "text": f"data of {name}"[:TEXT_SHOWN],
                        "symbol": _simple_name(name),
                        "kind": "object",
                    }
                )
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
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return 1
    word = re.compile(rf"\b{re.escape(name)}\b")
    return next((no for no, line in enumerate(lines, 1) if word.search(line)), 1)


def byte_values(data: bytes) -> Iterator[str]:
    text = data.rstrip(b"\0")
    if text and all(32 <= b < 127 for b in text):
        yield "str:" + text.decode()
        number = cppsource.number_value(text.decode())
        if number is not None:
            yield "num:" + number
    for width in (1, 2, 4, 8):
        for start in range(0, len(data) - width + 1, width):
            window = data[start : start + width]
            yield f"num:{int.from_bytes(window, 'little')}"
            if window[-1] & 0x80:
                yield f"num:{int.from_bytes(window, 'little', signed=True)}"
            if width > 1:
                big = int.from_bytes(window, "big")
                if big > 0xFF:
                    yield f"num:{big}"
            if width in (4, 8):
                real = struct.unpack("<f" if width == 4 else "<d", window)[0]
                if real == real and 1e-9 < abs(real) < 1e30:  # not NaN, no denormal noise
                    number = cppsource.number_value(repr(real))
                    if number is not None:
                        yield "num:" + number
