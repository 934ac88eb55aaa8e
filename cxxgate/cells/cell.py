"""Cells: the one place a cell is built (compile, link) from its spec.

A cell is (tree, translation units, envelope) -> diagnostics and maybe a binary. Its key
covers everything that changes those bytes, so a cell is built once and shared by every
gate and patch that asks for the same key. A compile error is a result, not a failure.
What a cell is lives in cxxgate/toolchain/cellspec.py; how a tool is called, in
cxxgate/toolchain/toolcall.py; the library kinds are built by cxxgate/cells/libcell.py.

Programs and libraries are linked from objects. Each translation unit is an `object` cell
of its own (keyed by the tree, the unit or tree path, the envelope and flags; the harness
entry, which reads no tree, by the envelope alone), built by whichever cell asks first
(`ensure`, under a file lock) and adopted across trees by what it read (cxxgate/cells/reuse.py).
The tree's library sources are an `objects` cell: a task the linking cells wait for. A
linking cell's result carries its objects' compile steps, in the order it always listed
them, so gates read a compile error as they did when each program compiled everything.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from cxxgate.cells import cmake, ctest, libcell, premain, preprocessed, reuse
from cxxgate.store.layout import Layout
from cxxgate.toolchain import toolcall
from cxxgate.toolchain.cellspec import (
    CXX_SUFFIXES,
    ENTRY_SOURCE,
    ENTRY_SYMBOL,
    ENTRY_UNIT,
    GCOV_FLAGS,
    HARNESS_SOURCES,
    LIBRARY_KINDS,
    NO_TREE,
    PROJECT_KINDS,
    CellResult,
    CellSpec,
    CellStatus,
    Step,
    Unit,
    result_path,
)
from cxxgate.util import atomic

# Where the unit defines main: the harness puts `#undef main` in front of it, so a macro
# from a patched header cannot swap in a main of its own.
_MAIN_DEFINITION = re.compile(r"^[ \t]*(?:int|auto)\s+main\s*\(", re.M)


def build(spec: CellSpec, layout: Layout) -> CellResult:
    """Compile (and for the linking kinds, link) the cell; write and return its result."""
    key = spec.key
    out = layout.cell(key)
    out.mkdir(parents=True, exist_ok=True)
    # Built again (after a kill, `doit forget`): while its products are rewritten it has no
    # result, so no reader (reuse, the next run) pairs an old result with a half-made binary.
    result_path(layout, key).unlink(missing_ok=True)
    tree = layout.tree(spec.tree_key)
    tc = spec.envelope.toolchain

    def done(
        status: CellStatus,
        detail: str,
        steps: list[Step],
        binary: str | None,
        parts: list[str] | None = None,
        reads: list[str] | None = None,
        scanned: tuple[list[str], list[preprocessed.Control]] | None = None,
        host_bound: bool = False,
    ) -> CellResult:
        result = CellResult(
            key=key,
            kind=spec.kind,
            label=spec.label,
            status=status,
            detail=detail,
            envelope=f"{spec.envelope.name}@{spec.envelope.std}",
            toolchain=f"{tc.name}: {tc.version}",
            tree_root=str(tree),
            steps=steps,
            binary=binary,
            entry=spec.entry,
            parts=parts or [],
            reads=reads,
            spec_key=spec.spec_key,
            controls=None if scanned is None else [asdict(c) for c in scanned[1]],
            scanned=[] if scanned is None else scanned[0],
            host_bound=host_bound,
        )
        atomic.write_text(result_path(layout, key), json.dumps(asdict(result), indent=1) + "\n")
        return result

    if spec.tree_key != NO_TREE and not _tree_applied(layout, spec.tree_key):
        return done("no_tree", "the patch did not produce a tree", [], None)
    if tc.path is None:
        return done(
            "toolchain_missing", f"compiler {tc.command!r} ({tc.name}) is not installed", [], None
        )
    units = list(spec.units)
    if spec.entry:
        units[0] = Unit(units[0].name, _undef_main(units[0].text))
    for unit in units:
        atomic.write_if_changed(out / unit.name, unit.text)
    if spec.kind == "objects":
        made = Linked([ensure(s, layout) for s in _source_objects(spec, tree)])
        steps = made.steps()
        return done(toolcall.status(steps), "", steps, None, made.keys(), made.reads())
    if spec.kind in LIBRARY_KINDS:
        objects: tuple[list[Step], list[str]] | None = None
        parts: list[str] = []
        if spec.kind in ("archive", "shared"):
            linked = _linked(spec, layout, tree, units)
            objects = (linked.steps(), linked.place(out))
            parts = linked.keys(spec)
        scanned: tuple[list[str], list[preprocessed.Control]] | None = (
            ([], []) if spec.kind == "consumer" else None
        )
        built = libcell.build(spec, layout, tree, out, objects, scanned)
        return done(*built, parts, scanned=scanned)
    if spec.kind == "cmake":
        built = cmake.build(spec, layout, tree, out)
        return done(*built, host_bound=cmake.host_bound(built))
    if spec.kind in PROJECT_KINDS:  # a run of a cmake cell's tests
        return done(*ctest.run_suite(spec, layout, out))
    if spec.tree_key != NO_TREE:
        earlier = reuse.lookup(layout, spec.spec_key, tree, key)
        if earlier is not None:
            return _adopt(layout, spec, earlier, tree, out)
    if spec.kind == "exe":
        linked = _linked(spec, layout, tree, units)
        status, detail, steps, binary = _link(layout, spec, linked, out)
        result = done(status, detail, steps, binary, linked.keys(spec), linked.reads())
    else:
        result = _compile(layout, spec, tree, units, out, done)
    if result.status != "timeout" and spec.tree_key != NO_TREE:
        reuse.record(layout, spec.spec_key, tree, result.reads, key)
    return result


def ensure(spec: CellSpec, layout: Layout) -> CellResult:
    """A cell others link (an object): its stored result, or built now. Built once, by the
    first that asks; the others wait on its lock (threads of one grade, or processes)."""
    if reuse.usable(layout, spec.key):
        return CellResult.load(result_path(layout, spec.key))
    folder = layout.cell(spec.key)
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if reuse.usable(layout, spec.key):
            return CellResult.load(result_path(layout, spec.key))
        return build(spec, layout)


def _compile(
    layout: Layout, spec: CellSpec, tree: Path, units: list[Unit], out: Path, done: Any
) -> CellResult:
    """A syntax cell (-fsyntax-only, each unit and tree source) or one object (-c)."""
    if spec.kind == "object":
        sources = [u.name for u in units] + [str(tree / s) for s in spec.tree_sources]
    else:
        sources = [u.name for u in units] + toolcall.resolve(tree, spec.tree_sources)
    argv = [*toolcall.compile_argv(spec, tree), *spec.extra_flags]
    steps: list[Step] = []
    depfiles = [out / f"tu{i}.d" for i in range(len(sources))]
    sees_tree = spec.tree_key != NO_TREE
    owner = preprocessed.tree_owner(tree)
    units_seen: list[str] = []
    found: list[preprocessed.Control] = []
    for src, dep in zip(sources, depfiles, strict=True):
        if spec.kind == "object":
            # The object is named by its key: under --coverage its .gcno and the runs'
            # .gcda take that name, unique among the objects a program links.
            what = ["-c", "-MD", "-MF", dep.name, src, "-o", f"{spec.key}.o"]
        else:
            what = ["-fsyntax-only", "-MD", "-MF", dep.name, src]
        steps.append(
            toolcall.call(
                layout, spec.key, "compile", src, [*argv, *what], out, spec, sees_tree=sees_tree
            )
        )
        if sees_tree:
            # What this unit really got from the tree's files, pragmas spelt out: the same
            # argv preprocessing only (not through ccache: ccache does not cache -E; a
            # record kept by what the compile read is taken instead, controlstore.py).
            unit = owner(str(out / src)) or src
            units_seen.append(unit)
            ok = steps[-1].exit == 0 and not steps[-1].timed_out
            reads = reuse.reads_of(tree, [dep]) if ok else None
            found += preprocessed.scan(layout, spec, argv, src, unit, out, owner, reads=reads)
    status = toolcall.status(steps)
    binary = None
    if spec.kind == "object" and status == "ok":
        binary = str(out / f"{spec.key}.o")
    reads = [] if spec.tree_key == NO_TREE else reuse.reads_of(tree, depfiles)
    scanned = (units_seen, found) if sees_tree else None
    result: CellResult = done(status, "", steps, binary, None, reads, scanned)
    return result


@dataclass(frozen=True)
class Linked:
    """The objects a cell links, in link order: the entry's (first: its `.preinit_array`
    hook runs first), its units', the tree's. `roles` says whose each is: `harness` (a
    file of the harness's, cellspec.HARNESS_SOURCES), `unit` (a grader unit with the tree's
    headers in it), `tree` (a file of the tree)."""

    cells: list[CellResult]
    roles: list[str] = field(default_factory=list)

    def steps(self) -> list[Step]:
        return [s for c in self.cells for s in c.steps]

    def keys(self, spec: CellSpec | None = None) -> list[str]:
        objects = spec.objects_cell if spec is not None else None
        return ([objects.key] if objects else []) + [c.key for c in self.cells]

    def reads(self) -> list[str] | None:
        read: set[str] = set()
        for cell in self.cells:
            if cell.reads is None:
                return None
            read.update(cell.reads)
        return sorted(read)

    def place(self, out: Path, *, rename: int | None = None) -> list[str]:
        """The objects in the linking cell's folder as tu<i>.o (links to the object cells'
        files; object `rename` a copy, as objcopy will rename its main), their coverage
        notes beside them under their own names. Nothing when one did not compile."""
        if any(c.status != "ok" or c.binary is None for c in self.cells):
            return []
        names = []
        for i, cell in enumerate(self.cells):
            assert cell.binary is not None
            made, name = Path(cell.binary), f"tu{i}.o"
            (out / name).unlink(missing_ok=True)
            if i == rename:
                shutil.copyfile(made, out / name)  # objcopy may write through a hard link
            else:
                os.link(made, out / name)
            for note in made.parent.glob(f"{made.stem}.gcno"):
                shutil.copyfile(note, out / note.name)
            names.append(name)
        return names


def _linked(spec: CellSpec, layout: Layout, tree: Path, units: list[Unit]) -> Linked:
    """Every object the cell links, each built (or adopted) once, whoever asks."""
    own: list[CellSpec] = []
    roles: list[str] = []
    if spec.entry:
        # The entry includes nothing (templates/entry/entry.cpp): no tree, one per envelope.
        # In a coverage build it resets the counts before the unit's main.
        entry = spec.object_cell(unit=Unit(ENTRY_UNIT, ENTRY_SOURCE.read_text()))
        gcov = ("-DCXXGATE_GCOV",) if GCOV_FLAGS & set(spec.envelope.flags) else ()
        own.append(replace(entry, tree_key=NO_TREE, include_dirs=(), extra_flags=gcov))
        roles.append("harness")
    harness_texts = {p.read_text() for p in HARNESS_SOURCES}
    for u in units:
        if spec.kind == "exe" or u.name.endswith(CXX_SUFFIXES):
            own.append(spec.object_cell(unit=u))
            roles.append("harness" if u.text in harness_texts else "unit")
    objects = spec.objects_cell
    if objects is not None:  # its task compiled them before this one ran
        sources = _source_objects(objects, tree)
        own += sources
        roles += ["tree"] * len(sources)
    return Linked([ensure(s, layout) for s in own], roles)


def _source_objects(spec: CellSpec, tree: Path) -> list[CellSpec]:
    """One object cell per library source the globs find in this tree."""
    paths = toolcall.resolve(tree, spec.tree_sources)
    return [spec.object_cell(source=Path(p).relative_to(tree).as_posix()) for p in paths]


def _link(layout: Layout, spec: CellSpec, linked: Linked, out: Path) -> libcell.Built:
    steps = linked.steps()
    if toolcall.status(steps) != "ok":
        return toolcall.status(steps), "", steps, None
    # With the entry, the unit whose main it calls comes right after it (see _linked).
    objects = linked.place(out, rename=1 if spec.entry else None)
    if spec.entry:
        refused = _before_harness(linked, out, objects, spec)
        if refused:
            return "premain_hook", "\n".join(refused), steps, None
        objcopy = shutil.which("objcopy")
        if objcopy is None:
            return "toolchain_missing", "objcopy (binutils) is not installed", steps, None
        rename = [objcopy, "--redefine-sym", f"main={ENTRY_SYMBOL}", objects[1]]
        steps.append(toolcall.call(layout, spec.key, "link", objects[1], rename, out, spec))
    env = spec.envelope
    assert env.toolchain.path is not None
    link = [env.toolchain.path, *env.flags, *env.link_flags, *objects, "-o", "a.out"]
    steps.append(toolcall.call(layout, spec.key, "link", "a.out", link, out, spec))
    status = toolcall.status(steps)
    if status == "ok" and spec.entry:
        refused = premain.program_problems(out / "a.out")
        if refused:
            return "premain_hook", "\n".join(refused), steps, None
    return status, "", steps, str(out / "a.out") if status == "ok" else None


def _before_harness(linked: Linked, out: Path, objects: list[str], spec: CellSpec) -> list[str]:
    """What in the objects that are not the harness's could run before its hooks or stand
    in for a library the harness calls (cxxgate/cells/premain.py), each named by the file it was
    compiled from."""
    toolchain = spec.envelope.toolchain
    assert toolchain.path is not None
    exports = premain.library_exports(toolchain.path, toolchain.binds)
    found: list[str] = []
    for cell, role, name in zip(linked.cells, linked.roles, objects, strict=True):
        if role == "harness":
            continue
        tree_code = role == "tree"
        problems = premain.object_problems(out / name, tree_code_only=tree_code, exports=exports)
        for problem in problems:
            found.append(f"{cell.label}: {problem.partition(': ')[2]}")
    return found


def _adopt(layout: Layout, spec: CellSpec, earlier: str, tree: Path, out: Path) -> CellResult:
    """This cell's result is an earlier cell's, compiled from a tree that agrees on every
    file it read: copy it, with that tree's paths turned into this tree's."""
    src = CellResult.load(result_path(layout, earlier))
    moves = ((src.tree_root, str(tree)), (str(layout.cell(earlier)), str(out)))

    def moved(text: str) -> str:
        for old, new in moves:
            text = text.replace(old, new)
        return text

    steps = [replace(s, argv=[moved(a) for a in s.argv], output=moved(s.output)) for s in src.steps]
    binary = None
    if src.binary is not None:
        binary = str(out / Path(src.binary).name)
        if Path(src.binary).resolve() != Path(binary).resolve():  # never a file onto itself
            shutil.copy2(src.binary, binary)
    for note in layout.cell(earlier).glob("*.gcno"):  # --coverage: gcov reads them here
        if note.parent.resolve() != out.resolve():
            shutil.copyfile(note, out / note.name)
    result = replace(
        src,
        key=spec.key,
        label=spec.label,
        tree_root=str(tree),
        steps=steps,
        binary=binary,
        reused_from=src.reused_from or earlier,
    )
    atomic.write_text(result_path(layout, spec.key), json.dumps(asdict(result), indent=1) + "\n")
    return result


def _undef_main(text: str) -> str:
    """`#undef main` just before the unit's main, and `#line` so its lines keep their numbers."""
    m = _MAIN_DEFINITION.search(text)
    if m is None:
        return text  # no main: the link says so (undefined cxxgate_unit_main)
    line = text.count("\n", 0, m.start()) + 1
    return f"{text[: m.start()]}#undef main\n#line {line}\n{text[m.start() :]}"


def _tree_applied(layout: Layout, tree_key: str) -> bool:
    stamp = layout.tree_stamp(tree_key)
    data: dict[str, Any] = json.loads(stamp.read_text()) if stamp.exists() else {}
    return bool(data.get("applied"))
