"""Cells: the one place a cell is built (compile, link) from its spec.

A cell is (tree, translation units, envelope) -> diagnostics and maybe a binary. Its key
covers everything that changes those bytes, so a cell is built once and shared by every
gate and patch that asks for the same key. A compile error is a result, not a failure.
What a cell is lives in cxxgate/cellspec.py; how a tool is called, in cxxgate/toolcall.py;
the library kinds are built by cxxgate/libcell.py.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from cxxgate import atomic, libcell, reuse, toolcall
from cxxgate.cellspec import (
    ENTRY_SOURCE,
    ENTRY_SYMBOL,
    ENTRY_UNIT,
    LIBRARY_KINDS,
    CellResult,
    CellSpec,
    CellStatus,
    Step,
    Unit,
    result_path,
)
from cxxgate.layout import Layout

# Where the unit defines main: the harness puts `#undef main` in front of it, so a macro
# from a patched header cannot swap in a main of its own.
_MAIN_DEFINITION = re.compile(r"^[ \t]*(?:int|auto)\s+main\s*\(", re.M)


def build(spec: CellSpec, layout: Layout) -> CellResult:
    """Compile (and for `exe`, link) the cell; write and return its result."""
    key = spec.key
    out = layout.cell(key)
    out.mkdir(parents=True, exist_ok=True)
    # Built again (after a kill, `doit forget`): while its products are rewritten it has no
    # result, so no reader (reuse, the next run) pairs an old result with a half-made binary.
    result_path(layout, key).unlink(missing_ok=True)
    tree = layout.tree(spec.tree_key)
    tc = spec.envelope.toolchain

    def done(status: CellStatus, detail: str, steps: list[Step], binary: str | None) -> CellResult:
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
        )
        atomic.write_text(result_path(layout, key), json.dumps(asdict(result), indent=1) + "\n")
        return result

    if not _tree_applied(layout, spec.tree_key):
        return done("no_tree", "the patch did not produce a tree", [], None)
    if tc.path is None:
        return done(
            "toolchain_missing", f"compiler {tc.command!r} ({tc.name}) is not installed", [], None
        )
    units = list(spec.units)
    if spec.entry:
        units[0] = Unit(units[0].name, _undef_main(units[0].text))
        units.append(Unit(ENTRY_UNIT, ENTRY_SOURCE.read_text()))
    for unit in units:
        atomic.write_if_changed(out / unit.name, unit.text)
    if spec.kind in LIBRARY_KINDS:
        return done(*libcell.build(spec, layout, tree, out))
    earlier = reuse.lookup(layout, spec.spec_key, tree, key)
    if earlier is not None:
        return _adopt(layout, spec, earlier, tree, out)
    sources = [u.name for u in units] + toolcall.resolve(tree, spec.tree_sources)
    base = toolcall.compile_argv(spec, tree)
    steps: list[Step] = []
    depfiles = [out / f"tu{i}.d" for i in range(len(sources))]
    if spec.kind == "syntax":
        for src, dep in zip(sources, depfiles, strict=True):
            argv = [*base, "-fsyntax-only", "-MD", "-MF", dep.name, src]
            steps.append(toolcall.call(layout, key, "compile", src, argv, out, spec))
        result = done(toolcall.status(steps), "", steps, None)
    else:
        result = _build_exe(layout, spec, sources, base, depfiles, out, steps, done)
    if result.status != "timeout":
        reuse.record(layout, spec.spec_key, tree, depfiles, key)
    return result


def _build_exe(
    layout: Layout,
    spec: CellSpec,
    sources: list[str],
    base: list[str],
    depfiles: list[Path],
    out: Path,
    steps: list[Step],
    done: Callable[[CellStatus, str, list[Step], str | None], CellResult],
) -> CellResult:
    objects = []
    for i, (src, dep) in enumerate(zip(sources, depfiles, strict=True)):
        obj = f"tu{i}.o"
        objects.append(obj)
        argv = [*base, "-c", "-MD", "-MF", dep.name, src, "-o", obj]
        steps.append(toolcall.call(layout, spec.key, "compile", src, argv, out, spec))
    if toolcall.status(steps) != "ok":
        return done(toolcall.status(steps), "", steps, None)
    if spec.entry:
        objcopy = shutil.which("objcopy")
        if objcopy is None:
            return done("toolchain_missing", "objcopy (binutils) is not installed", steps, None)
        rename = [objcopy, "--redefine-sym", f"main={ENTRY_SYMBOL}", objects[0]]
        steps.append(toolcall.call(layout, spec.key, "link", objects[0], rename, out, spec))
    env = spec.envelope
    assert env.toolchain.path is not None
    link = [env.toolchain.path, *env.flags, *env.link_flags, *objects, "-o", "a.out"]
    steps.append(toolcall.call(layout, spec.key, "link", "a.out", link, out, spec))
    status = toolcall.status(steps)
    return done(status, "", steps, str(out / "a.out") if status == "ok" else None)


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
