"""What the test units of a CMake build see, compared with the reference's build.

A test unit is a unit of the build whose source lies in a test
folder (a folder holding a file the hidden test patch touches, or named by `test_files`).
Two comparisons, each keyed by the unit's source path:

- its compile command as Ninja runs it (cxxgate/ctest.py): a program in front of the
  compiler (a launcher) or a preprocessor flag the reference's command lacks (`-include`,
  `-imacros`, `-D`, `-U`, an include folder, `-Wp,`/`-Xpreprocessor`, a response file) can
  change what the test's text means without touching it (`add_compile_options(-include
  src/quiet.h)`);
- the framework macros it sees (`-E -dM` with its own command, cxxgate/ctest.py): a macro
  the reference's unit defines (EXPECT_EQ, TEST, REQUIRE, ...) that is defined otherwise,
  or not at all, however the new definition was reached.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

from cxxgate.ctest import COMMANDS_JSON, entry_argv

# Flags whose value is the next argument when not glued to the flag.
_SEPARATE = ("-include", "-imacros", "--include", "-isystem", "-iquote", "-idirafter",
             "-I", "-D", "-U", "-Xpreprocessor", "-iprefix", "-iwithprefix",
             "-iwithprefixbefore", "--sysroot", "-isysroot")  # fmt: skip
_GLUED = ("-I", "-D", "-U", "-isystem", "-iquote", "-idirafter", "-include", "-imacros",
          "--include=", "--sysroot=", "-Wp,", "-nostdinc", "@")  # fmt: skip


def test_dirs(globs: list[str]) -> list[str]:
    """The folders of the test files' globs (`/tests/a_test.cpp` and `tests/**`: tests)."""
    found: set[str] = set()
    for glob in globs:
        head = glob.lstrip("/")
        cut = min((head.index(c) for c in "*?[" if c in head), default=len(head))
        fixed = head[:cut]
        found.add(str(PurePosixPath(fixed).parent) if cut == len(head) else fixed.rstrip("/"))
    return sorted(d if d not in ("", ".") else "." for d in found)


def preprocessor_flags(argv: list[str]) -> set[str]:
    """The flags of a compile command that change what its unit's text means, spelt one
    way (`-D X` as `-DX`)."""
    found: set[str] = set()
    args = iter(argv[1:])
    for arg in args:
        if arg in _SEPARATE:
            found.add(f"{arg}{next(args, '')}")
        elif arg.startswith(_GLUED):
            found.add(arg)
    return found


def programs(argv: list[str]) -> set[str]:
    """What runs the compile: the words before its first option (a launcher, the
    compiler), spelt `run:<word>`."""
    words = []
    for arg in argv:
        if arg.startswith("-"):
            break
        words.append(f"run:{arg}")
    return set(words)


def _units(suite: Path) -> dict[str, set[str]]:
    """Test unit (tree path) -> the launcher, compiler and preprocessor flags of the
    command Ninja runs for it (a ctest cell's commands.json), the cell's own tree and build
    folders spelt <tree> and <build> (they differ between cells without a sandbox)."""
    try:
        listing = json.loads((suite / COMMANDS_JSON).read_text())
    except (OSError, ValueError):
        return {}
    tree_at, build_at = str(listing["tree"]), str(listing["build"])
    found: dict[str, set[str]] = {}
    for entry in listing["commands"]:
        argv = entry_argv(entry)
        flags = preprocessor_flags(argv) | programs(argv)
        spelt = {f.replace(tree_at, "<tree>").replace(build_at, "<build>") for f in flags}
        found[str(PurePosixPath(str(entry["file"])).relative_to(tree_at))] = spelt
    return found


def new_flags(mine: Path, reference: Path) -> dict[str, list[str]]:
    """Per test unit in both ctest cells, what the reference's command lacks: a
    preprocessor flag, or another program in front of the compiler (a launcher that could
    add flags no database shows)."""
    here, ref = _units(mine), _units(reference)
    return {
        source: sorted(flags - ref[source])
        for source, flags in sorted(here.items())
        if source in ref and flags - ref[source]
    }


def redefined(mine: Path, reference: Path) -> dict[str, list[str]]:
    """Per test unit, the framework macros the reference's unit defines that this one
    defines otherwise or not at all (and a unit that no longer preprocesses)."""
    try:
        here, ref = json.loads(mine.read_text()), json.loads(reference.read_text())
    except (OSError, ValueError):
        return {}
    found: dict[str, list[str]] = {}
    for source, macros in sorted(ref.items()):
        theirs = here.get(source)
        if theirs is None:
            continue  # not a unit of this build: the build or the suite says more
        changed = sorted(
            name or "(unit)" for name, text in macros.items() if theirs.get(name) != text
        )
        if "" in theirs:
            changed = ["(the unit did not preprocess)"]
        if changed:
            found[source] = changed
    return found
