"""The leak gate's scans: the literals of a tree's sources, and the values its visible
oracle shows. A module of their own, so that editing how the gate decides re-classifies
from stored scans instead of parsing again.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from cxxgate.gates import cppsource

PLACES = 3  # oracle places kept per value: enough to find it, short enough to read


def sources(tree: Path, params: dict[str, Any]) -> dict[str, Any]:
    """Every literal of the C++ files matching `globs` and not `tests`, with its place."""
    tests = set(cppsource.select(tree, params["tests"])) if params["tests"] else set()
    found: list[dict[str, Any]] = []
    files = [f for f in cppsource.select(tree, params["globs"]) if f not in tests]
    for rel in files:
        for lit in cppsource.literals(cppsource.parse((tree / rel).read_bytes())):
            found.append({"file": rel, **asdict(lit)})
    return {"files": files, "literals": found}


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
