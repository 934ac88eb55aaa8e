"""The tests' helpers outside their own folders, as the reference's build shows them.

cxxgate/cells/testfolders.py gives a candidate's build the folders of the test files as
the reference has them. A helper every test program links can live elsewhere (a
`testutil/` beside `tests/`, a vendored `third_party/googletest/`): a patch that edits it
changes what the tests are as much as an edit in `tests/` does (a hook symbol only the
tests define, a start-up patch of the library's code: red-team round 14's
`sibling_nostoi`). A helper folder is the outermost folder that

- is named for tests (a word of its name is one: testutil, test_support, googletest,
  SelfTest; not fastest);
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
with no word for tests stays the patch's (README, threat model); a file a patch adds there needs
CMake code to be built, and the test programs the crossed proof links by the reference's
commands do not hold it (cxxgate/cells/crossed.py).

The graph is the reference's build folder as Ninja has it (`ninja -t compdb`, `ninja -t
deps`), read by cxxgate/cells/cmake.py before the candidate's tree is made.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from cxxgate.cells import testfolders

_OBJECT = (".o", ".obj")


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


@dataclass(frozen=True)
class Graph:
    """A build as Ninja has it: `db` its `ninja -t compdb` entries, `reads` its deps (as
    `deps` reads them), its tree and build folders as spelt there."""

    db: list[dict[str, object]]
    reads: dict[str, list[str]]
    tree_at: str
    build_at: str

    def _sources(self) -> dict[str, str]:
        """object -> tree-relative source ("" outside the tree)."""
        found = {}
        for entry in self.db:
            output = _product(str(entry.get("output", "")), self.build_at)
            if output.endswith(_OBJECT):
                directory = str(entry.get("directory", self.build_at))
                found[output] = _in_tree(str(entry.get("file", "")), directory, self.tree_at)
        return found

    def included_names(self, folders: list[str]) -> set[str]:
        """The names of the tree's and the build's files that the compiles of sources in
        `folders` (the restored ones: the tests' own and helper folders) read but their own
        sources: what a file added there could stand in for (a header beside a test, a
        source a test includes, a header the build generates). The library's compiles
        are not asked, though only the tests link it: a new helper may share a name with a
        library header (red-team round 19's `tests/util.hpp` beside `src/util.hpp`), and
        a test compile that read a file added in the tests' folders instead of the one it
        read in the reference's build is `test_reads` (gates/tests/testunits.py). A system
        header's name is not one (a file that shadows one: gates/tests/testfiles.py); a
        compile the build did not run (EXCLUDE_FROM_ALL) read nothing."""
        names: set[str] = set()
        for obj, source in self._sources().items():
            if not any(_under(source, f) for f in folders):
                continue
            for path in self.reads.get(obj, []):
                full = posixpath.normpath(posixpath.join(self.build_at, path))
                inside = _in_tree(path, self.build_at, self.tree_at)
                if inside != source and (inside or full.startswith(f"{self.build_at}/")):
                    names.add(PurePosixPath(full).name)
        return names

    def build_reads(self) -> set[str]:
        """The tree's files the build reads: what any compile read, what a link names (a
        linker script), and what a command names whose output the build reads on (a
        generator's input, and its own generator's). A command whose output no compile or
        link reads (a copy of a test's input into the build folder, a link's POST_BUILD
        step) is the tests' staging, not the build's: red-team round 19 fixed test
        inputs that the reference's build copies."""
        sources = self._sources()
        found: set[str] = set()
        needed: set[str] = set()  # build-relative: what compiles and links read
        for obj, source in sources.items():
            read = self.reads.get(obj, [])
            found |= {source} | {_in_tree(p, self.build_at, self.tree_at) for p in read}
            needed |= {_product(posixpath.join(self.build_at, p), self.build_at) for p in read}
        waiting: dict[str, list[tuple[str, list[str]]]] = {}  # output -> its command's words
        for entry in self.db:
            output = _product(str(entry.get("output", "")), self.build_at)
            if output in sources:
                continue
            at = str(entry.get("directory", self.build_at))
            parts = _segments(_words(entry))
            links = [w for part in parts if _names_object(part) for w in part]
            if links:  # a link or an archive: the part that writes it, not POST_BUILD's
                found |= {_in_tree(w, at, self.tree_at) for w in links if w[:1] != "-"}
                needed |= {_product(w, self.build_at) for w in links}
            else:
                waiting.setdefault(output, []).append((at, [w for p in parts for w in p]))
        grew = True
        while grew:
            grew = False
            for output in [o for o in waiting if o in needed]:
                for at, words in waiting.pop(output):
                    found |= {_in_tree(w, at, self.tree_at) for w in words if w[:1] != "-"}
                    needed |= {_product(w, self.build_at) for w in words}
                grew = True
        return found - {""}

    def named_by_compiles(self, restored: list[str]) -> set[str]:
        """The tree's files the command of a compile of a source outside `restored` names,
        a macro's value too (`-DCALC_TABLE="<tree>/data/empty.cfg"`): a table the library
        reads at run time by a path it is compiled with is the library's, not the tests'
        data (red-team round 20's honest `table_fix`). Asked of the reference's build."""
        named = re.compile(re.escape(self.tree_at) + r"/[^\s\"';,)]+")
        sources = self._sources()
        found: set[str] = set()
        for entry in self.db:
            output = _product(str(entry.get("output", "")), self.build_at)
            source = sources.get(output)
            if source is None or any(_under(source, f) for f in restored):
                continue
            for word in _words(entry):
                found |= {_in_tree(m, self.tree_at, self.tree_at) for m in named.findall(word)}
        return found - {""}

    def helper_folders(self, test_dirs: list[str], fixed: list[str], skip: list[str]) -> list[str]:
        """The helper folders, sorted, tree-relative; `fixed`: the reference patch's files,
        `skip`: the folders already restored (the tests' own)."""
        only, library = self.reads_by(test_dirs)
        return _named_for_tests(only - library, library, fixed, skip)

    def reads_by(self, test_dirs: list[str]) -> tuple[set[str], set[str]]:
        """The tree files (tree-relative) the compiles of the tests' own products read, and
        those the compiles of every other product read."""
        sources = self._sources()
        names: dict[str, set[str]] = {}  # product -> the products its command names
        for entry in self.db:
            output = _product(str(entry.get("output", "")), self.build_at)
            if output and output not in sources:
                named = {_product(w, self.build_at) for w in _words(entry)}
                names[output] = named - {output, ""}
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
            read = {_in_tree(p, self.build_at, self.tree_at) for p in self.reads.get(obj, [])}
            (only if obj in theirs else library).update((read | {source}) - {""})
        return only, library


def _named_for_tests(
    only: set[str], library: set[str], fixed: list[str], skip: list[str]
) -> list[str]:
    """The outermost folders named for tests that hold a file of `only`, none of
    `library` and no code of `fixed`."""
    code_fixed = [f for f in fixed if not testfolders.not_code(f)]
    folders: set[str] = set()
    for rel in sorted(only):
        if any(_under(rel, d) for d in (*skip, *folders)):
            continue
        parts = PurePosixPath(rel).parts[:-1]
        for depth in range(1, len(parts) + 1):
            top = "/".join(parts[:depth])
            named = named_for_tests(parts[depth - 1])
            if named and not _holds(top, library) and not _holds(top, code_fixed):
                folders.add(top)
                break
    return sorted(folders)


def named_for_tests(name: str) -> bool:
    """A folder name with a word for tests: test, tests, testing, testutil, test_support,
    unittests, googletest, SelfTest; not fastest, latest or contest."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)  # SelfTest: self, test
    words = re.findall(r"[a-z0-9]+", spaced.lower())
    return any(w.startswith("test") or w.endswith(_TEST_ENDINGS) for w in words)


# Words that end a name for tests: unittests, googletest, selftest, gtest.
_TEST_ENDINGS = ("unittest", "unittests", "googletest", "selftest", "gtest", "tests")


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


def _segments(words: list[str]) -> list[list[str]]:
    """A command's words, split where the shell runs the next command."""
    parts: list[list[str]] = [[]]
    for word in words:
        if word in ("&&", "||", ";", "|"):
            parts.append([])
        else:
            parts[-1].append(word)
    return [p for p in parts if p]


def _names_object(words: list[str]) -> bool:
    return any(w.endswith(_OBJECT) for w in words)


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
