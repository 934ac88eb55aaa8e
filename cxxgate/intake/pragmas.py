"""Diagnostic-control directives in C and C++ source text.

A patch that adds `#pragma GCC diagnostic ignored ...`, `#pragma GCC system_header` or
`_Pragma(...)` switches `-Werror` off for its own code, so intake counts such directives
in each changed file before and after the patch (cxxgate/intake/tree.py). The count works on the
text the preprocessor sees: backslash-newline continuations spliced, comments removed,
string and character literals emptied, so a directive split over lines or hidden behind a
comment still counts and one quoted in a string does not.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from cxxgate.util.lines import newlines

# Tokens in the order the preprocessor would see them. A header name after `include`,
# `include_next`, `import` or `__has_include(` is one token to g++ (`<R"x(>` opens no raw
# string, `</*>` no comment), so it comes first. Numbers come before character literals so
# a digit separator (1'000) never opens a literal that swallows the line. `$` is a letter
# of a name to g++: `$R"(x"` is a name and a string, and a reading that took it for a raw
# string hid the `#line` and `#pragma` lines after it (red team round 26).
_BLANK = r"(?:[ \t]|/\*.*?\*/)*"
_TOKENS = rf"""
    (?P<header>(?:\binclude(?:_next)?|\bimport|\b__has_include(?:_next)?{_BLANK}\(){_BLANK}
               (?:<[^>\n]*>|"[^"\n]*"))
  | (?P<line_comment>//[^\n]*)
  | (?P<block_comment>/\*.*?(?:\*/|\Z))
  | (?P<raw>(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{{0,16}})\(.*?(?:\)(?P=delim)"|\Z))
  | (?P<string>(?:u8|[uUL])?"(?:\\.|[^"\\\n])*"?)
  | (?P<number>\.?\d(?:[eEpP][+-]|'\w|[\w.$])*)
  | (?P<ident>[A-Za-z_$][\w$]*)
  | (?P<char>'(?:\\.|[^'\\\n])*'?)
  | (?P<other>.)
"""
_TOKEN = re.compile(_TOKENS, re.VERBOSE | re.DOTALL)
# The same without raw strings: a language mode without them (C++98/03, ISO C) reads
# `R"x(` as `R` and a string, so a typed line marker a raw-string reading would swallow is
# looked for this way too (`directives`).
_TOKEN_NO_RAW = re.compile(
    "\n".join(line for line in _TOKENS.split("\n") if "(?P<raw>" not in line),
    re.VERBOSE | re.DOTALL,
)

# `#`, its digraph `%:` and its trigraph `??=` (trigraphs are on under -std=c++11/14).
_HASH = r"(?:\#|%:|\?\?=)"
_PRAGMA = re.compile(
    rf"^\s*{_HASH}\s*pragma\s+"
    r"(?:(?:GCC|clang)\s+(?:diagnostic|system_header)|system_header|warning)\b"
)
# A GNU line marker with flags (`# 12 "x.hpp" 3`) tells GCC the code is a system header;
# `#line` relabels the lines that follow. A directive never comes from a macro, so this
# text is where a typed one shows (in -E output a forged `1 3` entry looks like an include).
_LINEMARKER = re.compile(rf"^\s*{_HASH}\s*(?:\d|line\b)")
# `_Pragma("...")` and MSVC's `__pragma(...)`.
_OPERATOR = re.compile(r"\b(?:_Pragma|__pragma)\s*\(")
# Token pasting can spell the operator (`_ ## Pragma`, `_Pra ## gma`): a chain of pasted
# identifiers that reads "pragma" counts. (A spelling assembled through macro arguments
# would need the preprocessor itself to see.)
_PASTED = re.compile(r"\w+(?:\s*(?:##|%:%:)\s*\w+)+")
_TRIGRAPHS = {
    "??=": "#",
    "??/": "\\",
    "??'": "^",
    "??(": "[",
    "??)": "]",
    "??!": "|",
    "??<": "{",
    "??>": "}",
    "??-": "~",
}


@dataclass(frozen=True)
class Directive:
    line: int  # 1-based physical line where the logical line starts
    text: str  # the directive with comments removed, literals emptied, blanks collapsed
    shown: str  # the logical line as written, for messages


def directives(source: bytes) -> list[Directive]:
    """Diagnostic-control directives in one file, read both with and without trigraph
    replacement (which of the two the compiler applies depends on -std), keeping the
    reading that finds more."""
    text = source.decode("latin-1")  # one char per byte: offsets and lines stay exact
    plain = _scan(text)
    if 'R"' in text:
        # A typed line marker is found even where a raw-string reading says it is literal
        # text (a mode without raw strings; any desync of this reading with g++'s): -E shows
        # a typed include entry as a real one, so this text is the only place to see it.
        lines = {d.line for d in plain}
        plain += [d for d in _scan(text, _TOKEN_NO_RAW, markers=True) if d.line not in lines]
        plain.sort(key=lambda d: d.line)
    if "??" not in text:
        return plain
    trigraphs = _scan(re.sub(r"\?\?[=/'()!<>\-]", lambda m: _TRIGRAPHS[m.group()], text))
    return trigraphs if len(trigraphs) > len(plain) else plain


def _scan(text: str, token: re.Pattern[str] = _TOKEN, *, markers: bool = False) -> list[Directive]:
    """Directives in the text; only typed line markers if `markers`."""
    logical, starts = _splice(newlines(text))
    cleaned = _strip(logical, token)
    written = logical.split("\n")
    found = []
    for i, line in enumerate(cleaned.split("\n")):
        if _LINEMARKER.search(line) or (
            not markers
            and (
                _PRAGMA.search(line)
                or _OPERATOR.search(line)
                or any(_pasted_pragma(m.group()) for m in _PASTED.finditer(line))
            )
        ):
            shown = " ".join(written[i].split())
            shown = shown if len(shown) <= 120 else shown[:117] + "..."
            found.append(Directive(starts[i], " ".join(line.split()), shown))
    return found


def _pasted_pragma(chain: str) -> bool:
    return "pragma" in re.sub(r"\s|##|%:%:", "", chain).lower()


def _splice(text: str) -> tuple[str, list[int]]:
    """Join backslash-newline continuations; the physical start line of each logical line."""
    logical: list[str] = []
    starts: list[int] = []
    pending = ""
    start = 1
    for number, line in enumerate(text.split("\n"), 1):
        if not pending:
            start = number
        # A backslash followed only by blanks still continues the line for GCC.
        stripped = line.rstrip(" \t")
        if stripped.endswith("\\"):
            pending += stripped[:-1]
            continue
        logical.append(pending + line)
        starts.append(start)
        pending = ""
    if pending:
        logical.append(pending)
        starts.append(start)
    return "\n".join(logical), starts


def _strip(text: str, token: re.Pattern[str] = _TOKEN) -> str:
    """Comments become a blank (keeping their newlines); literals become empty literals."""
    out = []
    for m in token.finditer(text):
        kind = m.lastgroup
        if kind == "line_comment":
            out.append(" ")
        elif kind in {"block_comment", "raw"}:
            out.append(" " + "\n" * m.group().count("\n"))
        elif kind == "string":
            out.append('""')
        elif kind == "char":
            out.append("''")
        else:
            out.append(m.group())
    return "".join(out)


def strip_literals(line: str) -> str:
    """One line with comments removed and string and character literals emptied."""
    return _strip(line)


def added(base: dict[str, bytes], patched: dict[str, bytes]) -> list[tuple[str, Directive]]:
    """Directives the patched files hold beyond the base files', as (path, directive).

    Each side is {path: bytes} for the files the patch changed. Directives are matched by
    their text across files, so a renamed file or a directive moved unchanged from one
    changed file to another adds nothing; a rewritten one (push -> ignored) is new.
    """
    left = Counter(d.text for source in base.values() for d in directives(source))
    extra = []
    for path in sorted(patched):
        for d in directives(patched[path]):
            if left[d.text] > 0:
                left[d.text] -= 1
            else:
                extra.append((path, d))
    return extra
