"""Witnesses: the tests and assertions of a tree, keyed, and whether each survives the
preprocessor. The census gate's scan (`scan`) runs this over a tree; `read` is the pure
part, on one file's bytes.

A witness is a GoogleTest `TEST`/`TEST_F`/`TEST_P` (and typed kin), a Catch2 `TEST_CASE`
or `SECTION` (tests), an `ASSERT_*`/`EXPECT_*`/`REQUIRE*`/`CHECK*` call or one with a
prefix the case declares (checks), `static_assert` and `assert(`. Its key is (kind, file,
enclosing test, macro, fingerprint of its argument tokens); a test's fingerprint is its
body's. Comments and string literals are not code, so they hold no witness.

What the census cannot key it reports as a miss (the gate fails closed on it): a
witness-like name inside a span the parser could not read, a witness-like name used other
than by calling it (`APPLY(EXPECT_EQ, a, b)`, `EXPECT_##EQ`), or one in the body of a macro
that is not itself a witness macro (a wrapper). Definitions and `#undef`s of witness macros
(and of NDEBUG) are listed, for the gate to compare with the reference's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tree_sitter import Node

from cxxgate.gates.census import callees, executed, survive
from cxxgate.gates.census.witness_data import FileInventory, Macro, Miss, Witness
from cxxgate.gates.shared import cppsource
from cxxgate.store import codehash
from cxxgate.toolchain.envelope import Envelope
from cxxgate.util.lines import physical_lines

TEST_DEFINITIONS = frozenset({"TEST", "TEST_F", "TEST_P", "TYPED_TEST", "TYPED_TEST_P"})
TEST_CALLS = frozenset({"TEST_CASE", "TEST_CASE_METHOD", "SECTION"})
EXACT = TEST_DEFINITIONS | TEST_CALLS | {"assert", "STATIC_REQUIRE", "STATIC_CHECK"}
PREFIXES = ("ASSERT", "EXPECT", "REQUIRE", "CHECK")
CONTROL = frozenset({"NDEBUG"})  # not a witness, but defining it turns `assert` off


@dataclass(frozen=True)
class Names:
    prefixes: tuple[str, ...] = PREFIXES
    ignore: frozenset[str] = frozenset()

    @classmethod
    def of(cls, extra: list[str], ignore: list[str]) -> Names:
        prefixes = PREFIXES + tuple(p.rstrip("_") for p in extra)
        return cls(prefixes, frozenset(ignore))

    def witness_like(self, name: str) -> bool:
        if name in self.ignore:
            return False
        return name in EXACT or any(name == p or name.startswith(p + "_") for p in self.prefixes)

    def watched(self, name: str) -> bool:
        return self.witness_like(name) or name in CONTROL


@dataclass
class _Frame:
    node: Node
    test: str  # the enclosing test's name, "" outside tests
    func: str  # the enclosing function, "fn:<name>"
    broken: bool  # inside a span the parser could not read (an ERROR node)


UNREADABLE = "in a span the parser could not read"


def read(file: str, source: bytes, names: Names) -> FileInventory:
    """The witnesses, witness-macro definitions and misses of one file."""
    return _Reader(file, names).read(source)


class _Reader:
    """One walk over a file's syntax tree (iterative: deep expressions nest far)."""

    def __init__(self, file: str, names: Names) -> None:
        self.inv = FileInventory(file)
        self.names = names
        self.handled: set[int] = set()  # identifiers accounted for (callee, test name)

    def read(self, source: bytes) -> FileInventory:
        stack = [_Frame(cppsource.parse(source).root_node, "", "", False)]
        while stack:
            frame = stack.pop()
            frame.broken = frame.broken or frame.node.type == "ERROR"
            inner = self.visit(frame)
            if inner is not None:
                stack.extend(reversed(self.children(frame, inner)))
        self.inv.witnesses.sort(key=lambda w: (w.line, w.column))
        self.inv.misses.sort(key=lambda m: (m.line, m.column))
        return self.inv

    def visit(self, frame: _Frame) -> _Frame | None:
        """Record what `frame.node` is; the context its children see, or None to skip them."""
        node, kind = frame.node, frame.node.type
        if kind in ("comment", "string_literal", "raw_string_literal", "char_literal"):
            return None
        if kind in ("preproc_def", "preproc_function_def"):
            _definition(self.inv, node, self.names)
            return None
        if kind == "preproc_call":
            _undef(self.inv, node, self.names)
            return None
        if kind == "function_definition":
            return self.function(frame)
        if kind == "call_expression":
            self.call(frame)
        elif kind == "static_assert_declaration":
            paren = next((c for c in node.children if c.type == "("), None)
            if paren is not None:
                toks = cppsource.tokens(node)[1:]
                where = frame.test or frame.func
                _add(self.inv, "static_assert", "static_assert", node, where, toks, paren.end_byte)
        elif kind in ("identifier", "type_identifier") and self.stray(node):
            parent = node.parent.type if node.parent else "?"
            why = UNREADABLE if frame.broken else f"used other than by a call ({parent})"
            self.inv.misses.append(_miss(node, self.inv.file, why))
        return frame

    def stray(self, node: Node) -> bool:
        """A witness-like name that is not a call the walk accounted for."""
        if node.id in self.handled or not self.names.witness_like(cppsource.text(node)):
            return False
        return not _harmless_use(node)

    def function(self, frame: _Frame) -> _Frame:
        name, params = _declared(frame.node)
        if name is None:
            return frame
        macro = cppsource.text(name)
        if not self.names.witness_like(macro):
            return _Frame(frame.node, frame.test, "fn:" + macro, frame.broken)
        self.handled.add(name.id)
        body = frame.node.child_by_field_name("body")
        if macro not in TEST_DEFINITIONS or body is None or params is None:
            return frame
        label = _join(frame.test, ".".join(cppsource.text(p) for p in params.named_children))
        toks = cppsource.tokens(body)
        mark = body.start_byte + 1
        _add(self.inv, "test", macro, frame.node, frame.test, toks, mark, label, _exits(body))
        if frame.broken:
            self.inv.misses.append(_miss(name, self.inv.file, UNREADABLE))
        return _Frame(frame.node, label, frame.func, frame.broken)

    def call(self, frame: _Frame) -> None:
        callee = frame.node.child_by_field_name("function")
        args = frame.node.child_by_field_name("arguments")
        if callee is None or callee.type != "identifier" or callee.id in self.handled:
            return
        macro = cppsource.text(callee)
        if not self.names.witness_like(macro):
            return
        self.handled.add(callee.id)
        if frame.broken:
            self.inv.misses.append(_miss(callee, self.inv.file, UNREADABLE))
        elif macro in TEST_CALLS or macro in TEST_DEFINITIONS or args is None:
            self.inv.misses.append(_miss(callee, self.inv.file, "a test macro without a body"))
        else:
            kind = "assert" if macro == "assert" else "check"
            where = frame.test or frame.func
            first = next((a for a in args.named_children if a.type != "comment"), None)
            close = first.end_byte if first is not None else -1
            toks = cppsource.tokens(args)
            _add(self.inv, kind, macro, frame.node, where, toks, args.start_byte + 1, close=close)

    def children(self, frame: _Frame, inner: _Frame) -> list[_Frame]:
        """The children's frames; a Catch2 `TEST_CASE(...)` or `SECTION(...)` statement
        makes the block after it a test's body."""
        children = frame.node.children
        frames: list[_Frame] = []
        pending: str | None = None
        for i, child in enumerate(children):
            test = inner.test
            if pending is not None and child.type == "compound_statement":
                test = pending
            pending = None
            call = _test_call(child, self.names)
            body = children[i + 1] if i + 1 < len(children) else None
            if call is not None and body is not None and body.type == "compound_statement":
                callee, label = call
                self.handled.add(callee.id)
                pending = _join(inner.test, label)
                toks = cppsource.tokens(body)
                macro = cppsource.text(callee)
                mark = body.start_byte + 1
                _add(self.inv, "test", macro, child, inner.test, toks, mark, pending, _exits(body))
                if inner.broken or child.type == "ERROR":
                    self.inv.misses.append(_miss(callee, self.inv.file, UNREADABLE))
            frames.append(_Frame(child, test, inner.func, inner.broken))
        return frames


def _add(
    inv: FileInventory,
    kind: str,
    macro: str,
    node: Node,
    test: str,
    toks: list[str],
    mark: int,
    name: str = "",
    exits: int = 0,
    close: int = -1,
) -> None:
    """A witness; a test (`name` given) is fingerprinted by its body alone, so a renamed
    test keeps its fingerprint. Its span is its own text: a test's up to its body."""
    row, col = node.start_point
    if name:
        fp, text = cppsource.fingerprint(toks), f"{macro} {name}"
        inv.witnesses.append(
            Witness(
                kind,
                macro,
                inv.file,
                row + 1,
                col + 1,
                test,
                fp,
                text,
                mark,
                name,
                exits,
                start=node.start_byte,
                end=mark - 1,
            )
        )
        return
    fp, text = cppsource.fingerprint([macro, *toks]), cppsource.shown([macro, *toks])
    guard = " / ".join(_guards(node))
    inv.witnesses.append(
        Witness(
            kind,
            macro,
            inv.file,
            row + 1,
            col + 1,
            test,
            fp,
            text,
            mark,
            guard=guard,
            start=node.start_byte,
            end=node.end_byte,
            close=close,
        )
    )


# Control flow that decides whether a check inside it runs, up to the enclosing function.
GUARDS = frozenset(
    {
        "if_statement",
        "else_clause",
        "while_statement",
        "do_statement",
        "for_statement",
        "for_range_loop",
        "switch_statement",
        "case_statement",
        "conditional_expression",
        "lambda_expression",
        "catch_clause",
    }
)


def _guards(node: Node) -> list[str]:
    """The control flow around `node`, outermost first, each as its kind and its header's
    tokens: wrapping a check in `if (false)` or an uncalled lambda changes it, re-indenting
    does not."""
    parts: list[str] = []
    path, parent = node, node.parent
    while parent is not None and parent.type not in ("function_definition", "translation_unit"):
        if parent.type in GUARDS:
            head = [
                t
                for c in parent.children
                if c.id != path.id
                and c.type not in ("compound_statement", "else_clause")
                and not c.type.endswith("_statement")
                for t in cppsource.tokens(c)
            ]
            parts.append(f"{parent.type}:{cppsource.shown(head)}")
        path, parent = parent, parent.parent
    return list(reversed(parts))


EXITS = frozenset({"return_statement", "throw_statement", "goto_statement", "co_return_statement"})
EXIT_CALLS = frozenset({"exit", "_Exit", "_exit", "quick_exit", "abort", "terminate", "longjmp"})


def _exits(body: Node) -> int:
    """How many ways out of a test's body it spells: a `return;` put first skips every
    witness after it while each stays in the source, live for the preprocessor."""
    count = 0
    for n in cppsource.walk(body):
        if n.type in EXITS:
            count += 1
        elif n.type == "call_expression":
            callee = n.child_by_field_name("function")
            name = cppsource.text(callee).rpartition("::")[2] if callee is not None else ""
            count += name in EXIT_CALLS
    return count


def _join(outer: str, inner: str) -> str:
    return f"{outer}/{inner}" if outer and not outer.startswith("fn:") else inner


def _declared(node: Node) -> tuple[Node | None, Node | None]:
    """A function definition's name and parameter list (through pointer and reference
    declarators)."""
    decl = node.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    if decl is None:
        return None, None
    name = decl.child_by_field_name("declarator")
    return name, decl.child_by_field_name("parameters")


def _test_call(node: Node, names: Names) -> tuple[Node, str] | None:
    """`TEST_CASE("name") {` / `SECTION("name") {`: tree-sitter reads the call as a
    statement missing its `;`, followed by a block, which is the test's body."""
    if node.type != "expression_statement" or not node.children:
        return None
    call = node.children[0]
    if call.type != "call_expression" or not any(c.is_missing for c in node.children):
        return None
    callee = call.child_by_field_name("function")
    if callee is None or callee.type != "identifier":
        return None
    macro = cppsource.text(callee)
    if macro not in TEST_CALLS or not names.witness_like(macro):
        return None
    args = call.child_by_field_name("arguments")
    strings = [a for a in (args.named_children if args else []) if a.type == "string_literal"]
    if strings:
        label = "".join(cppsource.text(c) for c in strings[0].named_children)
    else:
        label = cppsource.shown(cppsource.tokens(args)) if args else macro
    return callee, label


def _harmless_use(node: Node) -> bool:
    """Places a witness-like name may stand without being a witness: the name of a macro
    test (`#ifdef EXPECT_EQ`), a member or a declared entity's own name is not a call."""
    parent = node.parent
    if parent is None:
        return False
    return parent.type in ("preproc_ifdef", "preproc_defined", "field_expression")


def _miss(node: Node, file: str, why: str) -> Miss:
    row, col = node.start_point
    return Miss(cppsource.text(node), file, row + 1, col + 1, why)


def _definition(inv: FileInventory, node: Node, names: Names) -> None:
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return
    name = cppsource.text(name_node)
    value = node.child_by_field_name("value")
    params = node.child_by_field_name("parameters")
    body = cppsource.parse(value.text or b"") if value is not None else None
    toks = ([cppsource.text(params)] if params is not None else []) + (
        cppsource.tokens(body.root_node) if body is not None else []
    )
    row = node.start_point[0] + 1
    if names.watched(name):
        inv.macros.append(
            Macro(name, "define", inv.file, row, cppsource.fingerprint(toks), cppsource.shown(toks))
        )
        return
    if body is None:
        return
    # A wrapper: a macro of another name that expands to a witness. Its uses are calls the
    # census cannot key (they are not witness-like), so the wrapper itself fails closed.
    for n in cppsource.walk(body.root_node):
        leaf = n.child_count == 0 and n.type in ("identifier", "type_identifier")
        if leaf and names.witness_like(cppsource.text(n)):
            why = f"in the body of macro {name}, which is not a witness macro"
            inv.misses.append(Miss(cppsource.text(n), inv.file, row, 1, why))


def _undef(inv: FileInventory, node: Node, names: Names) -> None:
    directive = node.child_by_field_name("directive")
    arg = node.child_by_field_name("argument")
    if directive is None or cppsource.text(directive).strip() != "#undef" or arg is None:
        return
    name = cppsource.text(arg).strip()
    if names.watched(name):
        row = node.start_point[0] + 1
        inv.macros.append(Macro(name, "undef", inv.file, row, cppsource.fingerprint([]), ""))


# ---- the scan ------------------------------------------------------------------------


UNITS = frozenset({".cpp", ".cc", ".cxx", ".c++"})


def spot(w: Witness) -> survive.Spot:
    return survive.Spot(w.start, w.mark, w.close, w.end)


def scan(tree: Path, params: dict[str, Any]) -> dict[str, Any]:
    """The census scan of one tree: every witness, keyed, with its liveness and its
    expansion after preprocessing with the case's envelope (see survive.py), what its calls
    bind to (callees.py), and whether it ran in the test program (executed.py).

    The files read are the case's `files` and, whatever their name, every file of the tree
    their preprocessing read (a header the patch adds under a folder `files` leaves out)."""
    names = Names.of(params["prefixes"], params["ignore"])
    files = cppsource.select(tree, params["files"])
    inventories = {rel: read(rel, (tree / rel).read_bytes(), names) for rel in files}
    env = survive.envelope_from(params["envelope"])
    result: dict[str, Any] = {"files": files, "preprocess": {}, "toolchain_missing": ""}
    result["read"] = []
    result["regions"] = {}
    result["kept"] = {}
    result["reads"] = {}
    if env.toolchain.path is None:
        result["toolchain_missing"] = f"compiler {env.toolchain.command!r} is not installed"
    else:
        todo = [
            rel for rel, inv in inventories.items() if inv.witnesses or Path(rel).suffix in UNITS
        ]
        rounds = 0
        while todo and rounds < 8:  # an include chain grows by one file per round at worst
            rounds += 1
            spots = {rel: [spot(w) for w in inventories[rel].witnesses] for rel in todo}
            outcome = survive.liveness(
                tree, spots, env, tuple(params["include_dirs"]), float(params["compile_seconds"])
            )
            fresh: set[str] = set()
            for rel in todo:
                live = outcome[rel]
                result["preprocess"][rel] = live.detail
                inv = inventories[rel]
                expansions = live.expansions or [None] * len(inv.witnesses)
                for w, flag, xp in zip(inv.witnesses, live.live, expansions, strict=True):
                    w.live = flag
                    if xp is not None:
                        w.expansion = cppsource.fingerprint(xp)
                        w.expanded = cppsource.shown(xp)
                fresh.update(d for d in live.deps if d not in inventories)
                result["kept"][rel] = live.kept
                result["reads"][rel] = live.deps
                result["regions"][rel] = {
                    f: {"sha": codehash.of_text((tree / f).read_bytes()), "fp": fp}
                    for f, fp in sorted(live.regions.items())
                    if (tree / f).is_file()
                }
            todo = []
            for rel in sorted(fresh):
                inv = read(rel, (tree / rel).read_bytes(), names)
                inventories[rel] = inv
                result["read"].append(rel)
                if inv.witnesses:
                    todo.append(rel)
        marked = {rel: [spot(w) for w in inv.witnesses] for rel, inv in inventories.items()}
        marked = {rel: spots for rel, spots in marked.items() if spots}
        units = sorted(r for r in inventories if Path(r).suffix in UNITS)
        seen = survive.contexts(
            tree,
            marked,
            units,
            env,
            tuple(params["include_dirs"]),
            float(params["compile_seconds"]),
        )
        for rel, sets in seen.items():
            for w, fps in zip(inventories[rel].witnesses, sets, strict=True):
                w.contexts = sorted(fps)
        _bind_and_run(tree, params, env, inventories, result)
    every = [inventories[rel] for rel in sorted(inventories)]
    result["witnesses"] = [asdict(w) for inv in every for w in inv.witnesses]
    result["macros"] = [asdict(m) for inv in every for m in inv.macros]
    result["misses"] = [asdict(m) for inv in every for m in inv.misses]
    return result


def unseen(
    tree: Path,
    kept: dict[str, dict[str, list[list[int]]]],
    reads: dict[str, list[str]],
    view: dict[str, dict[str, Any]],
) -> list[dict[str, Any]]:
    """Where the compiler's preprocessor and libclang's did otherwise with the tree in a
    unit: code the compile has and the census's parse never saw, or the other way round.
    libclang is clang, the compile g++: a static overload of the comparison helper under
    `#ifndef __clang__`, or `#if __GNUC__ >= 5` (clang says 4), is bound by every compile
    and by no parse. Per unit, against survive.py's `-E -dD` (`kept`: the lines it kept,
    code, #define and #undef; `reads`: the files it read) and callees.py's `view`:

    - a line g++ kept inside a block libclang skipped;
    - a file only one of them read (`#include` of a name pasted from `__GNUC__`);
    - a #define or #undef libclang processed and g++ did not (`#ifdef __clang__` around
      `#define eq unused`);
    - a directive inside a macro's arguments: the compiler prints what it kept there on
      the macro's own line, so no line comparison can tell."""
    out: list[dict[str, Any]] = []

    def note(unit: str, file: str, n: int, why: str) -> None:
        text = physical_lines((tree / file).read_text(errors="replace")) if n else []
        line = " ".join(text[n - 1].split()) if 0 < n <= len(text) else "(the whole file)"
        out.append({"unit": unit, "file": file, "line": n, "text": line, "why": why})

    for unit, parsed in sorted(view.items()):
        compiled: dict[str, set[int]] = {
            file: {n for a, b in runs for n in range(a, b + 1)}
            for file, runs in kept.get(unit, {}).items()
        }
        for file, runs in sorted(parsed["skipped"].items()):
            hidden = compiled.get(file, set()) & {n for a, b in runs for n in range(a, b + 1)}
            for n in sorted(hidden):
                note(unit, file, n, "is compiled, and skipped by the census's parser")
        gcc, clang = {unit, *reads.get(unit, [])}, set(parsed["reads"])
        for file in sorted(gcc - clang):
            note(unit, file, 0, "is read by the compiler and not by the census's parser")
        for file in sorted(clang - gcc):
            note(unit, file, 0, "is read by the census's parser and not by the compiler")
        for file, lines in sorted(parsed["directives"].items()):
            for n in sorted(set(lines) - compiled.get(file, set())):
                note(unit, file, n, "is a directive the census's parser took, not the compiler")
        for file, lines in sorted(parsed["embedded"].items()):
            for n in sorted(set(lines)):
                note(unit, file, n, "is a directive inside a macro's arguments")
    return out


def _bind_and_run(
    tree: Path,
    params: dict[str, Any],
    env: Envelope,
    inventories: dict[str, FileInventory],
    result: dict[str, Any],
) -> None:
    """What each witness's calls bind to, and which witnesses ran (the case's test
    program, when it names one)."""
    bound = callees.bind(tree, params, inventories, env.toolchain.binds)
    result["bind"] = bound.detail
    result["unseen"] = unseen(tree, result["kept"], result["reads"], bound.view)
    for rel, lists in bound.callees.items():
        for w, found in zip(inventories[rel].witnesses, lists, strict=True):
            w.callees = found
    for rel, lists in bound.data.items():
        for w, found in zip(inventories[rel].witnesses, lists, strict=True):
            w.data = found
    if params.get("program") is None:
        result["execution"] = "no test program: execution not proven"
        return
    ran = executed.run(tree, params, env, inventories, bound.calls, bound.declared)
    result["execution"] = ran.detail
    result["link"] = ran.link
    result["bindings"] = ran.bindings
    result["exit"] = ran.exit if ran.link else "not run"
    result["main"] = ran.main
    for rel, flags in ran.ran.items():
        for w, flag in zip(inventories[rel].witnesses, flags, strict=True):
            w.ran = flag
