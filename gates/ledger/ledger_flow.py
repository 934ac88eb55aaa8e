"""The ledger's data-flow pass: spin-waits, delay loops and writes to state outside the
tree, read from the bodies of a unit's tree functions (libclang's AST).

A spin-wait is a lock and a delay loop is a sleep whatever syntax builds them, so the rule
is semantic and coarse, not a list of loop shapes:

- *Taint.* Every value read from an atomic (any atomic operation but a store: `load`,
  `test_and_set`, `exchange`, `fetch_*`, `wait`, conversions, the `__atomic_*`/`__sync_*`
  builtins; and the `expected` a compare-exchange writes back) is tainted `lock`; every
  value read from a clock (`steady_clock::now`, `clock_gettime`, `time`, `rdtsc`) is
  tainted `sleep`. Taint flows through locals, parameters and members (assignment,
  initialisation, a tainted argument to a tree function's parameter, a tainted value
  written through a tree function's reference or pointer parameter), through a tree
  function's result (it returns a tainted value), and implicitly: whatever is assigned
  under a tainted condition is tainted. To a fixed point over the unit's tree functions
  (lambdas included, keyed by where they are defined).
- *Back-edges.* A loop (`while`, `do`, `for`, range `for`), a `goto` to an earlier label,
  a function on a cycle of the unit's call graph (direct or mutual recursion) and a
  function that calls `setjmp`. Its continuation is its loop condition and the condition
  of every `if`/`switch` inside it that holds a jump (`break`, `continue`, `return`,
  `goto`, `throw`); for a backward `goto`, every condition between the label and the goto
  and around it; for recursion, setjmp or a computed goto, every read of the function.
- A back-edge whose continuation reads a `lock`-tainted value is a spin-wait (`lock`); one
  that reads a `sleep`-tainted value is a delay loop (`sleep`); an `atomic_flag`
  test-and-set (`test_and_set`, `__atomic_test_and_set`, `__sync_lock_test_and_set`)
  anywhere inside a back-edge, or in a tree function one calls, is a lock whatever
  decides the exit.
- The one shape allowed: a compare-exchange retry loop. A back-edge whose continuation
  reads atomics only through the *result* of `compare_exchange_*` (member or
  `atomic_compare_exchange_*`, `__atomic_compare_exchange*`), where the `expected`
  argument is a variable or member that nothing in the loop writes but the exchange
  itself. Each retry then starts from the value the failed exchange observed (the desired
  value is recomputed from it), so the loop cannot wait for a value of its choosing; it
  only retries while other threads make progress. Resetting `expected` in the loop
  (`e = false`, a fresh `e` declared in the body), testing the observed value outside the
  exchange, or `__sync_*_compare_and_swap` (its expected is a value, not written back)
  make it a spin-wait.

Writes to state the tree does not own (`static_storage`): an assignment, compound
assignment or `++`/`--` whose target is a variable of static or thread storage declared
outside the tree (a libc global such as `optind`), or a non-const reference bound to
one of non-class type; any write to `errno` (every use of `__errno_location()` but an
rvalue read of `*__errno_location()`: an assignment, `++`, a non-const reference or a
pointer kept); and any cast that drops `const` from a static (`const_cast<T&>(g)`, a
C-style or reinterpret cast to a reference or pointer to non-const): the object is then
written, or may be, wherever it lives (`__dso_handle`).

What the flow cannot see (README, ledger threat model): a spin on a plain or `volatile`
variable (no atomic read to taint), a delay loop with no clock (a counted busy loop), taint
through virtual calls, function pointers into other units, containers or the heap
(`*p` for a pointer the tree did not taint), and exits decided in a callee that throws.
"""

from __future__ import annotations

import ctypes
import fnmatch
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import clang.cindex as ci

K = ci.CursorKind
Label = tuple[str, str]  # (facility: "lock", "sleep", "cas"; the operation's name)
Where = Callable[[ci.Cursor], "tuple[str, int, int] | None"]

ATOMIC_SCOPES = ("std::atomic", "std::__atomic", "std::atomic_flag", "std::atomic_ref")
_FUNCTION_KINDS = frozenset(
    {
        K.FUNCTION_DECL,
        K.CXX_METHOD,
        K.CONSTRUCTOR,
        K.DESTRUCTOR,
        K.CONVERSION_FUNCTION,
        K.FUNCTION_TEMPLATE,
    }
)
# Clock reads: a loop whose continuation reads one waits for time to pass.
CLOCKS = (
    "std::chrono::*::now",
    "clock_gettime",
    "gettimeofday",
    "time",
    "std::time",
    "clock",
    "std::clock",
    "timespec_get",
    "std::timespec_get",
    "ftime",
    "times",
    "getrusage",
    "__builtin_ia32_rdtsc",
    "__builtin_ia32_rdtscp",
    "__builtin_readcyclecounter",
    "__rdtsc",
    "__rdtscp",
    "_rdtsc",
)
# Functions whose result points at thread-local libc state (errno's home).
ERRNO = ("__errno_location", "__errno", "_errno", "__h_errno_location")
SETJMP = ("setjmp", "_setjmp", "sigsetjmp", "__sigsetjmp", "__builtin_setjmp")
_LOOPS = frozenset({K.WHILE_STMT, K.DO_STMT, K.FOR_STMT, K.CXX_FOR_RANGE_STMT})
_CONTROLS = _LOOPS | {K.IF_STMT, K.SWITCH_STMT, K.CONDITIONAL_OPERATOR}
_JUMPS = frozenset(
    {K.BREAK_STMT, K.CONTINUE_STMT, K.RETURN_STMT, K.GOTO_STMT, K.INDIRECT_GOTO_STMT}
)
_THROW = getattr(K, "CXX_THROW_EXPR", None)
_CASTS = frozenset(
    {
        K.CXX_CONST_CAST_EXPR,
        K.CSTYLE_CAST_EXPR,
        K.CXX_REINTERPRET_CAST_EXPR,
        K.CXX_STATIC_CAST_EXPR,
        K.CXX_FUNCTIONAL_CAST_EXPR,
    }
)
_TRANSPARENT = frozenset({K.PAREN_EXPR, K.UNEXPOSED_EXPR}) | _CASTS


def _operator_kinds() -> tuple[Callable[[ci.Cursor], str], Callable[[ci.Cursor], str]]:
    """libclang's operator spellings (`=`, `+=`, `++`, `*`): its C API has them (16+),
    its Python binding does not."""
    lib = ci.conf.lib
    for getter, speller in (
        ("clang_getCursorBinaryOperatorKind", "clang_getBinaryOperatorKindSpelling"),
        ("clang_getCursorUnaryOperatorKind", "clang_getUnaryOperatorKindSpelling"),
    ):
        getattr(lib, getter).argtypes = [ci.Cursor]
        getattr(lib, getter).restype = ctypes.c_int
        getattr(lib, speller).argtypes = [ctypes.c_int]
        getattr(lib, speller).restype = ci._CXString
        getattr(lib, speller).errcheck = ci._CXString.from_result

    def binary(c: ci.Cursor) -> str:
        return str(
            lib.clang_getBinaryOperatorKindSpelling(lib.clang_getCursorBinaryOperatorKind(c))
        )

    def unary(c: ci.Cursor) -> str:
        return str(lib.clang_getUnaryOperatorKindSpelling(lib.clang_getCursorUnaryOperatorKind(c)))

    return binary, unary


_binary, _unary = _operator_kinds()


def qualified(cursor: ci.Cursor | None) -> str:
    parts: list[str] = []
    while cursor is not None and cursor.kind != K.TRANSLATION_UNIT:
        name = cursor.spelling
        if name and not (cursor.kind == K.NAMESPACE and name.startswith("__")):
            parts.append(name)
        cursor = cursor.semantic_parent
    return "::".join(reversed(parts))


def atomic_op(node: ci.Cursor) -> tuple[str, str] | None:
    """("read" | "cas" | "write", qualified name) of the atomic operation a call or
    reference `node` names; None for anything else."""
    if node.kind not in (K.CALL_EXPR, K.MEMBER_REF_EXPR, K.DECL_REF_EXPR):
        return None
    ref = node.referenced
    if ref is None:
        return None
    name, short = qualified(ref), ref.spelling
    if name.startswith("__sync_") and "compare_and_swap" in short:
        return "read", name  # expected by value, never written back: no retry shape
    if "compare_exchange" in short and (
        name.startswith(("__atomic_", *ATOMIC_SCOPES)) or name.startswith("std::atomic_compare")
    ):
        return "cas", name
    if name.startswith(("__atomic_", "__sync_")):
        return (
            ("write", name)
            if short.startswith(("__atomic_store", "__atomic_clear"))
            else (
                "read",
                name,
            )
        )
    if name.startswith(ATOMIC_SCOPES) and ref.kind in _FUNCTION_KINDS:
        if short in ("store", "clear", "notify_one", "notify_all") or short.startswith(
            ("operator=", "atomic_store", "atomic_flag_clear", "atomic_notify", "atomic_init")
        ):
            return "write", name
        return "read", name
    if name.startswith(("std::atomic_", "std::atomic_flag_")) and ref.kind in _FUNCTION_KINDS:
        return ("write", name) if "store" in short or "clear" in short else ("read", name)
    return None


def is_test_and_set(node: ci.Cursor) -> str | None:
    op = atomic_op(node)
    return op[1] if op is not None and "test_and_set" in op[1] else None


def clock_read(node: ci.Cursor) -> str | None:
    if node.kind not in (K.CALL_EXPR, K.DECL_REF_EXPR):
        return None
    ref = node.referenced
    if ref is None or ref.kind not in _FUNCTION_KINDS:
        return None
    name = qualified(ref)
    return name if any(fnmatch.fnmatchcase(name, g) for g in CLOCKS) else None


def _children(c: ci.Cursor) -> list[ci.Cursor]:
    return list(c.get_children())


def _skip(c: ci.Cursor) -> ci.Cursor:
    while c.kind == K.PAREN_EXPR or (c.kind == K.UNEXPOSED_EXPR and len(_children(c)) == 1):
        c = _children(c)[0]
    return c


def split(node: ci.Cursor) -> tuple[list[ci.Cursor], list[ci.Cursor]]:
    """(condition parts, governed parts) of a control statement. An `if`'s condition is
    what lies inside its parentheses (its optional init and else make the child count
    ambiguous); loops, `switch` and `?:` by child order."""
    kids = _children(node)
    if not kids:
        return [], []
    if node.kind == K.DO_STMT:
        return kids[1:], kids[:1]
    if node.kind == K.CXX_FOR_RANGE_STMT:
        return [], kids
    if node.kind == K.CONDITIONAL_OPERATOR:
        return kids[:1], kids[1:]
    if node.kind == K.IF_STMT:
        close = _close_paren(node)
        if close is None:
            return kids[:1], kids[1:]
        conds = [k for k in kids if k.extent.start.offset < close]
        return conds, kids[len(conds) :]
    return kids[:-1], kids[-1:]


def _close_paren(node: ci.Cursor) -> int | None:
    depth = 0
    for tok in node.get_tokens():
        if tok.spelling == "(":
            depth += 1
        elif tok.spelling == ")":
            depth -= 1
            if depth == 0:
                return int(tok.extent.start.offset)
    return None


def _jumps(node: ci.Cursor) -> bool:
    for c in node.walk_preorder():
        if c.kind in _JUMPS or (_THROW is not None and c.kind == _THROW):
            return True
    return False


@dataclass
class Body:
    key: str
    cursor: ci.Cursor
    path: str
    params: list[str] = field(default_factory=list)  # keys of its parameters
    out_params: list[bool] = field(default_factory=list)  # non-const reference/pointer


@dataclass
class Flow:
    """The unit's tree function bodies and the taint over them."""

    where: Where
    bodies: dict[str, Body] = field(default_factory=dict)
    by_name: dict[str, list[str]] = field(default_factory=dict)
    taint: dict[str, set[Label]] = field(default_factory=dict)
    calls: dict[str, set[str]] = field(default_factory=dict)  # caller -> tree callees
    tas: dict[str, str] = field(default_factory=dict)  # function -> test_and_set it reaches
    setjmp: set[str] = field(default_factory=set)
    uses: list[dict[str, Any]] = field(default_factory=list)
    writes: list[dict[str, Any]] = field(default_factory=list)

    # ---- keys ---------------------------------------------------------------------------

    def key(self, decl: ci.Cursor | None) -> str | None:
        if decl is None:
            return None
        if decl.kind in _FUNCTION_KINDS:
            decl = decl.get_definition() or decl
        loc = decl.location
        if loc.file is None:
            return None
        return f"{loc.file.name}:{loc.offset}"

    def add(self, cursor: ci.Cursor, path: str) -> None:
        """A tree function definition or lambda whose body this unit holds."""
        key = self.key(cursor)
        if key is None or key in self.bodies:
            return
        params = [a for a in cursor.get_children() if a.kind == K.PARM_DECL]
        outs = []
        for p in params:
            t = p.type.get_canonical()
            ref = t.kind in (
                ci.TypeKind.LVALUEREFERENCE,
                ci.TypeKind.RVALUEREFERENCE,
                ci.TypeKind.POINTER,
            )
            outs.append(ref and not t.get_pointee().is_const_qualified())
        self.bodies[key] = Body(key, cursor, path, [self.key(p) or "" for p in params], outs)
        self.by_name.setdefault(cursor.spelling, []).append(key)

    def callees(self, call: ci.Cursor) -> list[str]:
        """Tree functions a call may reach: its resolved callee, else (a call libclang left
        unresolved, a template's, one to a declaration) every tree function of that name."""
        ref = call.referenced
        key = self.key(ref)
        if key in self.bodies:
            return [key]
        undefined_here = ref is not None and ref.kind in _FUNCTION_KINDS and self.where(ref)
        if ref is None or ref.kind == K.OVERLOADED_DECL_REF or undefined_here:
            # A tree declaration libclang does not tie to its definition (declared before
            # it is defined) is every tree function of its name: coarse, never fewer.
            name = call.spelling or (ref.spelling if ref is not None else "")
            return list(self.by_name.get(name, []))
        return []

    # ---- labels -------------------------------------------------------------------------

    def labels(self, node: ci.Cursor) -> set[Label]:
        out: set[Label] = set()
        for c in self._reads(node):
            op = atomic_op(c)
            if op is not None:
                if op[0] == "cas":
                    out.add(("cas", op[1]))
                elif op[0] == "read":
                    out.add(("lock", op[1]))
                continue
            clock = clock_read(c)
            if clock is not None:
                out.add(("sleep", clock))
                continue
            if c.kind in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR):
                out |= self.taint.get(self.key(c.referenced) or "", set())
            elif c.kind == K.CALL_EXPR:
                for k in self.callees(c):
                    out |= self.taint.get(k, set())
        return out

    def _reads(self, node: ci.Cursor) -> Iterator[ci.Cursor]:
        """The nodes of an expression, a compare-exchange's arguments left out (its result
        is its read) and lambdas' bodies left out (their own functions)."""
        stack = [node]
        while stack:
            c = stack.pop()
            yield c
            if c.kind == K.LAMBDA_EXPR:
                continue
            op = atomic_op(c) if c.kind == K.CALL_EXPR else None
            if op is not None and op[0] == "cas":
                continue
            stack.extend(_children(c))

    def target(self, lvalue: ci.Cursor) -> str | None:
        """The variable, parameter or member an lvalue expression writes."""
        c = lvalue
        for _ in range(64):
            c = _skip(c)
            if c.kind in _CASTS:
                kids = _children(c)
                if not kids:
                    return None
                c = kids[-1]
            elif c.kind == K.UNARY_OPERATOR or c.kind == K.ARRAY_SUBSCRIPT_EXPR:
                kids = _children(c)
                if not kids:
                    return None
                c = kids[0]
            elif c.kind in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR):
                return self.key(c.referenced)
            else:
                return None
        return None

    def _mark(self, key: str | None, labels: set[Label]) -> bool:
        if key is None or not labels:
            return False
        have = self.taint.setdefault(key, set())
        if labels <= have:
            return False
        have |= labels
        return True

    # ---- propagation --------------------------------------------------------------------

    def solve(self) -> None:
        for _ in range(32):
            changed = False
            for body in list(self.bodies.values()):
                changed |= self._flow(body, body.cursor, set())
            if not changed:
                break
        self._reach_tas()

    def _flow(self, body: Body, node: ci.Cursor, implicit: set[Label]) -> bool:
        changed = False
        for c in _children(node):
            if c.kind == K.LAMBDA_EXPR:
                continue  # its own body
            if c.kind in _CONTROLS:
                conds, governed = split(c)
                for part in conds:
                    changed |= self._flow(body, part, implicit)
                    changed |= self._step(body, part, implicit)
                inner = implicit | {lab for p in conds for lab in self.labels(p)}
                for part in governed:
                    changed |= self._step(body, part, inner)
                    changed |= self._flow(body, part, inner)
                continue
            changed |= self._step(body, c, implicit)
            changed |= self._flow(body, c, implicit)
        return changed

    def _step(self, body: Body, c: ci.Cursor, implicit: set[Label]) -> bool:
        changed = False
        kind = c.kind
        kids = _children(c)
        if kind == K.VAR_DECL:
            init = [k for k in kids if k.kind.is_expression()]
            labels = set(implicit)
            for k in init:
                labels |= self.labels(k)
            changed |= self._mark(self.key(c), labels)
        elif kind == K.BINARY_OPERATOR and len(kids) == 2 and _binary(c) == "=":
            changed |= self._mark(self.target(kids[0]), self.labels(kids[1]) | implicit)
        elif kind == K.COMPOUND_ASSIGNMENT_OPERATOR and len(kids) == 2:
            labels = self.labels(kids[1]) | self.labels(kids[0]) | implicit
            changed |= self._mark(self.target(kids[0]), labels)
        elif kind == K.UNARY_OPERATOR and kids and _unary(c) in ("++", "--"):
            changed |= self._mark(self.target(kids[0]), set(implicit))
        elif kind == K.RETURN_STMT:
            labels = set(implicit)
            for k in kids:
                labels |= self.labels(k)
            changed |= self._mark(body.key, labels)
        elif kind == K.CALL_EXPR:
            changed |= self._call(body, c, implicit)
        return changed

    def _call(self, body: Body, call: ci.Cursor, implicit: set[Label]) -> bool:
        changed = False
        args = list(call.get_arguments())
        op = atomic_op(call)
        if op is not None and op[0] in ("read", "cas"):
            # Out-parameters of an atomic operation (a compare-exchange's expected, the
            # generic __atomic_load's result) hold what it read.
            for a in args:
                changed |= self._mark(self.target(a), {("lock", op[1])} | implicit)
        if _name(call) in SETJMP:
            self.setjmp.add(body.key)
        for callee in self.callees(call):
            self.calls.setdefault(body.key, set()).add(callee)
            target = self.bodies[callee]
            for i, a in enumerate(args[: len(target.params)]):
                changed |= self._mark(target.params[i], self.labels(a) | implicit)
                if target.out_params[i]:
                    # What the callee wrote through it comes back to the argument.
                    changed |= self._mark(self.target(a), self.taint.get(target.params[i], set()))
        return changed

    def _reach_tas(self) -> None:
        for key, body in self.bodies.items():
            for c in body.cursor.walk_preorder():
                name = is_test_and_set(c)
                if name is not None:
                    self.tas[key] = name
                    break
        for _ in range(len(self.bodies) + 1):
            grew = False
            for caller, callees in self.calls.items():
                if caller in self.tas:
                    continue
                hit = next((self.tas[c] for c in sorted(callees) if c in self.tas), None)
                if hit is not None:
                    self.tas[caller] = hit
                    grew = True
            if not grew:
                break

    # ---- back-edges ---------------------------------------------------------------------

    def detect(self) -> None:
        cycles = self._cycles()
        for body in self.bodies.values():
            self._walk(body, body.cursor, [], cycles)
            if body.key in cycles or body.key in self.setjmp:
                self._recursion(body, cycles)

    def _walk(self, body: Body, node: ci.Cursor, around: list[ci.Cursor], cycles: set[str]) -> None:
        for c in _children(node):
            if c.kind == K.LAMBDA_EXPR:
                continue
            if c.kind in _LOOPS:
                self._loop(body, c)
            elif c.kind == K.GOTO_STMT:
                self._goto(body, c, around)
            elif c.kind == K.INDIRECT_GOTO_STMT:
                self._region(body, c, body.cursor, "computed goto")
            self._writes(body, c)
            if c.kind in _CONTROLS:
                conds, _ = split(c)
                self._walk(body, c, around + conds, cycles)
            else:
                self._walk(body, c, around, cycles)

    def _controls(self, region: ci.Cursor) -> list[ci.Cursor]:
        """Conditions inside `region` that decide whether control goes on: loops', and
        those of `if`/`switch` statements that hold a jump."""
        out: list[ci.Cursor] = []
        for c in region.walk_preorder():
            if c.kind in _LOOPS:
                out += split(c)[0]
            elif c.kind in (K.IF_STMT, K.SWITCH_STMT):
                conds, governed = split(c)
                if any(_jumps(g) for g in governed):
                    out += conds
        return out

    def _loop(self, body: Body, loop: ci.Cursor) -> None:
        conds, governed = split(loop)
        controls = conds + [x for g in governed for x in self._controls(g)]
        self._judge(body, loop, controls, [loop], "loop")

    def _goto(self, body: Body, goto: ci.Cursor, around: list[ci.Cursor]) -> None:
        label = next((k.referenced for k in _children(goto) if k.kind == K.LABEL_REF), None)
        if label is None or label.location.file is None or goto.location.file is None:
            return
        if label.location.file.name != goto.location.file.name:
            return
        lo, hi = label.extent.start.offset, goto.extent.start.offset
        if lo > hi:
            return  # a forward jump: no back-edge
        inside = [
            c
            for c in body.cursor.walk_preorder()
            if c.location.file is not None
            and c.location.file.name == goto.location.file.name
            and lo <= c.extent.start.offset <= hi
        ]
        controls = list(around)
        for c in inside:
            if c.kind in _CONTROLS:
                controls += split(c)[0]
        tops = [c for c in inside if c.kind.is_statement() or c.kind.is_expression()]
        self._judge(body, goto, controls, tops, "goto")

    def _region(self, body: Body, at: ci.Cursor, region: ci.Cursor, what: str) -> None:
        """A whole function as a back-edge (recursion, setjmp, a computed goto): whether it
        goes round again may hang on any value it reads (`return a.load() && again()`),
        so every read in it is its continuation."""
        self._judge(body, at, [region], [region], what)

    def _recursion(self, body: Body, cycles: set[str]) -> None:
        at = body.cursor
        for c in body.cursor.walk_preorder():
            if c.kind == K.CALL_EXPR and (set(self.callees(c)) & cycles or _name(c) in SETJMP):
                at = c
                break
        what = "setjmp" if body.key in self.setjmp else "recursion"
        self._region(body, at, body.cursor, what)

    def _judge(
        self,
        body: Body,
        at: ci.Cursor,
        controls: list[ci.Cursor],
        region: list[ci.Cursor],
        what: str,
    ) -> None:
        place = self.where(at)
        if place is None:
            return
        path, line, _ = place
        labels: set[Label] = set()
        for c in controls:
            labels |= self.labels(c)
        for kind, name in sorted(labels):
            if kind == "lock":
                self._use("lock", f"spin-wait ({what}) on {name}", path, line)
            elif kind == "sleep":
                self._use("sleep", f"delay {what} on {name}", path, line)
        if any(k == "cas" for k, _ in labels) and not self._retry(controls, region):
            names = sorted(n for k, n in labels if k == "cas")
            self._use("lock", f"spin-wait ({what}) on {names[0]}: expected is reset", path, line)
        tas = self._tas_in(region)
        if tas is not None:
            self._use("lock", f"{tas} in a {what}", path, line)

    def _retry(self, controls: list[ci.Cursor], region: list[ci.Cursor]) -> bool:
        """The allowed compare-exchange retry: every exchange the continuation reads has a
        variable or member for `expected` that nothing in the region writes but itself."""
        expected: set[str] = set()
        for c in controls:
            for n in c.walk_preorder():
                op = atomic_op(n) if n.kind == K.CALL_EXPR else None
                if op is None or op[0] != "cas":
                    continue
                args = list(n.get_arguments())
                index = 0 if op[1].startswith("std::atomic<") or "::compare" in op[1] else 1
                if len(args) <= index:
                    return False
                arg = _skip(args[index])
                if arg.kind == K.UNARY_OPERATOR and _unary(arg) == "&":
                    arg = _skip(_children(arg)[0])
                if arg.kind not in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR):
                    return False
                key = self.key(arg.referenced)
                if key is None:
                    return False
                expected.add(key)
        for top in region:
            for n in top.walk_preorder():
                if n.kind == K.VAR_DECL and self.key(n) in expected:
                    return False
                kids = _children(n)
                written = None
                if _assigned(n) is not None:
                    written = self.target(kids[0])
                elif n.kind == K.CALL_EXPR:
                    op = atomic_op(n)
                    if op is None or op[0] != "cas":
                        for i, a in enumerate(n.get_arguments()):
                            if self._out_arg(n, i) and self.target(a) in expected:
                                return False
                if written is not None and written in expected:
                    return False
        return True

    def _out_arg(self, call: ci.Cursor, i: int) -> bool:
        ref = call.referenced
        if ref is None:
            return True  # unresolved: it may write
        params = [a for a in ref.get_children() if a.kind == K.PARM_DECL]
        if i >= len(params):
            return False
        t = params[i].type.get_canonical()
        refs = (ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE, ci.TypeKind.POINTER)
        return t.kind in refs and not t.get_pointee().is_const_qualified()

    def _tas_in(self, region: list[ci.Cursor]) -> str | None:
        for top in region:
            for n in top.walk_preorder():
                name = is_test_and_set(n)
                if name is not None:
                    return name
                if n.kind == K.CALL_EXPR:
                    for k in self.callees(n):
                        if k in self.tas:
                            return self.tas[k]
        return None

    def _cycles(self) -> set[str]:
        """Functions on a cycle of the call graph (Tarjan's strongly connected parts)."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on: set[str] = set()
        out: set[str] = set()
        counter = [0]

        def connect(v: str) -> None:
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on.add(v)
            for w in sorted(self.calls.get(v, ())):
                if w not in index:
                    connect(w)
                    low[v] = min(low[v], low[w])
                elif w in on:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                part = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    part.append(w)
                    if w == v:
                        break
                if len(part) > 1 or v in self.calls.get(v, ()):
                    out.update(part)

        for v in sorted(self.bodies):
            if v not in index:
                connect(v)
        return out

    # ---- writes to state the tree does not own ------------------------------------------

    def _writes(self, body: Body, c: ci.Cursor) -> None:
        kids = _children(c)
        kind = c.kind
        lvalue = _assigned(c)
        if lvalue is not None:
            self._written(body, lvalue, c)
        elif kind == K.VAR_DECL:
            t = c.type.get_canonical()
            pointee = t.get_pointee()
            plain = pointee.get_canonical().kind != ci.TypeKind.RECORD
            if t.kind == ci.TypeKind.LVALUEREFERENCE and plain and not pointee.is_const_qualified():
                for k in kids:
                    if k.kind.is_expression():
                        self._written(body, k, c)
        elif kind in _CASTS:
            self._cast(body, c)
        elif kind == K.CALL_EXPR and _name(c) in ERRNO:
            self._errno(body, c)

    def _static(self, lvalue: ci.Cursor) -> ci.Cursor | None:
        """The variable of static or thread storage an lvalue names, if any."""
        c = lvalue
        for _ in range(64):
            c = _skip(c)
            if c.kind in _CASTS or c.kind == K.MEMBER_REF_EXPR:
                kids = _children(c)
                if not kids:
                    return None
                c = kids[-1] if c.kind in _CASTS else kids[0]
            elif c.kind == K.ARRAY_SUBSCRIPT_EXPR:
                kids = _children(c)
                if not kids or kids[0].type.get_canonical().kind == ci.TypeKind.POINTER:
                    return None
                c = kids[0]
            elif c.kind == K.DECL_REF_EXPR:
                ref = c.referenced
                if ref is None or ref.kind != K.VAR_DECL:
                    return None
                static = ref.storage_class in (ci.StorageClass.STATIC, ci.StorageClass.EXTERN)
                parent = ref.semantic_parent
                scoped = parent is not None and parent.kind in (
                    K.TRANSLATION_UNIT,
                    K.NAMESPACE,
                    K.CLASS_DECL,
                    K.STRUCT_DECL,
                    K.LINKAGE_SPEC,
                )
                return ref if static or scoped or ref.tls_kind != ci.TLSKind.NONE else None
            else:
                return None
        return None

    def _written(self, body: Body, lvalue: ci.Cursor, at: ci.Cursor) -> None:
        target = _skip(lvalue)
        if target.kind == K.UNARY_OPERATOR and _unary(target) == "*":
            inner = _skip(_children(target)[0]) if _children(target) else None
            if inner is not None and inner.kind == K.CALL_EXPR and _name(inner) in ERRNO:
                return  # _errno reports it
        var = self._static(lvalue)
        if var is None:
            return
        home = var.get_definition()
        if home is not None and self.where(home) is not None:
            return  # the tree's own: its definition is judged (static_storage)
        self._write(at, f"writes {qualified(var)}, state outside the tree's objects")

    def _cast(self, body: Body, cast: ci.Cursor) -> None:
        """A cast to a reference to non-const of a const static, or to a pointer to
        non-const of its address: the object is written, or may be, through it."""
        kids = _children(cast)
        if not kids:
            return
        operand = kids[-1]
        start = operand.extent.start.offset
        spelt = [t.spelling for t in cast.get_tokens() if t.extent.start.offset < start]
        t = cast.type.get_canonical()
        if "&" in spelt or "&&" in spelt:
            if t.is_const_qualified():
                return
            target = operand
        elif t.kind == ci.TypeKind.POINTER and not t.get_pointee().is_const_qualified():
            inner = _skip(operand)
            if inner.kind != K.UNARY_OPERATOR or _unary(inner) != "&" or not _children(inner):
                return
            target = _children(inner)[0]
        else:
            return
        var = self._static(target)
        if var is None or not var.type.get_canonical().is_const_qualified():
            return
        self._write(cast, f"casts const away from {qualified(var)}: a write to it")

    def _errno(self, body: Body, call: ci.Cursor) -> None:
        """Any use of errno's address but an rvalue read of `*__errno_location()`."""
        parents = _parents(body.cursor, call)
        chain = [p for p in parents if p.kind != K.PAREN_EXPR]
        if (
            len(chain) >= 2
            and chain[0].kind == K.UNARY_OPERATOR
            and _unary(chain[0]) == "*"
            and chain[1].kind == K.UNEXPOSED_EXPR
        ):
            return
        self._write(call, f"writes errno ({_name(call)}): state outside the tree's objects")

    def _write(self, at: ci.Cursor, message: str) -> None:
        place = self.where(at)
        if place is not None:
            entry = {"name": message, "path": place[0], "line": place[1]}
            if entry not in self.writes:
                self.writes.append(entry)

    def _use(self, what: str, name: str, path: str, line: int) -> None:
        entry = {"what": what, "name": name, "path": path, "line": line}
        if entry not in self.uses:
            self.uses.append(entry)


def _assigned(n: ci.Cursor) -> ci.Cursor | None:
    """The lvalue an assignment, compound assignment, `++` or `--` writes."""
    kids = _children(n)
    if not kids:
        return None
    if n.kind == K.BINARY_OPERATOR and len(kids) == 2 and _binary(n) == "=":
        return kids[0]
    if n.kind == K.COMPOUND_ASSIGNMENT_OPERATOR:
        return kids[0]
    if n.kind == K.UNARY_OPERATOR and _unary(n) in ("++", "--"):
        return kids[0]
    return None


def _name(call: ci.Cursor) -> str:
    ref = call.referenced
    return str(ref.spelling if ref is not None else call.spelling)


def _parents(root: ci.Cursor, target: ci.Cursor) -> list[ci.Cursor]:
    """The ancestors of `target` under `root`, nearest first."""
    path: list[ci.Cursor] = []

    def down(node: ci.Cursor) -> bool:
        for c in _children(node):
            if c == target:
                return True
            path.append(c)
            if down(c):
                return True
            path.pop()
        return False

    down(root)
    return list(reversed(path))
