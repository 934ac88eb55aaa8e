"""The ledger's scan: what a tree declares, includes and calls, read from libclang's AST.

`facts(tree, params)` parses the case's translation units (its `sources`, then the public
headers no source reached) with the case's flags, and returns plain data the rules in
ledger_rules.py compare between the reference and a patched tree:

- the include graph's exits from the tree: which system header a tree file includes
  directly, and every system header reached through them (the transitive set);
- variables with static (or thread) storage duration, by USR, with their canonical type:
  an alias (`using Guard = std::mutex`) is seen through, and a record holding a mutex or an
  atomic counts as one;
- functions and variables with external linkage (new exported symbols), with the
  qualifiers of each declaration (`const`, the exception specification);
- references to sleeping and thread-creating functions and types;
- `using namespace` at namespace scope in a file that is not a source's main file.

libclang (PyPI `libclang`) ships no headers of its own: the scan is handed g++'s own
include search list (params `system_dirs`) and uses only that (-nostdinc), so it reads the
same libstdc++ headers the compiles read, and that list enters the scan's key.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import clang.cindex as ci

from cxxgate.gates.ledger import ledger_flow, ledger_rules
from cxxgate.util.lines import physical_lines

MUTEX_TYPES = frozenset(
    {
        "std::mutex",
        "std::recursive_mutex",
        "std::timed_mutex",
        "std::recursive_timed_mutex",
        "std::shared_mutex",
        "std::shared_timed_mutex",
        "pthread_mutex_t",
        "pthread_rwlock_t",
        "pthread_spinlock_t",
    }
)
ATOMIC_TYPES = frozenset({"std::atomic", "std::atomic_flag", "std::atomic_ref"})
THREAD_TYPES = frozenset({"std::thread", "std::jthread"})
HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".ipp", ".tpp")
_FUNCTION_KINDS = frozenset(
    {
        ci.CursorKind.FUNCTION_DECL,
        ci.CursorKind.CXX_METHOD,
        ci.CursorKind.CONSTRUCTOR,
        ci.CursorKind.DESTRUCTOR,
        ci.CursorKind.CONVERSION_FUNCTION,
        ci.CursorKind.FUNCTION_TEMPLATE,
    }
)
_BODY_KINDS = _FUNCTION_KINDS | {ci.CursorKind.LAMBDA_EXPR}
_RECORD_KINDS = frozenset(
    {
        ci.CursorKind.CLASS_DECL,
        ci.CursorKind.STRUCT_DECL,
        ci.CursorKind.UNION_DECL,
        ci.CursorKind.CLASS_TEMPLATE,
        ci.CursorKind.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION,
    }
)
_PREPROCESSING = frozenset(
    {
        ci.CursorKind.MACRO_DEFINITION,
        ci.CursorKind.MACRO_INSTANTIATION,
        ci.CursorKind.INCLUSION_DIRECTIVE,
    }
)
_SCOPE_KINDS = frozenset({ci.CursorKind.TRANSLATION_UNIT, ci.CursorKind.NAMESPACE})
# References whose target decides a facility (ledger_rules.facility_of_name).
_REFERENCE_KINDS = frozenset(
    {
        ci.CursorKind.DECL_REF_EXPR,
        ci.CursorKind.MEMBER_REF_EXPR,
        ci.CursorKind.OVERLOADED_DECL_REF,
        ci.CursorKind.TYPE_REF,
        ci.CursorKind.TEMPLATE_REF,
        ci.CursorKind.CALL_EXPR,
    }
)
# Inline assembly, and asm labels (`int f() __asm__("nanosleep")`): what they bind is
# not a declaration the ledger can resolve.
_ASM_KINDS = frozenset(
    {ci.CursorKind.ASM_STMT, ci.CursorKind.MS_ASM_STMT, ci.CursorKind.ASM_LABEL_ATTR}
)


def clang_args(params: dict[str, Any], tree: Path) -> list[str]:
    """The parse flags: the case's standard, -D/-U flags and include folders, and g++'s
    system include folders in g++'s order (nothing of libclang's own). clang's predefined
    macros stay (libstdc++ and glibc do not parse as clang with g++'s): a block one
    compiler takes and the other skips shows up as a skipped range."""
    args = [f"-std={params['std']}", "-nostdinc", "-nostdinc++", *params["defines"]]
    args += [f"-I{tree / inc}" for inc in params["include_dirs"]]
    for folder in params["system_dirs"]:
        args += ["-isystem", folder]
    return args


class _RangeList(ctypes.Structure):
    _fields_ = [("count", ctypes.c_uint), ("ranges", ctypes.POINTER(ci.SourceRange))]


def skipped_lines(tu: ci.TranslationUnit) -> list[tuple[str, int, int]]:
    """(file as the parse names it, first line, last line) of each block the preprocessor
    skipped (`#if 0`, `#ifdef NDEBUG` without NDEBUG, `#ifndef __clang__`): the AST holds
    nothing of them. libclang's C API has them (a parse with the detailed processing
    record); its Python binding does not."""
    lib = ci.conf.lib
    lib.clang_getAllSkippedRanges.restype = ctypes.POINTER(_RangeList)
    lib.clang_getAllSkippedRanges.argtypes = [ci.TranslationUnit]
    lib.clang_disposeSourceRangeList.argtypes = [ctypes.POINTER(_RangeList)]
    found = lib.clang_getAllSkippedRanges(tu)
    out: list[tuple[str, int, int]] = []
    try:
        for i in range(found.contents.count):
            rng = found.contents.ranges[i]
            start, end = rng.start, rng.end
            if start.file is not None:
                out.append((start.file.name, start.line, end.line))
    finally:
        lib.clang_disposeSourceRangeList(found)
    return out


def skipped_ranges(tu: ci.TranslationUnit, tree: Path) -> list[dict[str, Any]]:
    """The tree's skipped blocks (skipped_lines), with their text."""
    out: list[dict[str, Any]] = []
    for name, first, last in skipped_lines(tu):
        path = Path(name).resolve()
        if not path.is_relative_to(tree):
            continue
        lines = physical_lines(path.read_text(errors="replace"))[first - 1 : last]
        text = "\n".join(" ".join(line.split()) for line in lines)
        rel = path.relative_to(tree).as_posix()
        out.append({"path": rel, "line": first, "end": last, "text": text})
    return out


def qualified(cursor: ci.Cursor | None) -> str:
    """`ns::Class::name`, anonymous namespaces and inline namespaces such as std::__cxx11
    left out (they do not change what the name means to a reader)."""
    parts: list[str] = []
    while cursor is not None and cursor.kind != ci.CursorKind.TRANSLATION_UNIT:
        name = cursor.spelling
        if name and not (cursor.kind == ci.CursorKind.NAMESPACE and name.startswith("__")):
            parts.append(name)
        cursor = cursor.semantic_parent
    return "::".join(reversed(parts))


def _type_name(t: ci.Type) -> str:
    decl = t.get_canonical().get_declaration()
    if decl.kind == ci.CursorKind.NO_DECL_FOUND:
        return str(t.get_canonical().spelling)
    return qualified(decl)


def _strip(t: ci.Type) -> ci.Type:
    """The object type under references, pointers and arrays."""
    t = t.get_canonical()
    for _ in range(16):
        if t.kind in (
            ci.TypeKind.LVALUEREFERENCE,
            ci.TypeKind.RVALUEREFERENCE,
            ci.TypeKind.POINTER,
        ):
            t = t.get_pointee().get_canonical()
        elif t.kind in (
            ci.TypeKind.CONSTANTARRAY,
            ci.TypeKind.INCOMPLETEARRAY,
            ci.TypeKind.VARIABLEARRAY,
            ci.TypeKind.DEPENDENTSIZEDARRAY,
        ):
            t = t.get_array_element_type().get_canonical()
        else:
            return t
    return t


def holds(t: ci.Type, names: frozenset[str], depth: int = 0) -> str | None:
    """The first type among `names` that `t` is, points to, or holds as a member, base or
    template argument (a struct wrapping a mutex is a mutex), a few levels deep."""
    obj = _strip(t)
    name = _type_name(obj)
    if name in names:
        return name
    if depth >= 6 or obj.kind != ci.TypeKind.RECORD:
        return None
    # std::unique_ptr<std::mutex>, std::vector<std::atomic<int>>: the argument says it.
    for i in range(max(obj.get_num_template_arguments(), 0)):
        found = holds(obj.get_template_argument_type(i), names, depth + 1)
        if found:
            return found
    for member in obj.get_fields():
        found = holds(member.type, names, depth + 1)
        if found:
            return found
    decl = obj.get_declaration()
    for child in decl.get_children():
        if child.kind == ci.CursorKind.CXX_BASE_SPECIFIER:
            found = holds(child.type, names, depth + 1)
            if found:
                return found
    return None


_POINTER_KINDS = (
    ci.TypeKind.LVALUEREFERENCE,
    ci.TypeKind.RVALUEREFERENCE,
    ci.TypeKind.POINTER,
)
_ARRAY_KINDS = (ci.TypeKind.CONSTANTARRAY, ci.TypeKind.INCOMPLETEARRAY)


def is_const_object(t: ci.Type) -> bool:
    """Immutable state: a const object (an array's qualifier sits on the array type or on
    its element, as clang spells it) with nothing reachable from it writable. A `mutable`
    member, or a pointer or reference (its own, or a member's) to non-const data, makes a
    const object mutable state: `const Slot s` with `mutable int n`, `int* const p = new
    int`. A reference is const in this sense only when what it refers to is."""
    t = t.get_canonical()
    if t.kind in (ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE):
        target = t.get_pointee().get_canonical()
        return target.is_const_qualified() and _immutable(target, 0)
    for _ in range(16):
        if t.is_const_qualified() or t.kind not in _ARRAY_KINDS:
            break
        t = t.get_array_element_type().get_canonical()
    return t.is_const_qualified() and _immutable(t, 0)


def _immutable(t: ci.Type, depth: int) -> bool:
    """Nothing writable is reachable from a const `t`: no mutable field, no pointer or
    reference to non-const, in its members and bases (a few levels deep)."""
    t = t.get_canonical()
    if depth > 6:
        return False  # past the depth read: not known immutable (fail closed)
    while t.kind in _ARRAY_KINDS:
        t = t.get_array_element_type().get_canonical()
    if t.kind in _POINTER_KINDS:
        target = t.get_pointee().get_canonical()
        if target.kind == ci.TypeKind.FUNCTIONPROTO or target.kind == ci.TypeKind.FUNCTIONNOPROTO:
            return True
        return target.is_const_qualified() and _immutable(target, depth + 1)
    if t.kind != ci.TypeKind.RECORD:
        return True
    for member in t.get_fields():
        if member.is_mutable_field():
            return False
        ft = member.type.get_canonical()
        nested = ft.kind in (*_POINTER_KINDS, *_ARRAY_KINDS, ci.TypeKind.RECORD)
        if nested and not _immutable(ft, depth + 1):
            return False
    for child in t.get_declaration().get_children():
        if child.kind == ci.CursorKind.CXX_BASE_SPECIFIER and not _immutable(child.type, depth + 1):
            return False
    return True


def dynamic_init(var: ci.Cursor) -> str | None:
    """Why a variable's initialiser is not a constant one, or None: a const static so
    initialised is written at start-up (or on first use) and holds what was computed then,
    such as the address `new` returned, possibly as an integer. Coarse: any `new`, any
    reinterpret cast, a cast from a pointer to an integer, a call to a function not
    declared constexpr or consteval, a read of a variable that is not const."""
    for node in var.walk_preorder():
        if node == var:
            continue
        kind = node.kind
        if kind == ci.CursorKind.CXX_NEW_EXPR:
            return "new"
        if kind == ci.CursorKind.CXX_REINTERPRET_CAST_EXPR:
            return "reinterpret_cast"
        if kind in (ci.CursorKind.CSTYLE_CAST_EXPR, ci.CursorKind.CXX_FUNCTIONAL_CAST_EXPR):
            inner = list(node.get_children())
            if (
                inner
                and inner[-1].type.get_canonical().kind in _POINTER_KINDS
                and (node.type.get_canonical().kind not in _POINTER_KINDS)
            ):
                return "an address cast to an integer"
        if kind == ci.CursorKind.CALL_EXPR:
            ref = node.referenced
            called = ref is not None and ref.kind in _FUNCTION_KINDS - {ci.CursorKind.CONSTRUCTOR}
            if called and not _constexpr(ref):
                return f"a call to {qualified(ref)}"
        if kind == ci.CursorKind.DECL_REF_EXPR:
            ref = node.referenced
            variable = ref is not None and ref.kind in (
                ci.CursorKind.VAR_DECL,
                ci.CursorKind.PARM_DECL,
            )
            mutable = variable and not ref.type.get_canonical().is_const_qualified()
            if mutable and not _constexpr(ref):
                return f"a read of {ref.spelling}"
    return None


def _constexpr(decl: ci.Cursor) -> bool:
    """`constexpr`/`consteval` among the tokens before the declaration's name."""
    for tok in decl.get_tokens():
        if tok.spelling in ("constexpr", "consteval"):
            return True
        if tok.spelling == decl.spelling or tok.spelling in ("(", "{", "="):
            return False
    return False


def _noexcept(cursor: ci.Cursor) -> str:
    kind = cursor.exception_specification_kind
    if kind == ci.ExceptionSpecificationKind.BASIC_NOEXCEPT:
        return "noexcept"
    if kind == ci.ExceptionSpecificationKind.COMPUTED_NOEXCEPT:
        # libclang does not say which way noexcept(expr) went; the spelling does.
        spelled = cursor.type.spelling
        start = spelled.rfind("noexcept(")
        return spelled[start:] if start >= 0 else "noexcept(?)"
    return "none" if kind == ci.ExceptionSpecificationKind.NONE else kind.name.lower()


@dataclass
class _Walk:
    tree: Path
    mains: set[str]  # tree-relative paths parsed as a translation unit's main file
    system_dirs: list[str] = field(default_factory=list)
    statics: dict[str, dict[str, Any]] = field(default_factory=dict)
    functions: list[dict[str, Any]] = field(default_factory=list)
    exported: dict[str, dict[str, Any]] = field(default_factory=dict)
    uses: list[dict[str, Any]] = field(default_factory=list)
    usings: list[dict[str, Any]] = field(default_factory=list)
    writes: list[dict[str, Any]] = field(default_factory=list)  # state the tree does not own
    flow: ledger_flow.Flow | None = None
    files: dict[str, str | None] = field(default_factory=dict)  # libclang's name -> tree path

    def where(self, cursor: ci.Cursor) -> tuple[str, int, int] | None:
        loc = cursor.location
        if loc.file is None:
            return None
        name = loc.file.name
        if name not in self.files:
            path = Path(name).resolve()
            self.files[name] = (
                path.relative_to(self.tree).as_posix() if path.is_relative_to(self.tree) else None
            )
        rel = self.files[name]
        return None if rel is None else (rel, loc.line, loc.column)

    def visit_unit(self, tu: ci.TranslationUnit) -> None:
        """Top-level declarations of the tree files this unit read. A header is walked in
        every unit that reads it: macros defined before its #include make the same text
        another declaration in each (`SLOT int x` is const in one unit, not in the next).
        The unit's tree function bodies then go through the data-flow pass
        (ledger_flow.py: spin-waits, delay loops, writes to state the tree does not own)."""
        self.flow = ledger_flow.Flow(self.where)
        for child in tu.cursor.get_children():
            if child.kind in _PREPROCESSING:
                continue  # the detailed record's macros and #includes: read elsewhere
            place = self.where(child)
            if place is None:
                continue  # system headers are not the patch's code
            self.record(child, place, in_body=False)
            self.body(child, place[0])
            self.visit(child, in_body=child.kind in _BODY_KINDS)
        self.flow.solve()
        self.flow.detect()
        self.uses += self.flow.uses
        self.writes += [w for w in self.flow.writes if w not in self.writes]
        self.flow = None

    def visit(self, cursor: ci.Cursor, in_body: bool) -> None:
        for child in cursor.get_children():
            place = self.where(child)
            if place is None:
                continue
            self.record(child, place, in_body)
            self.body(child, place[0])
            self.visit(child, in_body or child.kind in _BODY_KINDS)

    def body(self, c: ci.Cursor, path: str) -> None:
        if (
            self.flow is not None
            and c.kind in _BODY_KINDS
            and (c.kind == ci.CursorKind.LAMBDA_EXPR or c.is_definition())
        ):
            self.flow.add(c, path)

    def record(self, c: ci.Cursor, place: tuple[str, int, int], in_body: bool) -> None:
        path, line, _ = place
        kind = c.kind
        if kind == ci.CursorKind.VAR_DECL:
            self.variable(c, path, line, in_body)
        elif kind in _FUNCTION_KINDS and not in_body:
            self.function(c, path, line)
        elif kind == ci.CursorKind.USING_DIRECTIVE:
            parent = c.semantic_parent
            if path not in self.mains and parent is not None and parent.kind in _SCOPE_KINDS:
                target = next(
                    (ch for ch in c.get_children() if ch.kind == ci.CursorKind.NAMESPACE_REF), None
                )
                name = qualified(target.referenced) if target and target.referenced else "?"
                self.usings.append({"path": path, "line": line, "namespace": name})
        elif kind in _REFERENCE_KINDS:
            self.reference(c, path, line)
        elif kind in _ASM_KINDS:
            self.use("asm", f"asm ({kind.name.lower()})", path, line)
        elif kind == ci.CursorKind.UNEXPOSED_DECL and c.semantic_parent is not None:
            self.unexposed(c, path, line)
        if kind in (ci.CursorKind.VAR_DECL, ci.CursorKind.FIELD_DECL):
            # Whatever its storage: a lock or thread member, or one `auto` deduced.
            for what, names in (("lock", MUTEX_TYPES), ("thread", THREAD_TYPES)):
                found = holds(c.type, names)
                if found:
                    self.use(what, found, path, line)

    def use(self, what: str, name: str, path: str, line: int) -> None:
        self.uses.append({"what": what, "name": name, "path": path, "line": line})

    def reference(self, c: ci.Cursor, path: str, line: int) -> None:
        """What a name in the tree's code resolves to: its canonical declaration, by
        qualified name, else by the system header that declared it. std::mutex is
        std::mutex whichever header brought it; pthread_mutex_lock declared by the patch
        itself is pthread_mutex_lock."""
        ref = c.referenced
        if ref is None:
            return
        decl = ref.canonical
        if c.kind == ci.CursorKind.TYPE_REF and ref.type.kind != ci.TypeKind.INVALID:
            canon = ref.type.get_canonical().get_declaration()
            if canon.kind != ci.CursorKind.NO_DECL_FOUND:
                decl = canon
        if c.kind == ci.CursorKind.CALL_EXPR and ref.kind == ci.CursorKind.CONSTRUCTOR:
            decl = ref.semantic_parent or ref  # `auto t = make();` or CTAD: the class
        name = qualified(decl)
        what = ledger_rules.facility_of_name(name, self.header_of(decl))
        if what is not None:
            self.use(what, name, path, line)
        if ref.kind == ci.CursorKind.UNEXPOSED_DECL and c.kind == ci.CursorKind.DECL_REF_EXPR:
            self.template_variable(ref, c.type, path, line)

    def header_of(self, decl: ci.Cursor) -> str | None:
        """The system header (as an #include spells it) that declared `decl`; None in
        the tree (or nowhere: builtins)."""
        loc = decl.location
        if loc.file is None:
            return None
        name = loc.file.name
        if self.where(decl) is not None:
            return None
        return _system_name(str(Path(name).resolve()), self.system_dirs)

    def unexposed(self, c: ci.Cursor, path: str, line: int) -> None:
        """libclang's UNEXPOSED_DECL: a variable template (or one of its specialisations),
        or an unnamed file-scope declaration such as `asm("...")`."""
        parent = c.semantic_parent
        if not c.spelling:
            if parent is not None and parent.kind in _SCOPE_KINDS:
                self.use("asm", "file-scope asm (an unnamed declaration)", path, line)
            return
        if c.type.kind != ci.TypeKind.INVALID:  # a specialisation: its own type
            self.template_variable(c, c.type, path, line)

    def template_variable(self, decl: ci.Cursor, t: ci.Type, path: str, line: int) -> None:
        """A variable template's specialisation is storage like any variable: no VAR_DECL
        in libclang, so it is recorded from its declaration or from a use's type."""
        where = self.where(decl)
        if where is None:
            return
        ident = f"{where[0]}:{qualified(decl)}<>"
        const = is_const_object(t)
        entry = {
            "key": ident,
            "name": f"{qualified(decl)}<...>",
            "path": where[0],
            "line": where[1],
            "scope": "variable template",
            "type": t.get_canonical().spelling,
            "const": const,
            "mutex": holds(t, MUTEX_TYPES),
            "atomic": holds(t, ATOMIC_TYPES),
            "definition": True,
        }
        old = self.statics.get(ident)
        if old is None or (old["const"] and not const):  # any mutable specialisation
            self.statics[ident] = entry

    def variable(self, c: ci.Cursor, path: str, line: int, in_body: bool) -> None:
        parent = c.semantic_parent
        if parent is None:
            return
        if parent.kind in _SCOPE_KINDS:
            scope = "namespace"
        elif parent.kind in _RECORD_KINDS:
            scope = "member"  # VAR_DECL in a class is a static data member
        elif in_body and (
            c.storage_class == ci.StorageClass.STATIC or c.tls_kind != ci.TLSKind.NONE
        ):
            scope = "local"  # `static` or `thread_local` in a function
        else:
            return
        if c.tls_kind != ci.TLSKind.NONE:
            scope = f"thread_local {scope}"
        external = c.linkage == ci.LinkageKind.EXTERNAL
        # USRs of internal and local names carry the file name and a byte offset; a line
        # added above must not make an old variable new: key by name (and file).
        ident = qualified(c) if external else f"{path}:{qualified(c)}"
        entry = {
            "key": ident,
            "name": qualified(c),
            "path": path,
            "line": line,
            "scope": scope,
            "type": c.type.get_canonical().spelling,
            "const": is_const_object(c.type) and dynamic_init(c) is None,
            "mutex": holds(c.type, MUTEX_TYPES),
            "atomic": holds(c.type, ATOMIC_TYPES),
            "definition": c.is_definition(),
            # The symbol it compiles to: writable-data findings (ledger_objects.py) point here.
            "mangled": c.mangled_name if c.is_definition() else "",
        }
        old = self.statics.get(ident)
        if old is not None:
            # The same declaration read in several units (a header): it is mutable, a
            # mutex or an atomic if it is so in any of them.
            entry["const"] = entry["const"] and old["const"]
            entry["mutex"] = entry["mutex"] or old["mutex"]
            entry["atomic"] = entry["atomic"] or old["atomic"]
            entry["mangled"] = entry["mangled"] or old["mangled"]
            if old["definition"] and not entry["definition"]:
                entry = {**old, **{k: entry[k] for k in ("const", "mutex", "atomic", "mangled")}}
        self.statics[ident] = entry
        if external and scope != "local":
            self.exported.setdefault(
                ident, {"key": ident, "name": entry["name"], "path": path, "line": line}
            )

    def function(self, c: ci.Cursor, path: str, line: int) -> None:
        name = qualified(c)
        # Keyed by name and parameter types: a USR also encodes `const`, and a dropped
        # qualifier is qualifier_dropped, not a new symbol.
        params = ",".join(a.type.get_canonical().spelling for a in c.get_arguments())
        key = f"{name}({params})"
        self.functions.append(
            {
                "key": key,
                "name": name,
                "path": path,
                "line": line,
                "const": c.is_const_method(),
                "method": c.kind == ci.CursorKind.CXX_METHOD,
                "noexcept": _noexcept(c),
                "signature": c.type.spelling,
                # The symbol it compiles to: symbol findings (ledger_objects.py) point here.
                "mangled": c.mangled_name if c.is_definition() else "",
            }
        )
        # A declaration alone is an import (`extern "C" int pthread_mutex_lock(void*);`):
        # what it binds is the facility rules' business; a definition is an export.
        if c.linkage == ci.LinkageKind.EXTERNAL and c.is_definition():
            self.exported.setdefault(key, {"key": key, "name": name, "path": path, "line": line})


def _system_name(path: str, system_dirs: list[str]) -> str:
    """A system header by the name an #include spells it (`mutex`, `bits/std_mutex.h`)."""
    best = ""
    for folder in system_dirs:
        prefix = folder.rstrip("/") + "/"
        if path.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return path[len(best) :] if best else path


def _includes(
    tu: ci.TranslationUnit, tree: Path, system_dirs: list[str]
) -> tuple[set[str], list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Tree files read, the tree's direct system includes, and every system header reached
    with the tree-side #include it was reached through (the first, in include order)."""
    parent: dict[str, tuple[str, int]] = {}
    order: list[str] = []
    for inc in tu.get_includes():
        target = str(Path(inc.include.name).resolve())
        if target not in parent:
            parent[target] = (str(Path(inc.source.name).resolve()), inc.location.line)
            order.append(target)

    def in_tree(p: str) -> bool:
        return Path(p).is_relative_to(tree)

    def rel(p: str) -> str:
        return Path(p).relative_to(tree).as_posix()

    read = {rel(p) for p in order if in_tree(p)}
    direct: list[dict[str, Any]] = []
    reached: dict[str, dict[str, Any]] = {}
    for target in order:
        if in_tree(target):
            continue
        name = _system_name(target, system_dirs)
        # Walk up to the #include in a tree file that left the tree, then on to the main file.
        node, exit_at = target, None
        chain: list[str] = []
        for _ in range(len(order) + 1):
            if node not in parent:
                break
            source, line = parent[node]
            if in_tree(source):
                exit_at = exit_at or (rel(source), line)
                chain.append(f"{rel(source)}:{line}")
            node = source
        if exit_at is None:
            continue
        if in_tree(parent[target][0]):
            direct.append({"header": name, "path": exit_at[0], "line": exit_at[1]})
        if name not in reached:
            reached[name] = {"path": exit_at[0], "line": exit_at[1], "via": chain[::-1]}
    return read, direct, reached


def _parse(index: ci.Index, path: Path, args: list[str], header: bool) -> ci.TranslationUnit:
    lang = ["-x", "c++-header" if header else "c++"]
    # The detailed record keeps the skipped ranges.
    options = ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD
    return index.parse(str(path), args=lang + args, options=options)


def _units(tree: Path, globs: list[str]) -> list[Path]:
    found: set[Path] = set()
    for pattern in globs:
        found.update(p.resolve() for p in tree.glob(pattern) if p.is_file())
    return sorted(found)


def facts(tree: Path, params: dict[str, Any]) -> dict[str, Any]:
    """The scan function (cxxgate/runs/scan.py): the ledger's facts about one tree."""
    tree = tree.resolve()
    args = clang_args(params, tree)
    index = ci.Index.create()
    sources = _units(tree, params["sources"])
    headers = _units(tree, params["public_headers"])
    mains = {p.relative_to(tree).as_posix() for p in sources}
    walk = _Walk(tree, mains, list(params["system_dirs"]))
    read: set[str] = set()
    direct: list[dict[str, Any]] = []
    reached: dict[str, dict[str, Any]] = {}
    errors: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    parsed: list[str] = []
    for path in [*sources, *headers]:
        rel = path.relative_to(tree).as_posix()
        if rel in read:  # a public header a source already read
            continue
        tu = _parse(index, path, args, header=path in headers and path not in sources)
        parsed.append(rel)
        for diag in tu.diagnostics:
            if diag.severity >= ci.Diagnostic.Error:
                loc = diag.location
                where = _place(loc, tree)
                errors.append({"path": where[0], "line": where[1], "message": diag.spelling})
        for rng in skipped_ranges(tu, tree):
            if rng not in skipped:
                skipped.append(rng)
        files, d, r = _includes(tu, tree, params["system_dirs"])
        read |= files
        direct += [x for x in d if x not in direct]
        for name, entry in r.items():
            reached.setdefault(name, entry)
        walk.visit_unit(tu)
    return {
        "parsed": parsed,
        "errors": errors[:20],
        "skipped": skipped,
        "direct_includes": direct,
        "reached_headers": reached,
        "statics": sorted(walk.statics.values(), key=lambda s: (s["path"], s["line"], s["key"])),
        "functions": _unique(walk.functions),
        "exported": sorted(walk.exported.values(), key=lambda s: (s["path"], s["line"], s["key"])),
        "uses": _unique(walk.uses),
        "writes": _unique(walk.writes),
        "usings": _unique(walk.usings),
    }


def _unique(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records without the repeats of a header read by several units."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for item in items:
        key = repr(sorted(item.items()))
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _place(loc: ci.SourceLocation, tree: Path) -> tuple[str, int]:
    if loc.file is None:
        return "", 0
    path = Path(loc.file.name).resolve()
    return (path.relative_to(tree).as_posix() if path.is_relative_to(tree) else str(path)), loc.line
