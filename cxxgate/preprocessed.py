"""Diagnostic control as the preprocessor sees it: intake's `diagnostic_control` decision.

The source text cannot show every directive a patch adds: `_Pragma` can be assembled
through macro arguments (`CAT(_Pra, gma)(...)`), a macro from an unchanged header can
expand to one. `g++ -E` spells every one of them out as a `#pragma` line, and its line
markers say which file each line came from. So intake preprocesses, in each envelope the
case compiles with (its -std, flags and defines, warnings not errors), every changed C or
C++ file and every library source of the case, in the base tree and in the patched one,
and counts, on lines that come from a file the patch changed:

- `#pragma GCC|clang diagnostic ...`, `#pragma [GCC|clang] system_header`,
  `#pragma GCC|clang optimize` (optimisation level decides which warnings fire), MSVC's
  `#pragma warning`;
- an `optimize` attribute (`__attribute__((optimize(...)))`, `[[gnu::optimize]]`);
- a line marker or `#line` typed in the file that renames the file or adds the
  system-header flag (3) without entering an include. One that pretends to enter a
  system header (`# 1 "/usr/include/..." 1 3`) looks in -E output like a real include
  (even `-H` lists it): a directive cannot come from a macro, so the source-text scan
  (cxxgate/pragmas.py: any `# <digits>` or `#line` directive) is what finds it.

Not seen here: a directive guarded by a macro that only a gate's probe unit defines
(intake preprocesses the tree's own sources and each changed file, not the probes);
the thorough fix takes the pragma lines from each compile cell's own -E.

Counted by text, changed files together, so a directive moved unchanged from one changed
file to another adds nothing. Every call goes through cxxgate/toolcall.py (bounded,
sandboxed: the tree read-only, a scratch folder writable).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from cxxgate import pragmas, toolcall
from cxxgate.cellspec import CellSpec
from cxxgate.envelope import Envelope
from cxxgate.layout import Layout

C_FAMILY = (
    ".c",
    ".cc",
    ".cpp",
    ".cxx",
    ".c++",
    ".h",
    ".hh",
    ".hpp",
    ".hxx",
    ".h++",
    ".ipp",
    ".inl",
    ".tpp",
    ".tcc",
)
_MARKER = re.compile(r'^# (\d+) "((?:[^"\\]|\\.)*)"((?: \d)*)\s*$')
_PRAGMA = re.compile(
    r"^\s*#\s*pragma\s+(?:(?:GCC|clang)\s+(?:diagnostic|system_header|optimize)"
    r"|system_header|warning)\b"
)
_OPTIMIZE = re.compile(r"\b_*optimize_*\s*\(")


@dataclass(frozen=True)
class Preprocess:
    """What intake preprocesses with: the case's envelopes, include folders and sources."""

    envelopes: tuple[Envelope, ...]
    include_dirs: tuple[str, ...]
    sources: tuple[str, ...]  # globs of the library sources under the tree
    seconds: float = 60.0


def added(
    how: Preprocess,
    layout: Layout,
    key: str,
    base: Path,
    tree: Path,
    changed: list[str],
    scratch: Path,
) -> list[str]:
    """Diagnostic-control lines the patched tree's preprocessed output holds, in changed
    files, beyond the base tree's (as "path:line: text")."""
    before = Counter[str]()
    after: list[tuple[str, str]] = []
    for env in how.envelopes:
        if env.toolchain.path is None:
            continue  # a missing compiler: the cells that need it say so
        spec = CellSpec(
            kind="syntax",
            tree_key=key,
            units=(),
            tree_sources=(),
            include_dirs=how.include_dirs,
            envelope=env,
            compile_seconds=how.seconds,
            label="intake: preprocess",
        )
        base_found = _tree(layout, spec, base, changed, how, scratch)
        before.update(Counter(text for _, text in base_found))
        after += _tree(layout, spec, tree, changed, how, scratch)
    extra = []
    left = before
    for where, text in after:
        if left[text] > 0:
            left[text] -= 1
        else:
            extra.append(f"{where}: {text}")
    return extra


def _tree(
    layout: Layout, spec: CellSpec, tree: Path, changed: list[str], how: Preprocess, scratch: Path
) -> list[tuple[str, str]]:
    """(where, text) of each control in changed files, each counted once however many
    units include it (the most any one unit shows)."""
    units = sorted(
        {p for p in changed if p.endswith(C_FAMILY) and (tree / p).is_file()}
        | {Path(p).relative_to(tree).as_posix() for p in toolcall.resolve(tree, how.sources)}
    )
    most: dict[tuple[str, str], int] = {}
    where: dict[tuple[str, str], str] = {}
    for unit in units:
        found = _unit(layout, spec, tree, unit, set(changed), scratch)
        for item, n in Counter((rel, text) for rel, _, text in found).items():
            most[item] = max(most.get(item, 0), n)
        for rel, line, text in found:
            where.setdefault((rel, text), f"{rel}:{line}")
    return [(where[item], item[1]) for item, n in sorted(most.items()) for _ in range(n)]


def _unit(
    layout: Layout, spec: CellSpec, tree: Path, unit: str, changed: set[str], scratch: Path
) -> list[tuple[str, int, str]]:
    env = spec.envelope
    assert env.toolchain.path is not None
    scratch.mkdir(parents=True, exist_ok=True)
    out = scratch / "unit.ii"
    out.unlink(missing_ok=True)
    flags = [f for f in env.flags if not f.startswith("-Werror")]
    argv = [
        env.toolchain.path,
        f"-std={env.std}",
        *flags,
        *(f"-D{d}" for d in env.defines),
        *(f"-I{tree / inc}" for inc in spec.include_dirs),
        "-E",
        "-x",
        "c" if unit.endswith(".c") else "c++",
        str(tree / unit),
        "-o",
        out.name,
    ]
    step = toolcall.tool_call(layout, spec, "compile", str(tree / unit), argv, scratch, read=[tree])
    text = out.read_text(errors="replace") if out.is_file() else ""
    del step  # a failed -E (a header that is not self-contained) still shows what it read
    return controls(text, tree, changed, str(tree / unit))


def controls(text: str, tree: Path, changed: set[str], unit: str) -> list[tuple[str, int, str]]:
    """(tree path, line, text) of each control on lines from `changed` files, read from
    `-E` output. The compiler's own preamble
    (`<built-in>`, `<command-line>`, the predefined header) ends at `# 1 "<unit>"`."""
    root = str(tree) + "/"

    def rel(name: str) -> str | None:
        path = name[len(root) :] if name.startswith(root) else None
        return path if path in changed else None

    found: list[tuple[str, int, str]] = []
    stack: list[tuple[str, bool]] = [("", False)]  # (file, system header)
    line = 0
    started = False
    for raw in text.splitlines():
        m = _MARKER.match(raw)
        if not started:
            started = m is not None and m.groups() == ("1", unit, "")
            if not started:
                continue
        current, system = stack[-1]
        here = rel(current)
        if m:
            number, name, flags = int(m.group(1)), m.group(2), set(m.group(3).split())
            if "1" in flags:
                stack.append((name, "3" in flags))
            elif "2" in flags:
                while len(stack) > 1 and stack[-1][0] != name:
                    stack.pop()
                if len(stack) > 1:
                    stack.pop()
                stack[-1] = (name, "3" in flags)
            else:
                if here and (name != current or ("3" in flags and not system)):
                    found.append((here, line, f"a line marker relabels its lines: {raw.strip()}"))
                stack[-1] = (name, "3" in flags)
            line = number
            continue
        if here:
            stripped = pragmas.strip_literals(raw)
            if _PRAGMA.search(stripped) or _OPTIMIZE.search(stripped):
                found.append((here, line, " ".join(raw.split())))
        line += 1
    return found
