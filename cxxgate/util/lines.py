"""Source text split into lines as the compilers split it: g++ and clang end a line at
`\\n`, `\\r\\n` and a lone `\\r` (and at nothing else: not at `\\f`, `\\v` or U+2028, where
str.splitlines would). A reading that splits otherwise numbers lines otherwise than every
diagnostic and linemarker, and a lone CR hides a `#line` or `#pragma` from it (red team
round 27)."""

from __future__ import annotations


def newlines(text: str) -> str:
    """`text` with every line end the compilers know written `\\n`."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def physical_lines(text: str) -> list[str]:
    """The lines of `text`, numbered from 1 as a compiler numbers them (a final line end
    starts no line)."""
    return newlines(text).removesuffix("\n").split("\n") if text else []
