"""The identity lock: `identity.lock` in the case library, committed beside the cases.

For each case it pins four digests: the rendered prompt, the oracles (every file of the
case folder but the prompt template, paths and bytes in sorted order, so a renamed
golden moves it), the grader (engine code, the code of the gates the case enables, the
templates) and each toolchain the case compiles with (the whole `--version` text, the
resolved path, and the envelope's flag vector). Per-file digests are kept too, so a
mismatch names the files that moved.

`doit grade` checks the lock when it loads and fails closed: a case whose pins moved is
not graded, and the error names the case, the pin and the files. `doit freeze` re-pins
and prints the pin diff (cxxgate/graph/actions.py). A library without a lock grades unpinned,
and every row says so.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from cxxgate.library.case import Case
from cxxgate.library.prompt import TEMPLATE
from cxxgate.store import codehash
from cxxgate.toolchain.envelope import Envelope
from cxxgate.util import atomic
from cxxgate.util.yamlfile import parse

FILE = "identity.lock"
FORMAT = 1
PINS = ("prompt", "oracles", "grader", "toolchains")


@dataclass(frozen=True)
class Pins:
    """One case's identity: the four pins, and the per-file digests behind them."""

    prompt: str | None
    oracles: str
    grader: str
    toolchains: dict[str, str]  # envelope name -> digest
    files: dict[str, str] = field(compare=False)  # case file -> digest
    grader_files: dict[str, str] = field(compare=False)  # engine/gate/template file -> digest
    versions: dict[str, str] = field(compare=False)  # envelope name -> first `--version` line

    @property
    def digest(self) -> str:
        return _sha(json.dumps(self.pinned(), sort_keys=True).encode())

    def pinned(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "oracles": self.oracles,
            "grader": self.grader,
            "toolchains": self.toolchains,
        }

    def stamp(self, locked: bool) -> dict[str, object]:
        """What every verdict row carries."""
        return {
            **self.pinned(),
            "toolchains": {
                env: {"sha": sha, "version": self.versions[env]}
                for env, sha in self.toolchains.items()
            },
            "digest": self.digest,
            "locked": locked,
        }


def pins(
    case: Case,
    prompt_text: str | None,
    gate_files: Mapping[str, Iterable[Path]],
    envelopes: Iterable[Envelope],
) -> Pins:
    """`gate_files`: for each gate the case enables, the source files its code hash covers."""
    files = {
        path.relative_to(case.dir).as_posix(): _sha(path.read_bytes())
        for path in sorted(case.dir.rglob("*"))
        if path.is_file() and path.name != TEMPLATE
    }
    # A data folder outside the case folder is part of what the case is.
    files |= {f"build.data[{i}]": digest for i, (_, digest) in enumerate(case.data)}
    grader_files = _grader_files(case.enabled_gates(), gate_files)
    toolchains, versions = {}, {}
    for env in envelopes:
        tc = env.toolchain
        vector = [tc.version_sha, env.std, env.flags, env.link_flags, env.defines, env.run_env]
        toolchains[env.name] = _sha(json.dumps(vector).encode())
        versions[env.name] = tc.version
    return Pins(
        prompt=_sha(prompt_text.encode()) if prompt_text is not None else None,
        oracles=_sha(json.dumps(sorted(files.items())).encode()),
        grader=_sha(json.dumps(sorted(grader_files.items())).encode()),
        toolchains=dict(sorted(toolchains.items())),
        files=files,
        grader_files=grader_files,
        versions=versions,
    )


# Engine modules that present, record or distribute verdicts but never decide one: editing
# the HTML report or the progress display must not re-pin every case.
NOT_GRADING = frozenset(
    {
        "checkpoint", "dask_grade", "evidence", "history", "identity", "junit", "merge",
        "progress", "prune", "report_html", "report_md", "sarif", "swe_import",
    }
)  # fmt: skip


def _grader_files(gates: Iterable[str], gate_files: Mapping[str, Iterable[Path]]) -> dict[str, str]:
    root = codehash.PACKAGE.parent
    # The engine's packages; a gate's files (anything under cxxgate/gates, a folder in a
    # wheel or a copy, a link in a checkout) are pinned with the gate (gate_files), so a
    # checkout, a copy and an install pin the same files.
    engine = {
        p
        for p in codehash.PACKAGE.rglob("*.py")
        if p.stem not in NOT_GRADING
        and p.relative_to(codehash.PACKAGE).parts[0] != "gates"
        and "__pycache__" not in p.parts
    }
    paths = engine | {p for p in codehash.TEMPLATES.rglob("*") if p.is_file()}
    for gate in gates:
        paths.update(gate_files[gate])
    return {
        (p.relative_to(root).as_posix() if p.is_relative_to(root) else str(p)): _code_sha(p)
        for p in sorted(paths)
    }


@cache
def _code_sha(path: Path) -> str:
    """Harness files are read once per process, not once per case."""
    return _sha(path.read_bytes())


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---- the file ----------------------------------------------------------------------


@dataclass(frozen=True)
class Lock:
    """What identity.lock holds: each case's pins and file digests, and the grader's file
    digests once for all cases."""

    cases: dict[str, dict[str, Any]]
    grader_files: dict[str, str]


def read(library: Path) -> Lock | None:
    """The library's lock, or None when it has none. Raises ValueError naming the key."""
    path = library / FILE
    if not path.is_file():
        return None
    data = parse(path.read_text())
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path}: format: expected {FORMAT} (write it with `doit freeze`)")
    for key in ("cases", "grader_files"):
        if not isinstance(data.get(key), dict):
            raise ValueError(f"{path}: {key}: expected a mapping")
    return Lock(data["cases"], data["grader_files"])


def write(library: Path, lock: Lock) -> None:
    header = (
        "# identity.lock: written by `doit freeze`, checked by `doit grade`\n"
        "# (cxxgate/library/identity.py).\n"
        "# Commit it with the cases: a grade refuses a case whose prompt, oracles, grader\n"
        "# or toolchains moved since it was frozen.\n"
    )
    data = {"format": FORMAT, "grader_files": lock.grader_files, "cases": lock.cases}
    atomic.write_text(library / FILE, header + yaml.safe_dump(data, sort_keys=True, width=120))


def entry(p: Pins) -> dict[str, Any]:
    return {**p.pinned(), "files": p.files}


def moved(case: str, lock: Lock, new: Pins) -> list[str]:
    """One line per pin that moved, naming the files behind it ([] when it holds)."""
    old = lock.cases.get(case)
    if old is None:
        return [f"{case}: not in {FILE} (pin it with `doit freeze`)"]
    lines = []
    now = entry(new)
    for pin in PINS:
        if old.get(pin) == now[pin]:
            continue
        if pin == "oracles":
            what = _changed(old.get("files", {}), new.files)
        elif pin == "grader":
            before = {k: v for k, v in lock.grader_files.items() if k in new.grader_files}
            what = _changed(before, new.grader_files)
        elif pin == "toolchains":
            what = _changed(old.get("toolchains", {}), new.toolchains)
        elif not old.get(pin):
            what = "a prompt was added"
        else:
            what = "the rendered prompt changed" if now[pin] else "the prompt was removed"
        lines.append(f"{case}: {pin} pin moved: {what}")
    return lines


def _changed(old: Mapping[str, str], new: Mapping[str, str]) -> str:
    names = sorted(
        [f"{k} (changed)" for k in old.keys() & new.keys() if old[k] != new[k]]
        + [f"{k} (added)" for k in new.keys() - old.keys()]
        + [f"{k} (removed)" for k in old.keys() - new.keys()]
    )
    shown = ", ".join(names[:8]) + (f", and {len(names) - 8} more" if len(names) > 8 else "")
    return shown or "(no file listed)"
