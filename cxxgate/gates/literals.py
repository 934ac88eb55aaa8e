"""The leak gate's scans: the literals of a tree's sources, and the values its visible
oracle shows. A module of their own, so that editing how the gate decides re-classifies
from stored scans instead of parsing again.
"""

from __future__ import annotations

import ctypes
from dataclasses import asdict
from functools import cache
from pathlib import Path
from typing import Any

import clang.cindex as ci
import pathspec

from cxxgate.gates import cppsource, ledger_ast

PLACES = 3  # oracle places kept per value: enough to find it, short enough to read


def sources(tree: Path, params: dict[str, Any]) -> dict[str, Any]:
    """Every literal of the C++ files matching `globs` and not `tests`, with its place."""
    tests = set(cppsource.select(tree, params["tests"])) if params["tests"] else set()
    found: list[dict[str, Any]] = []
    files = [f for f in cppsource.select(tree, params["globs"]) if f not in tests]
    for rel in files:
        for lit in cppsource.literals(cppsource.parse((tree / rel).read_bytes())):
            found.append({"file": rel, **asdict(lit)})
    # Files of no C++ suffix (a data file an `.incbin` or a build step reads, a `.inc` no
    # unit includes): their numbers and lines, and the integers a byte string stores.
    others = set(_select_any(tree, params["tests"])) if params["tests"] else set()
    data_files = [f for f in _select_any(tree, params["globs"]) if f not in others | set(files)]
    for rel in data_files:
        found += data_values(rel, (tree / rel).read_bytes())
    return {"files": files + data_files, "literals": found}


def _select_any(tree: Path, globs: list[str]) -> list[str]:
    """The tree's files of every suffix matching gitignore-style `globs`, sorted."""
    spec = pathspec.GitIgnoreSpec.from_lines(globs)
    found = []
    for path in tree.rglob("*"):
        rel = path.relative_to(tree).as_posix()
        if path.is_file() and not path.is_symlink() and spec.match_file(rel):
            found.append(rel)
    return sorted(found)


def data_values(rel: str, data: bytes) -> list[dict[str, Any]]:
    """The values a file that is not C++ holds: each line and each number of its text,
    and, when it is not plain text, the integers its bytes store."""
    text = data.decode(errors="replace")
    out = [_data(rel, no, "str:" + line.strip()) for no, line in _lines(text)]
    out += [_data(rel, no, v) for v, no in cppsource.text_values(text) if v.startswith("num:")]
    plain = all(b >= 32 or b in b"\t\n\r" for b in data) and "\ufffd" not in text
    if not plain:
        out += [_data(rel, 1, v) for v in dict.fromkeys(_table_values(list(data[:4096])))]
    return out


def _lines(text: str) -> list[tuple[int, str]]:
    return [(no, line) for no, line in enumerate(text.splitlines(), 1) if line.strip()]


def _data(rel: str, line: int, value: str) -> dict[str, Any]:
    shown = value.partition(":")[2]
    shown = shown if len(shown) <= TEXT_SHOWN else shown[: TEXT_SHOWN - 3] + "..."
    return {"file": rel, "line": line, "column": 1, "value": value, "text": shown, "kind": "data"}


def oracle(tree: Path, params: dict[str, Any]) -> dict[str, Any]:
    """The values the visible oracle shows: literals of the tree's tests and of the case's
    C++ oracle files, and the lines, words and numbers of its text files (goldens)."""
    values: dict[str, list[str]] = {}

    def add(value: str, place: str) -> None:
        places = values.setdefault(value, [])
        if len(places) < PLACES and place not in places:
            places.append(place)

    shown: list[str] = []
    tests = cppsource.select(tree, params["tests"]) if params["tests"] else []
    cxx = [((tree / rel).read_bytes(), rel) for rel in tests]
    texts: list[tuple[str, str]] = []
    for item in params["files"]:
        data = Path(item["path"]).read_bytes()
        if Path(item["name"]).suffix in cppsource.CXX_SUFFIXES:
            cxx.append((data, item["name"]))
        else:
            texts.append((data.decode(errors="replace"), item["name"]))
    for data, name in cxx:
        shown.append(name)
        for lit in cppsource.literals(cppsource.parse(data)):
            add(lit.value, f"{name}:{lit.line}")
    for content, name in texts:
        shown.append(name)
        for value, line in cppsource.text_values(content):
            add(value, f"{name}:{line}")
    return {"files": shown, "values": values}


# ---- constant values the compiled units hold (libclang) -------------------------------

# CXEvalResultKind (clang-c/Index.h): what clang_Cursor_Evaluate folded an expression to.
_EVAL_INT, _EVAL_FLOAT, _EVAL_STRINGS = 1, 2, (3, 4, 5)
_WINDOWS = (2, 4, 8)  # byte tables read as integers of these widths, both byte orders
TEXT_SHOWN = 60
UNIT_SUFFIXES = frozenset({".cpp", ".cc", ".cxx", ".c++", ".C"})


@cache
def _evaluator() -> Any:
    """libclang's constant evaluator (clang_Cursor_Evaluate and the EvalResult getters):
    in its C API, not in its Python binding."""
    lib = ci.conf.lib
    for name, restype, argtypes in (
        ("clang_Cursor_Evaluate", ctypes.c_void_p, [ci.Cursor]),
        ("clang_EvalResult_getKind", ctypes.c_int, [ctypes.c_void_p]),
        ("clang_EvalResult_isUnsignedInt", ctypes.c_uint, [ctypes.c_void_p]),
        ("clang_EvalResult_getAsLongLong", ctypes.c_longlong, [ctypes.c_void_p]),
        ("clang_EvalResult_getAsUnsigned", ctypes.c_ulonglong, [ctypes.c_void_p]),
        ("clang_EvalResult_getAsDouble", ctypes.c_double, [ctypes.c_void_p]),
        ("clang_EvalResult_getAsStr", ctypes.c_char_p, [ctypes.c_void_p]),
        ("clang_EvalResult_dispose", None, [ctypes.c_void_p]),
    ):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


def evaluate(cursor: ci.Cursor) -> int | float | str | None:
    """What clang folds the expression at `cursor` to (integer, floating, string), or None
    when it is not a constant expression (it reads a variable, calls a non-constexpr
    function, depends on a template parameter)."""
    lib = _evaluator()
    result = lib.clang_Cursor_Evaluate(cursor)
    if not result:
        return None
    try:
        kind = lib.clang_EvalResult_getKind(result)
        if kind == _EVAL_INT:
            if lib.clang_EvalResult_isUnsignedInt(result):
                return int(lib.clang_EvalResult_getAsUnsigned(result))
            return int(lib.clang_EvalResult_getAsLongLong(result))
        if kind == _EVAL_FLOAT:
            return float(lib.clang_EvalResult_getAsDouble(result))
        if kind in _EVAL_STRINGS:
            raw = lib.clang_EvalResult_getAsStr(result)
            return None if raw is None else bytes(raw).decode(errors="replace")
        return None
    finally:
        lib.clang_EvalResult_dispose(result)


def _values_of(value: int | float | str) -> list[str]:
    """A folded value as the oracle's values: a number by value, a string as it reads and,
    when it spells a number (`"1764"`), as that number too."""
    if isinstance(value, str):
        out = ["str:" + value]
        number = cppsource.number_value(value) if value.strip() else None
        return out + ([f"num:{number}"] if number is not None else [])
    number = cppsource.number_value(repr(value)) if isinstance(value, float) else str(value)
    return [f"num:{number}"] if number is not None else []


def _table_values(items: list[int]) -> list[str]:
    """A brace list of small integers read as the bytes it stores: the text of its
    characters (`{'4', '2'}`, `{0x34, 0x32, 0}` are "42"), and every 2-, 4- and 8-byte
    window as an integer in both byte orders (`{0x06, 0xE4}` stores 1764)."""
    if len(items) < 2 or not all(0 <= b <= 0xFF for b in items):
        return []
    data = bytes(items)
    out = []
    text = data.rstrip(b"\0")
    if text and all(32 <= b < 127 for b in text):
        out += _values_of(text.decode())
    for width in _WINDOWS:
        for start in range(len(data) - width + 1):
            window = data[start : start + width]
            for order in ("big", "little"):
                number = int.from_bytes(window, order)
                if number > 0xFF:
                    out.append(f"num:{number}")
    return out


class _Constants:
    """Walks one translation unit's declarations in tree files (not the tests) and keeps
    each constant value once per (file, line), outermost expression first."""

    def __init__(self, tree: Path, tests: set[str]) -> None:
        self.tree = tree
        self.tests = tests
        self.found: dict[tuple[str, int, str], dict[str, Any]] = {}
        self.read: set[str] = set()

    def rel(self, cursor: ci.Cursor) -> str | None:
        loc = cursor.location
        if loc.file is None:
            return None
        path = Path(loc.file.name).resolve()
        if not path.is_relative_to(self.tree):
            return None
        rel = path.relative_to(self.tree).as_posix()
        return None if rel in self.tests else rel

    def unit(self, tu: ci.TranslationUnit) -> None:
        for inc in tu.get_includes():
            path = Path(inc.include.name).resolve()
            if path.is_relative_to(self.tree):
                self.read.add(path.relative_to(self.tree).as_posix())
        stack = [c for c in tu.cursor.get_children() if self.rel(c) is not None]
        while stack:
            cursor = stack.pop()
            rel = self.rel(cursor)
            if rel is not None and cursor.kind.is_expression():
                self.expression(cursor, rel)
            stack.extend(reversed(list(cursor.get_children())))

    def expression(self, cursor: ci.Cursor, rel: str) -> None:
        values: list[str] = []
        folded = evaluate(cursor)
        if folded is not None:
            values += _values_of(folded)
        if cursor.kind == ci.CursorKind.INIT_LIST_EXPR:
            items = [evaluate(c) for c in cursor.get_children()]
            if all(isinstance(i, int) for i in items):
                values += _table_values([int(i) for i in items if isinstance(i, int)])
        line = cursor.location.line
        for value in values:
            key = (rel, line, value)
            if key not in self.found:
                shown = " ".join(t.spelling for t in cursor.get_tokens())
                if len(shown) > TEXT_SHOWN:
                    shown = shown[: TEXT_SHOWN - 3] + "..."
                self.found[key] = {
                    "file": rel,
                    "line": line,
                    "column": cursor.location.column,
                    "value": value,
                    "text": shown or value.partition(":")[2],
                }


def constants(tree: Path, params: dict[str, Any]) -> dict[str, Any]:
    """Scan function: every constant value the compiled units hold in tree code, as
    libclang folds it with the case's flags (`1700 + 64`, `sq(42)` of a constexpr `sq`,
    `K + 65`, a string built by concatenation, a table of bytes), in every tree file a unit
    reads whatever its suffix (`#include "answers.inc"`), the tests aside. Also: the tree
    lines the preprocessor skipped (a value in them is not folded: the gate cannot vouch
    for them) and the parse errors."""
    tree = tree.resolve()
    tests = set(cppsource.select(tree, params["tests"])) if params["tests"] else set()
    args = ledger_ast.clang_args(params, tree)
    index = ci.Index.create()
    walk = _Constants(tree, tests)
    units = [
        (tree / rel).resolve()
        for rel in _select_any(tree, params["units"])
        if Path(rel).suffix in UNIT_SUFFIXES and rel not in tests
    ]
    errors: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for path in units:
        rel = path.relative_to(tree).as_posix()
        walk.read.add(rel)
        options = ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD
        tu = index.parse(str(path), args=["-x", "c++", *args], options=options)
        for diag in tu.diagnostics:
            if diag.severity >= ci.Diagnostic.Error:
                loc = diag.location
                where = loc.file.name if loc.file else rel
                errors.append({"file": where, "line": loc.line, "message": diag.spelling})
        for rng in ledger_ast.skipped_ranges(tu, tree):
            if rng["path"] not in tests and rng not in skipped:
                skipped.append(rng)
        walk.unit(tu)
    found = sorted(walk.found.values(), key=lambda v: (v["file"], v["line"], v["column"]))
    return {
        "units": [p.relative_to(tree).as_posix() for p in units],
        "read": sorted(walk.read),
        "constants": found,
        "skipped": skipped,
        "errors": errors[:20],
    }
