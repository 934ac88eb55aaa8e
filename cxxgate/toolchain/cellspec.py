"""Cells as data: what a cell is asked to build (CellSpec, and its content key) and what
it built (CellResult, with one Step per tool call). cxxgate/cells/cell.py builds them; gates
plan them and read them; nothing here compiles.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from cxxgate.store import codehash
from cxxgate.store.layout import Layout
from cxxgate.toolchain import ccache, tools
from cxxgate.toolchain.envelope import Envelope

CellKind = Literal[
    "syntax",
    "exe",
    "object",
    "objects",
    "archive",
    "shared",
    "consumer",
    "abidiff",
    "cmake",
    "ctest",
    "crossed",
]
CellStatus = Literal[
    "ok",
    "compile_error",
    "link_error",
    "timeout",
    "no_tree",
    "toolchain_missing",
    "harness_error",
    "premain_hook",  # a candidate object holds code that runs before the harness's (premain.py)
    "needs_failed",  # a cell this one builds on (its `needs`) did not produce its product
    "tool_error",  # an inspection tool (abidiff) failed for its own reasons
]
# Kinds that build or inspect a library as a stranger would; cxxgate/cells/libcell.py builds them.
LIBRARY_KINDS = frozenset({"archive", "shared", "consumer", "abidiff"})
# A project's own build and test suite; cxxgate/cells/cmake.py builds them.
PROJECT_KINDS = frozenset({"cmake", "ctest", "crossed"})
# Kinds that link objects: each translation unit is an `object` cell of its own, and the
# tree's library sources are the `objects` cell they need (CellSpec.objects_cell), so a
# library source is compiled once per tree, envelope and flags, whoever links it.
LINKING_KINDS = frozenset({"exe", "archive", "shared"})
CXX_SUFFIXES = (".cpp", ".cc", ".cxx", ".c++")
# The tree key of an object that reads no tree (the harness entry): one per envelope.
NO_TREE = "no-tree"

# What a harness compile looks like from inside: units by one ordinary name, the tree and
# the build folder at neutral paths (-ffile-prefix-map: __FILE__, __BASE_FILE__,
# __builtin_FILE, debug info). A header must not be able to tell a probe from a build.
# Diagnostics and dependency files keep the real paths, so classification still works.
UNIT_NAME = "main.cpp"

# A program built with the harness entry (CellSpec.entry): its unit's `main` becomes this
# symbol, and templates/entry/entry.cpp calls it and reports the run's nonce (cxxgate/runs/run.py).
ENTRY_SOURCE = codehash.TEMPLATES / "entry" / "entry.cpp"
ENTRY_UNIT = "cxxgate_entry.cpp"
ENTRY_SYMBOL = "cxxgate_unit_main"
# The harness's own objects, known by their exact text: they include nothing (so no tree
# reaches them) and hold the `.preinit_array` hooks that take the nonces; every other
# object a program links is checked by cxxgate/cells/premain.py before the link.
HARNESS_SOURCES = (ENTRY_SOURCE, codehash.TEMPLATES / "metamorphic" / "report.cpp")
# A coverage build's entry resets the counts before the unit's main (templates/entry).
GCOV_FLAGS = frozenset({"--coverage", "-fprofile-arcs"})
# The modules whose code shapes what a compile produces: they enter every cell key.
COMPILE_CODE = (
    "toolchain.cellspec",
    "cells.cell",
    "cells.premain",
    "toolchain.toolcall",
    "host.process",
    "host.sandbox",
    "cells.reuse",
    "toolchain.projectflags",
    "toolchain.ccache",
    "toolchain.asmreads",
    "cells.preprocessed",
    "cells.controlstore",
)


@dataclass(frozen=True)
class Unit:
    """A translation unit the harness owns (probe, oracle, rendered template)."""

    name: str
    text: str


@dataclass(frozen=True)
class CellSpec:
    kind: CellKind
    tree_key: str
    units: tuple[Unit, ...]
    tree_sources: tuple[str, ...]  # globs under the tree, resolved after the patch applied
    include_dirs: tuple[str, ...]  # relative to the tree
    envelope: Envelope
    compile_seconds: float
    label: str = field(default="", compare=False)  # for humans; not part of the key
    # Library kinds only (cxxgate/cells/libcell.py); the defaults keep the older kinds' keys as
    # they were.
    needs: tuple[str, ...] = ()  # keys of cells whose products this one uses
    publish: tuple[tuple[str, str], ...] = ()  # (tree path, include path) a stranger sees
    extra_flags: tuple[str, ...] = ()  # pinned compile flags added to the envelope's
    link_args: tuple[str, ...] = ()  # pinned link arguments (soname, version script)
    product: str = ""  # the library's base name: lib<product>.a / lib<product>.so
    # exe only: units[0] is a program whose main the harness entry calls (see ENTRY_SOURCE).
    entry: bool = False
    # cmake/ctest only: build targets (configure options are extra_flags; ctest's are too).
    targets: tuple[str, ...] = ()
    # cmake/ctest only: folders seen read-only at their own paths, with their digests (a
    # case's build.data, cxxgate/intake/repo.py).
    data: tuple[tuple[str, str], ...] = ()
    # cmake only: the tree is the case's own (its reference or base tree), so its build's
    # commands may write the grade's shared compiler cache; any other tree's build only
    # reads it (cxxgate/cells/cmake.py). Not in the key, like `label`: it changes no
    # product, only whether this build's compiles are kept for other trees. A tree key is
    # its content (the case's tree and the patch's bytes), so a candidate whose patch is
    # the reference's has the reference's key, runs the reference's build commands and
    # is trusted as the reference is: trust follows the content, never the row's role.
    # A ctest cell so marked (the base tree's: gates/tests/tests.py) takes its test objects
    # as what their compiles make (cxxgate/cells/verified.py).
    trusted: bool = field(default=False, compare=False)

    @property
    def data_paths(self) -> list[Path]:
        return [Path(folder) for folder, _ in self.data]

    @cached_property  # specs are frozen; thousands of rows ask for the same key
    def key(self) -> str:
        blob = {"tree": self.tree_key, "spec": self.spec_key}
        return codehash.of_text(json.dumps(blob, sort_keys=True))[:24]

    @cached_property
    def spec_key(self) -> str:
        """Everything but the tree: what cxxgate/cells/reuse.py matches trees under."""
        blob: dict[str, Any] = {
            "kind": self.kind,
            "units": [(u.name, codehash.of_text(u.text)) for u in self.units],
            "tree_sources": self.tree_sources,
            "include_dirs": self.include_dirs,
            "envelope": self.envelope.id,
            "compile_seconds": self.compile_seconds,
            "code": codehash.of_modules(*COMPILE_CODE),
            "paths": ccache.view(),  # the tree at its path or at /src/project: see there
        }
        if self.entry:
            blob["entry"] = codehash.of_text(ENTRY_SOURCE.read_bytes())
        if self.needs and self.kind not in LIBRARY_KINDS:  # flags from a project build
            blob["needs"] = self.needs
        if self.kind in ("object", "objects"):
            blob["extra_flags"] = self.extra_flags
        if self.kind in LIBRARY_KINDS:
            blob["library"] = {
                "needs": self.needs,
                "publish": self.publish,
                "extra_flags": self.extra_flags,
                "link_args": self.link_args,
                "product": self.product,
                "tools": tools.tool_identities(self.kind),
            }
            blob["code"] = codehash.of_modules(
                *COMPILE_CODE, "cells.libcell", "toolchain.elf", "toolchain.tools"
            )
        if self.kind in PROJECT_KINDS:
            # The seed (needs) only saves work: an incremental build is the full build.
            blob["project"] = [self.extra_flags, self.targets, tools.tool_identities(self.kind)]
            if self.data:  # absent, the keys of cases without data stay as they were
                blob["data"] = self.data
            # A build by the code that can shape it, not the tests' run: a change to how a
            # suite is run or read keeps every tree's build (minutes each, on a real project).
            blob["code"] = [
                codehash.of_modules(*COMPILE_CODE),
                codehash.of_closure("cells.cmake" if self.kind == "cmake" else "cells.ctest"),
            ]
        return codehash.of_text(json.dumps(blob, sort_keys=True))[:24]

    @cached_property
    def objects_cell(self) -> CellSpec | None:
        """The cell compiling the tree's library sources this cell links, if it links any:
        a task of its own that this one waits for, shared by every cell with the same
        tree, sources, include folders, envelope and flags."""
        if self.kind not in LINKING_KINDS or not self.tree_sources:
            return None
        return CellSpec(
            kind="objects",
            tree_key=self.tree_key,
            units=(),
            tree_sources=self.tree_sources,
            include_dirs=self.include_dirs,
            envelope=self.envelope,
            compile_seconds=self.compile_seconds,
            label=f"objects {' '.join(self.tree_sources)}",
            extra_flags=self.extra_flags,
            needs=self.project_needs,
        )

    @property
    def project_needs(self) -> tuple[str, ...]:
        """What a linking cell's objects need too: a linking cell needs nothing but the
        `cmake` cells whose compile database gives a repository case's flags
        (cxxgate/toolchain/projectflags.py), and its objects must compile with those flags."""
        return self.needs if self.kind in LINKING_KINDS | {"objects"} else ()

    @property
    def prerequisites(self) -> tuple[str, ...]:
        """Keys of the cells whose results this one reads: its `needs`, its objects cell."""
        objects = self.objects_cell
        return self.needs if objects is None else (*self.needs, objects.key)

    def object_cell(self, unit: Unit | None = None, source: str = "") -> CellSpec:
        """One translation unit of this cell as an `object` cell: a unit of the harness's
        (compiled in the object's folder) or a tree path."""
        return CellSpec(
            kind="object",
            tree_key=self.tree_key,
            units=() if unit is None else (unit,),
            tree_sources=(source,) if source else (),
            include_dirs=self.include_dirs,
            envelope=self.envelope,
            compile_seconds=self.compile_seconds,
            label=f"object {unit.name if unit else source}",
            extra_flags=self.extra_flags,
            needs=self.project_needs,
        )


# "preprocess": a unit's -E for its diagnostic-control record (cxxgate/cells/preprocessed.py),
# or a test unit's -E -dM (cxxgate/cells/ctest.py), logged apart from its compile.
Phase = Literal[
    "compile", "link", "archive", "inspect", "compare", "configure", "build", "test", "preprocess"
]


@dataclass(frozen=True)
class Step:
    phase: Phase
    source: str
    argv: list[str]
    exit: int | None
    timed_out: bool
    seconds: float
    output: str  # the compiler's stderr: GCC JSON lines or plain text (inspect/compare: stdout)
    sandbox: str = "none"
    cache: str = ""  # ccache: "hit", "remote" (hit in remote storage), "miss"; "" not through it


@dataclass(frozen=True)
class CellResult:
    key: str
    kind: CellKind
    label: str
    status: CellStatus
    detail: str
    envelope: str
    toolchain: str
    tree_root: str
    steps: list[Step]
    binary: str | None
    reused_from: str = ""  # the cell whose compile this result is (cxxgate/cells/reuse.py)
    entry: bool = False  # linked with the harness entry: its runs report a nonce
    # Keys of the cells whose objects this one linked (objects and object cells): prune and
    # clean follow them.
    parts: list[str] = field(default_factory=list)
    # Tree paths the compile(s) read (dependency files), for cxxgate/cells/reuse.py; None: unknown.
    reads: list[str] | None = None
    # The spec key without the tree (CellSpec.spec_key): the verdict fold pairs a
    # candidate's cell with the reference tree's by it (cxxgate/cells/preprocessed.py).
    spec_key: str = ""
    # Syntax, object and consumer cells: the diagnostic-control lines each translation
    # unit's preprocessed output held from tree files ({unit, path, line, text}), and the
    # units scanned. None: a kind that does not scan (see cxxgate/cells/preprocessed.py).
    controls: list[dict[str, Any]] | None = None
    scanned: list[str] = field(default_factory=list)
    # Decided by the host, which the key does not hold (a CMake configure's failure,
    # cxxgate/cells/cmake.py `host_bound`): this run's word only, made again by the next
    # and never adopted by another cell.
    host_bound: bool = False

    @classmethod
    def load(cls, path: Path) -> CellResult:
        data = json.loads(path.read_text())
        data["steps"] = [Step(**s) for s in data["steps"]]
        return cls(**data)

    def compile_steps(self) -> list[Step]:
        return [s for s in self.steps if s.phase == "compile"]


def result_path(layout: Layout, key: str) -> Path:
    return layout.cell_result(key)
