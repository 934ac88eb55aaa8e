"""JUnit XML for CI systems: one test suite per case, one test case per row.

A row fails when it is one of the grade's problems (a candidate not accepted, a shipped
patch off its `expect`, a broken case on its reference row, a harness error); input
errors that belong to no row get a suite of their own. Each test case carries the
verdict and every gate's class in its output, so a CI page shows the mode, not one bit.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from cxxgate.util import atomic

if TYPE_CHECKING:
    from cxxgate.library.rows import Orphan
    from cxxgate.verdicts.verdict import Verdict


def write(
    path: Path,
    verdicts: list[Verdict],
    orphans: list[Orphan],
    problems: list[tuple[str | None, str]],
) -> None:
    by_row: dict[str | None, list[str]] = defaultdict(list)
    for row, message in problems:
        by_row[row].append(message)
    cases: dict[str, list[tuple[str, str]]] = defaultdict(list)  # case -> (patch, summary)
    for v in verdicts:
        gates = ", ".join(f"{g}={r['class']}" for g, r in v.gates.items())
        cases[v.case].append((v.patch, f"{v.role} {v.verdict} ({v.klass}); {gates}"))
    for o in orphans:
        cases[o.case].append((o.name, f"candidate incomplete ({o.klass}); {o.detail}"))
    root = ET.Element("testsuites", name="cxxgate")
    for case, rows in sorted(cases.items()):
        suite = ET.SubElement(root, "testsuite", name=case, tests=str(len(rows)))
        failures = 0
        for patch, summary in rows:
            test = ET.SubElement(suite, "testcase", classname=f"cxxgate.{case}", name=patch)
            messages = by_row.get(f"{case}/{patch}", [])
            if messages:
                failures += 1
                failure = ET.SubElement(test, "failure", message=messages[0])
                failure.text = "\n".join(messages)
            ET.SubElement(test, "system-out").text = summary
        suite.set("failures", str(failures))
    if by_row.get(None):
        suite = ET.SubElement(root, "testsuite", name="input", tests=str(len(by_row[None])))
        suite.set("failures", str(len(by_row[None])))
        for i, message in enumerate(by_row[None]):
            test = ET.SubElement(suite, "testcase", classname="cxxgate.input", name=f"error{i}")
            ET.SubElement(test, "failure", message=message).text = message
    ET.indent(root)
    atomic.write_bytes(path, ET.tostring(root, encoding="utf-8", xml_declaration=True))
