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

The exit status alone is not the tests' word (round 28, 29): a destructor or an `atexit`
handler can `_Exit(0)` after main returned 1, library code can end the process inside main
once the last witness recorded itself, call main once more before the tests register, or
run a test's checks in a forked child or after main returned. So the recorder wraps
whatever `main` the program links, its unit's or a library's (`-Wl,--wrap=main`): it
records only while main runs, in main's own process (a raw `getpid`, no C library call a
candidate could define), and writes through the same channel, after main returned,
`main <status>` (or `again` when main is entered twice). `main` says how main ended:
`returned N`, `did not return`, `entered twice`. The objects are held to the harness
entry's rules first (cxxgate/cells/premain.py: no `.preinit_array` hook, IFUNC or early
constructor, which would run before the report channel's hook takes its nonce).

The census compiles with flags of its own (bindings.census_flags), and code that asks
which flags it has would run otherwise here than in the build (round 30: `#ifdef
always_inline`, a stringized `__NO_INLINE__`). Each unit is preprocessed both ways first,
and a tree line made into other tokens refuses the program (`_as_built`). Code that tells
the census's run from the build's at run time (the report channel's descriptor, a
`std::source_location` column the markers moved) is not seen: the README's threat model.
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
from cxxgate.toolchain.cellspec import CellSpec
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
    main: str = "not run"  # how its main ended, as the recorder saw it (see the module doc)


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
        read = [copy, header.parent]
        # Every always_inline function made an ordinary one (bindings.UNINLINED): what
        # bindings reads is what runs. Those flags must change nothing else the tree's
        # code is made of (round 30: `#ifdef always_inline`, a stringized __NO_INLINE__).
        tc = spec.envelope.toolchain
        flags = [*base, *bindings.census_flags(tc.family, tc.version)]
        differs = _as_built(layout, spec, units, base, flags, read)
        if differs:
            out.detail = f"the test program is refused: {differs}"
            return _none(out, inventories)
        built = _compile(layout, spec, tree, units, flags, read)
        if isinstance(built, str):
            out.detail = built
            return _none(out, inventories)
        by_file = built
        # The units hold the recorder's calls (harness names): not `tree_code_only`.
        refused = [
            p for o in by_file.values() for p in premain.object_problems(o, tree_code_only=False)
        ]
        if refused:
            out.detail = f"the test program is refused: {'; '.join(refused)}"
            return _none(out, inventories)
        supplement = _allocators(layout, spec, env, work)
        if isinstance(supplement, str):
            out.detail = f"the harness's allocator unit does not build: {supplement}"
            return _none(out, inventories)
        (work / "recorder.cpp").write_text(_recorder(hit, secret, len(ids), tag))
        shutil.copyfile(REPORT_UNIT, work / "report.cpp")
        # The report writer under a name of this build's (a candidate could call the
        # template's extern "C" name): only the recorder knows it.
        renamed = [f"-Dcxxgate_report_{f}=cxxgate_{tag}_{f}" for f in ("line", "open")]
        objects = [o.relative_to(work).as_posix() for o in by_file.values()]
        argv = [*base, "-w", *renamed, *objects, supplement.name, "recorder.cpp", "report.cpp"]
        argv += [*env.link_flags, "-Wl,--wrap=main", "-s", "-o", "tests"]
        step = toolcall.tool_call(
            layout, spec, "link", "census test program", argv, work, read=[copy]
        )
        if step.timed_out or step.exit != 0 or not (work / "tests").exists():
            first = diagnostics.first_error(diagnostics.parse(step, str(tree)))
            why = first.brief() if first else ("timed out" if step.timed_out else "failed")
            out.detail = f"the test program does not link: {why}"
            return _none(out, inventories)
        out.link = linked.facts(by_file, tests, work / "tests")
        seen_at = (str(copy), str(tree), NEUTRAL_TREE)
        out.bindings = [
            {"unit": rel, **d}
            for rel, obj in sorted(by_file.items())
            for d in bindings.compare(obj, calls.get(rel, {}), declared.get(rel, {}), seen_at)
        ]
        seen, how, out.main = _execute(work / "tests", program, layout, secret, tree.name)
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


def _compile(
    layout: Layout,
    spec: CellSpec,
    tree: Path,
    units: list[str],
    argv: list[str],
    read: list[Path],
) -> dict[str, Path] | str:
    """Each unit's object by tree file, compiled from the marked copy (`read[0]`) with the
    recorder's header (`read[1]`); or why the program does not build."""
    copy, header = read[0], read[1] / "cxxgate.run.h"
    work = copy.parent.parent
    made: dict[str, Path] = {}
    for n, rel in enumerate(units):
        folder = work / f"u{n}"
        folder.mkdir()
        unit = [*argv, "-w", "-c", "-include", str(header), "-x", "c++", str(copy / rel)]
        # Compiled where the build's compiles see the tree (at /src/project under
        # bubblewrap with ccache): a unit that asks which it is in runs here as there.
        step = toolcall.tool_call(
            layout,
            spec,
            "compile",
            str(tree / rel),
            [*unit, "-o", "unit.o"],
            folder,
            read=read,
            tree=copy,
        )
        if step.timed_out or step.exit != 0:
            first = diagnostics.first_error(diagnostics.parse(step, str(copy)))
            why = first.brief() if first else ("timed out" if step.timed_out else "failed")
            return f"the test program does not build: {rel}: {why}"
        made[rel] = folder / "unit.o"
    return made


def _as_built(
    layout: Layout,
    spec: CellSpec,
    units: list[str],
    base: list[str],
    flags: list[str],
    read: list[Path],
) -> str:
    """Where the census's compile flags make other code of the tree's lines than the
    build's flags do ("" nowhere): each unit of the marked copy preprocessed both ways
    (`_same`). Lines of files outside the tree (the C library's own `__NO_INLINE__`
    tests) are the toolchain's."""
    copy, header = read[0], read[1] / "cxxgate.run.h"
    root = copy.resolve()
    for n, rel in enumerate(units):
        folder = copy.parent.parent / f"e{n}"
        folder.mkdir()
        made: list[dict[tuple[str, int], bytes]] = []
        failed: dict[str, str] = {}
        for name, argv in (("built", base), ("census", flags)):
            unit = [*argv, "-w", *_CLOCKLESS, "-E", "-include", str(header), "-x", "c++"]
            unit.append(str(copy / rel))
            step = toolcall.tool_call(
                layout,
                spec,
                "compile",
                str(copy / rel),
                [*unit, "-o", f"{name}.i"],
                folder,
                read=read,
                tree=copy,
            )
            if step.timed_out:
                return ""  # the compile that follows says why
            if step.exit != 0:
                first = diagnostics.first_error(diagnostics.parse(step, str(copy)))
                failed[name] = first.brief() if first else f"{rel}: no diagnostic"
                made.append({})
                continue
            text = (folder / f"{name}.i").read_bytes()
            renamed = survive.line_directive(text)
            if renamed is not None:
                named = renamed.decode(errors="replace")
                return f"{rel}: a #line directive names {named!r}: what follows is read as its"
            made.append(survive.tree_lines(text, root, rel, str(copy / rel)))
        census_flags = " ".join(flags[len(base) :])
        if len(failed) == 1:
            # One flag set preprocesses the unit and the other stops it (`#error` under
            # `#ifdef always_inline`): the census would not run what the build runs.
            how = "under the census's compile flags" if "census" in failed else "as built"
            return f"{rel} does not preprocess {how} ({census_flags}): {failed.popitem()[1]}"
        if failed:
            return ""  # the compile that follows says why
        built, census = made
        for at in sorted(set(built) | set(census)):
            if not _same(built.get(at), census.get(at)):
                return (
                    f"{at[0]}:{at[1]} reads otherwise under the census's compile flags "
                    f"({census_flags}) than as built"
                )
    return ""


def _same(built: bytes | None, census: bytes | None) -> bool:
    """Whether a line of the build's -E output and the census's are one code, the build's
    `always_inline` and `__always_inline__` names spelt as bindings.UNINLINED spells them
    (a literal is a token whole: a stringized `always_inline` differs)."""
    if built == census:
        return True
    if built is None or census is None:
        return False
    toks = cppsource.tokens(cppsource.parse(built).root_node)
    return _uninlined(toks) == cppsource.tokens(cppsource.parse(census).root_node)


# The two runs may straddle a second (round 31: `__DATE__ " " __TIME__` differed).
_CLOCKLESS = [f'-D{m}="?"' for m in ("__DATE__", "__TIME__", "__TIMESTAMP__")]
_NOINLINE = {"always_inline": "noinline", "__always_inline__": "__noinline__"}


def _uninlined(toks: list[str]) -> list[str]:
    """`toks` with each always_inline name inside an attribute (`__attribute__((...))`,
    `[[...]]`) spelt as UNINLINED spells it. Elsewhere the name is the tree's own, and
    renamed it reads another declaration (round 31: a variable `always_inline` the census
    made `noinline`, which a local of that name then shadowed)."""
    out: list[str] = []
    parens = brackets = 0  # depth inside __attribute__'s parentheses; inside [[ ]]
    for i, t in enumerate(toks):
        before = toks[i - 1] if i else ""
        if parens:
            parens += {"(": 1, ")": -1}.get(t, 0)
        elif t == "(" and before in ("__attribute__", "__attribute"):
            parens = 1
        if t == "[[" or (t == "[" and before == "[" and not brackets):
            brackets = 1
        elif brackets and (t == "]]" or (t == "]" and before == "]")):
            brackets = 0
        out.append(_NOINLINE.get(t, t) if parens or brackets else t)
    return out


# libstdc++ declares these extern templates and defines their always_inline members
# (allocate, deallocate) nowhere out of line: made ordinary, they must be instantiated here.
ALLOCATORS = """// cxxgate census: the allocators' members, out of line (generated).
#include <memory>
template class std::allocator<char>;
template class std::allocator<wchar_t>;
"""


def _allocators(layout: Layout, spec: CellSpec, env: Envelope, work: Path) -> Path | str:
    """The allocator unit's object, compiled as the units are but without the tree's
    include folders (no tree header can stand in for <memory>); or why it did not build."""
    assert env.toolchain.path is not None
    (work / "allocators.cpp").write_text(ALLOCATORS)
    argv = [env.toolchain.path, f"-std={env.std}", *env.flags, *bindings.UNINLINED, "-w"]
    argv += ["-c", "allocators.cpp", "-o", "allocators.o"]
    step = toolcall.tool_call(layout, spec, "compile", "census allocators", argv, work, read=[])
    if step.timed_out or step.exit != 0:
        return "timed out" if step.timed_out else step.output.strip()[-300:] or "failed"
    return work / "allocators.o"


def _execute(
    binary: Path, program: dict[str, Any], layout: Layout, secret: str, tree_key: str
) -> tuple[set[int], str, str]:
    """The ids the run recorded, how it ended ("" when it exited 0), and how its main
    ended (`returned N`, `did not return`, `entered twice`)."""
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
    returns: list[str] = []
    again = False
    if sample.report_path:
        for line in Path(sample.report_path).read_text(errors="replace").splitlines():
            head, _, value = line.partition(" ")
            word, _, status = value.partition(" ")
            if head != secret:
                continue
            if value.isdigit():
                seen.add(int(value))
            elif word == "main" and status.lstrip("-").isdigit():
                returns.append(status)
            elif value == "again":
                again = True
    shutil.rmtree(layout.run(spec.key), ignore_errors=True)  # a fresh secret each build
    main = "entered twice" if again or len(returns) > 1 else "did not return"
    if not again and len(returns) == 1:
        main = f"returned {returns[0]}"
    if sample.status != "exited":
        return seen, f"the test program ended: {sample.status} {sample.detail}".strip(), main
    if sample.exit != 0:
        return seen, f"the test program exited {sample.exit}", main
    return seen, "", main


def _recorder(hit: str, secret: str, count: int, tag: str) -> str:
    """The recording unit: one report line per witness, on its first execution while main
    runs in main's own process, and `main <status>` once main returned (`again` when it is
    entered twice). The secret is kept masked (no string of it in the program's memory
    until a line is written)."""
    mask = secrets.token_bytes(len(secret))
    masked = ", ".join(str(ord(c) ^ m) for c, m in zip(secret, mask, strict=True))
    keys = ", ".join(str(m) for m in mask)
    return f"""// cxxgate census: records which witnesses ran (generated, one per build).
extern "C" void cxxgate_{tag}_line(const char* text, unsigned long size);
extern "C" int __real_main(int argc, char** argv, char** envp);
namespace {{
unsigned char seen[{max(count, 1)}];
const unsigned char masked[] = {{{masked}}};
const unsigned char keys[] = {{{keys}}};
bool entered = false;
bool in_main = false;
long main_pid = 0;

// getpid as a system call: the tree may define the C library's names.
long own_pid() {{
  long pid;
#if defined(__x86_64__)
  asm volatile("syscall" : "=a"(pid) : "a"(39L) : "rcx", "r11", "memory");
#elif defined(__aarch64__)
  register long x8 asm("x8") = 172;
  register long x0 asm("x0");
  asm volatile("svc 0" : "=r"(x0) : "r"(x8) : "memory");
  pid = x0;
#else
#error "cxxgate census: no direct system call for this architecture"
#endif
  return pid;
}}

// One report line: the secret, a space, `text`.
void emit(const char* text) {{
  char line[128];
  unsigned long n = 0;
  for (unsigned long i = 0; i < sizeof masked; ++i) {{
    line[n++] = static_cast<char>(masked[i] ^ keys[i]);
  }}
  line[n++] = ' ';
  for (const char* c = text; *c != 0; ++c) line[n++] = *c;
  cxxgate_{tag}_line(line, n);
  for (unsigned long i = 0; i < sizeof masked; ++i) line[i] = 0;
}}

// `word`, a space and `number` as one line ("" word: the number alone).
void emit_number(const char* word, long number) {{
  char text[48];
  unsigned long n = 0;
  for (const char* c = word; *c != 0; ++c) text[n++] = *c;
  if (n != 0) text[n++] = ' ';
  unsigned long value = static_cast<unsigned long>(number < 0 ? -number : number);
  if (number < 0) text[n++] = '-';
  char digits[24];
  int k = 0;
  do {{
    digits[k++] = static_cast<char>('0' + value % 10);
    value /= 10;
  }} while (value != 0);
  while (k > 0) text[n++] = digits[--k];
  text[n] = 0;
  emit(text);
}}
}}  // namespace

void {hit}(unsigned long id) noexcept {{
  if (!in_main || own_pid() != main_pid) return;
  if (id >= sizeof seen || seen[id]) return;
  seen[id] = 1;
  emit_number("", static_cast<long>(id));
}}

extern "C" int __wrap_main(int argc, char** argv, char** envp) {{
  if (entered) emit("again");
  entered = true;
  main_pid = own_pid();
  in_main = true;
  const int status = __real_main(argc, argv, envp);
  in_main = false;
  if (own_pid() == main_pid) emit_number("main", status);
  return status;
}}
"""
