"""The tests' helpers outside their own folders, as the reference's build shows them.

cxxgate/cells/testfolders.py gives a candidate's build the folders of the test files as
the reference has them. A helper every test program links can live elsewhere (a
`testutil/` beside `tests/`, a vendored `third_party/googletest/`): a patch that edits it
changes what the tests are as much as an edit in `tests/` does (a hook symbol only the
tests define, a start-up patch of the library's code: red-team round 14's
`sibling_nostoi`). A helper folder is the outermost folder that

- is named for tests (its name holds `test`: testutil, test_support, googletest);
- holds a file only the tests' products are compiled from (the source, or a header its
  dependency file names), where a product is the tests' when every product that names it
  is a test program (a link naming a test unit's object) or the tests' itself;
- holds no file a compile of any other product reads (the library linked into a tool,
  an example), and no code the reference patch changes (its data and CMake code may
  change: testfiles.own_folders' rule).

A candidate's build takes each helper folder from the reference tree as it takes the
tests' own (testfolders.restore, with what `stays`). The name is the reference's, so a
patch cannot choose it; it is asked because the graph alone cannot tell the library
from the tests' helpers: a library that only the test programs link (most projects'
tests are its only programs) is the tests' by the graph too. A helper folder under a name
without `test` stays the patch's (README, threat model); a file a patch adds there needs
CMake code to be built, and the test programs the crossed proof links by the reference's
commands do not hold it (cxxgate/cells/crossed.py).

The graph is the reference's build folder as Ninja has it (`ninja -t compdb`, `ninja -t
deps`), read by cxxgate/cells/cmake.py before the candidate's tree is made.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Iterable
from pathlib import PurePosixPath

from cxxgate.cells import testfolders

_OBJECT = (".o", ".obj")
# The step of a candidate's cmake cell that says which helper folders its build took from
# the reference tree and what of the patch's it set aside there: {"folders", "set_aside"}.
STEP = "test helpers"


def deps(text: str) -> dict[str, list[str]]:
    """`ninja -t deps` output: product -> the files its dependency file names."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if not line.strip():
            current = None
        elif not line[0].isspace() and ": #deps" in line:
            current = found.setdefault(line.split(": #deps", 1)[0], [])
        elif current is not None:
            current.append(line.strip())
    return found


def helper_folders(
    db: list[dict[str, object]],
    reads: dict[str, list[str]],
    tree_at: str,
    build_at: str,
    test_dirs: list[str],
    fixed: list[str],
    skip: list[str],
) -> list[str]:
    """The helper folders of a build (`db`: `ninja -t compdb` entries, `reads`: deps), its
    tree and build folders as spelt there; `fixed`: the reference patch's files, `skip`:
    the folders already restored (the tests' own). Sorted, tree-relative."""
    sources: dict[str, str] = {}  # object -> tree-relative source ("" outside the tree)
    names: dict[str, set[str]] = {}  # product -> the products its command names
    for entry in db:
        output = _product(str(entry.get("output", "")), build_at)
        if not output:
            continue
        if output.endswith(_OBJECT):
            directory = str(entry.get("directory", build_at))
            sources[output] = _in_tree(str(entry.get("file", "")), directory, tree_at)
        else:
            names[output] = {_product(w, build_at) for w in _words(entry)} - {output, ""}
    products = set(sources) | set(names)
    named_by: dict[str, set[str]] = {}
    for output, named in names.items():
        for word in named & products:
            named_by.setdefault(word, set()).add(output)
    units = {o for o, s in sources.items() if s and any(_under(s, d) for d in test_dirs)}
    tested = {p for p, named in names.items() if not p.endswith(".a") and named & units}
    theirs = _tests_own(tested, named_by)
    library: set[str] = set()
    only: set[str] = set()
    for obj, source in sources.items():
        read = {source} | {_in_tree(p, build_at, tree_at) for p in reads.get(obj, [])}
        (only if obj in theirs else library).update(read - {""})
    only -= library
    code_fixed = [f for f in fixed if not testfolders.not_code(f)]
    folders: set[str] = set()
    for rel in sorted(only):
        if any(_under(rel, d) for d in (*skip, *folders)):
            continue
        parts = PurePosixPath(rel).parts[:-1]
        for depth in range(1, len(parts) + 1):
            top = "/".join(parts[:depth])
            named = "test" in parts[depth - 1].lower()
            if named and not _holds(top, library) and not _holds(top, code_fixed):
                folders.add(top)
                break
    return sorted(folders)


def _tests_own(tested: set[str], named_by: dict[str, set[str]]) -> set[str]:
    """The products every product naming them is a test program or the tests' own."""
    theirs = set(tested)
    grew = True
    while grew:
        grew = False
        for product, by in named_by.items():
            if product not in theirs and by <= theirs:
                theirs.add(product)
                grew = True
    return theirs - tested


def _words(entry: dict[str, object]) -> list[str]:
    command = str(entry.get("command", ""))
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _product(word: str, build_at: str) -> str:
    """A word of a command as a build-relative product path ("" for an option)."""
    if not word or word.startswith("-"):
        return ""
    if PurePosixPath(word).is_absolute():
        if not PurePosixPath(word).is_relative_to(build_at):
            return ""
        word = PurePosixPath(word).relative_to(build_at).as_posix()
    return posixpath.normpath(word)


def _in_tree(path: str, directory: str, tree_at: str) -> str:
    """A file a compile read, tree-relative ("" outside the tree)."""
    full = PurePosixPath(posixpath.normpath(posixpath.join(directory, path)))
    return full.relative_to(tree_at).as_posix() if full.is_relative_to(tree_at) else ""


def _under(rel: str, folder: str) -> bool:
    return rel.startswith(f"{folder}/")


def _holds(folder: str, files: Iterable[str]) -> bool:
    return any(_under(f, folder) for f in files)
