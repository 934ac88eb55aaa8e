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

UNITS = frozenset({".cpp", ".cc", ".cxx", ".c++"})
UNPARSED = "?"  # a unit libclang could not parse: its witnesses' bindings are not told


@dataclass
class Bound:
    detail: str = ""  # the first unit libclang could not parse, and why
    callees: dict[str, list[list[str]]] = field(default_factory=dict)  # per file, per witness


def bind(tree: Path, params: dict[str, Any], inventories: dict[str, FileInventory]) -> Bound:
    """Each unit (a source, or a file holding witnesses) is parsed; the calls located in
    any file's witnesses are gathered over every unit that reads that file, so a header's
    check is bound as each unit including it sees it (a specialisation declared above the
    `#include` in one unit)."""
    out = Bound()
    args = clang_args(params["clang"], tree)
    index = ci.Index.create()
    root = tree.resolve()
    spans = {
        rel: [(w.start, w.end) for w in inv.witnesses]
        for rel, inv in inventories.items()
        if inv.witnesses
    }
    found: dict[str, list[set[str]]] = {rel: [set() for _ in s] for rel, s in spans.items()}
    unparsed: set[str] = set()
    parsed = sorted(r for r, inv in inventories.items() if inv.witnesses or Path(r).suffix in UNITS)
    for rel in parsed:
        path = root / rel
        lang = [] if path.suffix in UNITS else ["-x", "c++"]
        try:
            tu = index.parse(str(path), args=[*lang, *args])
        except ci.TranslationUnitLoadError as exc:
            out.detail = out.detail or f"libclang cannot parse {rel}: {exc}"
            unparsed.add(rel)
            continue
        errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
        if errors:
            out.detail = out.detail or f"libclang cannot parse {rel}: {errors[0].spelling}"
            unparsed.add(rel)
            continue
        for cursor in tu.cursor.walk_preorder():
            if cursor.kind != ci.CursorKind.CALL_EXPR:
                continue
            loc = cursor.location
            if loc.file is None:
                continue
            file = _relative(Path(loc.file.name), root)
            if file is None or file not in spans:
                continue
            i = _innermost(spans[file], loc.offset)
            target = cursor.referenced
            if i is None or target is None:
                continue
            key = _key(target, loc.offset >= inventories[file].witnesses[i].mark, root)
            if key is not None:
                found[file][i].add(key)
    for rel, sets in found.items():
        out.callees[rel] = [[UNPARSED] if rel in unparsed else sorted(k) for k in sets]
    return out


def _key(target: ci.Cursor, in_arguments: bool, root: Path) -> str | None:
    """What a call binds to. Weak (in the witness's arguments): the first declaration's
    qualified name and file. Strong (brought in by the macro): the declaration bound itself
    (an explicit specialisation's canonical one is the template's), with its tokens."""
    if in_arguments:
        first = target.canonical
        file = _in_tree(first, root)
        return None if file is None else f"{qualified(first)} @ {file}"
    file = _in_tree(target, root)
    if file is None:
        return None
    shape = cppsource.fingerprint([t.spelling for t in target.get_tokens()])
    return f"{target.get_usr()} @ {file} #{shape}"


def _relative(path: Path, root: Path) -> str | None:
    resolved = path.resolve()
    return resolved.relative_to(root).as_posix() if resolved.is_relative_to(root) else None


def _in_tree(cursor: ci.Cursor, root: Path) -> str | None:
    """The tree file that declares `cursor`; None outside the tree (the standard library)."""
    where = cursor.location.file
    return None if where is None else _relative(Path(where.name), root)


def _innermost(spans: list[tuple[int, int]], offset: int) -> int | None:
    best: int | None = None
    for i, (start, end) in enumerate(spans):
        if start <= offset < end and (
            best is None or end - start < spans[best][1] - spans[best][0]
        ):
            best = i
    return best
