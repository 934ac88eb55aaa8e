"""Diagnostic control as each compile cell's preprocessor saw it: `diagnostic_control`.

The source text cannot show every directive a patch adds: `_Pragma` can be assembled
through macro arguments (`CAT(_Pra, gma)(...)`), a macro from an unchanged header can
expand to one, an include can be spelt `"./x.def"` or re-enter its own header, and a
guard (`#if __INCLUDE_LEVEL__`, a macro only a probe unit defines) can show it to some
translation units and not others. `g++ -E` spells every one that a translation unit
really gets out as a `#pragma` line, and its line markers say which file each line came
from. So every cell that compiles tree content (syntax units, object cells: probes,
oracles, library sources, consumer programs) preprocesses each of its translation units
again, with the exact argv of its compile, in the same sandbox (`scan`), and keeps only
the control lines that came from a file of the tree (`CellResult.controls`):

- `#pragma GCC|clang diagnostic ...`, `#pragma [GCC|clang] system_header`,
  `#pragma GCC|clang optimize` (optimisation level decides which warnings fire), MSVC's
  `#pragma warning`;
- an `optimize` attribute (`__attribute__((optimize(...)))`, `[[gnu::optimize]]`);
- a line marker or `#line` typed in a tree file that renames the file or adds the
  system-header flag (3) without entering an include (`_Pragma("GCC system_header")`
  shows this way too). A typed marker that pretends to enter a system header
  (`# 1 "/usr/include/..." 1 3`) looks in -E output like a real include: a directive
  cannot come from a macro, so intake's source-text scan (cxxgate/intake/pragmas.py) finds it;
- each line of a tree file compiled while a tree file's `#pragma GCC diagnostic ignored`
  is in force (`UNDER`), and such a pragma still in force at the unit's end
  (`OPEN_AT_END`): code added inside a region the base tree already silences.

Raw string literals are emptied first (`blank_raw_strings`): -E copies their text
verbatim, so a line inside one can read as a marker or a pragma.

The verdict fold decides, in one place (`added`): a candidate's cell shows a control line
(by text) more often than the same cell spec and unit did on the reference side (the base
tree, and the reference tree of a case with a reference patch), or a unit with no
counterpart there shows more than the most any reference unit showed; a
`#pragma GCC diagnostic pop` the same unit had on the reference side is gone; a unit with
no counterpart leaves an `ignored` in force at its end.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cxxgate.cells import controlstore
from cxxgate.host.sandbox import NEUTRAL_TREE
from cxxgate.intake import pragmas
from cxxgate.store.layout import Layout
from cxxgate.toolchain import toolcall
from cxxgate.toolchain.cellspec import CellSpec

_MARKER = re.compile(r'^# (\d+) "((?:[^"\\]|\\.)*)"((?: \d)*)\s*$')
_PRAGMA = re.compile(
    r"^\s*#\s*pragma\s+(?:(?:GCC|clang)\s+(?:diagnostic|system_header|optimize)"
    r"|system_header|warning)\b"
)
_OPTIMIZE = re.compile(r"\b_*optimize_*\s*\(")
_POP = "#pragma GCC diagnostic pop"
# The diagnostic state a pragma line moves (GCC's and clang's spelling; g++ ignores the
# latter, clang obeys it): `ignored` and `warning` (an error demoted) switch a warning off.
_STATE = re.compile(r"^\s*#\s*pragma\s+(?:GCC|clang)\s+diagnostic\s+(push|pop|ignored|warning)\b")
UNDER = "under an ignored diagnostic: "
OPEN_AT_END = "a `#pragma GCC diagnostic ignored` from a tree file is in force at the unit's end"
# The tokens of -E output that can hold a line break: raw string literals (`-E` copies
# their text verbatim, and g++ lets one span lines even in a `#pragma message`). Ordinary
# strings and character literals cannot (splicing happened before), comments are gone;
# numbers come before character literals so a digit separator (1'000) opens none, and
# identifiers are whole tokens so `xR"(` is `xR` and a string.
_E_TOKEN = re.compile(
    r"""
    (?P<raw>(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{0,16})\((?P<body>.*?)(?P<close>\)(?P=delim)"|\Z))
  | (?P<string>(?:u8|[uUL])?"(?:\\.|[^"\\\n])*"?)
  | (?P<number>\.?\d(?:[eEpP][+-]|'\w|[\w.])*)
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<char>'(?:\\.|[^'\\\n])*'?)
  | (?P<other>[^"'\w.]+|.)
    """,
    re.VERBOSE | re.DOTALL,
)

Owner = Callable[[str], "str | None"]


@dataclass(frozen=True)
class Control:
    """One control line a translation unit's preprocessed output holds from a tree file."""

    unit: str  # the translation unit (tree path, or the harness unit's name)
    path: str  # the tree file the line came from (line markers, normalised)
    line: int
    text: str

    def shown(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


def tree_owner(tree: Path, published: Iterable[tuple[Path, str]] = ()) -> Owner:
    """Marker file name -> tree path, or None for a file outside the tree. Names are
    normalised first (`include/./x.def`, `include/../include/x.hpp`: the tree holds no
    links, so a lexical normalisation is the file); `published` maps copies of tree files
    (a consumer's published headers) back to their tree paths."""
    roots = [(os.path.normpath(str(tree)), ""), (NEUTRAL_TREE, "")]
    copies = {os.path.normpath(str(p)): rel for p, rel in published}

    def owner(name: str) -> str | None:
        path = os.path.normpath(re.sub(r"\\(.)", r"\1", name))  # GCC escapes " and \ in names
        if path in copies:
            return copies[path]
        for root, prefix in roots:
            if path.startswith(root + "/"):
                return prefix + path[len(root) + 1 :]
        return None

    return owner


def scan(
    layout: Layout,
    spec: CellSpec,
    argv: list[str],
    source: str,
    unit: str,
    cwd: Path,
    owner: Owner,
    *,
    sees_tree: bool = True,
    reads: list[str] | None = None,
) -> list[Control]:
    """Preprocess one translation unit with its compile's argv (`argv`: everything but the
    action, source and output) in the cell's sandbox, and keep the control lines from tree
    files. A failed -E (a compile error) still shows what it read; one that timed out or
    wrote nothing is recorded as a control line, so a verdict never rests on it.

    `reads`: the tree files the unit's compile read (its -MD file), when it compiled. The
    record is then kept by them, and an earlier one with the same key is taken instead of
    preprocessing again (cxxgate/cells/controlstore.py)."""
    tree = layout.tree(spec.tree_key)
    what = [*argv, "-E", source, "-o", f"{Path(unit).name}.ii"]
    record_key = None
    if reads is not None and sees_tree and os.environ.get("CXXGATE_REUSE") != "0":
        record_key = controlstore.key(layout, spec, what, unit, cwd, reads)
        kept = controlstore.load(layout, record_key)
        if kept is not None:
            return [Control(unit, p, n, t) for p, n, t in kept]
    out = cwd / what[-1]
    out.unlink(missing_ok=True)
    step = toolcall.tool_call(
        layout, spec, "preprocess", source, what, cwd, read=[tree] if sees_tree else []
    )
    try:
        text = out.read_text(errors="replace") if out.is_file() else ""
    finally:
        out.unlink(missing_ok=True)
    record = controls(text, owner)
    found = [Control(unit, p, n, t) for p, n, t in record]
    if step.timed_out or not text:
        why = "timed out" if step.timed_out else "wrote nothing"
        found.append(Control(unit, unit, 0, f"the preprocessor {why}: its output is unseen"))
    elif record_key is not None and step.exit == 0:
        controlstore.store(layout, record_key, record)
    return found


def blank_raw_strings(text: str) -> tuple[str, bool]:
    """-E text with the contents of raw string literals removed, their line breaks kept (so
    line numbers stay right), and whether one ran to the end unterminated. A raw string's
    text is copied verbatim and may hold lines that read as line markers or pragmas (`# 1
    "/usr/include/stdio.h" 1 3`): they are literal text, not the compiler's."""
    out: list[str] = []
    unterminated = False
    pos = 0
    # Only the lines where a raw string may start are read token by token (from their
    # start: no ordinary literal spans a line of -E output, so a line start is a token
    # boundary); the rest is copied. Reading all of a unit this way took, with the line
    # stripping below, 28 % of the doit master's samples in a cold grade (py-spy).
    while (at := text.find('R"', pos)) >= 0:
        start = max(pos, text.rfind("\n", pos, at) + 1)
        out.append(text[pos:start])
        pos = start
        line_end = len(text) if (n := text.find("\n", at)) < 0 else n
        for m in _E_TOKEN.finditer(text, start):
            if m.group("raw") is not None:
                delim = m.group("delim")
                unterminated |= not m.group("close")
                prefix = m.group("raw")[: m.group("raw").index('R"') + 2]
                body = "\n" * m.group("body").count("\n")
                out.append(f"{prefix}{delim}({body}){delim}\"")
                line_end = len(text) if (n := text.find("\n", m.end())) < 0 else n
            else:
                out.append(m.group())
            pos = m.end()
            if pos > line_end:
                break
    out.append(text[pos:])
    return "".join(out), unterminated


def controls(text: str, owner: Owner) -> list[tuple[str, int, str]]:
    """(tree path, line, text) of each control on lines from tree files, read from `-E`
    output. The compiler's own preamble (the working-directory marker, `<built-in>`,
    `<command-line>`, the predefined header) ends at `# 1 "<main file>"`, the main file
    being the name of the first marker.

    Also each line of a tree file compiled while a tree file's `#pragma GCC diagnostic
    ignored` (or `warning`) is in force (`UNDER` + its text: the fold compares them with the
    reference's, so code added inside a region the base already silences is seen), and
    whether such a pragma is still in force at the unit's end (`OPEN_AT_END`)."""
    text, unterminated = blank_raw_strings(text)
    found: list[tuple[str, int, str]] = []
    here: str | None = None
    current, system, line = "", False, 0
    main: str | None = None
    started = False
    # The diagnostic state: whether a tree file's `ignored` is in force, and push's saves.
    silenced: tuple[str, int] | None = None
    saved: list[tuple[str, int] | None] = []
    # A marker that gives a tree file's own line the system flag, waiting for the marker
    # that ends it: g++ wraps each expansion of a system header's macro (`assert`,
    # `UINT16_MAX`, `errno`) in `# N "file" 3 4` ... `# M "file"`, M >= N (M > N when the
    # invocation spans lines or ends one), or an include entered right after it (an
    # expansion that ends a line before `#include`). That shape is the compiler's; anything
    # else is a relabelling.
    pending: tuple[str | None, int, str, int, str] | None = None
    for raw in text.splitlines():
        m = _MARKER.match(raw)
        if not started:
            if m is not None and main is None:
                main = m.group(2)
            started = m is not None and m.groups() == ("1", main, "")
            if not started:
                continue
        if m:
            number, name, flags = int(m.group(1)), m.group(2), set(m.group(3).split())
            if pending is not None:
                owner_of, at, was, n, shown = pending
                pending = None
                closes = (name == was and number >= n and not flags & {"1", "2", "3"}) or (
                    name != was and "1" in flags
                )
                if owner_of and not closes:
                    found.append((owner_of, at, f"a line marker relabels its lines: {shown}"))
            relabels = not flags & {"1", "2"} and (
                name != current or ("3" in flags and not system)
            )
            if here and relabels and name == current:
                pending = (here, line, name, number, raw.strip())
            elif here and relabels:
                found.append((here, line, f"a line marker relabels its lines: {raw.strip()}"))
            current, system, line = name, "3" in flags, number
            here = owner(name)
            continue
        # Emptying literals (the costly part, on every line of every unit) can only take a
        # pragma or `optimize(` away, never make one, and -E output holds no comment: a
        # line without either word is read as it is.
        stripped = pragmas.strip_literals(raw) if "pragma" in raw or "optimize" in raw else raw
        state = _STATE.match(stripped)
        if state and state.group(1) == "push":
            saved.append(silenced)
        elif state and state.group(1) == "pop":
            silenced = saved.pop() if saved else None  # an unmatched pop: command-line state
        elif state and here:
            silenced = silenced or (here, line)
        if here:
            if _PRAGMA.search(stripped) or _OPTIMIZE.search(stripped):
                found.append((here, line, " ".join(raw.split())))
            elif silenced and stripped.strip() and not system:
                found.append((here, line, UNDER + " ".join(raw.split())))
        line += 1
    if pending is not None and pending[0]:
        found.append((pending[0], pending[1], f"a line marker relabels its lines: {pending[4]}"))
    if silenced is not None:
        found.append((silenced[0], silenced[1], OPEN_AT_END))
    if unterminated:
        # g++ never writes one for a unit that compiles: the reading is not trusted.
        where = owner(main or "") or main or ""
        found.append((where, 0, "a raw string literal runs to the end of the -E output"))
    return found


# ---- the decision (the verdict fold) ---------------------------------------------------


def records(cells: Iterable[Any]) -> dict[tuple[str, str], list[Control]]:
    """{(cell spec key, unit): controls} over cell results that scanned their units."""
    out: dict[tuple[str, str], list[Control]] = {}
    for cell in cells:
        if cell.controls is None:
            continue
        units = dict.fromkeys(c["unit"] for c in cell.controls) | dict.fromkeys(cell.scanned)
        for unit in units:
            mine = [Control(**c) for c in cell.controls if c["unit"] == unit]
            out.setdefault((cell.spec_key, unit), mine)
    return out


def added(
    candidate: dict[tuple[str, str], list[Control]],
    reference: Iterable[dict[tuple[str, str], list[Control]]],
) -> list[str]:
    """Control lines the candidate's cells show beyond the reference side's (the most any
    of the reference trees showed, unit by unit), as "path:line: text" (each once)."""
    allowance: dict[tuple[str, str], Counter[str]] = {}
    for side in reference:
        for key, found in side.items():
            allowance[key] = allowance.get(key, Counter()) | Counter(c.text for c in found)
    most = Counter[str]()
    for counts in allowance.values():
        most |= counts
    extra: dict[str, None] = {}
    for key, found in sorted(candidate.items()):
        allowed = Counter(allowance.get(key, most))
        if key not in allowance:
            allowed[OPEN_AT_END] = 0  # a unit of its own must close what it opens
        for control in found:
            if allowed[control.text] > 0:
                allowed[control.text] -= 1
            else:
                extra[control.shown()] = None
        if key in allowance:
            had = allowance[key][_POP]
            left = sum(1 for c in found if c.text == _POP)
            if left < had:
                extra[f"{key[1]}: {had - left} `{_POP}` of the reference's unit gone"] = None
    return list(extra)
