"""The values a run of bytes stores, as the leak gate reads them: an object's data section,
a data file of the tree. One reading for both, so that a table moved from a `.bin` file
into a section (or back) meets the same rule.

- integers: every 2-, 4- and 8-byte window at EVERY offset (a packed struct puts a key at
  an odd one), both byte orders, unsigned and, when negative, the magnitude of the signed
  reading (`short t[] = {-1764}` stores 1764 negated);
- no 1-byte windows: a byte is a character far more often than a number (`'d'` is 100);
  bytes count only as parts of wider windows. A value that fits one byte counts only from
  an aligned 4- or 8-byte window (an `int` or `long` holding it): else every character
  followed by a NUL (`"abc"` ends in 99, 0) would be a 1-byte window again. So a `char` or
  `short` table of values below 256 is not seen;
- windows of 0x00 and 0xFF bytes only (padding, -1, masks) are no value;
- floats: aligned 4- and 8-byte windows, little-endian (the only order g++ stores);
- text: each run of printable characters between NULs, as it reads.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Literal

from cxxgate.gates.shared import cppsource

WIDTHS = (2, 4, 8)
ORDERS: tuple[Literal["little", "big"], ...] = ("little", "big")
_FLOAT = {4: "<f", 8: "<d"}


def values(data: bytes) -> Iterator[tuple[int, str]]:
    """(offset, value) for each value `data` stores, first place of each value first."""
    yield from _texts(data)
    for width in WIDTHS:
        for start in range(len(data) - width + 1):
            window = data[start : start + width]
            if not window.translate(None, b"\0\xff"):  # padding, -1, masks: all-ones bytes
                continue
            aligned = start % width == 0
            for number in _integers(window):
                if number > 0xFF or (aligned and width >= 4):
                    yield start, f"num:{number}"
            if aligned and width in _FLOAT:
                real = struct.unpack(_FLOAT[width], window)[0]
                if real == real and 1e-9 < abs(real) < 1e30:  # not NaN, no denormal noise
                    number_text = cppsource.number_value(repr(abs(real)))
                    if number_text is not None:
                        yield start, "num:" + number_text


def _integers(window: bytes) -> Iterator[int]:
    for order in ORDERS:
        yield int.from_bytes(window, order)
        signed = int.from_bytes(window, order, signed=True)
        if signed < 0:
            yield -signed


def _texts(data: bytes) -> Iterator[tuple[int, str]]:
    """Each printable run between NULs (a string of the section, or a file's text)."""
    start = 0
    for piece in data.split(b"\0"):
        text = piece.strip()
        if text and all(32 <= b < 127 or b in b"\t\n\r" for b in piece):
            shown = text.decode()
            yield start, "str:" + shown
            number = cppsource.number_value(shown)
            if number is not None:
                yield start, "num:" + number.lstrip("-")
        start += len(piece) + 1
