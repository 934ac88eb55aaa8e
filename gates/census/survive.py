"""Which witnesses survive the preprocessor, and what it makes of them: ask it, with the
case's envelope.

Each file holding witnesses (and each source unit) is preprocessed (`g++ -E`) as a copy
with markers around each witness (`Spot`): first in its arguments (or first in a test's
body) an identifier that a forced include defines to expand to a second identifier. The
witness survives when that second identifier reaches the output as code: an `#if 0` or an
`#ifdef` never defined drops the marker with the witness, `assert` under NDEBUG and a
witness macro redefined to nothing drop their arguments, and a macro that only stringifies
them turns the marker into text, never into its expansion. Marker names carry a fresh
random tag per file, so a patched source cannot name them (`#undef`, or spell the
expansion itself).

The same run gives, per tree file the unit read (its -MD dependency file), a fingerprint
of the code the preprocessor made of that file's lines (`regions`). A second run, with
`__LINE__` and the clock as constants, gives the tokens between each witness's start and
end markers (`expansions`): the census compares both with the reference's.

The copy lives in a scratch folder, named as its original; `-iquote` the original's folder
keeps its quoted includes resolving as before. The preprocessor runs through
cxxgate/toolchain/toolcall.py (logged, bounded, sandboxed: it reads the tree and writes only the
scratch folder).
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cxxgate.gates.shared import cppsource
from cxxgate.store.layout import Layout
from cxxgate.toolchain import diagnostics, toolcall
from cxxgate.toolchain.cellspec import CellSpec, Step
from cxxgate.toolchain.envelope import Envelope, Toolchain


@dataclass(frozen=True)
class FileLive:
    detail: str  # "" when the preprocessor took the file; else its first error
    live: list[bool | None]  # per marker, in the order given; None: could not be told
    # Per witness: its expansion's tokens, markers and its own line numbers neutral
    # (None: not told); and every file of the tree the unit's preprocessing read.
    expansions: list[list[str] | None] = field(default_factory=list)
    deps: list[str] = field(default_factory=list)
    # Per tree file the unit read (itself included): a fingerprint of the code the
    # preprocessor made of that file's lines in this unit.
    regions: dict[str, str] = field(default_factory=dict)
    # Per tree file: the lines the compiler's preprocessor kept (code, #define, #undef),
    # as runs [first, last]; held against the lines the census's parser skipped.
    kept: dict[str, list[list[int]]] = field(default_factory=dict)


def envelope_params(env: Envelope) -> dict[str, Any]:
    """An envelope as scan parameters (JSON): its id, hence the toolchain's identity,
    enters the scan's key."""
    return {"id": env.id, **asdict(env)}


def envelope_from(params: dict[str, Any]) -> Envelope:
    tc = dict(params["toolchain"])
    tc["binds"] = tuple(tuple(b) for b in tc["binds"])
    return Envelope(
        name=params["name"],
        toolchain=Toolchain(**tc),
        std=params["std"],
        flags=tuple(params["flags"]),
        link_flags=tuple(params["link_flags"]),
        defines=tuple(params["defines"]),
        run_env=tuple((k, v) for k, v in params["run_env"]),
    )


@dataclass(frozen=True)
class Spot:
    """Where one witness's markers go (byte offsets): `start` and `end` bound its own text
    (what the preprocessor makes of it is compared with the reference's), `mark` is first
    in its arguments or its body (liveness, and execution: gates/census/executed.py),
    `close` ends a check's first argument (-1: none)."""

    start: int
    mark: int
    close: int
    end: int


MARKERS = ("s", "m", "c", "e")  # start, mark, close, end


def marked(source: bytes, spots: list[Spot], tag: str) -> bytes:
    """`source` with markers `cxxgate_<tag>_<s|m|c|e><i>` inserted at spots[i]'s offsets."""
    inserts: list[tuple[int, int, str]] = []
    for i, spot in enumerate(spots):
        for order, (letter, offset) in enumerate(
            zip(MARKERS, (spot.start, spot.mark, spot.close, spot.end), strict=True)
        ):
            if offset >= 0:
                inserts.append((offset, order, f"cxxgate_{tag}_{letter}{i}"))
    out = source
    # Last offset first; at one offset, in MARKERS order (an end before the next start).
    for offset, _, name in sorted(inserts, key=lambda p: (p[0], -p[1]), reverse=True):
        out = out[:offset] + f" {name} ".encode() + out[offset:]
    return out


# The -E output of a patched file is written to disk: a macro that expands without end
# must stop at a size (SIGXFSZ: the file is then "not preprocessed", which fails closed).
OUTPUT_FILE_CAP = 256 << 20


def _capped() -> list[str]:
    prlimit = shutil.which("prlimit")
    return [prlimit, f"--fsize={OUTPUT_FILE_CAP}", "--"] if prlimit else []


def _marker(tag: str, i: int, letter: str = "m") -> str:
    return f"cxxgate_{tag}_{letter}{i}"


def _expansion(tag: str, i: int, letter: str = "m") -> str:
    word = {"s": "start", "m": "live", "e": "stop"}[letter]
    return f"cxxgate_{tag}_{word}{i}"


def liveness(
    tree: Path,
    files: dict[str, list[Spot]],
    env: Envelope,
    include_dirs: tuple[str, ...],
    compile_seconds: float,
) -> dict[str, FileLive]:
    """Preprocess each file of `files` (tree-relative path -> its witnesses' spots)."""
    layout = Layout(tree.parent.parent)  # trees live at <build>/trees/<key>
    spec = CellSpec(
        kind="syntax",
        tree_key=tree.name,
        units=(),
        tree_sources=(),
        include_dirs=include_dirs,
        envelope=env,
        compile_seconds=compile_seconds,
        label="census preprocess",
    )
    base = toolcall.compile_argv(spec, tree)
    scratch = layout.root / "scans" / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{tree.name[:12]}-", dir=scratch))
    out: dict[str, FileLive] = {}
    try:
        for rel, spots in sorted(files.items()):
            # A folder of a name no copy could spell: each holds another file's copy.
            out[rel] = _one(layout, spec, base, tree, rel, spots, work / secrets.token_hex(8))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def contexts(
    tree: Path,
    files: dict[str, list[Spot]],
    units: list[str],
    env: Envelope,
    include_dirs: tuple[str, ...],
    compile_seconds: float,
) -> dict[str, list[set[str]]]:
    """What each witness expands to in each unit that reads its file (fingerprints): a
    header's check as the units including it see it, with whatever they define above the
    `#include`. The units are preprocessed from a copy of the tree where every file of
    `files` is marked (its own tag), with `__LINE__` and the clock constant."""
    layout = Layout(tree.parent.parent)
    spec = CellSpec(
        kind="syntax",
        tree_key=tree.name,
        units=(),
        tree_sources=(),
        include_dirs=include_dirs,
        envelope=env,
        compile_seconds=compile_seconds,
        label="census preprocess in context",
    )
    scratch = layout.root / "scans" / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{tree.name[:12]}-ctx-", dir=scratch))
    tag = secrets.token_hex(6)
    order = sorted(files)
    out: dict[str, list[set[str]]] = {rel: [set() for _ in files[rel]] for rel in order}
    try:
        copy = work / "trees" / tree.name
        shutil.copytree(tree, copy, symlinks=True)
        defs = list(_NEUTRAL)
        for n, rel in enumerate(order):
            ftag = f"{tag}x{n}"
            (copy / rel).write_bytes(marked((tree / rel).read_bytes(), files[rel], ftag))
            for i in range(len(files[rel])):
                defs.append(f"#define {_marker(ftag, i, 's')} {_expansion(ftag, i, 's')}\n")
                defs.append(f"#define {_marker(ftag, i)} {_expansion(ftag, i)}\n")
                defs.append(f"#define {_marker(ftag, i, 'c')}\n")
                defs.append(f"#define {_marker(ftag, i, 'e')} {_expansion(ftag, i, 'e')}\n")
        # The header and each unit's output lie where no name the copy could spell reaches
        # (`../../../h/context.h` was true here and false in a compile: round 25).
        hidden = work / secrets.token_hex(8)
        hidden.mkdir()
        header = hidden / "context.h"
        header.write_text("".join(defs))
        base = toolcall.compile_argv(spec, copy)
        for k, unit in enumerate(units):
            folder = hidden / f"u{k}"
            folder.mkdir()
            argv = [*_capped(), *base, "-w", "-E", "-include", str(header)]
            argv += ["-x", "c++", str(copy / unit), "-o", "unit.i"]
            step = toolcall.tool_call(
                layout,
                spec,
                "compile",
                str(tree / unit),
                argv,
                folder,
                read=[copy, header.parent],
                as_compiled=copy,
            )
            result = folder / "unit.i"
            if step.timed_out or step.exit != 0 or not result.exists():
                continue  # the liveness pass reports the unit the preprocessor rejects
            text = result.read_bytes()
            for n, rel in enumerate(order):
                ftag = f"{tag}x{n}"
                if _expansion(ftag, 0, "s").encode()[:-1] not in text:
                    continue  # no marker of this file in this unit
                for i in range(len(files[rel])):
                    toks = _span(text, ftag, i, f"cxxgate_{tag}x")
                    if toks is not None:
                        out[rel][i].add(cppsource.fingerprint(toks))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


# What may differ between two spellings of one witness and is not the witness: where it
# stands (a test moved to another file) and when it was compiled.
_NEUTRAL = ["#undef __LINE__\n", "#define __LINE__ 0\n"] + [
    f'#undef {m}\n#define {m} "?"\n'
    for m in ("__FILE__", "__FILE_NAME__", "__BASE_FILE__", "__DATE__", "__TIME__", "__TIMESTAMP__")
]


def copy_name(rel: str) -> str:
    """A marked copy is named as its original (in a folder of its own): `__FILE__` reads
    the same in the reference's copy and the patched tree's."""
    return Path(rel).name if Path(rel).suffix else Path(rel).name + ".cpp"


def _one(
    layout: Layout,
    spec: CellSpec,
    base: list[str],
    tree: Path,
    rel: str,
    spots: list[Spot],
    work: Path,
) -> FileLive:
    work.mkdir()
    tag = secrets.token_hex(6)
    original = tree / rel
    source = original.read_bytes()
    copy = work / copy_name(rel)
    copy.write_bytes(marked(source, spots, tag))
    markers = []
    for i in range(len(spots)):
        markers.append(f"#define {_marker(tag, i, 's')} {_expansion(tag, i, 's')}\n")
        markers.append(f"#define {_marker(tag, i)} {_expansion(tag, i)}\n")
        markers.append(f"#define {_marker(tag, i, 'c')}\n")
        markers.append(f"#define {_marker(tag, i, 'e')} {_expansion(tag, i, 'e')}\n")
    # Liveness, regions and dependencies from the compiler's own view of the unit; the
    # expansions from a second view with `__LINE__` (and the clock) as constants, so that
    # moving a witness is not changing it. Two views, not one: `#if __LINE__ == 0` around
    # a witness must not make it live for the census and dead for the build.
    # The headers and outputs lie in a folder of a name the patch cannot know: the copy's
    # own folder is searched first by its quoted includes, and `__has_include("real.h")`
    # there answered true where the compile, in the tree, answered false (round 25).
    aside = work / secrets.token_hex(8)
    aside.mkdir()
    (aside / "real.h").write_text("".join(markers))
    (aside / "neutral.h").write_text("".join(_NEUTRAL + markers))
    real = aside / "real.h"
    step, text = _preprocess(layout, spec, base, tree, rel, work, copy.name, real, deps=True)
    kept: dict[str, list[list[int]]] = {}
    if text is not None:
        kept = _kept(text, tree, rel, copy.name)
        text = _without_directives(text)
    if text is None:
        first = diagnostics.first_error(diagnostics.parse(step, str(tree)))
        why = first.brief() if first else ("timed out" if step.timed_out else "failed")
        why = why.replace(copy.name, rel)
        return FileLive(f"the preprocessor rejects {rel}: {why}", [None] * len(spots))
    live: list[bool | None] = [
        cppsource.has_identifier(text, _expansion(tag, i)) for i in range(len(spots))
    ]
    regions = _regions(text, tree, rel, copy.name, f"cxxgate_{tag}_")
    deps = _deps(aside / "unit.d", tree, rel)
    expansions: list[list[str] | None] = [None] * len(spots)
    if any(live):
        neutral = aside / "neutral.h"
        _, fixed = _preprocess(layout, spec, base, tree, rel, work, copy.name, neutral)
        if fixed is not None:
            expansions = [_span(fixed, tag, i) if live[i] else None for i in range(len(spots))]
    return FileLive("", live, expansions, deps, regions, kept)


def _preprocess(
    layout: Layout,
    spec: CellSpec,
    base: list[str],
    tree: Path,
    rel: str,
    work: Path,
    copy: str,
    header: Path,
    *,
    deps: bool = False,
) -> tuple[Step, bytes | None]:
    """`g++ -E` of the marked copy (in `work`) with `header` forced in; its output (beside
    `header`), None on failure."""
    result = header.with_name(f"{header.name}.i")
    argv = [*_capped(), *base, "-w", "-E", "-iquote", str((tree / rel).parent)]
    # __FILE__ in the copy reads as the original's tree path does (compile_argv maps trees).
    argv += [f"-fmacro-prefix-map={work}=/census"]
    # With the dependencies (the liveness pass), -dD: the #define and #undef lines the
    # preprocessor kept are in its output, where they are (_kept, _without_directives).
    argv += ["-dD", "-MD", "-MF", str(header.with_name("unit.d"))] if deps else []
    argv += ["-include", str(header), "-x", "c++", copy, "-o", str(result)]
    step = toolcall.tool_call(
        layout, spec, "compile", str(tree / rel), argv, work, read=[tree], as_compiled=tree
    )
    if step.timed_out or step.exit != 0 or not result.exists():
        return step, None
    return step, result.read_bytes()


def _span(text: bytes, tag: str, i: int, prefix: str = "") -> list[str] | None:
    """The tokens the preprocessor made of witness i (between its start and end markers),
    with every marker of the file made neutral."""
    begin = _find(text, _expansion(tag, i, "s").encode(), 0)
    if begin < 0:
        return None
    end = _find(text, _expansion(tag, i, "e").encode(), begin)
    if end < 0:
        return None
    span = _code(text[begin + len(_expansion(tag, i, "s")) : end])
    toks = cppsource.tokens(cppsource.parse(span).root_node)
    prefix = prefix or f"cxxgate_{tag}_"
    return [_spaceless(_unmarked(t, prefix)) for t in toks]


def _spaceless(tok: str) -> str:
    """A string literal without its blanks: a stringified argument (`#a`) keeps the
    source's spacing, which re-wrapping changes. The source's own literals are pinned by
    the witness's fingerprint already."""
    if '"' not in tok:
        return tok
    return "".join(tok.split())


def _linemarker(line: bytes) -> tuple[bytes, int] | None:
    """The file a `# <n> "<file>" ...` line of -E output names (GCC's escapes undone: a
    backslash in a file name is written doubled, a byte it cannot print as `\\ooo`), and
    the line <n> the next output line comes from; None for other lines."""
    parts = line.split(b" ", 2)
    if len(parts) < 3 or parts[0] != b"#" or not parts[1].isdigit() or parts[2][:1] != b'"':
        return None
    quoted, name, i = parts[2], bytearray(), 1
    while i < len(quoted) and quoted[i] != _QUOTE:
        if quoted[i] == _BACKSLASH and quoted[i + 1 : i + 2] in _OCTAL:
            j = i + 1
            while j < min(i + 4, len(quoted)) and quoted[j : j + 1] in _OCTAL:
                j += 1
            name.append(int(quoted[i + 1 : j], 8) & 0xFF)
            i = j
            continue
        i += 1 if quoted[i] == _BACKSLASH else 0
        name += quoted[i : i + 1]
        i += 1
    return (bytes(name), int(parts[1])) if i < len(quoted) else None


_QUOTE, _APOSTROPHE, _BACKSLASH = ord('"'), ord("'"), ord("\\")
_OCTAL = {bytes([c]) for c in b"01234567"}
# Letters of a name to g++: `$`, and every byte of a UTF-8 letter (`éR"(` is a name and
# a string, no raw string: red team round 27).
_LETTERS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_$")
_RAW_PREFIXES = frozenset({b"R", b"u8R", b"uR", b"UR", b"LR"})


def _markers(text: bytes) -> Iterator[tuple[bytes, tuple[bytes, int] | None]]:
    """Each line of -E output, with what it names when it is a linemarker. A line inside
    a raw string literal is never one: a raw string may hold a line `# 1 "x"`, printed
    as it is (red team round 26)."""
    delimiter: bytes | None = None  # of the raw string the line starts in
    for line in text.split(b"\n"):
        starts_inside = delimiter is not None
        delimiter = _raw_string_open(line, delimiter)
        yield line, None if starts_inside else _linemarker(line)


def line_directive(text: bytes) -> bytes | None:
    """The file a `#line` directive in a unit names in place of the one it is in, from the
    unit's -E output (None: no such directive). A linemarker with neither flag 1 (a file
    entered) nor 2 (a file returned to) that names another file is one: every reader of
    -E output takes the lines after it for that file's, and a file outside the tree is
    not compared (round 33: a header's code under `#line 1 "/usr/include/..."`). GCC's
    own preamble is the one exception, in its order and once: the unit, its working
    directory (`/cwd//`, on the second line, under -g), `<built-in>`,
    `<command-line>`, the unit (clang enters and leaves its pseudo-files with flags, and
    its return to the unit ends the exception)."""
    current = unit = None
    preamble: list[tuple[bytes, bytes]] = []
    for n, (line, marker) in enumerate(_markers(text)):
        if marker is None:
            continue
        name = marker[0]
        if n == 1 and name.endswith(b"//"):
            continue  # GCC's working directory, second when -g asks for it
        if unit is None:
            unit = name
            preamble = [(name, b"<built-in>"), (b"<built-in>", b"<command-line>"),
                        (b"<command-line>", name)]  # fmt: skip
        flags = line.rsplit(b'"', 1)[-1].split()
        if b"2" in flags and name == unit:
            preamble = []  # clang's return to the unit: its preamble is over
        if current is not None and name != current and not {b"1", b"2"} & set(flags):
            if not preamble or preamble[0] != (current, name):
                return name
            preamble.pop(0)
        current = name
    return None


def _raw_string_open(line: bytes, delimiter: bytes | None) -> bytes | None:
    """The delimiter of the raw string still open at the end of `line`, given the one
    open at its start (None: none). Names, pp-numbers (a digit separator is no quote),
    strings and characters are stepped over whole, as g++'s lexer reads them."""
    i, n = 0, len(line)
    while True:
        if delimiter is not None:
            close = line.find(b")" + delimiter + b'"', i)
            if close < 0:
                return delimiter
            i, delimiter = close + len(delimiter) + 2, None
        while delimiter is None:
            if i >= n:
                return None
            ch = line[i]
            if ch in (_QUOTE, _APOSTROPHE):
                i = _after_quoted(line, i)
            elif ch in _LETTERS or ch >= 0x80:
                start, number = i, line[i : i + 1].isdigit()
                while i < n and (
                    line[i] in _LETTERS
                    or line[i] >= 0x80
                    or (number and line[i] == _APOSTROPHE and i + 1 < n and line[i + 1] in _LETTERS)
                    or (number and line[i] in b"+-." and line[i - 1] in b"eEpP.0123456789")
                ):
                    i += 1
                opens = line.find(b"(", i + 1)
                if line[start:i] in _RAW_PREFIXES and line[i : i + 1] == b'"' and opens >= 0:
                    candidate = line[i + 1 : opens]
                    if len(candidate) <= 16 and not any(c in b" ()\\\t\"" for c in candidate):
                        delimiter, i = candidate, opens + 1
            else:
                i += 1


def _after_quoted(line: bytes, i: int) -> int:
    """Where the string or character literal opening at `i` ends (the line's end when it
    does not close on it)."""
    quote, j = line[i], i + 1
    while j < len(line):
        if line[j] == _BACKSLASH:
            j += 2
        elif line[j] == quote:
            return j + 1
        else:
            j += 1
    return len(line)


def _code(text: bytes) -> bytes:
    """-E output without its linemarkers (where a span crosses lines)."""
    return b"\n".join(ln for ln, marker in _markers(text) if marker is None)


# The lines -dD adds. Never the output of an expansion: the preprocessor prints a `#` an
# expansion made after a blank, so that it cannot read as a directive.
_DIRECTIVES = (b"#define ", b"#undef ")


def _without_directives(text: bytes) -> bytes:
    """-dD output as plain -E output reads: its #define and #undef lines left empty."""
    return b"\n".join(b"" if ln.startswith(_DIRECTIVES) else ln for ln in text.split(b"\n"))


def _lines(text: bytes, tree: Path, rel: str, copy: str) -> Iterator[tuple[str | None, int, bytes]]:
    """Each line of -E output but the linemarkers, with the tree file (None: outside the
    tree) and the line of it that it comes from."""
    root = tree.resolve()
    current: str | None = None
    number = 0
    # A unit's -E output names each header at every return to it: resolve each name once.
    files: dict[bytes, str | None] = {copy.encode(): rel}
    for line, marker in _markers(text):
        if marker is not None:
            name, number = marker
            if name not in files:
                files[name] = _in_tree(Path(name.decode(errors="replace")), root)
            current = files[name]
            continue
        yield current, number, line
        number += 1


def tree_lines(text: bytes, root: Path, rel: str, copy: str) -> dict[tuple[str, int], bytes]:
    """-E output's code by the tree file and line it comes from (a file read twice: both),
    files outside the tree (resolved `root`) left out."""
    out: dict[tuple[str, int], bytes] = {}
    for file, number, line in _lines(text, root, rel, copy):
        if file is not None:
            out[file, number] = out[file, number] + b"\n" + line if (file, number) in out else line
    return out


def _kept(text: bytes, tree: Path, rel: str, copy: str) -> dict[str, list[list[int]]]:
    """Per tree file, the lines the preprocessor kept something of (-dD output: code, or a
    #define or #undef), as runs [first, last]."""
    lines: dict[str, list[int]] = {}
    for file, number, line in _lines(text, tree, rel, copy):
        if file is not None and line.strip():
            lines.setdefault(file, []).append(number)
    out: dict[str, list[list[int]]] = {}
    for file, numbers in lines.items():
        runs: list[list[int]] = []
        for n in sorted(set(numbers)):
            if runs and runs[-1][1] == n - 1:
                runs[-1][1] = n
            else:
                runs.append([n, n])
        out[file] = runs
    return out


def _regions(text: bytes, tree: Path, rel: str, copy: str, prefix: str) -> dict[str, str]:
    """What the preprocessor made of each tree file's lines in this unit, fingerprinted:
    a header the patch left alone must read the same here as in the reference's unit (a
    macro defined before it, `#define report(...) true`, rewrites the framework itself)."""
    chunks: dict[str, list[bytes]] = {}
    for file, _, line in _lines(text, tree, rel, copy):
        if file is not None:
            chunks.setdefault(file, []).append(line)
    out = {}
    for file, lines in chunks.items():
        toks = cppsource.tokens(cppsource.parse(b"\n".join(lines)).root_node)
        out[file] = cppsource.fingerprint([_spaceless(_unmarked(t, prefix)) for t in toks])
    return out


def _in_tree(path: Path, root: Path) -> str | None:
    """`path` relative to the (resolved) tree `root`, None for a file outside it."""
    if not path.is_absolute():
        return None
    real = path.resolve()
    return real.relative_to(root).as_posix() if real.is_relative_to(root) else None


def _find(text: bytes, name: bytes, start: int) -> int:
    """The first occurrence of identifier `name` at or after `start` (whole word)."""
    at = text.find(name, start)
    while at >= 0:
        after = text[at + len(name) : at + len(name) + 1]
        if not (after.isalnum() or after == b"_"):
            return at
        at = text.find(name, at + 1)
    return at


def _unmarked(tok: str, prefix: str) -> str:
    """`tok` with each marker name (`<prefix>...`, to the end of the identifier) as `@`:
    their numbers follow the file's witness order, which a patch may shift."""
    out, at = "", tok.find(prefix)
    while at >= 0:
        out += tok[:at] + "@"
        rest = tok[at + len(prefix) :]
        n = 0
        while n < len(rest) and (rest[n].isalnum() or rest[n] == "_"):
            n += 1
        tok = rest[n:]
        at = tok.find(prefix)
    return out + tok


def _deps(path: Path, tree: Path, rel: str) -> list[str]:
    """The tree files a unit's preprocessing read, from its -MD dependency file."""
    if not path.exists():
        return []
    text = path.read_text(errors="replace").replace("\\\n", " ")
    words: list[str] = []
    for chunk in text.split():
        if words and words[-1].endswith("\\"):
            words[-1] = words[-1][:-1] + " " + chunk  # an escaped space
        else:
            words.append(chunk)
    root = tree.resolve()
    # The first word is the target.
    out = {r for word in words[1:] if (r := _in_tree(Path(word), root)) is not None}
    out.discard(rel)
    return sorted(out)
