"""The lines a patch added, by hunk, as the coverage gate scores them (a scan: read once
per tree, cached by its key).

The applied tree is compared with the case's base tree; each changed file's lines (as gcc
numbers them: gates/shared/addedcode.py `source_lines`) are compared with `difflib`, and
its added lines kept by their new-file line numbers. Every
changed file is read this way, whatever its name: which of them count is decided by the
gate from what the tests' compiles read (their dependency files) and what gcov counted, so
`#include "sign.def"` scores sign.def. `code` says only that the suffix is a C++ one (such
a file is scored even when no compile read it). A file whose C++ tokens did not change
(pygments' lexer, comments and whitespace dropped) is cosmetic. Added lines that carry a
coverage exclusion marker, or a construct that hides lines from gcov (a `#line`
directive or a GNU linemarker `# 12 "name"`, an attribute or pragma that turns
instrumentation off, a call into libgcov), are listed as tampering. What the added lines
are as C++ (gates/shared/addedcode.py: the definitions and statements holding them, their
default arguments, whether they can bear code at all) is listed beside them.

gcov counts a macro's code at the line that expands it. A patch that adds or changes a
`#define` therefore changes the code of lines it never touched: every line of the tree
that names such a macro (outside comments and strings; macros whose definitions name one,
transitively) is listed under `expansions`, and the gate scores those lines too.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any

from pygments.lexers import CppLexer
from pygments.token import Comment, String, Text, _TokenType, is_token_subtype

from cxxgate.gates.shared import addedcode

CODE_SUFFIXES = frozenset(
    {
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
        ".tpp",
        ".inl",
    }
)

# What hides a line from gcov, or forges its counts. Markers that lcov and gcovr honour,
# `#line` (moves the lines gcov attributes), instrumentation switched off per function
# (`no_profile_instrument_function`, `optimize("no-profile-arcs")` and its pragma), and
# libgcov's own entry points (reset, dump).
TAMPER = re.compile(
    r"(?P<marker>LCOV_EXCL\w*|GCOVR_EXCL\w*|GCOV_EXCL\w*"
    r"|^\s*(?:#|%:)\s*(?:line\b|\d)|no_profile_instrument_function|\boptimize\s*\("
    r"|\bprofile-arcs\b|\b__gcov_\w+|\b__llvm_profile_\w+)"
)


DEFINE = re.compile(r"^\s*(?:#|%:)\s*define\s+(\w+)(.*)$")
IDENT = re.compile(r"\b[A-Za-z_]\w*\b")


def added_lines(tree: Path, params: dict[str, Any]) -> dict[str, Any]:
    """The scan: `{"files": {path: {"code", "cosmetic", "hunks": [[line, ...], ...],
    "functions", "statements", "defaults", "bearing" (addedcode.analyse), "same": {line:
    [old line, ...]}}}, "tamper": [[path, line, marker], ...], "expansions": {path: [line,
    ...]}, "macros": [name, ...]}` for every file whose bytes changed (the gate keeps what
    belongs to the files it scores), the lines that expand a macro the patch defined, and
    those macros (transitively), for the grader's units."""
    base = Path(params["base"])
    files: dict[str, Any] = {}
    tamper: list[list[Any]] = []
    macros: set[str] = set()
    for rel in sorted(_listing(base) | _listing(tree)):
        old = _text(base / rel)
        new = _text(tree / rel)
        if old == new:
            continue
        hunks = hunks_of(rel, old, new)
        added = {n for hunk in hunks for n, _ in hunk}
        facts = addedcode.analyse(new, added) if added else {}
        files[rel] = {
            "code": Path(rel).suffix.lower() in CODE_SUFFIXES,
            "cosmetic": same_tokens(old, new),
            "hunks": [[n for n, _ in hunk] for hunk in hunks],
            "functions": facts.get("functions", []),
            "statements": facts.get("statements", []),
            "defaults": facts.get("defaults", []),
            "bearing": facts.get("bearing", False),
            "same": {str(k): v for k, v in same_as_removed(old, new).items()},
        }
        for hunk in hunks:
            for line, text in hunk:
                m = TAMPER.search(text)
                if m:
                    tamper.append([rel, line, m["marker"].strip()])
        macros |= _defined_at(new, added)
    names = closure(tree, macros)
    return {
        "files": files,
        "tamper": tamper,
        "expansions": expansions(tree, names),
        "macros": sorted(names),
    }


def closure(tree: Path, macros: set[str]) -> set[str]:
    """`macros` and every macro of the tree whose definition names one of them (to a
    fixpoint): macros defined in terms of a changed one change too."""
    if not macros:
        return set()
    texts = [_text(tree / rel) for rel in sorted(_listing(tree))]
    names = set(macros)
    while True:
        more = {
            m[1]
            for text in texts
            for line in _logical_lines(text)
            if (m := DEFINE.match(line)) and names & set(IDENT.findall(m[2]))
        } - names
        if not more:
            return names
        names |= more


def expansions(tree: Path, names: set[str]) -> dict[str, list[int]]:
    """Lines of the tree's files that name one of `names`, outside comments, strings and
    preprocessor lines."""
    if not names:
        return {}
    pattern = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, names))) + r")\b")
    found: dict[str, list[int]] = {}
    for rel in sorted(_listing(tree)):
        text = _text(tree / rel)
        if pattern.search(text):
            lines = naming_lines(text, names)
            if lines:
                found[rel] = lines
    return found


def _defined_at(source: str, lines: set[int]) -> set[str]:
    """Macros whose `#define` (its continuation lines included) holds one of `lines`."""
    physical = addedcode.source_lines(source)
    names = set()
    for n in lines:
        i = n - 1
        while 0 < i < len(physical) and physical[i - 1].endswith("\\"):
            i -= 1  # a continuation: the directive starts above
        if 0 <= i < len(physical) and (m := DEFINE.match(physical[i])):
            names.add(m[1])
    return names


def _logical_lines(text: str) -> list[str]:
    return addedcode.source_lines(text.replace("\\\n", " "))


def naming_lines(source: str, names: set[str]) -> list[int]:
    """Lines where code (not a comment, a string or a preprocessor line) names one of
    `names`."""
    found: set[int] = set()
    line = 1
    for ttype, value in CppLexer(stripnl=False).get_tokens(source):
        code = not is_token_subtype(ttype, Comment) and not is_token_subtype(ttype, String)
        if code:
            for m in IDENT.finditer(value):
                if m[0] in names:
                    found.add(line + value.count("\n", 0, m.start()))
        line += value.count("\n")
    return sorted(found)


def hunks_of(rel: str, old: str, new: str) -> list[list[tuple[int, str]]]:
    """Each hunk's added lines: (new-file line number, text). Lines as gcc numbers them
    (addedcode.source_lines: a form feed or U+2028 ends no line); a hunk is a run of
    changed lines (`difflib`, no context)."""
    del rel  # the hunks depend on the texts only
    a, b = addedcode.source_lines(old), addedcode.source_lines(new)
    out = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(0):
        added = [(j + 1, b[j]) for op in group if op[0] != "delete" for j in range(op[3], op[4])]
        if added:
            out.append(added)
    return out


def same_as_removed(old: str, new: str) -> dict[int, list[int]]:
    """Added line -> the lines of the old file its hunk removed that are the same code
    (addedcode.canonical: `p == nullptr` reworded `!p`). The gate excuses such a line's
    untaken branch when the base tree's run left the same branch of that line untaken."""
    a, b = addedcode.source_lines(old), addedcode.source_lines(new)
    same: dict[int, list[int]] = {}
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(0):
        removed = [i for op in group if op[0] != "insert" for i in range(op[1], op[2])]
        forms = {i: addedcode.canonical(a[i]) for i in removed}
        for op in group:
            for j in range(op[3], op[4]) if op[0] != "delete" else ():
                form = addedcode.canonical(b[j])
                match = [i + 1 for i, f in forms.items() if f is not None and f == form]
                if match:
                    same[j + 1] = match
    return same


def _preprocessor(ttype: _TokenType) -> bool:
    return is_token_subtype(ttype, Comment.Preproc) or is_token_subtype(ttype, Comment.PreprocFile)


def significant(ttype: _TokenType, value: str) -> bool:
    if is_token_subtype(ttype, Comment) and not _preprocessor(ttype):
        return False
    return not (is_token_subtype(ttype, Text) and not value.strip())


def tokens(source: str) -> list[tuple[str, str]]:
    """The C++ tokens of a source without comments and whitespace (preprocessor lines
    kept, with their own spacing squeezed)."""
    out = []
    for ttype, value in CppLexer().get_tokens(source):
        if significant(ttype, value):
            squeezed = " ".join(value.split()) if _preprocessor(ttype) else value
            if squeezed:
                out.append((str(ttype), squeezed))
    return out


def same_tokens(old: str, new: str) -> bool:
    return tokens(old) == tokens(new)


def _listing(root: Path) -> set[str]:
    if not root.is_dir():
        return set()
    found = set()
    for folder, _, names in os.walk(root):
        for name in names:
            found.add((Path(folder) / name).relative_to(root).as_posix())
    return found


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
