"""Library cells: build what a patch ships the way someone outside the tree receives it.

Kinds (called from cxxgate/cells/cell.py, which owns keys, statuses and the result file):

| kind     | builds                                                                   |
| -------- | ------------------------------------------------------------------------ |
| archive  | the case's library sources -> objects -> `lib<product>.a`; `nm` as evidence |
| shared   | the same sources, pinned flags (-fPIC, hidden visibility, soname) -> `.so`;  |
|          | its dynamic exports (pyelftools) with demangled names -> exports.json      |
| consumer | a fresh folder holding only the published headers and the archive (its    |
|          | `needs`); the consumer compiled with `-Iinclude` only, linked `-l<product>` |
| abidiff  | `abidiff` between two `shared` cells (reference, candidate): a report      |

Units whose names end in a C++ suffix are translation units; any other unit (a linker
version script) is a data file written beside them in the cell folder. The archive and
the shared object link objects cxxgate/cells/cell.py made (object cells, shared with every
program of the same tree, envelope and flags); this module gets their compile steps and
their names in the cell folder.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from cxxgate.cells import preprocessed
from cxxgate.store.layout import Layout
from cxxgate.toolchain import elf, toolcall
from cxxgate.toolchain.cellspec import (
    CXX_SUFFIXES,
    CellResult,
    CellSpec,
    CellStatus,
    Step,
    result_path,
)
from cxxgate.toolchain.diagnostics import telling_line
from cxxgate.toolchain.tools import tool_path
from cxxgate.util import atomic

Built = tuple[CellStatus, str, list[Step], str | None]
# The objects an archive or shared object links: their compile steps, and their names in
# the cell folder (none when one did not compile).
Objects = tuple[list[Step], list[str]]


# A consumer's scanned units and the control lines their preprocessed output held from
# the published headers (cxxgate/cells/preprocessed.py), filled in by the build.
Scanned = tuple[list[str], list[preprocessed.Control]]


def build(
    spec: CellSpec,
    layout: Layout,
    tree: Path,
    out: Path,
    objects: Objects | None = None,
    scanned: Scanned | None = None,
) -> Built:
    if spec.kind in ("archive", "shared"):
        if objects is None:
            msg = f"cxxgate/cells/libcell.py: a {spec.kind} cell links objects, and was given none"
            raise ValueError(msg)
        build_library = _archive if spec.kind == "archive" else _shared
        return build_library(spec, layout, objects, out)
    if spec.kind == "consumer":
        return _consumer(spec, layout, tree, out, scanned if scanned is not None else ([], []))
    if spec.kind == "abidiff":
        return _abidiff(spec, layout, out)
    msg = f"cxxgate/cells/libcell.py: no builder for cell kind {spec.kind!r}"
    raise ValueError(msg)


def _archive(spec: CellSpec, layout: Layout, made: Objects, out: Path) -> Built:
    steps, objects = list(made[0]), made[1]
    if not steps:
        return "compile_error", f"no library source matches {list(spec.tree_sources)}", [], None
    if toolcall.status(steps) != "ok":
        return toolcall.status(steps), "", steps, None
    ar, nm = tool_path("ar"), tool_path("nm")
    if ar is None or nm is None:
        return "toolchain_missing", "binutils (ar, nm) is not installed", steps, None
    lib = f"lib{spec.product}.a"
    (out / lib).unlink(missing_ok=True)  # `ar r` would add to a stale archive
    steps.append(
        toolcall.tool_call(layout, spec, "archive", lib, [ar, "rcs", lib, *objects], out, read=[])
    )
    if steps[-1].exit != 0:
        return "link_error", "ar could not write the archive", steps, None
    # Evidence for reviewers: which member defines what (demangled; the link log is too).
    steps.append(
        toolcall.tool_call(
            layout,
            spec,
            "inspect",
            lib,
            [nm, "-A", "-g", "--defined-only", "-C", lib],
            out,
            read=[],
        )
    )
    return "ok", "", steps, str(out / lib)


def _shared(spec: CellSpec, layout: Layout, made: Objects, out: Path) -> Built:
    steps, objects = list(made[0]), made[1]
    if not steps:
        return "compile_error", f"no library source matches {list(spec.tree_sources)}", [], None
    if toolcall.status(steps) != "ok":
        return toolcall.status(steps), "", steps, None
    env = spec.envelope
    assert env.toolchain.path is not None
    lib = f"lib{spec.product}.so"
    link = [
        env.toolchain.path,
        *env.flags,
        *env.link_flags,
        "-shared",
        *spec.link_args,
        *objects,
        "-o",
        lib,
    ]
    steps.append(toolcall.call(layout, spec.key, "link", lib, link, out, spec))
    if toolcall.status(steps) != "ok":
        return toolcall.status(steps), telling_line(steps[-1]), steps, None
    exports = elf.dynamic_exports(out / lib)
    cxxfilt = tool_path("c++filt")
    if cxxfilt is not None and exports:
        names = "".join(f"{e.name}\n" for e in exports)
        step = toolcall.tool_call(
            layout, spec, "inspect", lib, [cxxfilt], out, read=[], stdin=names
        )
        steps.append(step)
        shown = step.output.splitlines()
        if step.exit == 0 and len(shown) >= len(exports):
            exports = [elf.Export(e.name, e.kind, d) for e, d in zip(exports, shown, strict=False)]
    elf.save(exports, out)
    return "ok", f"{len(exports)} dynamic exports", steps, str(out / lib)


def _consumer(spec: CellSpec, layout: Layout, tree: Path, out: Path, scanned: Scanned) -> Built:
    archive = _needed(layout, spec, 0)
    if archive.status != "ok" or archive.binary is None:
        return "needs_failed", f"the library archive did not build ({archive.status})", [], None
    # The stranger's folder: published headers and the archive, nothing else of the tree.
    stranger = out / "stranger"
    shutil.rmtree(stranger, ignore_errors=True)
    (stranger / "lib").mkdir(parents=True)
    (stranger / "include").mkdir()
    unpublished = []
    for tree_path, include in spec.publish:
        source = tree / tree_path
        if not _regular_file(tree, source):
            unpublished.append(tree_path)
            continue
        dest = stranger / "include" / include
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest, follow_symlinks=False)
    shutil.copyfile(archive.binary, stranger / "lib" / f"lib{spec.product}.a")
    base = [*toolcall.compile_argv(spec, tree), *spec.extra_flags, "-Iinclude"]
    # The published copies are the tree's files: their control lines count as the tree's.
    owner = preprocessed.tree_owner(
        tree, [(stranger / "include" / inc, rel) for rel, inc in spec.publish]
    )
    steps: list[Step] = []
    objects = []
    for i, unit in enumerate(u for u in spec.units if u.name.endswith(CXX_SUFFIXES)):
        atomic.write_if_changed(stranger / unit.name, unit.text)
        obj = f"consumer{i}.o"
        objects.append(obj)
        argv = [*base, "-c", unit.name, "-o", obj]
        # A stranger does not see the tree: only the published headers and the archive.
        steps.append(
            toolcall.call(
                layout, spec.key, "compile", unit.name, argv, stranger, spec, sees_tree=False
            )
        )
        scanned[0].append(unit.name)
        scanned[1].extend(
            preprocessed.scan(
                layout, spec, base, unit.name, unit.name, stranger, owner, sees_tree=False
            )
        )
    detail = f"public header(s) not in the tree: {unpublished}" if unpublished else ""
    if toolcall.status(steps) != "ok":
        return toolcall.status(steps), detail, steps, None
    env = spec.envelope
    assert env.toolchain.path is not None
    link = [env.toolchain.path, *env.flags, *env.link_flags, *objects]
    link += ["-Llib", f"-l{spec.product}", *spec.link_args, "-o", "consumer"]
    steps.append(
        toolcall.call(layout, spec.key, "link", "consumer", link, stranger, spec, sees_tree=False)
    )
    status = toolcall.status(steps)
    if status != "ok":
        return status, detail or telling_line(steps[-1]), steps, None
    return "ok", detail, steps, str(stranger / "consumer")


def _regular_file(tree: Path, path: Path) -> bool:
    """A regular file inside the tree, read without following a link: the consumer's
    folder lies outside the tree, and a link there would publish the host file it names."""
    try:
        regular = stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
    return regular and path.resolve().is_relative_to(tree.resolve())


def _abidiff(spec: CellSpec, layout: Layout, out: Path) -> Built:
    abidiff = tool_path("abidiff")
    if abidiff is None:
        return (
            "toolchain_missing",
            "abidiff (Debian package abigail-tools) is not installed",
            [],
            None,
        )
    old, new = _needed(layout, spec, 0), _needed(layout, spec, 1)
    for which, cell in (("reference", old), ("candidate", new)):
        if cell.status != "ok" or cell.binary is None:
            return (
                "needs_failed",
                f"the {which} shared object did not build ({cell.status})",
                [],
                None,
            )
    assert old.binary is not None and new.binary is not None
    step = toolcall.tool_call(
        layout,
        spec,
        "compare",
        Path(new.binary).name,
        [abidiff, old.binary, new.binary],
        out,
        read=[Path(old.binary).parent, Path(new.binary).parent],
    )
    # abidiff's exit status is a bit field: 1 error, 2 usage error, 4 ABI change, 8 incompatible.
    if step.timed_out or step.exit is None or step.exit & 3:
        return "tool_error", f"abidiff failed (exit {step.exit})", [step], None
    return "ok", f"abidiff exit {step.exit}", [step], None


def _needed(layout: Layout, spec: CellSpec, i: int) -> CellResult:
    if len(spec.needs) <= i:
        msg = (
            f"cxxgate/cells/libcell.py: a {spec.kind} cell needs {i + 1} cell(s), "
            f"got {spec.needs}"
        )
        raise ValueError(msg)
    return CellResult.load(result_path(layout, spec.needs[i]))
