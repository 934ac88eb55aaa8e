"""C++ sources as tree-sitter reads them: what the source gates (census, leak) share.

A real parser, never line patterns: a comment or a string that mentions `EXPECT_EQ(...)` is
a comment or a string, an assertion spread over five lines is one call, and a literal is a
token with a value (`0x6E4`, `1'764` and `1764LL` are one number). Parsing is cheap and
pure; the gates run it inside scans (cxxgate/runs/scan.py), so a warm grade parses nothing.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

import pathspec
import tree_sitter_cpp
from tree_sitter import Language, Node, Parser, Tree

CXX_SUFFIXES = frozenset(
    {".cpp", ".cc", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h", ".ipp", ".inl", ".tpp"}
)
# Tokens kept whole by the fingerprint: their inner spacing is part of their value.
ATOMS = frozenset({"string_literal", "raw_string_literal", "char_literal", "system_lib_string"})
_QUOTED = frozenset({"string_literal", "raw_string_literal", "char_literal", "comment"})


@cache
def parser_id() -> str:
    """The parser's identity, for scan keys: another grammar may read the same bytes
    differently."""
    versions = (metadata.version(p) for p in ("tree-sitter", "tree-sitter-cpp"))
    return "tree-sitter {} / tree-sitter-cpp {}".format(*versions)


@cache
def _parser() -> Parser:
    return Parser(Language(tree_sitter_cpp.language()))


def parse(text: bytes) -> Tree:
    return _parser().parse(text)


def walk(node: Node) -> Iterator[Node]:
    """Every node under `node`, in source order, without recursion (deep expressions)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def text(node: Node) -> str:
    return (node.text or b"").decode(errors="replace")


def tokens(node: Node) -> list[str]:
    """The node's tokens, comments dropped and literals whole: what two spellings of the
    same code (re-indented, re-wrapped, commented) have in common."""
    out: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "comment" or n.is_missing:
            continue
        if n.type in ATOMS or n.child_count == 0:
            t = text(n)
            if t:
                out.append(t)
            continue
        stack.extend(reversed(n.children))
    return out


def fingerprint(toks: list[str]) -> str:
    return hashlib.sha256("\x1f".join(toks).encode()).hexdigest()[:16]


def shown(toks: list[str], limit: int = 120) -> str:
    """Tokens as a person writes them: `EXPECT_EQ(f(x), 42)`."""
    out = ""
    spaced = False
    for tok in toks:
        if out and (spaced or tok in _SPACED or (_wordy(out[-1]) and _wordy(tok[0]))):
            out += " "
        out += tok
        spaced = tok in _SPACED or tok == ","
    return out if len(out) <= limit else out[: limit - 3] + "..."


_SPACED = frozenset({"==", "!=", "<=", ">=", "&&", "||", "="})


def _wordy(ch: str) -> bool:
    return ch.isalnum() or ch in "_\"'"


def has_identifier(text_: bytes, name: str) -> bool:
    """Whether `name` occurs in `text_` as a token of code, not inside a string, a
    character literal or a comment. Only lines holding the name are parsed."""
    needle = name.encode()
    for line in text_.splitlines():
        if needle not in line:
            continue
        for n in walk(parse(line).root_node):
            if n.child_count == 0 and n.text == needle and not _quoted(n):
                return True
    return False


def _quoted(node: Node) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type in _QUOTED:
            return True
        parent = parent.parent
    return False


def select(tree: Path, globs: list[str]) -> list[str]:
    """The tree's C++ files (by suffix) matching gitignore-style `globs`, sorted."""
    spec = pathspec.GitIgnoreSpec.from_lines(globs)
    found = []
    for path in tree.rglob("*"):
        rel = path.relative_to(tree).as_posix()
        if path.suffix in CXX_SUFFIXES and path.is_file() and spec.match_file(rel):
            found.append(rel)
    return sorted(found)


# ---- literals ------------------------------------------------------------------------


@dataclass(frozen=True)
class Literal:
    """A literal of the source, with a value two spellings share: `num:1764`, `str:case-7`."""

    kind: str  # int | float | string | char
    value: str
    text: str  # as written (with its sign)
    line: int  # 1-based
    column: int  # 1-based


def literals(tree: Tree) -> list[Literal]:
    out: list[Literal] = []
    for n in walk(tree.root_node):
        lit = _literal(n)
        if lit is not None:
            out.append(lit)
    return out


def _literal(n: Node) -> Literal | None:
    if n.type == "number_literal":
        value = number_value(text(n))
        if value is None:
            return None
        where, shown_text = n, text(n)
        parent = n.parent
        if parent is not None and parent.type == "unary_expression" and text(parent)[:1] == "-":
            value = value[1:] if value.startswith("-") else "-" + value
            where, shown_text = parent, "-" + shown_text
        kind = "float" if _is_float(text(n)) else "int"
        return _at(kind, f"num:{value}", shown_text, where)
    if n.type == "char_literal":
        return _at("char", "str:" + _decoded(n), text(n), n)
    if n.type in ("string_literal", "raw_string_literal") and (
        n.parent is None or n.parent.type != "concatenated_string"
    ):
        return _at("string", "str:" + _decoded(n), text(n), n)
    if n.type == "concatenated_string":
        parts = [
            _decoded(c) for c in n.children if c.type in ("string_literal", "raw_string_literal")
        ]
        return _at("string", "str:" + "".join(parts), text(n), n)
    return None


def _at(kind: str, value: str, shown_text: str, node: Node) -> Literal:
    row, col = node.start_point
    return Literal(kind, value, shown_text, row + 1, col + 1)


def _decoded(n: Node) -> str:
    if n.type == "raw_string_literal":
        return "".join(text(c) for c in n.children if c.type == "raw_string_content")
    parts = []
    for c in n.children:
        if c.type in ("string_content", "character"):
            parts.append(text(c))
        elif c.type == "escape_sequence":
            parts.append(unescape(text(c)))
    return "".join(parts)


_SIMPLE_ESCAPES = {
    "n": "\n", "t": "\t", "r": "\r", "0": "\0", "a": "\a", "b": "\b",
    "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip


def unescape(seq: str) -> str:
    body = seq[1:]
    if body in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[body]
    try:
        if body[:1] == "x":
            return chr(int(body[1:], 16))
        if body[:1] in ("u", "U"):
            return chr(int(body[1:], 16))
        if body[:1].isdigit():
            return chr(int(body, 8))
    except (ValueError, OverflowError):
        pass
    return body


def _is_float(t: str) -> bool:
    low = t.lower().replace("'", "")
    if low.startswith("0x"):
        return "." in low or "p" in low
    return "." in low or "e" in low


def number_value(t: str) -> str | None:
    """A number's value as one canonical string (`1764`, `-3`, `2.5`), or None when `t` is
    not a number. Integral floats read as integers: `42.0` is the `42` of a golden file."""
    raw = t.strip().replace("'", "")
    sign = ""
    if raw[:1] in "+-" and raw[1:]:
        sign, raw = ("-" if raw[0] == "-" else ""), raw[1:]
    low = raw.lower()
    try:
        if _is_float(low):
            value = (
                float.fromhex(low.rstrip("fl")) if low.startswith("0x") else float(low.rstrip("fl"))
            )
            return _canonical_float(-value if sign else value)
        digits = low.rstrip("ulz")
        if digits.startswith("0x"):
            number = int(digits[2:], 16)
        elif digits.startswith("0b"):
            number = int(digits[2:], 2)
        elif len(digits) > 1 and digits.startswith("0"):
            number = int(digits[1:], 8)
        else:
            number = int(digits, 10)
    except ValueError:
        return None
    return str(-number if sign else number)


def _canonical_float(value: float) -> str:
    if math.isfinite(value) and value.is_integer() and abs(value) < 2**63:
        return str(int(value))
    return repr(value)


def text_values(content: str) -> Iterator[tuple[str, int]]:
    """The values a plain-text oracle (a golden stdout) shows, with their 1-based line:
    each line, each word, each number. Words are split at blanks and at the punctuation
    that frames values (`isqrt(1764) = 42` shows 1764 and 42)."""
    for no, line in enumerate(content.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        yield "str:" + stripped, no
        for word in _words(stripped):
            yield "str:" + word, no
            value = number_value(word)
            if value is not None:
                yield "num:" + value, no


def _embedded(word: str) -> Iterator[str]:
    """The numbers inside a word: `$1764` (an asm immediate), `n=1764`, `x1764`, `0x6E4`,
    `2.5` (a hexadecimal run after `0x`, else digits with at most one fraction)."""
    i, n = 0, len(word)
    while i < n:
        if not word[i].isdigit():
            i += 1
            continue
        j = i + 1
        if word[i] == "0" and j < n and word[j] in "xX":
            k = j + 1
            while k < n and word[k] in "0123456789abcdefABCDEF":
                k += 1
            if k > j + 1:
                yield word[i:k]
                i = k
                continue
        while j < n and word[j].isdigit():
            j += 1
        if j + 1 < n and word[j] == "." and word[j + 1].isdigit():
            j += 1
            while j < n and word[j].isdigit():
                j += 1
        yield word[i:j]
        i = j


def string_values(content: str) -> Iterator[str]:
    """The words and numbers a string shows (a string literal, an asm template, text in
    data), split as a golden's lines are (text_values), and every number inside a word:
    `"n=1764 r=42"` and `"movq $1764, %0"` show 1764."""
    for word in _words(content):
        yield "str:" + word
        value = number_value(word)
        if value is not None:
            yield "num:" + value
        for found in _embedded(word):
            value = number_value(found)
            if value is not None:
                yield "num:" + value


def _words(line: str) -> Iterator[str]:
    word = ""
    for ch in line:
        if ch.isspace() or ch in '()[]{},;:=<>|"`':
            if word:
                yield word
            word = ""
        else:
            word += ch
    if word:
        yield word
