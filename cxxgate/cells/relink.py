"""What each program of the build is made of, in the linker's own words.

A program's symbol table and the files its link command names are the build's word: a
custom command can relink a test program with a fixed twin after its link step, rewrite
an archive after the program was linked, or compile a fixed copy that calls itself
`parse.cpp` (`asm(".file ...")`). So the harness links each program again, after the
build, with the command Ninja ran (from the compiler on: no launcher, no shell, no other
command of the line) into a scratch file, with the linker's map beside it, and keeps the
program only if the two are the same bytes: then the map says which objects and archive
members the program the suite runs is made of. A program that is not what its own link
command makes from the build's files as they are now, or whose link cannot be run again
by a system compiler driver, is named with why (cxxgate/gates/tests/testunits.py).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shlex
from collections.abc import Callable, Iterable
from pathlib import Path

from cxxgate.cells.testframeworks import open_regular

# A compiler driver of the system (gcc, g++, cc, c++, clang, clang++, any version or
# target prefix), by the name its path resolves to: the re-link trusts what it prints.
_DRIVER = re.compile(r"(?:[\w.]+-)*(?:g\+\+|gcc|c\+\+|cc|clang\+\+|clang)(?:-[\d.]+)?")
_SYSTEM = ("/usr/",)
# An input section line of GNU ld's memory map: (section) address size file; a section
# name too long for its column sits on the line before.
_INPUT = re.compile(r"^ (?:\S+)?\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S.*)$")
MAP_START = "Linker script and memory map"

Runner = Callable[[list[str], str], tuple[int | None, str]]  # (argv, cd) -> (exit, output)


def link_argv(command: str, output: str, build_at: str) -> tuple[list[str], int, str] | str:
    """The argv of the command's part that links `output` (its words from the first that
    is a system compiler driver on), the index of the word after its `-o`, and the folder
    a `cd` before it moves to ("" for none); or why there is none a harness may run: no
    part writes `-o output`, or no compiler driver of the system runs it."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError as err:
        return f"its link command does not split into words ({err})"
    parts: list[list[str]] = [[]]
    for word in words:
        if word and all(c in "();<>|&" for c in word):
            parts.append([])
        else:
            parts[-1].append(word)
    cd = ""
    targets = {output, f"{build_at}/{output}"}
    for part in parts:
        if len(part) == 2 and part[0] == "cd":
            cd = part[1]
            continue
        if not any(part[i] == "-o" and part[i + 1] in targets for i in range(len(part) - 1)):
            continue
        first = next((i for i, w in enumerate(part) if _driver(w)), None)
        if first is None:
            return f"it is linked by {part[0]}, not a compiler driver of the system"
        argv = part[first:]  # a launcher or `env` in front is not run
        at = next(i + 1 for i in range(len(argv) - 1) if argv[i] == "-o" and argv[i + 1] in targets)
        return argv, at, cd
    return f"no part of its link command writes {output}"


def _driver(word: str) -> bool:
    if not word.startswith("/"):
        return False
    real = os.path.realpath(word)
    return real.startswith(_SYSTEM) and _DRIVER.fullmatch(Path(real).name) is not None


def included(lines: Iterable[str], build_at: str) -> list[str] | None:
    """The files and archive members (`lib.a(member.o)`) a GNU ld map says the program
    holds bytes from, build-relative; the system's (absolute paths elsewhere) left out.
    None for a map without GNU ld's memory map. Read line by line: a map may be large."""
    found: set[str] = set()
    started = False
    for line in lines:
        if not started:
            started = line.startswith(MAP_START)
            continue
        hit = _INPUT.match(line)
        if hit is None or int(hit.group(1), 16) == 0:
            continue
        name = hit.group(2).strip()
        if name.startswith(f"{build_at}/"):
            name = name.removeprefix(f"{build_at}/")
        elif name.startswith("/"):
            continue
        found.add(name)
    return sorted(found) if started else None


def _digest(path: Path, inside: Path) -> str:
    opened = open_regular(path, inside)
    if opened is None:
        return ""
    digest = hashlib.sha256()
    with opened as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def relink(
    output: str, command: str, copy: Path, build_at: str, scratch: str, host: Path, run: Runner
) -> dict[str, object]:
    """`{"inputs": [...], "why": ""}` for a program its link command makes again byte for
    byte; `why` says what failed otherwise. `scratch` is a folder the command may write,
    as the command sees it; `host` is that folder on the host."""
    built = _digest(copy / output, copy)
    if not built:
        return {"inputs": [], "why": "the program is not a file of the build"}
    found = link_argv(command, output, build_at)
    if isinstance(found, str):
        return {"inputs": [], "why": found}
    argv, at, cd = found
    for name in ("program", "map"):
        (host / name).unlink(missing_ok=True)
    argv = [*argv[:at], f"{scratch}/program", *argv[at + 1 :], f"-Wl,-Map={scratch}/map"]
    code, said = run(argv, cd)
    if code != 0:
        return {"inputs": [], "why": f"its link does not run again: {said.strip()[-300:]}"}
    if _digest(host / "program", host) != built:
        return {"inputs": [], "why": "it is not what its link command makes from the build"}
    mapped = open_regular(host / "map", host)
    inputs = None
    if mapped is not None:
        with io.TextIOWrapper(mapped, errors="replace") as lines:
            inputs = included((line.rstrip("\n") for line in lines), build_at)
    if inputs is None:
        return {"inputs": [], "why": "its linker wrote no map as GNU ld writes one"}
    # The map spells a member `lib.a(m.o)`: a file of that very name would read as one.
    named = [n for n in inputs if "(" in n and open_regular(copy / n, copy) is not None]
    if named:
        return {"inputs": [], "why": f"a file of the build is named like a member: {named[0]}"}
    return {"inputs": inputs, "why": ""}
