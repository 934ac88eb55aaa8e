"""What each witness's calls bind to, from libclang's AST of its unit.

A patch can leave every witness's text and expansion alone and still make every
comparison true: an explicit specialisation of the test's own comparison helper
(`template <> bool eq<double, double>(...) { return true; }`), an overload that is a
better match, declared in a test file or a public header. The calls a witness makes are the
calls whose location is within its text (macro expansions are located at their use); each
is keyed by what it binds to, through the canonical (first) declaration:

- a function named in the witness's own tokens (the code under test, `mean` in
  `EXPECT_EQ(mean(v), 2.5)`): its qualified name and the tree file that declares it, so
  a patch may change its signature;
- any other (what the witness macro brought in, the comparison helper, an operator not
  spelled): its USR and declaring file, so a specialisation or a new overload is a change.

Declarations outside the tree (the standard library) are left out: a patch cannot edit
them. Only the calls of the witness's own expansion are seen: a call the helper's body makes
(resolved where it is instantiated) is not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import clang.cindex as ci

from cxxgate.gates import cppsource
from cxxgate.gates.ledger_ast import clang_args, qualified

if TYPE_CHECKING:
    from cxxgate.gates.witness import FileInventory

UNPARSED = "?"  # a unit libclang could not parse: its witnesses' bindings are not told


@dataclass
class Bound:
    detail: str = ""  # the first unit libclang could not parse, and why
    callees: dict[str, list[list[str]]] = field(default_factory=dict)  # per file, per witness


def bind(tree: Path, params: dict[str, Any], units: dict[str, FileInventory]) -> Bound:
    out = Bound()
    args = clang_args(params["clang"], tree)
    index = ci.Index.create()
    root = tree.resolve()
    for rel, inv in sorted(units.items()):
        path = root / rel
        source = path.read_bytes()
        lang = [] if path.suffix in (".cpp", ".cc", ".cxx", ".c++") else ["-x", "c++"]
        try:
            tu = index.parse(str(path), args=[*lang, *args])
        except ci.TranslationUnitLoadError as exc:
            out.detail = out.detail or f"libclang cannot parse {rel}: {exc}"
            out.callees[rel] = [[UNPARSED] for _ in inv.witnesses]
            continue
        errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
        if errors:
            out.detail = out.detail or f"libclang cannot parse {rel}: {errors[0].spelling}"
            out.callees[rel] = [[UNPARSED] for _ in inv.witnesses]
            continue
        spans = [(w.start, w.end) for w in inv.witnesses]
        spelled = [_identifiers(source[s:e]) for s, e in spans]
        found: list[list[str]] = [[] for _ in spans]
        for cursor in tu.cursor.walk_preorder():
            if cursor.kind != ci.CursorKind.CALL_EXPR:
                continue
            loc = cursor.location
            if loc.file is None or Path(loc.file.name).resolve() != path:
                continue
            i = _innermost(spans, loc.offset)
            target = cursor.referenced
            if i is None or target is None:
                continue
            target = target.canonical
            where = target.location.file
            if where is None or not Path(where.name).resolve().is_relative_to(root):
                continue
            file = Path(where.name).resolve().relative_to(root).as_posix()
            name = target.spelling
            own = name.removeprefix("operator") in spelled[i] or name in spelled[i]
            found[i].append(f"{qualified(target) if own else target.get_usr()} @ {file}")
        out.callees[rel] = [sorted(f) for f in found]
    return out


def _identifiers(text: bytes) -> set[str]:
    return set(cppsource.tokens(cppsource.parse(text).root_node))


def _innermost(spans: list[tuple[int, int]], offset: int) -> int | None:
    best: int | None = None
    for i, (start, end) in enumerate(spans):
        if start <= offset < end and (
            best is None or end - start < spans[best][1] - spans[best][0]
        ):
            best = i
    return best
