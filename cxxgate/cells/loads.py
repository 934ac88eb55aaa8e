"""Where each listed test's shared libraries come from, as the system's dynamic loader
resolves them for the test's own run.

A second copy of a library earlier on the loader's search path is what a test loads
while every link command is the reference's (red-team rounds 16, 17). The loader
resolves relative to the run: a relative RUNPATH entry against the working folder, and
`LD_LIBRARY_PATH` from the test's environment before the RUNPATH (round 19's
`cwd_twin`, `env_twin`). So each test's program is listed (`ld.so --list`) in the
test's own `WORKING_DIRECTORY` with the loader variables of its ctest `ENVIRONMENT` as
the loader's own options, once per distinct context. The loader is the system's (the
interpreter /bin/sh names), never the program's PT_INTERP, and runs no code of the
program's. A library found in the build is recorded by the file it is (links followed
inside the build: a link at the reference's place to a twin elsewhere is the twin), and
with the filters it names (DT_AUXILIARY, DT_FILTER: a library whose symbols the loader
looks up first, round 19's `aux_filter`).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable
from functools import cache
from pathlib import Path, PurePosixPath

from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.segments import InterpSegment

from cxxgate.cells.testframeworks import open_regular, properties
from cxxgate.toolchain.cellspec import Step
from cxxgate.util.elfread import ELF_ERRORS

# The loader's environment, as `ld.so`'s own options (the sandboxed call gets no
# environment of the test's).
LOADER_OPTIONS = {"LD_LIBRARY_PATH": "--library-path", "LD_PRELOAD": "--preload",
                  "LD_AUDIT": "--audit"}  # fmt: skip
FILTER_TAGS = ("DT_AUXILIARY", "DT_FILTER")

# (program name, argv, working folder as the build sees it) -> the call's step
Run = Callable[[str, list[str], str], Step]


def resolve(
    listing: str, build_at: str, copy: Path, run: Run
) -> tuple[dict[str, dict[str, str]], dict[str, list[str]], list[Step]]:
    """Per listed test: library name -> the file the loader takes (as the build at
    `build_at` sees it; `copy` holds it), and the filters those files name
    ("libcalc.so: DT_AUXILIARY libcalc_fix.so"); the loader's calls. A test whose
    program is not the build's (a script run by /bin/sh) is not listed."""
    loader = system_loader()
    try:
        tests = json.loads(listing).get("tests", [])
    except (ValueError, AttributeError):
        return {}, {}, []
    if loader is None:
        return {}, {}, []
    done: dict[tuple[str, str, tuple[str, ...]], tuple[dict[str, str], list[str]]] = {}
    loads: dict[str, dict[str, str]] = {}
    filters: dict[str, list[str]] = {}
    steps: list[Step] = []
    for test in tests:
        command = [str(w) for w in test.get("command") or []]
        if not command or not PurePosixPath(command[0]).is_relative_to(build_at):
            continue
        props = properties(test)
        cwd = str(props.get("WORKING_DIRECTORY") or build_at)
        env = loader_env(props)
        options = tuple(w for var, o in LOADER_OPTIONS.items() if var in env for w in (o, env[var]))
        key = (command[0], cwd, options)
        if key not in done:
            argv = [loader, *options, "--list", command[0]]
            step = run(PurePosixPath(command[0]).name, argv, cwd)
            steps.append(step)
            # A relative RUNPATH entry's file is named as found: from the working folder.
            at = {n: posixpath.normpath(posixpath.join(cwd, p)) if "/" in p else p
                  for n, p in listed(step.output).items()}  # fmt: skip
            found = {n: _real(p, build_at, copy) for n, p in at.items()}
            done[key] = found, sorted(_filters(found, build_at, copy))
        name = str(test.get("name"))
        loads[name], filters[name] = done[key]
    return loads, filters, steps


def loader_env(props: dict[str, object]) -> dict[str, str]:
    """The loader's variables of a test's run as ctest sets them: its `ENVIRONMENT`, then
    its `ENVIRONMENT_MODIFICATION` (`VAR=op:value`, applied in order; the run starts
    with none of them: round 20's `envmod_twin`)."""
    env = {k: v for k, _, v in (str(e).partition("=") for e in _listed_prop(props, "ENVIRONMENT"))}
    for said in _listed_prop(props, "ENVIRONMENT_MODIFICATION"):
        var, _, rest = str(said).partition("=")
        op, _, value = rest.partition(":")
        now = env.get(var)
        if op in ("reset", "unset"):
            env.pop(var, None)
        elif op == "set":
            env[var] = value
        elif op in ("string_append", "string_prepend"):
            env[var] = (now or "") + value if op == "string_append" else value + (now or "")
        elif op in ("path_list_append", "cmake_list_append"):
            sep = ":" if op.startswith("path") else ";"
            env[var] = f"{now}{sep}{value}" if now else value
        elif op in ("path_list_prepend", "cmake_list_prepend"):
            sep = ":" if op.startswith("path") else ";"
            env[var] = f"{value}{sep}{now}" if now else value
    return {k: v for k, v in env.items() if k in LOADER_OPTIONS}


def _listed_prop(props: dict[str, object], name: str) -> list[object]:
    value = props.get(name) or []
    return list(value) if isinstance(value, list) else [value]


def listed(text: str) -> dict[str, str]:
    """`ld.so --list` lines `name => path (address)`: name -> path ("not found" kept). A
    DT_NEEDED entry with a slash is loaded by its path and listed as `path (address)`:
    it is kept under its file name (round 20's `slash_soname`), as the loader's own line
    is (the same in both builds)."""
    found = {}
    for line in text.splitlines():
        name, arrow, rest = line.strip().partition(" => ")
        if arrow:
            found[name] = rest.rpartition(" (")[0] if " (" in rest else rest
        elif "/" in name and " (" in name:
            path = name.rpartition(" (")[0]
            found.setdefault(PurePosixPath(path).name, path)
    return found


def _host(path: str, build_at: str, copy: Path) -> Path | None:
    """The copy's file at a path as the build sees it (None outside the build)."""
    if not PurePosixPath(path).is_relative_to(build_at):
        return None
    return copy / PurePosixPath(path).relative_to(build_at)


def _real(path: str, build_at: str, copy: Path) -> str:
    """A loaded file of the build as the file it is: links followed inside the build."""
    file = _host(path, build_at, copy)
    if file is None:
        return path
    real, root = file.resolve(), copy.resolve()
    if not real.is_relative_to(root) or real == root / file.relative_to(copy):
        return path
    return str(PurePosixPath(build_at) / real.relative_to(root).as_posix())


def _filters(found: dict[str, str], build_at: str, copy: Path) -> set[str]:
    """The filters each loaded file of the build names (read as a regular file of the
    copy: the candidate's code ran there)."""
    said: set[str] = set()
    for name, path in found.items():
        file = _host(path, build_at, copy)
        opened = open_regular(file, copy) if file is not None else None
        if opened is None:
            continue
        try:
            with opened as f:
                for section in ELFFile(f).iter_sections():
                    if not isinstance(section, DynamicSection):
                        continue
                    strings = section._get_stringtable()  # pyelftools names no filters
                    for tag in section.iter_tags():
                        if tag.entry.d_tag in FILTER_TAGS:
                            filtee = strings.get_string(tag.entry.d_val)
                            said.add(f"{name}: {tag.entry.d_tag} {filtee}")
        except (OSError, *ELF_ERRORS):
            continue
    return said


@cache
def system_loader() -> str | None:
    """The system's dynamic loader: the interpreter /bin/sh names."""
    try:
        with open("/bin/sh", "rb") as f:
            for segment in ELFFile(f).iter_segments():
                if isinstance(segment, InterpSegment):
                    return str(segment.get_interp_name())
    except (OSError, *ELF_ERRORS):
        return None
    return None
