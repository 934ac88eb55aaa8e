"""What each witness's calls bind to, from libclang's AST of its unit.

A patch can leave every witness's text and expansion alone and still make every
comparison true: an explicit specialisation of the test's own comparison helper
(`template <> bool eq<double, double>(...) { return true; }`), an overload that is a
better match, declared in a test file or a public header. The calls a witness makes are the
calls whose location is within its text (macro expansions are located at their use); each
is keyed by what it binds to, through the canonical (first) declaration:

- a call written in the witness's arguments (the code under test, `mean` in
  `EXPECT_EQ(mean(v), 2.5)`; libclang locates it there): its qualified name and the tree
  file that declares it, so a patch may change the library's signatures;
- a call the witness macro's body brings in (located at the macro's name: the comparison
  helper): its USR, declaring file and the tokens of that declaration (a definition's
  body included), so a specialisation, a new overload or an edited helper is a change,
  even in the helper's own file.

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
            # Weak key: the first declaration; strong key: the declaration the call binds
            # to itself (an explicit specialisation's canonical one is the template's).
            first = target.canonical
            if loc.offset >= inv.witnesses[i].mark:  # in its arguments
                file = _in_tree(first, root)
                if file is not None:
                    found[i].append(f"{qualified(first)} @ {file}")
            else:
                file = _in_tree(target, root)
                if file is not None:
                    shape = cppsource.fingerprint([t.spelling for t in target.get_tokens()])
                    found[i].append(f"{target.get_usr()} @ {file} #{shape}")
        out.callees[rel] = [sorted(f) for f in found]
    return out


def _in_tree(cursor: ci.Cursor, root: Path) -> str | None:
    """The tree file that declares `cursor`; None outside the tree (the standard library)."""
    where = cursor.location.file
    if where is None or not Path(where.name).resolve().is_relative_to(root):
        return None
    return Path(where.name).resolve().relative_to(root).as_posix()


def _innermost(spans: list[tuple[int, int]], offset: int) -> int | None:
    best: int | None = None
    for i, (start, end) in enumerate(spans):
        if start <= offset < end and (
            best is None or end - start < spans[best][1] - spans[best][0]
        ):
            best = i
    return best
