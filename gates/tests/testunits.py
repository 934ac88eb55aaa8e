"""What the test units of a CMake build see, compared with the reference's build.

A test unit is a unit of the build whose source lies in a test
folder (a folder holding a file the hidden test patch touches, or named by `test_files`).
Two comparisons, each keyed by the unit's source path:

- its compile command as Ninja runs it (cxxgate/cells/ctest.py): a program in front of the
  compiler (a launcher) or a preprocessor flag the reference's command lacks (`-include`,
  `-imacros`, `-D`, `-U`, an include folder, `-Wp,`/`-Xpreprocessor`, a response file) can
  change what the test's text means without touching it (`add_compile_options(-include
  src/quiet.h)`);
- the framework macros it sees (`-E -dM` with its own command, cxxgate/cells/ctest.py): a macro
  the reference's unit defines (EXPECT_EQ, TEST, REQUIRE, ...) that is defined otherwise,
  or not at all, however the new definition was reached.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from cxxgate.cells import crossed, ctest
from cxxgate.cells.ctest import COMMANDS_JSON, entry_argv

# Flags whose value is the next argument when not glued to the flag.
# ... and what picks the programs a compile runs or the code it loads (`-B` with a
# `cc1plus` of the build's, a plugin, a specs file, a wrapper, assembler options): the
# harness's own `-E -dM` and compile of the unit would run them too.
# `-A` (an assertion, `#if #calc(testing)`) defines no macro an `-E -dM` would show.
_SEPARATE = ("-include", "-imacros", "--include", "-isystem", "-iquote", "-idirafter",
             "-I", "-D", "-U", "-A", "--assert", "--define-macro", "--undefine-macro",
             "--imacros", "--include-directory", "-Xpreprocessor", "-iprefix", "-iwithprefix",
             "-iwithprefixbefore", "--sysroot", "-isysroot", "-B", "-wrapper",
             "-Xassembler", "-specs", "--specs")  # fmt: skip
_GLUED = ("-I", "-D", "-U", "-A", "--assert", "--define-macro", "--undefine-macro",
          "-isystem", "-iquote", "-idirafter", "-include", "-imacros", "--imacros",
          "--include", "--sysroot=", "-Wp,", "-nostdinc", "@", "-B", "-fplugin",
          "-specs=", "--specs=", "-Wa,", "-no-integrated-cpp", "-trigraphs", "-remap",
          "-traditional", "-ansi", "-undef", "-imultilib", "-std=", "-x")  # fmt: skip


def test_dirs(globs: list[str]) -> list[str]:
    """The folders of the test files' globs (`/tests/a_test.cpp` and `tests/**`: tests)."""
    found: set[str] = set()
    for glob in globs:
        head = glob.lstrip("/")
        cut = min((head.index(c) for c in "*?[" if c in head), default=len(head))
        fixed = head[:cut]  # a whole path, a folder `tests/`, or `tests/plain_` of a name
        folder = fixed.rstrip("/") if fixed.endswith("/") else str(PurePosixPath(fixed).parent)
        found.add(posixpath.normpath(folder or "."))
    return sorted(found)


# How diagnostics look, not what the code means; and position-independent code (CMake's
# POSITION_INDEPENDENT_CODE spells GCC's default -fPIE).
_SHOWN = ("-fdiagnostics", "-fno-diagnostics", "-fcolor-diagnostics", "-fno-color-diagnostics",
          "-fmessage-length", "-fmax-errors", "-fPIC", "-fpic", "-fPIE", "-fpie")  # fmt: skip


def preprocessor_flags(argv: list[str]) -> set[str]:
    """The flags of a compile command that change what its unit's text means or what
    compiles it, spelt one way (`-D X` as `-DX`): the preprocessor's, what runs the
    compile, and every `-f` and `-m` option but those of diagnostics' looks, since many
    change the language and define no macro (`-fshort-enums`, `-fno-access-control`,
    `-fpack-struct`)."""
    found: set[str] = set()
    args = iter(argv[1:])
    for arg in args:
        if arg in _SEPARATE:
            found.add(f"{arg}{next(args, '')}")
        elif arg.startswith(_GLUED) or (arg[:2] in ("-f", "-m") and not arg.startswith(_SHOWN)):
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
        # Every command of a unit counts: a second, clean compile must not hide the first.
        rel = str(PurePosixPath(str(entry["file"])).relative_to(tree_at))
        found.setdefault(rel, set()).update(spelt)
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


def _per_unit(
    mine: Path, reference: Path, changed: Callable[[dict[str, str], dict[str, str]], list[str]]
) -> dict[str, list[str]]:
    """Per test unit of both cells' `{unit: {macro: definition}}` files, what `changed`
    says of (the reference's, this one's). A unit compiled twice is read twice (`unit#N`,
    N its place among the build's units, cxxgate/cells/ctest.py): each of its compiles must
    agree with one of the reference's compiles of that unit (fmt compiles test/util.cc
    plain and with FMT_HEADER_ONLY); what is said is against the one at the same key, or
    the first. A unit the reference's build lacks is left to the build and suite checks."""
    try:
        here, ref = json.loads(mine.read_text()), json.loads(reference.read_text())
    except (OSError, ValueError):
        return {}
    variants: dict[str, list[str]] = {}
    for key in sorted(ref):
        variants.setdefault(key.partition("#")[0], []).append(key)
    found: dict[str, list[str]] = {}
    for key, theirs in sorted(here.items()):
        source = key.partition("#")[0]
        if source not in ref or any(not changed(ref[k], theirs) for k in variants[source]):
            continue
        said = changed(ref[key if key in ref else source], theirs)
        found[source] = sorted(set(found.get(source, [])) | set(said))
    return found


def redefined(mine: Path, reference: Path) -> dict[str, list[str]]:
    """Per test unit, the framework macros the reference's unit defines that this one
    defines otherwise or not at all (and a unit that no longer preprocesses)."""

    def changed(want: dict[str, str], theirs: dict[str, str]) -> list[str]:
        if theirs == want == ctest.UNDRIVEN:
            # The reference's own compile of the unit is one the harness does not run
            # (fmt's CUDA test under nvcc): nothing is known of either, and the patch
            # cannot choose the reference's driver. Another driver than the reference's
            # is the flags check's (testunits.new_flags: the words in front of the file).
            return []
        if "" in theirs:
            return [f"(the unit {theirs['']})"]
        return sorted(name or "(unit)" for name, text in want.items() if theirs.get(name) != text)

    return _per_unit(mine, reference, changed)


def new_defines(mine: Path, reference: Path) -> dict[str, list[str]]:
    """Per test unit in both ctest cells, the macros its options define (`-E -dM` of an
    empty unit, cxxgate/cells/ctest.py) otherwise than the reference's, or that the
    reference's do not define: what a spelling list misses (`--define-macro=X`,
    `-funsigned-char`'s `__CHAR_UNSIGNED__`, a new `-std`)."""

    def changed(want: dict[str, str], theirs: dict[str, str]) -> list[str]:
        names = sorted(set(want) | set(theirs))
        return [n or "(unit)" for n in names if want.get(n) != theirs.get(n)]

    return _per_unit(mine, reference, changed)


def rewritten(mine: Path, reference: Path) -> dict[str, str]:
    """Per test unit (objects.json, cxxgate/cells/ctest.py), why its object is not what its
    compile command makes, where the reference's unit's is (a compile that does not make
    the same bytes twice, `__TIME__`, is not compared)."""
    try:
        here, ref = json.loads(mine.read_text()), json.loads(reference.read_text())
    except (OSError, ValueError):
        return {}
    return {
        key.partition("#")[0]: why
        for key, why in sorted(here.items())
        if why and ref.get(key.partition("#")[0]) == ""
    }


# The build's graph (cxxgate/cells/ctest.py read_graph): what Ninja compiled and linked.
ABSENT = ": not built"


def _feeds(g: dict[str, Any], obj: str) -> list[str]:
    """The link and archive outputs whose commands name object `obj`."""
    return sorted(out for out, words in g.get("links", {}).items() if obj in words)


def _objects(g: dict[str, Any]) -> dict[str, str]:
    """source -> object, of every compile."""
    return {src: obj for obj, src in g.get("compiles", {}).items()}


def test_programs(g: dict[str, Any], test_dirs: list[str]) -> list[str]:
    """The outputs that link a test unit's object."""
    return sorted(
        {p for obj, src in g.get("compiles", {}).items() if crossed.in_dirs(src, test_dirs)
         for p in _feeds(g, obj)}
    )  # fmt: skip


def moved_units(mine: dict[str, Any], ref: dict[str, Any], test_dirs: list[str]) -> list[str]:
    """Each test unit the reference's build compiled (its source in a test folder of the
    tree) that this build does not compile from the same tree path into the same
    programs: a copy made in the build folder, an edited twin, or none at all, would
    otherwise stand in for it unseen (a unit missing from the build is not compared)."""
    here, theirs = _objects(mine), _objects(ref)
    found = []
    for source, obj in sorted(theirs.items()):
        if not crossed.in_dirs(source, test_dirs):
            continue
        if source not in here:
            found.append(f"{source}{ABSENT}")
            continue
        want, got = _feeds(ref, obj), _feeds(mine, here[source])
        if got != want:
            found.append(f"{source} is linked into {', '.join(got) or 'nothing'}, "
                         f"not {', '.join(want)}")  # fmt: skip
    return found


def new_link_words(mine: dict[str, Any], ref: dict[str, Any], test_dirs: list[str]) -> list[str]:
    """What each test program's link command has that the reference's lacks, beyond
    objects compiled from tree sources, files the build itself made and options: an
    object or archive from elsewhere (the build folder's copy of a test source, a file
    the patch ships); and each library of the build the reference's link names that this
    one leaves out. An option (`-lm`, `-Wl,--wrap=...`, `-B` and a linker of the build's)
    is the crossed proof's (cxxgate/cells/crossed.py): the program is linked again
    without it, and the listed tests must pass on that one too."""
    compiled_from_tree = {
        obj for obj, src in mine.get("compiles", {}).items() if src.startswith("<tree>/")
    }
    made = set(mine.get("links", {}))
    found = []
    for program in test_programs(ref, test_dirs):
        words = mine.get("links", {}).get(program)
        if words is None:
            found.append(f"{program}{ABSENT}")
            continue
        known = set(ref["links"][program])
        new = [w for w in words if w not in known and not w.startswith("-")
               and w not in compiled_from_tree and w not in made]
        if new:
            found.append(f"{program} links with {' '.join(sorted(set(new))[:8])}")
        # A library of the build the reference's program links, and this one does not:
        # the tests would run a twin of it (the project's own keeps the bug).
        gone = sorted(w for w in known if w in ref["links"] and w not in words)
        if gone:
            found.append(f"{program} no longer links {' '.join(gone[:8])}")
    return found


def new_shadows(mine: dict[str, Any], ref: dict[str, Any], test_dirs: list[str]) -> list[str]:
    """Each test program that links two definitions of a symbol from files the build made,
    or a build file whose symbols cannot be read, where the reference's link of it does
    not (cxxgate/cells/shadows.py): the tests would run one copy of `parse` and the
    project's library keep another."""
    found = []
    theirs, here = ref.get("shadowed", {}), mine.get("shadowed", {})
    for program in test_programs(ref, test_dirs):
        known = {said.partition(":")[0] for said in theirs.get(program, [])}
        new = [said for said in here.get(program, []) if said.partition(":")[0] not in known]
        if new:
            said = [s if " is unread: " in s else f"two definitions of {s}" for s in new[:3]]
            found.append(f"{program} links {'; '.join(said)}")
    return found


def test_archives(mine: dict[str, Any], ref: dict[str, Any], test_dirs: list[str]) -> list[str]:
    """Each archive of the tests' own that a reference test program links (every member
    compiled from a test source: a vendored GoogleTest, a test `main` library), where
    this build's command for it archives other sources. The crossed proof links test
    programs by the reference's command, naming archives by path, and makes each of these
    again from its objects (cxxgate/cells/crossed.py): a fix compiled into one would
    still be in the program."""
    found = []
    for archive in crossed.test_archives(ref, test_dirs):
        want, got = crossed.members(ref, archive), crossed.members(mine, archive)
        if got != want:
            extra = sorted(got - want) or ["fewer members"]
            found.append(f"{archive} holds members the reference's does not: "
                         f"{', '.join(extra[:5])}")  # fmt: skip
    return found


def _source_of(g: dict[str, Any], name: str) -> str:
    """The source an input the linker took was compiled from (`lib.a(member.o)`: the
    object of that name the archive's command names), "" when no compile made it."""
    archive, _, member = name.partition("(")
    if member:
        words = g.get("links", {}).get(archive, [])
        name = next((w for w in words if PurePosixPath(w).name == member[:-1]), "")
    return str(g.get("compiles", {}).get(name, ""))


def _made(g: dict[str, Any]) -> set[str]:
    """Every object the build compiles, and each as a member of the archives naming it."""
    compiled = set(g.get("compiles", {}))
    made = set(compiled)
    for out, words in g.get("links", {}).items():
        if out.endswith(".a"):
            made |= {f"{out}({PurePosixPath(w).name})" for w in words if w in compiled}
    return made


def bypassed(mine: dict[str, Any], ref: dict[str, Any], test_dirs: list[str]) -> list[str]:
    """Each test program that is not what its own link command makes from the build's
    files (linked again by the harness, cxxgate/cells/relink.py: relinked by a script
    after its link step, an input rewritten since), and each that no longer takes an
    object or archive member compiled from a source outside the test folders that the
    reference's program takes, while this build still makes it (by the linker's map: a
    twin linked first, an inline copy, however it names itself). The tests would run
    that code from somewhere else and the project's keep the bug. So is each that holds
    a symbol an archive of the build defines from another input, where the reference's
    program held it from the archive (relink.py `elsewhere`: however the archive's members
    are named). A program the
    reference's own link does not make again is not compared; an input the build no
    longer makes (code moved out, a file gone) is not asked."""
    made = _made(mine)
    theirs, here = ref.get("linked", {}), mine.get("linked", {})
    found = []
    for program in test_programs(ref, test_dirs):
        want, got = theirs.get(program), here.get(program)
        if not want or want["why"] or not got:
            continue  # not built, or built without the test units: moved_units names it
        if got["why"]:
            found.append(f"{program} is not what the build links: {got['why']}")
            continue
        kept = [n for n in want["inputs"] if not crossed.in_dirs(_source_of(ref, n), test_dirs)]
        lost = [n for n in kept if n in made and n not in got["inputs"]]
        # A member renamed (a unity build) is not asked by name; its archive still is.
        asked = {n.partition("(")[0] for n in lost if "(" in n}
        archives = {n.partition("(")[0] for n in kept if "(" in n} - asked
        lost += sorted(
            f"anything of {a}" for a in archives
            if a in mine.get("links", {}) and not any(n.startswith(f"{a}(") for n in got["inputs"])
        )  # fmt: skip
        if lost:
            found.append(f"{program} no longer takes {', '.join(lost[:5])} from the build")
        # What an archive of the build defines and the program holds from another input
        # (an inline copy, a fixed object linked first), where the reference's did not.
        moved = sorted(
            f"{name} from {where}" for name, where in got.get("elsewhere", {}).items()
            if name not in want.get("elsewhere", {})
            and not _tests_own_copy(mine, ref, where, test_dirs)
        )  # fmt: skip
        if moved:
            found.append(f"{program} holds {'; '.join(moved[:3])}")
    return found


def _tests_own_copy(
    mine: dict[str, Any], ref: dict[str, Any], where: str, test_dirs: list[str]
) -> bool:
    """Whether `where` (relink.elsewhere's words) is an inline function's copy from a test
    unit the reference's build compiles too (a hidden test file): compiled with other
    options than the library's (a library at C++20, its tests at C++17), a template of the
    standard library differs in bytes and the tests' copy wins the link, honestly. A
    fixed copy in a file of the patch's own is still counted."""
    holder, _, why = where.partition(" (")
    if "inline copy" not in why:
        return False
    source = _source_of(mine, holder)
    theirs = ref.get("compiles", {}).values()
    return bool(source) and crossed.in_dirs(source, test_dirs) and source in theirs


_PRINTER = re.compile(r"_ZN7testing8internal\d+Print\w*")


def tampered(
    mine: dict[str, Any], ref: dict[str, Any], test_dirs: list[str]
) -> dict[str, list[str]]:
    """Per compiled source, the GoogleTest symbols its object names that the reference's
    object of the same source did not: code outside the tests that reaches into the
    framework (a static initialiser installing a ScopedFakeTestPartResultReporter
    swallows every assertion). A source the reference did not compile may name what the
    reference's test units named when it lies in a test folder (a new test), nothing
    otherwise. A test unit's own template instances (defined in it) do not count."""
    theirs = ref.get("symbols", {})
    tests_named = {
        n for src, names in theirs.items() if crossed.in_dirs(src, test_dirs) for n in names
    }
    found: dict[str, list[str]] = {}
    for source, names in sorted(mine.get("symbols", {}).items()):
        test = crossed.in_dirs(source, test_dirs)
        allowed = set(theirs[source]) if source in theirs else tests_named if test else set()
        # A test unit instantiates GoogleTest's templates with the library's types (an
        # API the patch may change): only what it binds to GoogleTest's library counts.
        # Printing a value of a type with no printer binds GoogleTest's byte printer.
        kept = {n for n in names if n.startswith("U ") and not _PRINTER.match(n[2:])}
        kept = kept if test else set(names)
        extra = sorted(n.partition(" ")[2] for n in kept - allowed)
        if extra:
            found[source] = extra
    return found


# Where the system keeps shared libraries: a new library a test loads from anywhere else
# outside the tree and the build (a /proc path back into the build, a folder the run
# made) is not the system's (red-team round 21's `proc_cwd`).
SYSTEM_LIBRARIES = ("/lib/", "/lib32/", "/lib64/", "/libx32/", "/usr/lib/", "/usr/lib32/",
                    "/usr/lib64/", "/usr/libx32/", "/usr/local/lib/")  # fmt: skip


def moved_loads(mine: dict[str, Any], ref: dict[str, Any]) -> list[str]:
    """Each shared library of the tree or the build a listed test loads (cxxgate/cells/
    loads.py) that is not the one file its links name for it: the links of the test's
    program and of each library it loads that is itself so named
    (cxxgate/cells/loads.py binds). A second copy of the library where the test's run
    looks first (its LD_LIBRARY_PATH, a RUNPATH entry, a library's soname changed to a
    twin's name: red-team rounds 16 to 20) is found by the loader and named by no link.
    The library moved or rebuilt (`LIBRARY_OUTPUT_DIRECTORY`, a new source, a version)
    is still the file its dependant's link names. It must also be the file the test's
    program loads run from `/` without the test's environment, when that run finds one,
    as another program of the project's would (a RUNPATH entry relative to the tests'
    folder: round 21's `bound_rel`), and the only version of its name in the folders the
    tests' loader searches (a twin linked into the tests alone: `prog_twin`). A test of
    the reference that loads a file otherwise (a plugin folder of its own) may load that
    file here too. A library from outside the tree and the build is the reference's, or
    a new one from the system's folders. A filter a loaded file names that the
    reference's do not is a library whose symbols the loader takes first (round 19's
    `aux_filter`)."""
    found = []
    theirs: dict[str, dict[str, str]] = ref.get("loads", {})
    for test, loads in sorted(mine.get("loads", {}).items()):
        bound, was_bound = _bound(mine, test), _bound(ref, test)
        neutral = mine.get("neutral", {}).get(test, {})
        was_neutral = ref.get("neutral", {}).get(test, {})
        for name, path in sorted(loads.items()):
            was = theirs.get(test, {}).get(name)
            said = f"the reference's from {was}" if was else f"the reference's loads no {name}"
            if not path.startswith(("<build>/", "<tree>/")):
                system = path.startswith((*SYSTEM_LIBRARIES, "not found"))
                if was != path and (was is not None or not system):
                    found.append(f"{test} loads {name} from {path}, {said}")
                continue
            # The reference's own run loads it so too: its plugin folder, say.
            quirk = path == was
            files = bound.get(name, set())
            if files != {path} and not (quirk and was not in was_bound.get(name, set())):
                named = " and ".join(sorted(files)) or "no file of that name"
                found.append(f"{test} loads {name} from {path}, its links name {named}; {said}")
            # Found nowhere from `/` (a project whose tests find their libraries only through
            # LD_LIBRARY_PATH: round 22's honest `env_split`) is no other file.
            elsewhere = neutral.get(name, "not found")
            theirs_too = quirk and was_neutral.get(name) != was
            if elsewhere not in (path, "not found") and not theirs_too:
                found.append(f"{test} loads {name} from {path}; run from / without its "
                             f"environment, its program loads {elsewhere}")  # fmt: skip
    names = {n for loads in mine.get("loads", {}).values() for n in loads}
    for name in sorted(names):
        files = mine.get("versions", {}).get(name, [])
        if len(files) > max(1, len(ref.get("versions", {}).get(name, []))):
            found.append(f"the tests' loader finds {len(files)} different files named "
                         f"{name}: {', '.join(files[:4])}")  # fmt: skip
    ref_filters: dict[str, list[str]] = ref.get("filters", {})
    for test, filters in sorted(mine.get("filters", {}).items()):
        for said in sorted(set(filters) - set(ref_filters.get(test, []))):
            found.append(f"{test} loads {said}, which the reference's do not name")
    return found


def _bound(graph: dict[str, Any], test: str) -> dict[str, set[str]]:
    """Name -> the files the links `test` is made of name for it: its program's link,
    then the link of each file it loads under a name so bound (cxxgate/cells/loads.py
    binds), until no new file is bound."""
    binds: dict[str, list[list[str]]] = graph.get("binds", {})
    loads: dict[str, str] = graph.get("loads", {}).get(test, {})
    todo = [graph.get("runs", {}).get(test, "")]
    bound: dict[str, set[str]] = {}
    done: set[str] = set()
    while todo:
        linked = todo.pop()
        if linked in done:
            continue
        done.add(linked)
        for file, name in binds.get(linked, []):
            bound.setdefault(name, set()).add(file)
        todo += [p for n, p in loads.items() if p in bound.get(n, set()) and p not in done]
    return bound


def new_reads(mine: dict[str, Any], ref: dict[str, Any], folders: list[str]) -> list[str]:
    """Each test unit of both builds whose compile read a file of the tests' folders (own
    and helper: the reference's there, so a file only the patch added) that the
    reference's compile of it did not read: a header beside the tests that a library
    header picks up by `__has_include` (red-team round 18), found on the tests' include
    path alone."""
    found = []
    theirs: dict[str, list[str]] = ref.get("reads", {})
    for source, reads in sorted(mine.get("reads", {}).items()):
        if source not in theirs:
            continue  # a unit of the patch's own: what it reads is its own
        new = sorted(set(reads) - set(theirs[source]))
        inside = [p for p in new if any(p.startswith(f"<tree>/{f}/") for f in folders)]
        if inside:
            said = ", ".join(inside[:4])
            found.append(f"{source} reads {said}, which the reference's compile of it did not")
    return found
