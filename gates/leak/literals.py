"""The leak gate's scans: the literals of a tree's sources, and the values its visible
oracle shows. A module of their own, so that editing how the gate decides re-classifies
from stored scans instead of parsing again.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import pathspec

from cxxgate.gates.leak import leak_bytes
from cxxgate.gates.shared import cppsource

PLACES = 3  # oracle places kept per value: enough to find it, short enough to read
TEXT_SHOWN = 60
# Bytes of a binary data file read (leak_bytes.py); a larger one leaves the check
# incomplete (`oversize`), never silently green.
DATA_LIMIT = 1 << 18


def sources(tree: Path, params: dict[str, Any]) -> dict[str, Any]:
    """Every literal of the C++ files matching `globs` and not `tests`, with its place;
    and what their text shows (`shown`: each word and number, comments included: of the
    base tree, that is the task's public text, e.g. the API's names and documented bounds)."""
    tests = set(cppsource.select(tree, params["tests"])) if params["tests"] else set()
    found: list[dict[str, Any]] = []
    shown: set[str] = set()
    files = [f for f in cppsource.select(tree, params["globs"]) if f not in tests]
    for rel in files:
        data = (tree / rel).read_bytes()
        for lit in cppsource.literals(cppsource.parse(data)):
            found.append({"file": rel, **asdict(lit)})
        text = data.decode(errors="replace")
        shown |= {v for v, _ in cppsource.text_values(text) if not _is_line(v)}
    # Files of no C++ suffix (a data file an `.incbin` or a build step reads, a `.inc` no
    # unit includes): their numbers and lines, and the integers a byte string stores.
    others = set(_select_any(tree, params["tests"])) if params["tests"] else set()
    data_files = [f for f in _select_any(tree, params["globs"]) if f not in others | set(files)]
    oversize = []
    for rel in data_files:
        data = (tree / rel).read_bytes()
        found += data_values(rel, data)
        if len(data) > DATA_LIMIT:
            oversize.append(rel)
    return {
        "files": files + data_files,
        "literals": found,
        "shown": sorted(shown),
        "oversize": oversize,
    }


def _is_line(value: str) -> bool:
    """A whole line of text_values (not a word or a number): not a value of its own."""
    return value.startswith("str:") and " " in value


def _hidden_values(items: list[dict[str, str]]) -> dict[str, list[str]]:
    """The hidden oracle's inputs and outputs (its units' literals, its golden's lines,
    words and numbers): a candidate that types one in has read the oracle. Placed as
    `the hidden oracle`, never by file and line (results may reach the next prompt)."""
    values: dict[str, list[str]] = {}
    for item in items:
        data = Path(item["path"]).read_bytes()
        if Path(item["name"]).suffix in cppsource.CXX_SUFFIXES:
            literals = cppsource.literals(cppsource.parse(data))
            got = [v for lit in literals for v in _with_parts(lit.value)]
        else:
            got = [v for v, _ in cppsource.text_values(data.decode(errors="replace"))]
        for value in got:
            values.setdefault(value, ["the hidden oracle"])
    return values


def _with_parts(value: str) -> list[str]:
    """A literal's value and, for a string, the words and numbers it shows: split as the
    gate splits a candidate's strings (a test's `"n=1764"` shows 1764)."""
    if not value.startswith("str:"):
        return [value]
    return [value, *cppsource.string_values(value[4:])]


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
        seen = dict.fromkeys(v for _, v in leak_bytes.values(data[:DATA_LIMIT]))
        out += [_data(rel, 1, v) for v in seen]
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
            for value in _with_parts(lit.value):
                add(value, f"{name}:{lit.line}")
    for content, name in texts:
        shown.append(name)
        for value, line in cppsource.text_values(content):
            add(value, f"{name}:{line}")
    for value, places in _hidden_values(params.get("hidden", [])).items():
        values.setdefault(value, []).extend(p for p in places if p not in values[value])
    return {"files": shown, "values": values}
