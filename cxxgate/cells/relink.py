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

The map is text, and the build chooses names that land in it: a symbol called
`0x10 libcalc.a(parse.cpp.o)` prints a line shaped like an input section, and a file may
be called `libcalc.a(parse.cpp.o)` plus a byte `str.strip` eats. So the re-link names every
archive and object of the build through an alias of its own, a fresh random folder per
re-link (`<nonce>-a/` for archives, `<nonce>-o/` for objects, links to the build): only
lines that carry it are read, and the name after it is taken byte for byte. Nothing the
build wrote can spell the alias, which did not exist until the build was over.

Which input each of the program's symbols came from is then read from the program's own
symbol table and the map's address ranges: every symbol defined in a section, local ones
too (a hidden copy is local in the program) and untyped ones (an assembler label). What
is `elsewhere`, however the archive's members are named:
- a symbol an archive of the build defines (cxxgate/cells/shadows.py: global, or weak
  outside a COMDAT group) that the program holds from another input (an inline copy
  compiled into the tests, a fixed object linked first), unless that input has the same
  bytes as the member;
- a symbol an archive defines in a COMDAT group (an inline function: the library's own
  `parse` made `inline`) that the program holds from another input of the build that
  does not have the same group contents (a fixed copy, strong or inline);
- a symbol a member the program takes calls or reads but does not define, that the
  program holds from another input of the build (a weak hook only the tests define), and
  for `__start_X` / `__stop_X` (the bounds the linker makes around section X), each other
  input of the build that fills section X (a table of hooks only the tests add to).
The gate compares the entries with the reference's program (testunits.bypassed).
"""

from __future__ import annotations

import bisect
import hashlib
import io
import os
import posixpath
import re
import secrets
import shlex
from collections.abc import Callable, Iterable
from pathlib import Path

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from cxxgate.cells.shadows import Part, Reader, Symbols
from cxxgate.cells.testframeworks import open_regular
from cxxgate.util.elfread import ELF_ERRORS

# A compiler driver of the system (gcc, g++, cc, c++, clang, clang++, any version or
# target prefix), by the name its path resolves to: the re-link trusts what it prints.
_DRIVER = re.compile(r"(?:[\w.]+-)*(?:g\+\+|gcc|c\+\+|cc|clang\+\+|clang)(?:-[\d.]+)?")
_SYSTEM = ("/usr/",)
MAP_START = "Linker script and memory map"
_BOUNDS = re.compile(r"__(?:start|stop)_([A-Za-z_][A-Za-z0-9_]*)")
_ELSEWHERE_CAP = 1000  # entries kept per program (then CUT): one beyond the reference's is enough
CUT = "(cut)"

Runner = Callable[[list[str], str], tuple[int | None, str]]  # (argv, cd) -> (exit, output)


def _sh_quoted(command: str) -> str:
    """`command` with what sh takes out of a backslash in double quotes taken out (`\\$`,
    `\\``, a backslash-newline), which shlex keeps: CMake writes a build RPATH of
    `$ORIGIN` as `"\\$ORIGIN/..."` (red-team round 21's honest `origin_rpath`, refused
    when the re-link passed the backslash on)."""
    out: list[str] = []
    quote = ""
    i = 0
    while i < len(command):
        c = command[i]
        pair = command[i : i + 2]
        if c == "\\" and quote != "'" and len(pair) == 2:
            if quote == '"' and pair[1] in "$`":
                out.append(pair[1])
            elif not (quote == '"' and pair[1] == "\n"):
                out.append(pair)
            i += 2
            continue
        if c in "'\"" and quote in ("", c):
            quote = "" if quote else c
        out.append(c)
        i += 1
    return "".join(out)


def _parts(command: str) -> list[list[str]] | str:
    """The command's words, split into the parts its shell would run one by one."""
    try:
        lexer = shlex.shlex(_sh_quoted(command), posix=True, punctuation_chars=True)
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
    return parts


def _writes(part: list[str], targets: set[str]) -> bool:
    return any(part[i] == "-o" and part[i + 1] in targets for i in range(len(part) - 1))


def link_part(command: str, output: str, build_at: str) -> list[str] | None:
    """The words of the command's part that writes `-o output` (a POST_BUILD or PRE_LINK
    step of the same line is another part), or None when no part does."""
    parts = _parts(command)
    targets = {output, f"{build_at}/{output}"}
    if isinstance(parts, str):
        return None
    return next((part for part in parts if _writes(part, targets)), None)


def link_argv(command: str, output: str, build_at: str) -> tuple[list[str], int, str] | str:
    """The argv of the command's part that links `output` (its words from the first that
    is a system compiler driver on), the index of the word after its `-o`, and the folder
    a `cd` before it moves to ("" for none); or why there is none a harness may run: no
    part writes `-o output`, or no compiler driver of the system runs it."""
    parts = _parts(command)
    if isinstance(parts, str):
        return parts
    cd = ""
    targets = {output, f"{build_at}/{output}"}
    for part in parts:
        if len(part) == 2 and part[0] == "cd":
            cd = part[1]
            continue
        if not _writes(part, targets):
            continue
        argv = compiler_on(part)  # a launcher or `env` in front is not run
        if argv is None:
            return f"it is linked by {part[0]}, not a compiler driver of the system"
        at = next(
            (i + 1 for i in range(len(argv) - 1) if argv[i] == "-o" and argv[i + 1] in targets),
            None,
        )
        if at is None:  # the `-o` came before the driver: a launcher's word
            return f"its compiler driver does not write {output} (-o before {argv[0]})"
        return argv, at, cd
    return f"no part of its link command writes {output}"


def compiler_on(argv: list[str]) -> list[str] | None:
    """The command from its first word that is a system compiler driver on (a launcher in
    front is not run), or None when none is."""
    first = next((i for i, w in enumerate(argv) if _driver(w)), None)
    return None if first is None else argv[first:]


def _driver(word: str) -> bool:
    if not word.startswith("/"):
        return False
    real = os.path.realpath(word)
    return real.startswith(_SYSTEM) and _DRIVER.fullmatch(Path(real).name) is not None


def _kind(path: Path, inside: Path) -> str:
    """"a" for an archive, "o" for a relocatable ELF object, "" for anything else."""
    opened = open_regular(path, inside)
    if opened is None:
        return ""
    with opened as f:
        head = f.read(18)
    if head.startswith((b"!<arch>\n", b"!<thin>\n")):
        return "a"
    return "o" if head.startswith(b"\x7fELF") and head[16:18] in (b"\x01\x00", b"\x00\x01") else ""


def aliased(
    argv: list[str], cwd: str, build_at: str, copy: Path, alias: str
) -> tuple[list[str], list[str]]:
    """argv with every archive and object of the build (a path word, or a `-L` folder in
    it) spelt through the alias (`<alias>-a/<path>`, `<alias>-o/<path>`), and the
    archives so named (build-relative)."""
    out: list[str] = []
    archives: list[str] = []

    def rel(word: str) -> str | None:
        full = posixpath.normpath(posixpath.join(cwd, word))
        inside = full.startswith(f"{build_at}/") and ".." not in full.split("/")
        return full[len(build_at) + 1 :] if inside else None

    follows_l = False
    for word in argv:
        if follows_l or (word.startswith("-L") and len(word) > 2):
            folder = word if follows_l else word[2:]
            found = rel(folder)
            lead = "" if follows_l else "-L"
            follows_l = False
            if found is not None and (copy / found).is_dir() and not (copy / found).is_symlink():
                word = f"{lead}{alias}-a/{found}"
            out.append(word)
            continue
        follows_l = word == "-L"
        found = None if word.startswith("-") else rel(word)
        kind = _kind(copy / found, copy) if found else ""
        if found and kind:
            word = f"{alias}-{kind}/{found}"
            if kind == "a":
                archives.append(found)
        out.append(word)
    return out, archives


Section = tuple[int, int, str, str]  # address, size, "a" (a member) or "o", build-relative name


def sections(lines: Iterable[str], alias: str) -> list[Section] | None:
    """The input sections of GNU ld's memory map that come from a file named through the
    alias: (address, size, kind, name) with `lib.a(member.o)` for a member; empty ones
    left out. None for a map without GNU ld's memory map. Read line by line: a map may be
    large."""
    line_of = re.compile(
        r"0x([0-9a-f]+) +0x([0-9a-f]+) " + re.escape(alias) + r"-([ao])/(.*)\Z", re.S
    )
    found: list[Section] = []
    started = False
    for line in lines:
        if not started:
            started = line.startswith(MAP_START)
            continue
        hit = line_of.search(line)
        if hit is not None and int(hit.group(2), 16) > 0:
            found.append((int(hit.group(1), 16), int(hit.group(2), 16), hit.group(3), hit.group(4)))
    return found if started else None


def held_from(program: Path, inside: Path, mapped: list[Section]) -> dict[str, set[str]] | None:
    """Each symbol the program defines in a section (name without a version) -> the
    inputs it holds a definition from (by the map's address ranges; "" when none of the
    build's), from the program's own symbol table; None when it has none (stripped)."""
    opened = open_regular(program, inside)
    if opened is None:
        return None
    ranges = sorted(mapped)
    starts = [r[0] for r in ranges]
    found: dict[str, set[str]] = {}
    try:
        with opened as f:
            elf = ELFFile(f)
            tables = [t for t in elf.iter_sections() if t["sh_type"] == "SHT_SYMTAB"]
            if len(tables) != 1 or not isinstance(tables[0], SymbolTableSection):
                return None
            for sym in tables[0].iter_symbols():
                if (
                    not sym.name
                    or sym["st_info"]["type"] in ("STT_FILE", "STT_SECTION")
                    or sym["st_shndx"] in ("SHN_UNDEF", "SHN_ABS", "SHN_COMMON")
                ):
                    continue
                at = bisect.bisect_right(starts, sym["st_value"]) - 1
                hit = ranges[at] if at >= 0 else None
                inside_range = hit is not None and sym["st_value"] < hit[0] + hit[1]
                holder = hit[3] if hit and inside_range else ""
                found.setdefault(sym.name.partition("@")[0], set()).add(holder)
    except ELF_ERRORS:
        return None
    return found


def elsewhere(
    held: dict[str, set[str]], archives: list[str], taken: set[str], read: Reader, copy: Path
) -> dict[str, str]:
    """symbol -> where the program holds it from, for each symbol of an archive it links
    that it holds from another input (module docstring); `taken` are the inputs the map
    names."""
    found: dict[str, str] = {}

    def note(name: str, holder: str, why: str) -> None:
        found.setdefault(name, f"{holder or 'outside the build'} ({why})")

    for archive in sorted(archives):
        for label, member_digest, symbols in read(copy / archive) or []:
            for name in sorted(symbols.names):
                for holder in sorted(held.get(name, ())):
                    if not holder.startswith(f"{archive}(") and (
                        not holder or _part_of(holder, read, copy).digest != member_digest
                    ):  # the same bytes (one source in two libraries) are one definition
                        note(name, holder, f"not {archive}")
            for name, group in sorted(symbols.grouped.items()):
                for holder in sorted(held.get(name, ())):
                    if holder and not holder.startswith(f"{archive}(") and (
                        _part_of(holder, read, copy).symbols.grouped.get(name) != group
                    ):  # an inline function compiled alike is one definition
                        note(name, holder, f"not {archive}'s inline copy")
            if label not in taken:
                continue
            for name in sorted(symbols.needs):
                for holder in sorted(held.get(name, ())):
                    if holder and not holder.startswith(f"{archive}("):
                        note(name, holder, f"called by {label}")
                # The linker makes __start_X / __stop_X around section X of every input:
                # the inputs that fill X are what the member reads through them.
                bounds = _BOUNDS.fullmatch(name)
                section = bounds[1] if bounds else ""
                for holder in sorted(taken) if section else []:
                    if not holder.startswith(f"{archive}(") and (
                        section in _part_of(holder, read, copy).symbols.sections
                    ):
                        note(name, holder, f"fills section {section}, read by {label}")
    if len(found) <= _ELSEWHERE_CAP:
        return dict(sorted(found.items()))
    # Cut: an entry the reference's program does not have may lie past the cut, so the cut
    # is an entry of its own (250 excused entries pushed a cheat's past a 200-entry cut).
    kept = dict(sorted(found.items())[: _ELSEWHERE_CAP - 1])
    return {**kept, CUT: f"{len(found) - len(kept)} more entries not kept"}


_NO_PART = Part("", "", Symbols(set(), {}, set()))


def _part_of(name: str, read: Reader, copy: Path) -> Part:
    """The part shadows.py reads for an input the map names (`lib.a(m.o)` or a file)."""
    path = name.partition("(")[0] if name.endswith(")") else name
    return next((p for p in read(copy / path) or [] if p.label == name), _NO_PART)


def digest(path: Path, inside: Path) -> str:
    opened = open_regular(path, inside)
    if opened is None:
        return ""
    hashed = hashlib.sha256()
    with opened as f:
        while chunk := f.read(1 << 20):
            hashed.update(chunk)
    return hashed.hexdigest()


def relink(
    output: str,
    command: str,
    copy: Path,
    build_at: str,
    scratch: str,
    host: Path,
    run: Runner,
    read: Reader,
) -> dict[str, object]:
    """`{"inputs": [...], "elsewhere": {...}, "why": ""}` for a program its link command
    makes again byte for byte; `why` says what failed otherwise. `scratch` is a folder
    the command may write, as the command sees it; `host` is that folder on the host;
    `read` reads the build's archives (cxxgate/cells/shadows.py)."""
    built = digest(copy / output, copy)
    if not built:
        return _failed("the program is not a file of the build")
    found = link_argv(command, output, build_at)
    if isinstance(found, str):
        return _failed(found)
    argv, at, cd = found
    nonce = secrets.token_hex(8)
    for name in ("program", "map", *(p.name for p in host.glob("*-[ao]"))):
        (host / name).unlink(missing_ok=True)
    for kind in "ao":
        (host / f"{nonce}-{kind}").symlink_to(build_at)
    cwd = posixpath.join(build_at, cd) if cd else build_at
    argv, archives = aliased(argv, cwd, build_at, copy, f"{scratch}/{nonce}")
    argv = [*argv[:at], f"{scratch}/program", *argv[at + 1 :], f"-Wl,-Map={scratch}/map"]
    code, said = run(argv, cd)
    if code != 0:
        return _failed(f"its link does not run again: {said.strip()[-300:]}")
    if digest(host / "program", host) != built:
        return _failed("it is not what its link command makes from the build")
    opened = open_regular(host / "map", host)
    mapped = None
    if opened is not None:
        with io.TextIOWrapper(opened, errors="replace", newline="\n") as lines:
            mapped = sections((line.removesuffix("\n") for line in lines), f"{scratch}/{nonce}")
    if mapped is None:
        return _failed("its linker wrote no map as GNU ld writes one")
    # The map spells a member `lib.a(m.o)`: an object of the build named so reads as one.
    named = sorted({n for _, _, kind, n in mapped if kind == "o" and "(" in n})
    if named:
        return _failed(f"a file of the build is named like a member: {named[0]!r}")
    held = held_from(host / "program", host, mapped)
    inputs = {n for _, _, _, n in mapped}
    return {
        "inputs": sorted(inputs),
        "elsewhere": elsewhere(held, archives, inputs, read, copy) if held else {},
        "why": "",
    }


def _failed(why: str) -> dict[str, object]:
    return {"inputs": [], "elsewhere": {}, "why": why}
