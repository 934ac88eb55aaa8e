"""Cells: the one place the compiler is called.

A cell is (tree, translation units, envelope) -> diagnostics and maybe a binary. Its key
covers everything that changes those bytes, so a cell is built once and shared by every
gate and patch that asks for the same key. A compile error is a result, not a failure.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from cxxgate import atomic, codehash, faults, reuse
from cxxgate.envelope import Envelope
from cxxgate.layout import Layout
from cxxgate.process import bounded
from cxxgate.sandbox import confine

CellKind = Literal["syntax", "exe", "archive", "shared", "consumer", "abidiff"]
CellStatus = Literal[
    "ok",
    "compile_error",
    "link_error",
    "timeout",
    "no_tree",
    "toolchain_missing",
    "harness_error",
    "needs_failed",  # a cell this one builds on (its `needs`) did not produce its product
    "tool_error",  # an inspection tool (abidiff) failed for its own reasons
]
# Kinds that build or inspect a library as a stranger would; gates/libcell.py builds them.
LIBRARY_KINDS = frozenset({"archive", "shared", "consumer", "abidiff"})

# The compiler sees a pinned, poor environment: nothing from the caller's shell leaks in.
COMPILER_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C", "LANG": "C"}
OUTPUT_CAP = 4 << 20

# What a harness compile looks like from inside: units by one ordinary name, the tree and
# the build folder at neutral paths (-ffile-prefix-map: __FILE__, __BASE_FILE__,
# __builtin_FILE, debug info). A header must not be able to tell a probe from a build.
# Diagnostics and dependency files keep the real paths, so classification still works.
UNIT_NAME = "main.cpp"
NEUTRAL_TREE = "/src/project"
NEUTRAL_BUILD = "/src/build"

# A program built with the harness entry (CellSpec.entry): its unit's `main` becomes this
# symbol, and templates/entry/entry.cpp calls it and reports the run's nonce (gates/run.py).
ENTRY_SOURCE = codehash.TEMPLATES / "entry" / "entry.cpp"
ENTRY_UNIT = "cxxgate_entry.cpp"
ENTRY_SYMBOL = "cxxgate_unit_main"
# Where the unit defines main: the harness puts `#undef main` in front of it, so a macro
# from a patched header cannot swap in a main of its own.
_MAIN_DEFINITION = re.compile(r"^[ \t]*(?:int|auto)\s+main\s*\(", re.M)


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
    # Library kinds only (gates/libcell.py); the defaults keep the older kinds' keys as they were.
    needs: tuple[str, ...] = ()  # keys of cells whose products this one uses
    publish: tuple[tuple[str, str], ...] = ()  # (tree path, include path) a stranger sees
    extra_flags: tuple[str, ...] = ()  # pinned compile flags added to the envelope's
    link_args: tuple[str, ...] = ()  # pinned link arguments (soname, version script)
    product: str = ""  # the library's base name: lib<product>.a / lib<product>.so
    # exe only: units[0] is a program whose main the harness entry calls (see ENTRY_SOURCE).
    entry: bool = False

    @cached_property  # specs are frozen; thousands of rows ask for the same key
    def key(self) -> str:
        blob = {"tree": self.tree_key, "spec": self.spec_key}
        return codehash.of_text(json.dumps(blob, sort_keys=True))[:24]

    @cached_property
    def spec_key(self) -> str:
        """Everything but the tree: what gates/reuse.py matches trees under."""
        blob: dict[str, Any] = {
            "kind": self.kind,
            "units": [(u.name, codehash.of_text(u.text)) for u in self.units],
            "tree_sources": self.tree_sources,
            "include_dirs": self.include_dirs,
            "envelope": self.envelope.id,
            "compile_seconds": self.compile_seconds,
            "code": codehash.of_modules("cell", "process", "sandbox", "reuse"),
        }
        if self.entry:
            blob["entry"] = codehash.of_text(ENTRY_SOURCE.read_bytes())
        if self.kind in LIBRARY_KINDS:
            from cxxgate import libcell  # late: libcell builds on this module

            blob["library"] = {
                "needs": self.needs,
                "publish": self.publish,
                "extra_flags": self.extra_flags,
                "link_args": self.link_args,
                "product": self.product,
                "tools": libcell.tool_identities(self.kind),
            }
            blob["code"] = codehash.of_modules("cell", "process", "sandbox", "libcell", "elf")
        return codehash.of_text(json.dumps(blob, sort_keys=True))[:24]


Phase = Literal["compile", "link", "archive", "inspect", "compare"]


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
    reused_from: str = ""  # the cell whose compile this result is (gates/reuse.py)
    entry: bool = False  # linked with the harness entry: its runs report a nonce

    @classmethod
    def load(cls, path: Path) -> CellResult:
        data = json.loads(path.read_text())
        data["steps"] = [Step(**s) for s in data["steps"]]
        return cls(**data)

    def compile_steps(self) -> list[Step]:
        return [s for s in self.steps if s.phase == "compile"]


def result_path(layout: Layout, key: str) -> Path:
    return layout.cell_result(key)


def build(spec: CellSpec, layout: Layout) -> CellResult:
    """Compile (and for `exe`, link) the cell; write and return its result."""
    key = spec.key
    out = layout.cell(key)
    out.mkdir(parents=True, exist_ok=True)
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
        (out / unit.name).write_text(unit.text)
    if spec.kind in LIBRARY_KINDS:
        from cxxgate import libcell

        return done(*libcell.build(spec, layout, tree, out))
    earlier = reuse.lookup(layout, spec.spec_key, tree, key)
    if earlier is not None:
        return _adopt(layout, spec, earlier, tree, out)
    sources = [u.name for u in units] + _resolve(tree, spec.tree_sources)
    base = _compile_argv(spec, tree)
    steps: list[Step] = []
    depfiles = [out / f"tu{i}.d" for i in range(len(sources))]
    if spec.kind == "syntax":
        for src, dep in zip(sources, depfiles, strict=True):
            argv = [*base, "-fsyntax-only", "-MD", "-MF", dep.name, src]
            steps.append(_call(layout, key, "compile", src, argv, out, spec))
        result = done(_status(steps), "", steps, None)
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
        steps.append(_call(layout, spec.key, "compile", src, argv, out, spec))
    if _status(steps) != "ok":
        return done(_status(steps), "", steps, None)
    if spec.entry:
        objcopy = shutil.which("objcopy")
        if objcopy is None:
            return done("toolchain_missing", "objcopy (binutils) is not installed", steps, None)
        rename = [objcopy, "--redefine-sym", f"main={ENTRY_SYMBOL}", objects[0]]
        steps.append(_call(layout, spec.key, "link", objects[0], rename, out, spec))
    env = spec.envelope
    assert env.toolchain.path is not None
    link = [env.toolchain.path, *env.flags, *env.link_flags, *objects, "-o", "a.out"]
    steps.append(_call(layout, spec.key, "link", "a.out", link, out, spec))
    status = _status(steps)
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


def _compile_argv(spec: CellSpec, tree: Path) -> list[str]:
    env = spec.envelope
    assert env.toolchain.path is not None
    shape = (
        ["-fdiagnostics-format=json"]
        if env.toolchain.family == "gcc"
        else ["-fno-color-diagnostics", "-fno-caret-diagnostics"]
    )
    # Trees and cells lie inside the build folder: GCC takes the last matching map and
    # clang the longest, so the build folder's own map comes first. The cell folder (the
    # compile's working directory, hence debug info's comp_dir) is the build folder too.
    root = tree.parent.parent
    neutral = [
        f"-ffile-prefix-map={root}={NEUTRAL_BUILD}",
        f"-ffile-prefix-map={Layout(root).cell(spec.key)}={NEUTRAL_BUILD}",
        f"-ffile-prefix-map={tree}={NEUTRAL_TREE}",
    ]
    return [
        env.toolchain.path,
        f"-std={env.std}",
        *env.flags,
        *(f"-D{d}" for d in env.defines),
        *shape,
        *neutral,
        *(f"-I{tree / inc}" for inc in spec.include_dirs),
    ]


def _undef_main(text: str) -> str:
    """`#undef main` just before the unit's main, and `#line` so its lines keep their numbers."""
    m = _MAIN_DEFINITION.search(text)
    if m is None:
        return text  # no main: the link says so (undefined cxxgate_unit_main)
    line = text.count("\n", 0, m.start()) + 1
    return f"{text[: m.start()]}#undef main\n#line {line}\n{text[m.start() :]}"


def _resolve(tree: Path, globs: tuple[str, ...]) -> list[str]:
    found: set[Path] = set()
    for pattern in globs:
        found.update(p for p in tree.glob(pattern) if p.is_file())
    return [str(p) for p in sorted(found)]


def _call(
    layout: Layout,
    key: str,
    phase: Literal["compile", "link"],
    source: str,
    argv: list[str],
    cwd: Path,
    spec: CellSpec,
    *,
    sees_tree: bool = True,
) -> Step:
    tree = layout.tree(spec.tree_key)
    step = tool_call(layout, spec, phase, source, argv, cwd, read=[tree] if sees_tree else [])
    return replace(step, source=_display(source, tree))


def tool_call(
    layout: Layout,
    spec: CellSpec,
    phase: Phase,
    source: str,
    argv: list[str],
    cwd: Path,
    *,
    read: list[Path],
    stdin: str = "",
) -> Step:
    """Every compiler, linker, archiver or inspection tool of a cell runs here: logged,
    bounded, and confined to the tree (read-only) and the cell's folder. A tool that cannot
    run raises (gates/faults.py): a harness fault, retried next run, never a cached verdict."""
    faults.check_executable(argv[0], COMPILER_ENV["PATH"])
    with layout.compiler_log.open("a") as log:
        log.write(f"{time.time():.3f} {spec.key} {phase} {Path(source).name}\n")
    binds = spec.envelope.toolchain.binds  # its declared prefix; never guessed from argv
    confined, sandbox = confine(argv, cwd=cwd, read=read, write=[cwd], binds=binds)
    outcome = bounded(
        confined,
        cwd=cwd,
        env=COMPILER_ENV,
        stdin=stdin.encode(),
        timeout=spec.compile_seconds,
        output_cap=OUTPUT_CAP,
    )
    # Compilers answer on stderr; nm, c++filt and abidiff on stdout.
    text = outcome.stdout.decode(errors="replace") + outcome.stderr.decode(errors="replace")
    if outcome.exit not in (0, None) and not outcome.timed_out:
        faults.raise_if_infrastructure(argv, text, cwd)
    return Step(
        phase=phase,
        source=source,
        argv=argv,
        exit=outcome.exit,
        timed_out=outcome.timed_out,
        seconds=round(outcome.wall_seconds, 3),
        output=text,
        sandbox=sandbox,
    )


def _display(source: str, tree: Path) -> str:
    path = Path(source)
    return path.relative_to(tree).as_posix() if path.is_relative_to(tree) else source


def _status(steps: list[Step]) -> CellStatus:
    for step in steps:
        if step.timed_out:
            return "timeout"
        if step.exit != 0:
            return "compile_error" if step.phase == "compile" else "link_error"
    return "ok"


def _tree_applied(layout: Layout, tree_key: str) -> bool:
    stamp = layout.tree_stamp(tree_key)
    data: dict[str, Any] = json.loads(stamp.read_text()) if stamp.exists() else {}
    return bool(data.get("applied"))
