"""How fast the preprocessed-output scan reads a unit (cxxgate/cells/preprocessed.py), side
by side with the plain way: the whole -E text tokenised for raw strings, and every line
with its literals emptied before the pragma patterns are tried. Both ways must agree.
Run by hand:

    python bench/controls_scan.py [--repeat 3]

The unit is g++ -E of a source that includes large standard headers, a raw string that
holds a line marker, and pragmas. The scan runs in the doit master's threads for every
compiled unit of a grade, under one GIL.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cxxgate.cells import preprocessed
from cxxgate.intake import pragmas

UNIT = """\
#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <vector>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused"
int f() { int x = 1; const char* s = "#pragma GCC diagnostic pop"; return x / 2; }
const char* r = R"x(
# 1 "/usr/include/stdio.h" 1 3
)x";
int g() __attribute__((optimize("O0")));
#pragma GCC diagnostic pop
"""


def whole_text(text: str) -> tuple[str, bool]:
    """Raw strings blanked by tokenising all of the text."""
    out, unterminated = [], False
    for m in preprocessed._E_TOKEN.finditer(text):
        if m.group("raw") is None:
            out.append(m.group())
            continue
        delim = m.group("delim")
        unterminated |= not m.group("close")
        prefix = m.group("raw")[: m.group("raw").index('R"') + 2]
        out.append(f"{prefix}{delim}(" + "\n" * m.group("body").count("\n") + f'){delim}"')
    return "".join(out), unterminated


def matched(text: str, strip: Callable[[str], str]) -> list[int]:
    """The lines the pragma patterns match once `strip` has read them."""
    found = []
    for number, line in enumerate(text.splitlines()):
        stripped = strip(line)
        if any(p.search(stripped) for p in (preprocessed._STATE, preprocessed._PRAGMA,
                                              preprocessed._OPTIMIZE)):  # fmt: skip
            found.append(number)
    return found


def every_line(line: str) -> str:
    return pragmas.strip_literals(line)


def where_needed(line: str) -> str:
    return pragmas.strip_literals(line) if "pragma" in line or "optimize" in line else line


def timed(repeat: int, work: Callable[[], object]) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "unit.cpp"
        source.write_text(UNIT)
        text = subprocess.run(
            ["g++", "-std=c++20", "-E", str(source)], capture_output=True, text=True, check=True
        ).stdout
    print(f"unit: {len(text.splitlines())} lines of -E output")
    rows = [
        ("raw strings", lambda: whole_text(text), lambda: preprocessed.blank_raw_strings(text)),
        ("pragma lines", lambda: matched(text, every_line), lambda: matched(text, where_needed)),
    ]
    for name, plain, scan in rows:
        plain_s, plain_out = timed(args.repeat, plain)
        scan_s, scan_out = timed(args.repeat, scan)
        assert plain_out == scan_out, f"{name}: the two ways disagree"
        print(f"{name:13} plain {plain_s:6.3f} s  cxxgate {scan_s:6.3f} s  "
              f"ratio {plain_s / scan_s:5.1f}x  (same result)")  # fmt: skip
    whole_s, found = timed(args.repeat, lambda: preprocessed.controls(text, lambda n: n))
    print(f"controls() with every file a tree file: {whole_s:.3f} s, {len(found)} controls")


if __name__ == "__main__":
    main()
