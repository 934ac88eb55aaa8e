"""Tool calls: every compiler, linker, archiver or inspection tool of a cell runs through
`tool_call` here (logged, bounded, sandboxed), with the argv the harness compiles with.
A tool call outside any cell (a `--version`, an include search list, gcov) runs through
cxxgate/toolchain/toolquery.py, the same launch; no other module starts a tool."""

from __future__ import annotations

import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Literal

from cxxgate.host.process import bounded
from cxxgate.host.sandbox import NEUTRAL_BUILD, NEUTRAL_TREE, confine
from cxxgate.results import faults
from cxxgate.store.layout import Layout
from cxxgate.toolchain import asmreads, ccache
from cxxgate.toolchain.cellspec import CellSpec, CellStatus, Phase, Step
from cxxgate.toolchain.projectflags import project_flags
from cxxgate.toolchain.toolquery import COMPILER_ENV

OUTPUT_CAP = 4 << 20


def compile_argv(spec: CellSpec, tree: Path) -> list[str]:
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
        # A repository case's own flags, from the compile database of a cmake cell it needs.
        *(project_flags(Layout(root), spec, tree) if spec.needs else ()),
    ]


def resolve(tree: Path, globs: tuple[str, ...]) -> list[str]:
    found: set[Path] = set()
    for pattern in globs:
        found.update(p for p in tree.glob(pattern) if p.is_file())
    return [str(p) for p in sorted(found)]


def call(
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
    mounts: tuple[tuple[str, str], ...] = (),
    views: tuple[tuple[str, str], ...] = (),
    inside: str = "",
    seconds: float = 0,
    tree: Path | None = None,
    as_compiled: Path | None = None,
) -> Step:
    """Every compiler, linker, archiver or inspection tool of a cell runs here: logged,
    bounded, and confined to the tree (read-only) and the cell's folder. A tool that cannot
    run raises (cxxgate/results/faults.py): a harness fault, retried next run, never a cached
    verdict. `views` and `mounts` (source, destination) are read-only and writable binds at other
    paths: a CMake build sees its tree and build folder at neutral paths
    (cxxgate/cells/cmake.py). `inside` (sandboxed only) is the folder the tool starts in as
    it sees it, and `cwd` is then not writable: a command the candidate wrote (a re-link of
    its program) runs over a read-only view of the build, and what it prints is its own,
    never read as a fault of the machine's. `tree` is the folder a compile through ccache
    sees at /src/project in place of the spec's tree (the census's marked copy of it).
    `as_compiled`: a folder also shown at /src/project, and no /proc, where compiles see the
    tree so (ccache.view() "neutral"): the census's `-E` of a copy then answers
    `__has_include("/src/project/...")` as a compile does. Not the compile cache folders:
    from the tree's own path `../../ccache/ccache.conf` would reach them (round 25)."""
    faults.check_executable(argv[0], COMPILER_ENV["PATH"])
    with layout.compiler_log.open("a") as log:
        log.write(f"{time.time():.3f} {spec.key} {phase} {Path(source).name}\n")
    proc = True
    if as_compiled is not None and ccache.view() == "neutral":
        views, proc = (*views, (str(as_compiled), NEUTRAL_TREE)), False
    binds = (*spec.envelope.toolchain.binds, *views)  # its declared prefix; never guessed
    tree = tree or layout.tree(spec.tree_key)
    launch = None if views or inside else _launch(layout, spec, phase, argv, cwd, read, tree)
    # An object compile refuses an assembler read no dependency file names (asmreads.py).
    wrap = asmreads.applies(argv, spec.envelope.toolchain.family) if phase == "compile" else False
    wrapper = asmreads.wrapper(layout.root) if wrap else None
    if launch is None:
        writable = [(Path(source), dest, True) for source, dest in mounts]
        confined, sandbox = confine(
            [str(wrapper), *argv] if wrapper else argv,
            cwd=Path(inside) if inside else cwd,
            read=[*read, wrapper] if wrapper else read,
            write=[] if inside else [cwd],
            binds=binds,
            mounts=writable,
            proc=proc,
        )
        env = COMPILER_ENV
    else:
        # The tree and the working folder are the launch's mounts (neutral paths), or,
        # without bubblewrap, where they are; ccache's own folder is writable.
        plain = not launch.mounts
        if wrapper is not None:  # ccache runs it in place of the compiler, on a miss
            launch.env = {**launch.env, "CCACHE_PREFIX": str(wrapper)}
        confined, sandbox = confine(
            launch.argv,
            cwd=launch.cwd,
            read=[
                *(read if plain else [p for p in read if p != tree]),
                *([wrapper] if wrapper else []),
                *launch.read,
            ],
            write=[cwd, *launch.write] if plain else launch.write,
            binds=binds,
            mounts=launch.mounts,
            share_net=launch.share_net,
            proc=False,  # as libclang is shown it (cxxgate/toolchain/clangview.py)
        )
        env = launch.env
    ooms = faults.oom_kills()
    outcome = bounded(
        confined,
        cwd=cwd,
        env=env,
        stdin=stdin.encode(),
        timeout=min(seconds or spec.compile_seconds, spec.compile_seconds),
        output_cap=OUTPUT_CAP,
    )
    # Compilers answer on stderr; nm, c++filt and abidiff on stdout.
    text = outcome.stdout.decode(errors="replace") + outcome.stderr.decode(errors="replace")
    cached: ccache.Outcome = ""
    if launch is not None:
        text = ccache.back(text, launch)
        cached = ccache.finish(launch) if launch.through_ccache else ""
    if outcome.exit != 0 and not outcome.stopped_by_harness and faults.oom_kills() > ooms:
        # The OOM killer's first pick is the biggest process: a compiler or linker (a run
        # may hold memory no cap counts, README "Not contained"). `Killed signal terminated
        # program cc1plus` is no verdict on the code it compiled.
        msg = f"{Path(argv[0]).name} failed while the kernel's OOM killer ran"
        raise faults.ToolUnavailable(f"{msg}: the machine's memory ran out (retried next run)")
    if outcome.exit not in (0, None) and not outcome.timed_out and not inside:
        why = faults.infrastructure(argv, text, cwd)
        if why and (faults.disk_full_said(why) or _fault_confirmed(layout, spec, why, launch)):
            faults.raise_if_infrastructure(argv, text, cwd)
    return Step(
        phase=phase,
        source=source,
        argv=argv,  # as without ccache: what a replay runs
        exit=outcome.exit,
        timed_out=outcome.timed_out,
        seconds=round(outcome.wall_seconds, 3),
        output=text,
        sandbox=sandbox,
        cache=cached,
    )


def _launch(
    layout: Layout,
    spec: CellSpec,
    phase: Phase,
    argv: list[str],
    cwd: Path,
    read: list[Path],
    tree: Path,
) -> ccache.Launch | None:
    """How a compile goes through ccache, or None when it does not (CXXGATE_CCACHE=0,
    ccache missing, not a compile of one TU by the envelope's compiler). A unit's `-E` for
    its control record sees the tree as that compile did (ccache.compile_view)."""
    tc = spec.envelope.toolchain
    if phase == "preprocess" and argv[0] == tc.path:
        return ccache.compile_view(
            layout.root, argv, cwd, tree, COMPILER_ENV, sees_tree=tree in read
        )
    if phase != "compile" or not ccache.enabled() or not ccache.cacheable(argv, tc.path):
        return None
    return ccache.prepare(
        layout.root,
        argv,
        cwd,
        tree,
        tc.version_sha,
        COMPILER_ENV,
        sees_tree=tree in read,
        neutral=ccache.view() == "neutral",
    )


def _display(source: str, tree: Path) -> str:
    path = Path(source)
    return path.relative_to(tree).as_posix() if path.is_relative_to(tree) else source


def status(steps: list[Step]) -> CellStatus:
    for step in steps:
        if step.timed_out:
            return "timeout"
        if step.exit != 0:
            return "compile_error" if step.phase == "compile" else "link_error"
    return "ok"


_PROBE = b"int main() { return 0; }\n"


def _fault_confirmed(
    layout: Layout, spec: CellSpec, why: str, launch: ccache.Launch | None
) -> bool:
    """Whether a failed call's line shaped like a driver's, bubblewrap's or ccache's was
    theirs. It may be the candidate's own words: a project's build prints what its
    commands print, a tool quotes the build's files (ninja -t compdb quoting
    build.ninja), and a compile's diagnostics name the file its `#line` calls
    "collect2: fatal error: cannot find 'ld'\n" (clang's text diagnostics, a linker's
    symbol names; GCC's JSON quotes it). ccache's error is believed when the compiler did
    not run and fail under it; any other when the toolchain cannot build a program of
    ours now."""
    if why.startswith("ccache: error:"):
        return launch is not None and launch.through_ccache and not launch.compile_failed
    return not _toolchain_builds(layout, spec)


def _toolchain_builds(layout: Layout, spec: CellSpec) -> bool:
    """Whether the envelope's compiler compiles and links a program of the harness's own,
    in the sandbox a build's compiles run in, right now."""
    compiler = spec.envelope.toolchain.path
    if compiler is None:
        return False
    with tempfile.TemporaryDirectory(dir=layout.root) as folder:
        work = Path(folder)
        argv = [str(compiler), "-x", "c++", "-", "-o", "probe"]
        confined, _ = confine(argv, cwd=work, write=[work], binds=spec.envelope.toolchain.binds)
        outcome = bounded(confined, cwd=work, env=COMPILER_ENV, stdin=_PROBE, timeout=60,
                          output_cap=OUTPUT_CAP)  # fmt: skip
        return outcome.exit == 0 and (work / "probe").is_file()
