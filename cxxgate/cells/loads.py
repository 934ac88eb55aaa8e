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

What each link of the build names is recorded beside (`binds`): per program or library
the build linked, the shared libraries of the tree and the build its words name, by the
name the loader is asked for (the file's DT_SONAME). The gate follows a test's loads
from its program's link (gates/tests/testunits.py moved_loads): a library the test loads
must be the file a link it is made of names for that name.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePosixPath

from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.segments import InterpSegment

from cxxgate.cells.testframeworks import (
    environment,
    open_regular,
    properties,
    read_regular,
    unwrapped,
)
from cxxgate.toolchain.cellspec import Step
from cxxgate.util.elfread import ELF_ERRORS

# The loader's environment, as `ld.so`'s own options (the sandboxed call gets no
# environment of the test's).
LOADER_OPTIONS = {"LD_LIBRARY_PATH": "--library-path", "LD_PRELOAD": "--preload",
                  "LD_AUDIT": "--audit"}  # fmt: skip
FILTER_TAGS = ("DT_AUXILIARY", "DT_FILTER")

# (program name, argv, working folder as the build sees it) -> the call's step
Run = Callable[[str, list[str], str], Step]


@dataclass
class Loads:
    """Per listed test: library name -> the file the loader takes (as the build sees
    it), the filters those files name ("libcalc.so: DT_AUXILIARY libcalc_fix.so") and
    the program it runs (the file it is); the loader's calls."""

    loads: dict[str, dict[str, str]] = field(default_factory=dict)
    filters: dict[str, list[str]] = field(default_factory=dict)
    runs: dict[str, str] = field(default_factory=dict)
    # Per listed test: name -> file, for its program run from `/` without the test's
    # environment (as a program of the project's anywhere else loads it).
    neutral: dict[str, dict[str, str]] = field(default_factory=dict)
    # The folders (as the build sees them) any listing's loader searched:
    # `LD_LIBRARY_PATH` entries, RUNPATH / RPATH entries of the program and of what it
    # loads, the folders it loaded from (`search`).
    searched: set[str] = field(default_factory=set)
    steps: list[Step] = field(default_factory=list)


def resolve(listing: str, build_at: str, copy: Path, run: Run) -> Loads:
    """The listed tests' loads over the build at `build_at` (`copy` holds it). A test
    whose program is not the build's (a script run by /bin/sh) is not listed; one run by
    `cmake -E env` or `env` is its program's, with the wrapper's variables."""
    loader = system_loader()
    try:
        tests = json.loads(listing).get("tests", [])
    except (ValueError, AttributeError):
        return Loads()
    if loader is None:
        return Loads()
    done: dict[tuple[str, str, tuple[str, ...]], tuple[dict[str, str], list[str]]] = {}
    searched: set[tuple[str, str, tuple[str, ...]]] = set()  # contexts whose folders are in
    found = Loads()
    for test in tests:
        props = properties(test)
        command, said = unwrapped([str(w) for w in test.get("command") or []])
        if not command or not PurePosixPath(command[0]).is_relative_to(build_at):
            continue
        cwd = str(props.get("WORKING_DIRECTORY") or build_at)
        env = loader_env(props, said)
        options = tuple(w for var, o in LOADER_OPTIONS.items() if var in env for w in (o, env[var]))
        name = str(test.get("name"))
        for context in ((command[0], cwd, options), (command[0], "/", ())):
            if context not in done:
                program, where, said_options = context
                argv = [loader, *said_options, "--list", program]
                # Named apart in compiler-calls.log: one cell lists a program twice.
                what = PurePosixPath(program).name + (" from /" if where == "/" else "")
                step = run(what, argv, where)
                found.steps.append(step)
                files = {n: _real(at(p, where), build_at, copy)
                         for n, p in listed(step.output).items()}  # fmt: skip
                done[context] = files, sorted(_filters(files, build_at, copy))
        found.loads[name], found.filters[name] = done[(command[0], cwd, options)]
        found.neutral[name] = done[(command[0], "/", ())][0]
        found.runs[name] = _real(command[0], build_at, copy)
        # Many tests share a program (discovered tests): its folders are read once.
        if (command[0], cwd, options) not in searched:
            searched.add((command[0], cwd, options))
            loaded = [found.runs[name], *found.loads[name].values(), *found.neutral[name].values()]
            found.searched |= search(loaded, env.get("LD_LIBRARY_PATH", ""), cwd, build_at, copy)
    return found


def search(files: list[str], library_path: str, cwd: str, build_at: str, copy: Path) -> set[str]:
    """The folders a loader looking for the libraries of `files` (a program and what it
    loads, as the build sees them) searches: `library_path`'s entries, each file's
    RUNPATH and RPATH entries (`$ORIGIN` its own folder; a relative entry from `cwd`),
    and the folders the files are in; each as the folder it is."""
    entries = [e for e in library_path.split(":") if e]
    for file in files:
        folder = posixpath.dirname(file)
        entries.append(folder)
        host = _host(file, build_at, copy)
        tags = (_dynamic(host, copy) if host is not None else None) or ("", {})
        for said in [*tags[1].get("DT_RUNPATH", []), *tags[1].get("DT_RPATH", [])]:
            for entry in said.split(":"):
                entries.append(re.sub(r"\$(ORIGIN|\{ORIGIN\})", folder, entry))
    return {_real(at(entry, cwd), build_at, copy) for entry in entries if entry}


def at(path: str, cwd: str) -> str:
    """A path `ld.so --list` printed, for a run in `cwd`, as a path from the top: a
    relative RUNPATH entry's file is named from the working folder (round 19's
    `cwd_twin`), one under /proc/self/cwd (or a process's cwd) is in it, one under
    /proc/self/root is at the top, and a leading `//` is `/` (red-team round 21's
    `proc_cwd`, `dslash`). Not normalised: `..` after a link is the link's target's
    parent (`_real` resolves the build's files)."""
    if "/" not in path:
        return path  # "not found", a name without a file
    full = "/" + posixpath.join(cwd, path).lstrip("/")
    for head, to in ((_PROC_CWD, cwd), (_PROC_ROOT, "/")):
        if (m := head.match(full)) is not None:
            full = "/" + posixpath.join(to, full[m.end():].lstrip("/")).lstrip("/")
    return full


_PROC_CWD = re.compile(r"/proc/(?:self|thread-self|[0-9]+(?:/task/[0-9]+)?)/cwd(?=/|$)")
_PROC_ROOT = re.compile(r"/proc/(?:self|thread-self|[0-9]+(?:/task/[0-9]+)?)/root(?=/|$)")


def loader_env(props: dict[str, object], then: list[str] | None = None) -> dict[str, str]:
    """The loader's variables of a test's run as ctest sets them (testframeworks
    `environment`; round 20's `envmod_twin`), then `then` (a wrapper's: `unwrapped`)."""
    env = environment(props, {}, then)
    return {k: v for k, v in env.items() if k in LOADER_OPTIONS}


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


SHARED = re.compile(r"\.so(\.[0-9]+)*$")


def binds(links: dict[str, list[str]], copy: Path, tree: Path) -> dict[str, list[list[str]]]:
    """Per link of the build (its output, `<build>/...` as the file it is): the shared
    libraries of the tree and the build its words name, each [the file it is, the name
    a program linked with it asks the loader for: its DT_SONAME, else its file name; a
    name with a slash by its file name, as `listed` keys it]. `links` are spelt
    (`<build>`, `<tree>`; a relative word is the build folder's, where Ninja links);
    `copy` and `tree` hold the build and the tree. `-lNAME` is the file the first `-L`
    folder holding one has, as the linker takes it: none when that folder is the
    system's, or holds only an archive. A word that is not a shared object (a linker
    script) binds nothing."""
    found: dict[str, list[list[str]]] = {}
    for output, words in links.items():
        named: list[list[str]] = []
        for word, file in _inputs(words, copy, tree):
            key = _soname(file, copy if word.startswith("<build>/") else tree)
            real = _spelt_real(word, file, copy)
            if key is None or real is None:
                continue
            entry = [real, PurePosixPath(key or word).name]
            if entry not in named:
                named.append(entry)
        if named:
            found[_spelt_real(f"<build>/{output}", copy / output, copy) or output] = named
    return found


def _inputs(words: list[str], copy: Path, tree: Path) -> list[tuple[str, Path]]:
    """The shared libraries of the tree and the build a link line names: (spelt word,
    the host's file). The word after `-o` and every other option are not inputs."""
    dirs = [w[2:] or words[i + 1] for i, w in enumerate(words[:-1]) if w.startswith("-L")]
    found: list[tuple[str, Path]] = []
    each = iter(words)
    for word in each:
        if word == "-l":
            found += _searched(next(each, ""), dirs, copy, tree)
        elif word in ("-o", "-L", "-Xlinker", "-T", "-MF", "-z"):
            next(each, None)  # the option's own word
        elif word.startswith("-l"):
            found += _searched(word[2:], dirs, copy, tree)
        elif not word.startswith("-") and SHARED.search(word):
            file = _spelt_host(_normal(word), copy, tree)
            if file is not None and file.exists():
                found.append((_normal(word), file))
    return found


def _searched(name: str, dirs: list[str], copy: Path, tree: Path) -> list[tuple[str, Path]]:
    """`-lNAME`: the shared library of the first `-L` folder that holds NAME's shared
    library or archive, when that folder is the tree's or the build's."""
    names = [name[1:]] if name.startswith(":") else [f"lib{name}.so", f"lib{name}.a"]
    for folder in dirs:
        at = _normal(folder)
        root = _spelt_host(at, copy, tree)
        for file in names:
            host = root / file if root is not None else Path(at) / file
            if not host.exists():
                continue
            word = f"{at}/{file}"
            return [(word, host)] if root is not None and SHARED.search(file) else []
    return []


def _normal(word: str) -> str:
    """A spelt path normalised; a relative one is the build folder's."""
    if word.startswith(("<build>/", "<tree>/")) or word in ("<build>", "<tree>"):
        head, _, rest = word.partition("/")
        return f"{head}/{posixpath.normpath(rest or '.')}"
    if word.startswith("/"):
        return posixpath.normpath(word)
    return "<build>/" + posixpath.normpath(word)


def _spelt_host(word: str, copy: Path, tree: Path) -> Path | None:
    """The host's file or folder a normalised spelt path names (None outside the tree
    and the build)."""
    head, _, rest = word.partition("/")
    root = {"<build>": copy, "<tree>": tree}.get(head)
    if root is None or rest == ".." or rest.startswith("../"):
        return None
    return root / rest


# What glibc's loader also searches under a folder it searches: the hwcaps subfolders and
# the legacy platform ones (red-team round 16's `hwcaps`, `platform`).
_BENEATH = re.compile(r"(?:glibc-hwcaps|tls|x86_64|haswell|avx512_1|xeon_phi)(?:/[^/]+)?")


def versions(
    names: set[str], folders: set[str], copy: Path, tree: Path
) -> dict[str, list[str]]:
    """Per library name a test loads: the files of that name in `folders` (spelt
    `<build>/...`, `<tree>/...`: where the tests' loader searches, `Loads.searched`;
    `copy` and `tree` hold them) and their hwcaps
    and platform subfolders, one per distinct content, each as the file it is (spelt).
    Two are a library and a twin of it a search path can reach: a fixed copy linked into
    the tests alone, or built where only their run looks (red-team round 21's
    `prog_twin`, `bound_rel`); copies with the same bytes are one, and a copy where no
    loader looks (a stripped one for packaging: round 22's `dist_strip`) is none."""
    found: dict[str, dict[str, str]] = {}
    for spelt in sorted(folders):
        head, _, rest = spelt.partition("/")
        inside = {"<build>": copy, "<tree>": tree}.get(head)
        if inside is None:
            continue
        root, top = inside.resolve(), inside / rest
        for folder, dirs, files in os.walk(top):
            rel = Path(folder).relative_to(top).as_posix()
            dirs[:] = sorted(d for d in dirs if _BENEATH.fullmatch(f"{rel}/{d}".lstrip("./")))
            for name in sorted(set(files) & names):
                file = Path(folder) / name
                data = read_regular(file, inside)
                if data is None:
                    continue
                real = file.resolve().relative_to(root).as_posix()
                digest = hashlib.sha256(data).hexdigest()
                found.setdefault(name, {}).setdefault(digest, f"{head}/{real}")
    return {name: sorted(by.values()) for name, by in sorted(found.items())}


def _spelt_real(word: str, file: Path, copy: Path) -> str | None:
    """A build file as the file it is, spelt (links followed inside the build; None for
    one that leads out of it); a tree file as named."""
    if not word.startswith("<build>/"):
        return word
    rel = _within(file, copy)
    return None if rel is None else f"<build>/{rel}"


def _within(file: Path, copy: Path) -> str | None:
    """The copy's file as the file it is, copy-relative (links followed); None for one
    that leads out of the copy."""
    try:
        real, root = file.resolve(), copy.resolve()
    except (OSError, RuntimeError):
        return None
    return real.relative_to(root).as_posix() if real.is_relative_to(root) else None


def _soname(file: Path, inside: Path) -> str | None:
    """A shared object's DT_SONAME ("" without one); None for a file that is not one."""
    said = _dynamic(file, inside)
    if said is None or said[0] != "ET_DYN":
        return None
    return (said[1].get("DT_SONAME") or [""])[0]


_STRING_TAGS = ("DT_SONAME", "DT_RUNPATH", "DT_RPATH", *FILTER_TAGS)


def _dynamic(file: Path, inside: Path) -> tuple[str, dict[str, list[str]]] | None:
    """An ELF file's type and the strings of its dynamic tags that name files or folders
    (soname, RUNPATH, RPATH, filters), read as a regular file inside `inside` (the
    candidate's code ran there); None for what is not ELF."""
    opened = open_regular(file, inside)
    if opened is None:
        return None
    said: dict[str, list[str]] = {}
    try:
        with opened as f:
            elf = ELFFile(f)
            for section in elf.iter_sections():
                if not isinstance(section, DynamicSection):
                    continue
                strings = section._get_stringtable()  # pyelftools names no filters
                for tag in section.iter_tags():
                    if tag.entry.d_tag in _STRING_TAGS:
                        text = strings.get_string(tag.entry.d_val)
                        said.setdefault(tag.entry.d_tag, []).append(text)
            return str(elf["e_type"]), said
    except (OSError, *ELF_ERRORS):
        return None


def _host(path: str, build_at: str, copy: Path) -> Path | None:
    """The copy's file at a path as the build sees it (None outside the build)."""
    if not PurePosixPath(path).is_relative_to(build_at):
        return None
    return copy / PurePosixPath(path).relative_to(build_at)


def _real(path: str, build_at: str, copy: Path) -> str:
    """A loaded file of the build as the file it is: links followed inside the build;
    another path normalised."""
    file = _host(path, build_at, copy)
    rel = _within(file, copy) if file is not None else None
    if rel is not None:
        return str(PurePosixPath(build_at) / rel)
    return posixpath.normpath(path) if "/" in path else path


def _filters(found: dict[str, str], build_at: str, copy: Path) -> set[str]:
    """The filters each loaded file of the build names."""
    said: set[str] = set()
    for name, path in found.items():
        file = _host(path, build_at, copy)
        tags = (_dynamic(file, copy) if file is not None else None) or ("", {})
        for kind in FILTER_TAGS:
            said |= {f"{name}: {kind} {filtee}" for filtee in tags[1].get(kind, [])}
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
