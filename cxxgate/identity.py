"""Eval identity: hashes of everything that defines the experiment, stamped on every row."""

from __future__ import annotations

import hashlib

from cxxgate import codehash, registry
from cxxgate.case import Case
from cxxgate.envelope import Envelopes


def harness() -> str:
    """Engine code, every registered gate's code and the templates: a change in any of
    them may change any result."""
    names = sorted(p.stem for p in codehash.PACKAGE.glob("*.py"))
    gates = "".join(g.code for g in registry.gates().values())
    return codehash.of_text(codehash.of_modules(*names) + gates + codehash.of_templates())[:32]


def of_case(case: Case) -> str:
    """Prompts, oracles, tree and case file: everything in the case folder."""
    h = hashlib.sha256()
    for path in sorted(p for p in case.dir.rglob("*") if p.is_file()):
        h.update(path.relative_to(case.dir).as_posix().encode() + b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def stamp(case: Case, envelopes: Envelopes) -> dict[str, object]:
    toolchains = {}
    for name in envelopes.names():
        tc = envelopes.get(name).toolchain
        toolchains[tc.name] = {"path": tc.path, "version": tc.version, "sha": tc.version_sha[:16]}
    return {"harness": harness(), "case": of_case(case), "toolchains": toolchains}
