"""Which witnesses ran: the case's test program, built from marked copies, run once.

A witness in the source, live after preprocessing and unchanged, can still never run: put
under `sizeof`, behind `cond && ...`, in a member of a local class nobody calls. Rather
than list such shapes, the census builds the test program (the case's `program.units` and
`sources`) from copies where each witness's marker (survive.py) expands to a call that
records it: first in a test's body, and around a check's first argument as
`(static_cast<void>(hit(id)), <argument>)`, so the record is made exactly when the
argument is evaluated (not while a constant expression is: a check in a constexpr function
stays one). The units compile from a copy of the tree in which every file holding witnesses
is marked, headers too. `static_assert` and checks without an argument are compile-time
or unmarked: not told (None).

The record goes through the report channel of cxxgate/runs/run.py (a file behind an inherited
descriptor, only lines carrying the run's nonce kept), each line starting with a secret
made for this build, written on a witness's first execution (a crash later keeps what ran
before). The recorder's name carries a random tag, and the program is linked stripped: the
candidate's code, compiled into the same program, can name neither. The build and the run
go through cxxgate/toolchain/toolcall.py and cxxgate/runs/run.py.

The exit status alone is not the program's word: a destructor or an `atexit` handler can
`_Exit(0)` after main returned 1, and library code can end the process inside main once
the last witness recorded itself (round 28). So the program is linked with the harness
entry (templates/entry/entry.cpp) wrapped around whatever `main` it has, its own unit's
or a library's (`-Wl,--wrap=main`: the entry's `main` is renamed `__wrap_main`, its call
`__real_main`), and the run says whether main returned, and returned 0, before the process
ended (`returned`). The objects are held to the entry's rules first (no code of theirs may
run before its hook reads the nonce: cxxgate/cells/premain.py).
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cxxgate.cells import premain
from cxxgate.gates.census import bindings, linked, survive
from cxxgate.gates.shared import cppsource
from cxxgate.host.process import Caps
from cxxgate.host.sandbox import NEUTRAL_TREE
from cxxgate.runs.run import RunSpec, execute_built
from cxxgate.store import codehash
from cxxgate.store.layout import Layout
from cxxgate.toolchain import diagnostics, toolcall
from cxxgate.toolchain.cellspec import ENTRY_SOURCE, ENTRY_SYMBOL, CellSpec
from cxxgate.toolchain.envelope import Envelope

if TYPE_CHECKING:
    from cxxgate.gates.census.witness_data import FileInventory, Witness

REPORT_UNIT = codehash.TEMPLATES / "metamorphic" / "report.cpp"


@dataclass
class Ran:
    detail: str  # how the build and the run went ("" when both did)
    ran: dict[str, list[bool | None]] = field(default_factory=dict)  # per file, per witness
    link: dict[str, Any] = field(default_factory=dict)  # what the linker bound (linked.py)
    # Where g++'s code and libclang's parse disagree on what a tree function refers to
    # (bindings.py), with the unit.
    bindings: list[dict[str, Any]] = field(default_factory=list)
    exit: str = ""  # how the program ended ("" when it exited 0)
    returned: bool = False  # main returned 0 and the process exited with it (the entry)


def recordable(w: Witness) -> bool:
    """Whether a witness gets a recording marker: a test, or a run-time check with a first
    argument."""
    if w.kind == "test":
        return True
    return w.kind in ("check", "assert") and w.close >= 0 and not w.macro.startswith("STATIC_")


def run(
    tree: Path,
    params: dict[str, Any],
    env: Envelope,
    inventories: dict[str, FileInventory],
    calls: dict[str, dict[str, dict[str, Any]]],
    declared: dict[str, dict[str, list[str]]],
) -> Ran:
    """The census program built and run; `calls` and `declared` are libclang's bindings
    and declarations per unit (callees.Bound), held against what g++ compiled
    (bindings.py)."""
    program = params["program"]
    tests = set(cppsource.select(tree, program["units"]))
    units = sorted(tests | set(_sources(tree, program)))
    layout = Layout(tree.parent.parent)
    spec = CellSpec(
        kind="syntax",
        tree_key=tree.name,
        units=(),
        tree_sources=(),
        include_dirs=tuple(params["include_dirs"]),
        envelope=env,
        compile_seconds=float(params["compile_seconds"]),
        label="census test program",
    )
    tag, secret = secrets.token_hex(6), secrets.token_hex(16)
    hit = f"cxxgate_{tag}_hit"
    ids: dict[tuple[str, int], int] = {}
    scratch = layout.root / "scans" / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{tree.name[:12]}-run-", dir=scratch))
    out = Ran("")
    try:
        # A copy of the tree with every file holding witnesses marked, headers included:
        # the units compile from it, so a header's checks record themselves too.
        copy = work / "trees" / tree.name
        shutil.copytree(tree, copy, symlinks=True)
        defs = [f"void {hit}(unsigned long) noexcept;\n"]
        for n, rel in enumerate(sorted(r for r, inv in inventories.items() if inv.witnesses)):
            witnesses = inventories[rel].witnesses
            spots = [survive.Spot(w.start, w.mark, w.close, w.end) for w in witnesses]
            (copy / rel).write_bytes(survive.marked((tree / rel).read_bytes(), spots, f"{tag}f{n}"))
            for i, w in enumerate(witnesses):
                names = [f"cxxgate_{tag}f{n}_{letter}{i}" for letter in survive.MARKERS]
                mark, close = "", ""
                if recordable(w):
                    ids[rel, i] = len(ids)
                    call = f"{hit}({ids[rel, i]}ul)"
                    if w.kind == "test":
                        mark = f"{call};"
                    else:
                        # Not while a constant expression is evaluated: a check in a
                        # constexpr function stays a constant expression.
                        mark = (
                            "(static_cast<void>(__builtin_is_constant_evaluated() || "
                            f"({call}, true)),"
                        )
                        close = ")"
                defs += [f"#define {names[0]}\n", f"#define {names[1]} {mark}\n"]
                defs += [f"#define {names[2]} {close}\n", f"#define {names[3]}\n"]
        (work / "h").mkdir()
        header = work / "h" / "cxxgate.run.h"
        header.write_text("".join(defs))
        base = toolcall.compile_argv(spec, copy)
        objects: list[str] = []
        by_file: dict[str, Path] = {}
        for n, rel in enumerate(units):
            folder = work / f"u{n}"
            folder.mkdir()
            argv = [*base, *bindings.FLAGS, "-w", "-c", "-include", str(header)]
            argv += ["-x", "c++", str(copy / rel), "-o", "unit.o"]
            # Compiled where the build's compiles see the tree (at /src/project under
            # bubblewrap with ccache): a unit that asks which it is in runs here as there.
            step = toolcall.tool_call(
                layout,
                spec,
                "compile",
                str(tree / rel),
                argv,
                folder,
                read=[copy, header.parent],
                tree=copy,
            )
            if step.timed_out or step.exit != 0:
                first = diagnostics.first_error(diagnostics.parse(step, str(copy)))
                why = first.brief() if first else ("timed out" if step.timed_out else "failed")
                out.detail = f"the test program does not build: {rel}: {why}"
                return _none(out, inventories)
            objects.append(f"u{n}/unit.o")
            by_file[rel] = folder / "unit.o"
        # The units hold the recorder's calls (harness names): not `tree_code_only`.
        refused = [
            p for o in by_file.values() for p in premain.object_problems(o, tree_code_only=False)
        ]
        if refused:
            out.detail = f"the test program is refused: {'; '.join(refused)}"
            return _none(out, inventories)
        entry = _entry(layout, spec, base, work)
        if isinstance(entry, str):
            out.detail = f"the harness entry does not build: {entry}"
            return _none(out, inventories)
        (work / "recorder.cpp").write_text(_recorder(hit, secret, len(ids), tag))
        shutil.copyfile(REPORT_UNIT, work / "report.cpp")
        # The report writer under a name of this build's (a candidate could call the
        # template's extern "C" name): only the recorder knows it.
        renamed = [f"-Dcxxgate_report_{f}=cxxgate_{tag}_{f}" for f in ("line", "open")]
        # The entry first: its `.preinit_array` hook is the first code to run.
        argv = [*base, "-w", *renamed, entry.name, *objects, "recorder.cpp", "report.cpp"]
        argv += [*env.link_flags, "-Wl,--wrap=main", "-s"]
        argv += ["-o", "tests"]
        step = toolcall.tool_call(
            layout, spec, "link", "census test program", argv, work, read=[copy]
        )
        if step.timed_out or step.exit != 0 or not (work / "tests").exists():
            first = diagnostics.first_error(diagnostics.parse(step, str(tree)))
            why = first.brief() if first else ("timed out" if step.timed_out else "failed")
            out.detail = f"the test program does not link: {why}"
            return _none(out, inventories)
        refused = premain.program_problems(work / "tests")
        if refused:
            out.detail = f"the test program is refused: {'; '.join(refused)}"
            return _none(out, inventories)
        out.link = linked.facts(by_file, tests, work / "tests")
        seen_at = (str(copy), str(tree), NEUTRAL_TREE)
        out.bindings = [
            {"unit": rel, **d}
            for rel, obj in sorted(by_file.items())
            for d in bindings.compare(obj, calls.get(rel, {}), declared.get(rel, {}), seen_at)
        ]
        seen, how, out.returned = _execute(work / "tests", program, layout, secret, tree.name)
        out.detail = out.exit = how
        for rel, inv in inventories.items():
            out.ran[rel] = [
                ((rel, i) in ids and ids[rel, i] in seen) if (rel, i) in ids else None
                for i in range(len(inv.witnesses))
            ]
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _none(out: Ran, inventories: dict[str, FileInventory]) -> Ran:
    out.ran = {rel: [None] * len(inv.witnesses) for rel, inv in inventories.items()}
    return out


def _sources(tree: Path, program: dict[str, Any]) -> list[str]:
    found = toolcall.resolve(tree, tuple(program["sources"]))
    return [Path(p).relative_to(tree).as_posix() for p in found]


def _entry(layout: Layout, spec: CellSpec, base: list[str], work: Path) -> Path | str:
    """The harness entry's object, its `main` renamed `__wrap_main` and its call
    `__real_main`, so `-Wl,--wrap=main` puts it in front of whichever `main` the program
    links; or why it did not build."""
    objcopy = shutil.which("objcopy")
    if objcopy is None:
        return "objcopy (binutils) is not installed"
    source = work / "entry.cpp"
    shutil.copyfile(ENTRY_SOURCE, source)
    made = work / "entry.o"
    argv = [*base, "-w", "-c", str(source), "-o", str(made)]
    step = toolcall.tool_call(layout, spec, "compile", "harness entry", argv, work, read=[])
    if step.timed_out or step.exit != 0:
        return "timed out" if step.timed_out else step.output.strip()[-300:] or "failed"
    rename = [objcopy, "--redefine-sym", "main=__wrap_main"]
    rename += ["--redefine-sym", f"{ENTRY_SYMBOL}=__real_main", str(made)]
    step = toolcall.tool_call(layout, spec, "link", "harness entry", rename, work, read=[])
    if step.exit != 0:
        return f"objcopy: {step.output.strip()[-300:]}"
    return made


def _execute(
    binary: Path, program: dict[str, Any], layout: Layout, secret: str, tree_key: str
) -> tuple[set[int], str, bool]:
    """The ids the run recorded, how it ended ("" when it exited 0), and whether main
    returned 0 and the process ended with that status (the entry's word)."""
    caps = Caps(program["memory_mib"], program["file_mib"], program["processes"], False)
    spec = RunSpec(
        cell_key=f"census-{tree_key}-{secret[:8]}",
        args=tuple(program["args"]),
        timeout=float(program["run_seconds"]),
        output_cap=int(program["output_bytes"]),
        label="census test program",
        caps=caps,
        report=True,
    )
    sample = execute_built(binary, spec, layout)
    seen: set[int] = set()
    if sample.report_path:
        for line in Path(sample.report_path).read_text(errors="replace").splitlines():
            head, _, value = line.partition(" ")
            if head == secret and value.isdigit():
                seen.add(int(value))
    shutil.rmtree(layout.run(spec.key), ignore_errors=True)  # a fresh secret each build
    if sample.status != "exited":
        return seen, f"the test program ended: {sample.status} {sample.detail}".strip(), False
    if sample.exit != 0:
        return seen, f"the test program exited {sample.exit}", False
    return seen, "", bool(sample.returned)


def _recorder(hit: str, secret: str, count: int, tag: str) -> str:
    """The recording unit: one report line per witness, on its first execution. The secret
    is kept masked (no string of it in the program's memory until a line is written)."""
    mask = secrets.token_bytes(len(secret))
    masked = ", ".join(str(ord(c) ^ m) for c, m in zip(secret, mask, strict=True))
    keys = ", ".join(str(m) for m in mask)
    return f"""// cxxgate census: records which witnesses ran (generated, one per build).
extern "C" void cxxgate_{tag}_line(const char* text, unsigned long size);
namespace {{
unsigned char seen[{max(count, 1)}];
const unsigned char masked[] = {{{masked}}};
const unsigned char keys[] = {{{keys}}};
}}  // namespace
void {hit}(unsigned long id) noexcept {{
  if (id >= sizeof seen || seen[id]) return;
  seen[id] = 1;
  char line[96];
  unsigned long n = 0;
  for (unsigned long i = 0; i < sizeof masked; ++i) {{
    line[n++] = static_cast<char>(masked[i] ^ keys[i]);
  }}
  line[n++] = ' ';
  char digits[24];
  int k = 0;
  do {{
    digits[k++] = static_cast<char>('0' + id % 10);
    id /= 10;
  }} while (id != 0);
  while (k > 0) line[n++] = digits[--k];
  cxxgate_{tag}_line(line, n);
  for (unsigned long i = 0; i < sizeof masked; ++i) line[i] = 0;
}}
"""
