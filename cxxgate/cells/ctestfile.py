"""ctest's listing of a suite written back as the one CTestTestfile.cmake the run reads.

A project's CTestTestfile.cmake files are CMake scripts that ctest runs each time it
starts: `TEST_INCLUDE_FILES` scripts (test discovery's, or any the project adds) execute
with `execute_process` and `file()`, and `CTestCustom.cmake` names commands ctest runs
before the tests. Such code can tell the harness's listing (`--show-only=json-v1`, which
it sees in /proc/self/cmdline) from the run, and register a test otherwise in each. So
the suite is listed once, that listing is what the gate compares with the reference's,
and the run reads only this file, written from the listing by the harness: the tests
ctest runs are the tests it listed, with the commands and properties it listed, and no
code of the project's runs in ctest itself.

Only the tests the case names run, with the tests that set up or clean up a fixture one
of them requires: a test of the patch's own, run first, could leave a fixed twin of the
library where a listed test's loader looks (red-team round 21's `run_drop`), and the
harness's listing of each test's libraries was made before the run. The gate compares
the fixtures' registration with the reference's (gates/tests/suite.py).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from cxxgate.cells.testframeworks import properties

NAME = "CTestTestfile.cmake"


def _bracket(text: str) -> str:
    """`text` as a CMake bracket argument (taken verbatim: no escapes, no variables; a
    newline right after the opening bracket is dropped, so one is added)."""
    eq = "="
    while f"]{eq}]" in f"{text}]":  # text ending in `]=` would close the bracket early
        eq += "="
    lead = "\n" if text.startswith("\n") else ""
    return f"[{eq}[{lead}{text}]{eq}]"


def _value(value: object) -> str | None:
    """A property's value as ctest's listing gives it, as CMake reads it; None for what a
    CMake value cannot say (RESOURCE_GROUPS' objects)."""
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    if isinstance(value, int | float):
        return f"{value:g}"
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ";".join(v.replace(";", "\\;") for v in value)
    return None


def kept(tests: list[dict[str, Any]], named: Collection[str]) -> set[str] | None:
    """The names of the tests a run runs: each the case names, whatever its case (which
    one the listed name stands for is decided against the reference's run: a patch's
    look-alike must not take its place), and each that sets up or cleans up a fixture
    one of those requires, and so on; None (every test) when the case names none."""
    if not named:
        return None
    folded = {n.casefold() for n in named}
    run = {str(t.get("name", "")) for t in tests if str(t.get("name", "")).casefold() in folded}
    props = {str(t.get("name", "")): properties(t) for t in tests}
    grew = True
    while grew:
        needed = {f for n in run for f in _list(props[n].get("FIXTURES_REQUIRED"))}
        more = {
            n for n, p in props.items()
            if needed & set(_list(p.get("FIXTURES_SETUP")) + _list(p.get("FIXTURES_CLEANUP")))
        } - run  # fmt: skip
        run |= more
        grew = bool(more)
    return run


def _list(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)] if value else []


def write(output: str, exit: int | None, folder: Path, named: Collection[str] = ()) -> str:
    """Write folder/CTestTestfile.cmake from what `ctest --show-only=json-v1` printed
    (its stdout, then its stderr: a script's message()) and its exit status, with the
    tests `kept` keeps of those `named`; returns the whole listing (json). Raises
    ValueError when there is none."""
    if exit != 0:
        raise ValueError(f"exit {exit}")
    try:
        listing, _ = json.JSONDecoder().raw_decode(output)
    except ValueError:
        raise ValueError("no json-v1 listing") from None
    tests = listing.get("tests") if isinstance(listing, dict) else None
    if not isinstance(tests, list) or not all(isinstance(t, dict) for t in tests):
        raise ValueError("the listing has no tests array")
    lines = ["# Written by cxxgate from ctest --show-only=json-v1 (cxxgate/cells/ctestfile.py)"]
    if any(not str(test.get("name", "")) for test in tests):
        raise ValueError("ctest's listing has a test with no name")
    run = kept(tests, named)
    for test in tests:
        name, command = str(test.get("name", "")), test.get("command") or []
        if run is not None and name not in run:
            continue
        words = [_bracket(name), *(_bracket(str(w)) for w in command)]
        if not command:  # ctest reports such a test as not run (no command)
            words.append(_bracket(""))
        lines.append(f"add_test({' '.join(words)})")
        props = []
        for prop in test.get("properties") or []:
            value = _value(prop.get("value")) if isinstance(prop, dict) else None
            if value is not None:
                props.append(f"{_bracket(str(prop['name']))} {_bracket(value)}")
        if props:
            lines.append(f"set_tests_properties({_bracket(name)} PROPERTIES {' '.join(props)})")
    (folder / NAME).write_text("\n".join(lines) + "\n")
    return json.dumps(listing, indent=1)
