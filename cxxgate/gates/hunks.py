"""The lines a patch added, by hunk, as the coverage gate scores them (a scan: read once
per tree, cached by its key).

The applied tree is compared with the case's base tree; each changed file's diff is
parsed with `unidiff`, and its added lines kept by their new-file line numbers. A file
whose C++ tokens did not change (pygments' lexer, comments and whitespace dropped) is
cosmetic. Added lines that carry a coverage exclusion marker, or a construct that hides
lines from gcov (a `#line` directive, an attribute or pragma that turns instrumentation
off, a call into libgcov), are listed as tampering.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any

from pygments.lexers import CppLexer
from pygments.token import Comment, Text, _TokenType, is_token_subtype
from unidiff.patch import PatchSet

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
    r"|^\s*#\s*line\b|no_profile_instrument_function|\boptimize\s*\("
    r"|\bprofile-arcs\b|\b__gcov_\w+|\b__llvm_profile_\w+)"
)


def added_lines(tree: Path, params: dict[str, Any]) -> dict[str, Any]:
    """The scan: `{"files": {path: {"code", "cosmetic", "hunks": [[line, ...], ...]}},
    "tamper": [[path, line, marker], ...]}` for every file whose bytes changed."""
    base = Path(params["base"])
    files: dict[str, Any] = {}
    tamper: list[list[Any]] = []
    for rel in sorted(_listing(base) | _listing(tree)):
        old = _text(base / rel)
        new = _text(tree / rel)
        if old == new:
            continue
        hunks = hunks_of(rel, old, new)
        code = Path(rel).suffix.lower() in CODE_SUFFIXES
        files[rel] = {
            "code": code,
            "cosmetic": code and same_tokens(old, new),
            "hunks": [[n for n, _ in hunk] for hunk in hunks],
        }
        if code:
            for hunk in hunks:
                for line, text in hunk:
                    m = TAMPER.search(text)
                    if m:
                        tamper.append([rel, line, m["marker"].strip()])
    return {"files": files, "tamper": tamper}


def hunks_of(rel: str, old: str, new: str) -> list[list[tuple[int, str]]]:
    """Each hunk's added lines: (new-file line number, text), from the file's unified diff."""
    diff = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        f"a/{rel}",
        f"b/{rel}",
        n=0,
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in diff)
    out = []
    for patched in PatchSet(text):
        for hunk in patched:
            added = [(ln.target_line_no, ln.value.rstrip("\n")) for ln in hunk if ln.is_added]
            if added:
                out.append([(n, v) for n, v in added if n is not None])
    return out


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
