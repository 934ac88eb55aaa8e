"""The text of a patch as git reads it: line endings, and the header lines of each file.

cxxgate/intake/tree.py asks git itself which paths a patch touches; this module checks what git's
listing does not show: that every `---`/`+++`/`diff --git` path carries the `a/` or `b/`
prefix `git apply -p1` strips (an unprefixed `--- src/include/x.hpp` would edit
`include/x.hpp`), that every file mode is a regular file's (read numerically, so
`0120000` and `120755` are the symlinks they are), and that there is no binary hunk.
Only header lines are read: hunk bodies are skipped by their line counts, as git does,
so a removed line that reads `-- x` is never taken for a `---` header.
"""

from __future__ import annotations

import re
import stat

_HUNK = re.compile(rb"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
# git reads a mode with strtoul(..., 8) and ignores what follows a blank: so do we.
_MODE = re.compile(rb"^(old mode|new mode|new file mode|deleted file mode)[ \t]+(\S+)")
_INDEX_MODE = re.compile(rb"^index [0-9a-fA-F]+\.\.[0-9a-fA-F]+[ \t]+(\S+)")
_BINARY = (b"GIT binary patch", b"Binary files ")


def normalise(text: bytes) -> tuple[bytes, str]:
    """A diff whose every line ends in CRLF went through a CRLF transport (git writes its
    headers with LF even for CRLF files): give git back the LF diff, and say so."""
    lines = text.split(b"\n")
    body = lines[:-1] if lines[-1] == b"" else lines
    if body and all(line.endswith(b"\r") for line in body):
        note = "every line of the diff ended in CRLF: normalised to LF before git apply"
        return text.replace(b"\r\n", b"\n"), note
    return text, ""


def header_problem(text: bytes) -> str:
    """Why the headers of this diff are not accepted, or "" when they are."""
    lines = text.split(b"\n")
    old = new = 0  # lines left in the current hunk
    for number, raw in enumerate(lines, 1):
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if old > 0 or new > 0:
            tag = line[:1]
            if tag in {b" ", b""}:
                old, new = old - 1, new - 1
                continue
            if tag == b"-":
                old -= 1
                continue
            if tag == b"+":
                new -= 1
                continue
            if tag == b"\\":
                continue
            old = new = 0  # a short hunk: git will say so; read on as headers
        hunk = _HUNK.match(line)
        if hunk:
            old = int(hunk.group(1) or b"1")
            new = int(hunk.group(2) or b"1")
            continue
        problem = _line_problem(line, lines[number] if number < len(lines) else b"")
        if problem:
            return f"line {number}: {problem}"
    return ""


def _line_problem(line: bytes, following: bytes) -> str:
    shown = line.decode("utf-8", errors="backslashreplace")
    if line.startswith(_BINARY):
        return f"{shown!r}: a binary file change, which is not accepted"
    if line.startswith(b"diff --git "):
        names = line[len(b"diff --git ") :]
        if names.startswith((b"/", b'"/')) or b" /" in names or b' "/' in names:
            return f"{shown!r}: absolute paths escape the tree"
        if not names.startswith((b"a/", b'"a/')) or not (b" b/" in names or b' "b/' in names):
            return f"{shown!r}: the paths lack the a/ and b/ prefixes git apply -p1 strips"
        return ""
    # A traditional header is a `---` line followed by a `+++` line; a lone `--- ` line
    # outside a hunk is prose git skips, but inside a git header it names the file too.
    if (line.startswith(b"--- ") and following.startswith(b"+++ ")) or line.startswith(b"+++ "):
        return _prefix_problem(shown, line[4:])
    mode = _MODE.match(line)
    if mode:
        return _mode_problem(shown, mode.group(2))
    index = _INDEX_MODE.match(line)
    if index:
        return _mode_problem(shown, index.group(1))
    return ""


def _prefix_problem(shown: str, raw: bytes) -> str:
    path = raw.split(b"\t", 1)[0].rstrip(b"\r")
    if path.startswith(b'"'):
        path = path[1:]
    if path == b"/dev/null" or path.startswith((b"a/", b"b/")):
        return ""
    if path.startswith((b"/", b"~")):
        return f"{shown!r}: absolute paths escape the tree"
    return (
        f"{shown!r}: the path lacks the a/ or b/ prefix, and git apply -p1 would strip its "
        "first component and write elsewhere"
    )


def mode_problem(mode: int) -> str:
    """Why a file mode is not a regular file's, or ""."""
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFREG:
        return ""
    names = {stat.S_IFLNK: "a symlink", 0o160000: "a gitlink (submodule)"}
    return f"mode {mode:06o} is {names.get(kind, 'not a regular file')}, which is not accepted"


def _mode_problem(shown: str, raw: bytes) -> str:
    if not re.fullmatch(rb"[0-7]{1,7}", raw):
        return f"{shown!r}: the mode is not an octal number"
    problem = mode_problem(int(raw, 8))
    return f"{shown!r}: {problem}" if problem else ""
