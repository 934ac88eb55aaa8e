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

import ctypes
import itertools
import os
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import clang.cindex as ci

from cxxgate.gates.ledger.ledger_ast import clang_args, qualified, skipped_lines
from cxxgate.gates.shared import cppsource
from cxxgate.host.sandbox import NEUTRAL_TREE
from cxxgate.toolchain import clangview

if TYPE_CHECKING:
    from cxxgate.gates.census.witness_data import FileInventory

UNITS = frozenset({".cpp", ".cc", ".cxx", ".c++"})
UNPARSED = "?"  # a unit libclang could not parse: its witnesses' bindings are not told


@dataclass
class Bound:
    detail: str = ""  # the first unit libclang could not parse, and why
    callees: dict[str, list[list[str]]] = field(default_factory=dict)  # per file, per witness
    # The variables a check reads, each keyed by its declaration (initialiser included) and
    # the statements of the check's function that name it: the fixture data it checks.
    data: dict[str, list[list[str]]] = field(default_factory=dict)
    # Per unit parsed, what libclang's preprocessor did with the tree (held against what
    # the compiler's did: witness.unseen): `skipped`, per file, the blocks it skipped, as
    # runs [first, last]; `reads`, the files it read; `directives`, per file, the lines of
    # the #define and #undef it processed; `embedded`, per file, the lines of directives
    # inside a macro's arguments (whose output the compiler prints on the macro's line).
    view: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Per unit parsed, per function of the tree it defines (by mangled name; a template's
    # by TEMPLATE and its place), what its calls and names bind to (`bound`: mangled name
    # -> where its declaration lies in the tree, "file:line", or ""), its lambdas'
    # included; where it is defined (`at`); whether it holds a range-for (`for_range`:
    # libclang does not show its begin/end calls); the names a
    # template resolves per instantiation (`dependent`). Held against what g++ compiled
    # (bindings.py).
    calls: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    # Per unit parsed, what its parse declared in the tree: the linkage names (with every
    # name a function of it binds) and the places ("file:line") of its functions,
    # templates, variables, classes and lambdas (bindings.py: what g++ compiled from the
    # tree must be among them).
    declared: dict[str, dict[str, list[str]]] = field(default_factory=dict)


def bind(
    tree: Path,
    params: dict[str, Any],
    inventories: dict[str, FileInventory],
    binds: tuple[tuple[str, str], ...] = (),
) -> Bound:
    """Each unit (a source, or a file holding witnesses) is parsed; the calls located in
    any file's witnesses are gathered over every unit that reads that file, so a header's
    check is bound as each unit including it sees it (a specialisation declared above the
    `#include` in one unit). The parse sees the tree where the compile saw it
    (cxxgate/toolchain/clangview.py); `binds` are the toolchain's."""
    with clangview.parse_view(tree.resolve(), binds) as (root, flags):
        return _bind(root, tree, [*clang_args(params["clang"], root), *flags], inventories)


def _bind(
    root: Path, host: Path, args: list[str], inventories: dict[str, FileInventory]
) -> Bound:
    out = Bound()
    index = ci.Index.create()
    spans = {
        rel: [(w.start, w.end) for w in inv.witnesses]
        for rel, inv in inventories.items()
        if inv.witnesses
    }
    found: dict[str, list[set[str]]] = {rel: [set() for _ in s] for rel, s in spans.items()}
    data: dict[str, list[set[str]]] = {rel: [set() for _ in s] for rel, s in spans.items()}
    unparsed: set[str] = set()
    parsed = sorted(r for r, inv in inventories.items() if inv.witnesses or Path(r).suffix in UNITS)
    for rel in parsed:
        path = root / rel
        lang = [] if path.suffix in UNITS else ["-x", "c++"]
        try:
            # The detailed record keeps the blocks the preprocessor skipped.
            options = ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD
            tu = index.parse(
                str(path), args=[*lang, *args, "-Wembedded-directive"], options=options
            )
        except ci.TranslationUnitLoadError as exc:
            out.detail = out.detail or f"libclang cannot parse {rel}: {exc}"
            unparsed.add(rel)
            continue
        errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
        if errors:
            out.detail = out.detail or f"libclang cannot parse {rel}: {errors[0].spelling}"
            unparsed.add(rel)
            continue
        out.view[rel] = _view(tu, rel, root, host)
        reads: list[tuple[str, int, ci.Cursor, int]] = []  # (file, witness, var, function)
        writes: dict[tuple[str, int], set[str]] = defaultdict(set)  # (var, function) -> stmts
        calls: dict[str, dict[str, Any]] = {}
        seen: dict[str, set[str]] = {"names": set(), "at": set()}  # the unit's declarations
        for cursor, stmt, func, named in _walk(tu.cursor, root):
            loc = cursor.location
            if loc.file is None:
                continue
            if named:
                _note_call(calls.setdefault(named, {"bound": {}}), cursor, root)
            if cursor.kind in FUNCTIONS and cursor.kind != ci.CursorKind.LAMBDA_EXPR:
                emitted, place = _emitted(cursor, root), _relative(Path(loc.file.name), root)
                if emitted and place is not None:  # where its code is, to g++'s debug info
                    calls.setdefault(emitted, {"bound": {}})["at"] = f"{place}:{loc.line}"
            if cursor.kind in _DECLARATIONS:
                _note_declaration(seen, cursor, root)
            file = _relative(Path(loc.file.name), root)
            if cursor.kind == ci.CursorKind.DECL_REF_EXPR:
                var = cursor.referenced
                if var is None or var.kind != ci.CursorKind.VAR_DECL or _in_tree(var, root) is None:
                    continue
                i = _innermost(spans[file], loc.offset) if file in spans else None
                if (
                    file is not None
                    and i is not None
                    and inventories[file].witnesses[i].kind != "test"
                ):
                    reads.append((file, i, var, func))
                elif stmt is not None:
                    shape = cppsource.fingerprint([t.spelling for t in stmt.get_tokens()])
                    writes[var.get_usr(), func].add(shape)
                continue
            if cursor.kind != ci.CursorKind.CALL_EXPR:
                continue
            if file is None or file not in spans:
                continue
            i = _innermost(spans[file], loc.offset)
            target = cursor.referenced
            if i is None or target is None:
                continue
            w = inventories[file].witnesses[i]
            spelled = _spelling(cursor, root)
            # Written in the witness's arguments: spelt there, not in a macro's body (the
            # expansion location of both is the witness's macro name).
            in_arguments = spelled[0] == file and w.mark <= spelled[1] < w.end
            key = _key(target, in_arguments, root)
            if key is not None:
                found[file][i].add(key)
        for file, i, var, func in reads:
            said = [t.spelling for t in var.get_tokens()]
            # Its function's statements, and file-scope ones (a static initialiser).
            said += sorted(
                writes.get((var.get_usr(), func), set()) | writes.get((var.get_usr(), 0), set())
            )
            data[file][i].add(f"data {var.spelling} #{cppsource.fingerprint(said)}")
        if Path(rel).suffix in UNITS:
            for record in calls.values():
                seen["names"].update(record["bound"])
            out.calls[rel] = {
                f: {k: sorted(v) if isinstance(v, set) else v for k, v in record.items()}
                for f, record in calls.items()
            }
            out.declared[rel] = {k: sorted(v) for k, v in seen.items()}
    for rel, sets in found.items():
        out.callees[rel] = [[UNPARSED] if rel in unparsed else sorted(k) for k in sets]
        out.data[rel] = [[UNPARSED] if rel in unparsed else sorted(k) for k in data[rel]]
    return out


def _view(tu: ci.TranslationUnit, rel: str, root: Path, host: Path) -> dict[str, Any]:
    """What libclang's preprocessor did with the tree in this unit (Bound.view); `root` is
    the tree as the parse names it, `host` where it is."""
    skipped: dict[str, list[list[int]]] = defaultdict(list)
    for name, first, last in skipped_lines(tu):
        file = _relative(Path(name), root)
        if file is not None:
            skipped[file].append([first, last])
    names = {rel: str(root / rel)}
    for inclusion in tu.get_includes():
        file = _relative(Path(inclusion.include.name), root)
        if file is not None:
            names.setdefault(file, inclusion.include.name)
    directives: dict[str, list[int]] = {}
    for file, name in names.items():
        extent = tu.get_extent(name, (0, (host / file).stat().st_size))
        toks = list(tu.get_tokens(extent=extent))
        column: dict[int, int] = {}  # line -> the column of its first token
        for t in toks:
            column.setdefault(t.location.line, t.location.column)
        lines = {
            b.location.line
            for a, b in itertools.pairwise(toks)
            if a.spelling == "#"
            and b.spelling in {"define", "undef"}
            and a.location.line == b.location.line
            and a.location.column == column[a.location.line]
            and not any(f <= a.location.line <= e for f, e in skipped.get(file, []))
        }
        if lines:
            directives[file] = sorted(lines)
    embedded: dict[str, list[int]] = defaultdict(list)
    for d in tu.diagnostics:
        where = d.location.file
        file = None if where is None else _relative(Path(where.name), root)
        if file is not None and d.option == "-Wembedded-directive":
            embedded[file].append(d.location.line)
    return {
        "skipped": dict(skipped),
        "reads": sorted(names),
        "directives": directives,
        "embedded": dict(embedded),
    }


FUNCTIONS = frozenset(
    {
        ci.CursorKind.FUNCTION_DECL,
        ci.CursorKind.CXX_METHOD,
        ci.CursorKind.CONSTRUCTOR,
        ci.CursorKind.DESTRUCTOR,
        ci.CursorKind.CONVERSION_FUNCTION,
        ci.CursorKind.FUNCTION_TEMPLATE,
        ci.CursorKind.LAMBDA_EXPR,
    }
)


# What holds statements and declarations: a block, or a file or namespace scope.
SCOPES = frozenset(
    {
        ci.CursorKind.COMPOUND_STMT,
        ci.CursorKind.TRANSLATION_UNIT,
        ci.CursorKind.NAMESPACE,
        ci.CursorKind.LINKAGE_SPEC,
    }
)


_OUTER = frozenset(
    {ci.CursorKind.TRANSLATION_UNIT, ci.CursorKind.NAMESPACE, ci.CursorKind.LINKAGE_SPEC}
)


Walked = tuple[ci.Cursor, ci.Cursor | None, int, str]


def _walk(top: ci.Cursor, root: Path) -> Iterator[Walked]:
    """Each cursor of the tree's own code, with the statement holding it (a child of a
    block, or of a file or namespace scope), the function holding it (its cursor's hash; 0
    at file scope) and the mangled name of the function definition g++ emits its code in
    (_emitted: a lambda's is its enclosing function's; "" inside a template or at file
    scope). A declaration at file or namespace scope that lies outside the tree (the
    standard library, the framework's headers) is not entered: nothing a witness binds to
    is decided inside it, and walking it is most of a unit's cursors.
    Iterative: expressions nest deep."""
    stack: list[Walked] = [(top, None, 0, "")]
    while stack:
        cursor, stmt, func, named = stack.pop()
        yield cursor, stmt, func, named
        inner = cursor.hash if cursor.kind in FUNCTIONS else func
        if cursor.kind in FUNCTIONS and cursor.kind != ci.CursorKind.LAMBDA_EXPR:
            named = _emitted(cursor, root)
        block = cursor.kind in SCOPES
        outer = cursor.kind in _OUTER
        for child in reversed(list(cursor.get_children())):
            where = child.location.file if outer else None
            if where is not None and _relative(Path(where.name), root) is None:
                continue
            stack.append((child, child if block else stmt, inner, named))


_TEMPLATES = frozenset(
    {
        ci.CursorKind.CLASS_TEMPLATE,
        ci.CursorKind.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION,
        ci.CursorKind.FUNCTION_TEMPLATE,
    }
)


TEMPLATE = "@"  # the key of a template's function: "@file:line", where its code is defined


def _emitted(function: ci.Cursor, root: Path) -> str:
    """The mangled name of a function definition; a template's (a function template, a
    member of a class template: no one mangled name) is TEMPLATE and where it lies, which
    g++'s debug information gives each of its instantiations; "" for a declaration."""
    if not function.is_definition():
        return ""
    templated = function.kind == ci.CursorKind.FUNCTION_TEMPLATE
    parent = function.semantic_parent
    while not templated and parent is not None and parent.kind not in _OUTER:
        templated = parent.kind in _TEMPLATES
        parent = parent.semantic_parent
    if not templated:
        return str(function.mangled_name or "")
    where = function.location
    file = _relative(Path(where.file.name), root) if where.file is not None else None
    return f"{TEMPLATE}{file}:{where.line}" if file is not None else ""


_DECLARATIONS = frozenset(
    {
        *FUNCTIONS,
        ci.CursorKind.VAR_DECL,
        ci.CursorKind.CLASS_DECL,
        ci.CursorKind.STRUCT_DECL,
        ci.CursorKind.UNION_DECL,
        ci.CursorKind.CLASS_TEMPLATE,
        ci.CursorKind.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION,
    }
)


def _note_declaration(seen: dict[str, set[str]], cursor: ci.Cursor, root: Path) -> None:
    file = _relative(Path(cursor.location.file.name), root)
    if file is None:
        return
    seen["at"].add(f"{file}:{cursor.location.line}")
    if cursor.kind != ci.CursorKind.LAMBDA_EXPR:
        name = str(cursor.mangled_name or "")
        if name:
            seen["names"].add(name)


_REFERENCES = frozenset(
    {ci.CursorKind.CALL_EXPR, ci.CursorKind.DECL_REF_EXPR, ci.CursorKind.MEMBER_REF_EXPR}
)


def _note_call(said: dict[str, Any], cursor: ci.Cursor, root: Path) -> None:
    """What a call or a name binds to (or a range-for) in its function's record
    (Bound.calls): every function and variable with a linkage name, with where the
    declaration bound lies in the tree (its definition where the unit has one: what g++'s
    debug information names), "" outside it."""
    if cursor.kind == ci.CursorKind.CXX_FOR_RANGE_STMT:
        said["for_range"] = True
    if cursor.kind not in _REFERENCES and cursor.kind != ci.CursorKind.OVERLOADED_DECL_REF:
        return
    target = cursor.referenced
    if target is None or cursor.kind == ci.CursorKind.OVERLOADED_DECL_REF:
        # A name a template resolves per instantiation: what g++ binds it to is not told.
        said.setdefault("dependent", set()).add(cursor.spelling)
        return
    name = str(target.mangled_name or "")
    if name and name not in said["bound"]:
        decl = target.get_definition() or target.canonical
        file = _in_tree(decl, root)
        said["bound"][name] = f"{file}:{decl.location.line}" if file else ""


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


def _spelling(cursor: ci.Cursor, root: Path) -> tuple[str | None, int]:
    """Where a cursor's text is spelt (its tree file, and its offset):
    for a call in a macro's argument, the argument; for one in a macro's body, the body."""
    where = ci.c_object_p()
    line, column, offset = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
    ci.conf.lib.clang_getSpellingLocation(
        cursor.location,
        ctypes.byref(where),
        ctypes.byref(line),
        ctypes.byref(column),
        ctypes.byref(offset),
    )
    if not where:
        return None, -1
    name = ci.conf.lib.clang_getFileName(ci.File(where))
    return _relative(Path(str(name)), root), offset.value


def _relative(path: Path, root: Path) -> str | None:
    return _relative_name(str(path), str(root))


@cache
def _relative_name(name: str, root: str) -> str | None:
    """`name` as a path under the tree `root`, resolved once per process: libclang names
    the same few files for every cursor, and resolving is a system call per component.
    The neutral path exists only in the parse's view: its names are normalised as text
    (a tree holds no symlinks: cxxgate/intake/tree.py)."""
    resolved = Path(os.path.normpath(name)) if root == NEUTRAL_TREE else Path(name).resolve()
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
