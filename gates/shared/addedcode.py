"""What the lines a patch added are, as C++ (tree-sitter over the new file): the facts the
coverage gate needs beside gcov's counts, which only show the code that was compiled.

- `functions`: every function definition (with a body) and lambda holding an added line,
  by its exact source range (line and column): gcov names a function by the line and
  column of its name, so a definition is held by a build only when some gcov function
  record starts inside its range (not inside a nested definition's). Another function on
  the same line does not hold it.
- `statements`: every statement holding an added token (its own tokens: those of nested
  statements count for those), by line span and the function it belongs to. A statement
  that emits code (expressions, returns, jumps, control statements, declarations with an
  initialiser) has an executable gcov line in its span in every build that compiled it:
  none means the tests' builds never compiled it (a preprocessor branch the coverage
  envelope skipped, a discarded `if constexpr` branch).
- `defaults`: added default arguments holding a branch (`?:`, `&&`, `||`) or a lambda.
  gcc counts a default argument's code at each caller's line, never at its own: its
  branches are not visible at the line the patch added.
- `bearing`: some added line can carry code (a definition, a statement, an initialiser, a
  default argument, a macro definition, an `#include`, a pragma other than `#pragma once`,
  a declaration with an attribute beyond the inert ones). A file whose added lines bear
  none (a declaration gaining `[[nodiscard]]`, an include guard) has nothing to score, and
  nothing to hold against the patch.

Lines are numbered as gcc numbers them (`source_lines`): only a newline ends a line (the
text read with universal newlines, as gcc takes `\\r\\n` and a lone `\\r`); a form feed,
a vertical tab, U+2028 or U+0085 is a character within a line.
"""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

from cxxgate.gates.shared import cppsource

Range = tuple[int, int, int, int]  # first line, first column, last line, end column (1-based)

# Statements that emit code when compiled. Compound statements, labels (`case 1:`) and
# declarations that may compile to nothing (no initialiser, constexpr, static) are not.
CODE_STATEMENTS = frozenset(
    {
        "expression_statement",
        "return_statement",
        "if_statement",
        "while_statement",
        "do_statement",
        "for_statement",
        "for_range_loop",
        "switch_statement",
        "break_statement",
        "continue_statement",
        "goto_statement",
        "throw_statement",
        "co_return_statement",
        "co_yield_statement",
        "try_statement",
    }
)
# Nodes whose tokens are not their parent statement's own.
NESTED = CODE_STATEMENTS | frozenset(
    {
        "compound_statement",
        "declaration",
        "case_statement",
        "labeled_statement",
        "lambda_expression",
        "preproc_if",
        "preproc_ifdef",
        "preproc_else",
        "preproc_elif",
        "static_assert_declaration",
        "alias_declaration",
        "type_definition",
        "using_declaration",
    }
)
FUNCTIONS = frozenset({"function_definition", "lambda_expression"})
BRANCHING_OPERATORS = frozenset({"&&", "||", "and", "or"})
# Attributes that change no generated code: a declaration gaining one bears nothing.
INERT_ATTRIBUTES = frozenset({"nodiscard", "deprecated", "maybe_unused"})
# In a declaration: an initialiser, a GNU attribute (`constructor`, `alias`, `section`), an
# asm label.
CODE_DECLARATORS = frozenset(
    {"init_declarator", "attribute_specifier", "gnu_asm_expression", "ms_declspec_modifier"}
)


def source_lines(text: str) -> list[str]:
    """The lines of `text` as gcc numbers them: split at newlines only (the last one
    empty when the text ends in a newline). Every line number the gate uses comes from
    here, tree-sitter's rows (newlines only) or gcov."""
    return text.split("\n")


def analyse(source: str, added: set[int]) -> dict[str, object]:
    """`{"functions": [[l1, c1, l2, c2], ...], "statements": [[first, last, function], ...],
    "defaults": [line, ...], "bearing": bool}` for the added lines `added` (1-based) of
    `source`; a statement's function is the index in `functions` of the innermost
    definition holding it."""
    root = cppsource.parse(source.encode()).root_node
    functions: list[Range] = []
    statements: list[tuple[int, int, Range]] = []
    defaults: set[int] = set()
    bearing = root.has_error  # a file tree-sitter cannot read is taken to bear code
    for node in cppsource.walk(root):
        first, last = node.start_point.row + 1, node.end_point.row + 1
        if not added & set(range(first, last + 1)):
            continue
        if node.type in FUNCTIONS and node.child_by_field_name("body") is not None:
            functions.append(_range(node))
            bearing = True
        elif node.type in CODE_STATEMENTS or node.type == "declaration":
            if not _own_lines(node) & added:
                continue
            owner = _owner(node)
            if node.type == "declaration" and not _inert_declaration(node):
                bearing = True
            if owner is not None and _emits_code(node):
                bearing = True
                statements.append((first, last, owner))
        elif node.type in ("optional_parameter_declaration", "field_declaration"):
            value = node.child_by_field_name("default_value")
            touched = added & _rows(value) if value is not None else set()
            if value is not None and touched:
                bearing = True
                if node.type == "optional_parameter_declaration" and _branches(value):
                    defaults.add(min(touched))
            if node.type == "field_declaration" and not _inert_declaration(node):
                bearing = True
        elif node.type == "preproc_function_def" or (
            node.type == "preproc_def" and node.child_by_field_name("value") is not None
        ):
            bearing = True  # an empty `#define X` (a guard) bears only on `#if`s
        elif node.type == "preproc_include" or (
            node.type == "preproc_call" and " ".join(cppsource.text(node).split()) != "#pragma once"
        ):
            # An include brings in a file the tests' builds may never read (under a
            # skipped `#if`); a pragma may change code (`pack`).
            bearing = True
        elif node.type in ("init_declarator", "attribute_specifier", "ms_declspec_modifier"):
            bearing = True
    index = {r: i for i, r in enumerate(functions)}
    return {
        "functions": [list(f) for f in functions],
        "statements": [[a, b, index[r]] for a, b, r in statements],
        "defaults": sorted(defaults),
        "bearing": bool(bearing),
    }


def _owner(node: Node) -> Range | None:
    """The innermost function definition or lambda holding `node`."""
    parent = node.parent
    while parent is not None:
        if parent.type in FUNCTIONS and parent.child_by_field_name("body") is not None:
            return _range(parent)
        parent = parent.parent
    return None


def _range(node: Node) -> Range:
    return (
        node.start_point.row + 1,
        node.start_point.column + 1,
        node.end_point.row + 1,
        node.end_point.column + 1,
    )


def _rows(node: Node) -> set[int]:
    return set(range(node.start_point.row + 1, node.end_point.row + 2))


def _leaves(node: Node) -> Iterator[Node]:
    """The node's tokens, without those of the statements (and lambdas) nested in it."""
    stack = list(reversed(node.children))
    while stack:
        n = stack.pop()
        if n.type in NESTED or n.type == "comment":
            continue
        if n.child_count == 0:
            yield n
        else:
            stack.extend(reversed(n.children))


def _own_lines(node: Node) -> set[int]:
    own = {node.start_point.row + 1}
    for leaf in _leaves(node):
        own.update(range(leaf.start_point.row + 1, leaf.end_point.row + 2))
    return own


def _emits_code(node: Node) -> bool:
    """Whether a compiled statement has code gcov gives a line: not `;`, not `(void)x;`,
    not a declaration without a dynamic initialiser."""
    if node.type == "expression_statement":
        named = node.named_children
        if not named or named[0].type == "comment":
            return False
        expr = named[0]
        value = expr.child_by_field_name("value")
        return not (
            expr.type == "cast_expression" and value is not None and value.type == "identifier"
        )
    if node.type == "declaration":
        specifiers = {cppsource.text(c) for c in node.children if c.type in _SPECIFIERS}
        if specifiers & {"constexpr", "static", "constinit", "thread_local", "extern"}:
            return False
        return any(c.type == "init_declarator" for c in node.children)
    return True


_SPECIFIERS = frozenset({"type_qualifier", "storage_class_specifier"})


def _inert_declaration(node: Node) -> bool:
    """A declaration that generates no code: no initialiser, no default argument, no
    attribute but the inert ones, no GNU attribute or asm label."""
    for n in cppsource.walk(node):
        if n.type in CODE_DECLARATORS:
            return False
        if n.type == "optional_parameter_declaration" or (
            n.type == "field_declaration" and n.child_by_field_name("default_value") is not None
        ):
            return False
        if n.type == "attribute":
            name = n.child_by_field_name("name")
            prefix = n.child_by_field_name("prefix")
            spelled = cppsource.text(name) if name is not None else cppsource.text(n)
            if prefix is not None or spelled.strip("_") not in INERT_ATTRIBUTES:
                return False
    return True


def _branches(node: Node) -> bool:
    """Whether an expression holds a branch or a lambda."""
    for n in cppsource.walk(node):
        if n.type in ("conditional_expression", "lambda_expression"):
            return True
        if n.type == "binary_expression":
            op = n.child_by_field_name("operator")
            if op is not None and cppsource.text(op) in BRANCHING_OPERATORS:
                return True
    return False


# A comparison with zero is its negation: `p == nullptr` is `!p`, `c != '\0'` is `c`.
ZEROS = frozenset({"0", "nullptr", "NULL", "false", "'\\0'", "0u", "0U", "0l", "0L"})


def canonical(line: str) -> str | None:
    """The code of one line, as a statement inside a function, as a tree (node types and
    tokens, so grouping is explicit) with the spellings that compile to the same test
    folded: a comparison with zero (`p == nullptr`, `c != '\\0'`) is the negation of its
    operand or the operand, `not` is `!`, parentheses, comments and spacing are gone.
    None when the line is no whole statement (nothing to compare)."""
    root = cppsource.parse(f"void f() {{\n{line}\n}}".encode()).root_node
    if root.has_error:
        return None
    body = root.named_children[0].child_by_field_name("body")
    return _folded(body) if body is not None else None


def _folded(node: Node) -> str:
    if node.type == "parenthesized_expression" and node.named_child_count == 1:
        return _folded(node.named_children[0])
    if node.type == "binary_expression":
        op = node.child_by_field_name("operator")
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if op is not None and left is not None and right is not None:
            spelled = cppsource.text(op)
            for operand, zero in ((left, right), (right, left)):
                if spelled in ("==", "!=") and cppsource.text(zero) in ZEROS:
                    inner = _folded(operand)
                    return f"(! {inner})" if spelled == "==" else inner
    if node.type == "unary_expression":
        op = node.child_by_field_name("operator")
        arg = node.child_by_field_name("argument")
        if op is not None and arg is not None and cppsource.text(op) in ("!", "not"):
            return f"(! {_folded(arg)})"
    if node.child_count == 0 or node.type in cppsource.ATOMS:
        return cppsource.text(node)
    kids = [_folded(c) for c in node.children if c.type != "comment"]
    if node.type == "condition_clause":  # `if (x)`: its parentheses are syntax
        kids = [k for k in kids if k not in ("(", ")")]
    return f"({node.type} {' '.join(kids)})"
