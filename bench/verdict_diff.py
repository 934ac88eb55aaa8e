"""Two grades' verdicts, compared row by row after normalising what is not a verdict:
content keys (evidence paths), identity digests (the harness's own code hash moves with
any edit), the checkout path, measured figures (times, ratios), salted or uninitialised
output, and which of the slope gate's native lanes hit its wall limit (load). What is
left must be equal for a change that claims "behaviour unchanged".

    python bench/verdict_diff.py OLD/verdicts.jsonl OLD_CHECKOUT NEW/verdicts.jsonl NEW_CHECKOUT

Prints the rows that differ and exits 1, or prints nothing and exits 0.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_VARYING = [
    (re.compile(r"\b(cells|runs|scans|trees)/[0-9a-f]{2}/[0-9a-z]{24}\b"), r"\1/<key>"),
    (re.compile(r"\d+(\.\d+)?(?= ?(s|ms|KiB|MiB|x)\b)"), "N"),
    (re.compile(r"(?<=ratio )\d+(\.\d+)?"), "N"),
    (re.compile(r"(?<=[=:] )\d+\.\d+|(?<==)\d+\.\d+"), "N"),
    (re.compile(r"stdout=[0-9a-f]{12}\b"), "stdout=<sha>"),
    (re.compile(r" \(also: [^)]*\)"), " (also: ...)"),
    (re.compile(r"\b\d{8,}\b"), "<n>"),
    (
        re.compile(r"(slope (?:native|first|small|shapes) run) (?:hang|exited) exit=\S+"),
        r"\1 <timed>",
    ),
]


def rows(verdicts: Path, checkout: str) -> dict[tuple[str, str], str]:
    found = {}
    for line in verdicts.read_text().splitlines():
        row = json.loads(line)
        row.pop("identity", None)
        row.pop("evidence", None)
        text = json.dumps(row, sort_keys=True).replace(checkout, "<project>")
        for pattern, repl in _VARYING:
            text = pattern.sub(repl, text)
        found[(row["case"], row["patch"])] = text
    return found


def main(argv: list[str]) -> int:
    before = rows(Path(argv[0]), argv[1])
    after = rows(Path(argv[2]), argv[3])
    differ = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    for case, patch in differ:
        key = (case, patch)
        print(f"{case}/{patch}\n  before: {before.get(key)}\n  after:  {after.get(key)}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
