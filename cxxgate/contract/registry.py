"""The known gates: the built-in ones named in BUILTIN, in precedence order, then any
third-party package's found through the `cxxgate.gates` entry-point group.

The engine never imports a gate module by name in its code: a built-in gate is loaded
from `cxxgate.gates.<name>` when the registry is first asked, so a new built-in gate needs
no reinstall, only its name in BUILTIN. A third-party package registers its gates in its
`pyproject.toml`:

    [project.entry-points."cxxgate.gates"]
    compiles = "my_gates.compiles:GATE"

Each names a `cxxgate.api.Gate` whose `name` is the entry point's name (the key a
case.yaml uses under `gates:`).
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import EntryPoint, entry_points

from cxxgate.contract.gate import Gate

GROUP = "cxxgate.gates"

# The built-in gates in precedence order: a row's class is named by the first gate in this
# order that failed (cxxgate/verdicts/verdict.py `_decide`), and the table's columns follow
# it. Third-party gates come after these, by name.
BUILTIN = (
    "negcomp",
    "tests",
    "consumer",
    "headers",
    "symbols",
    "sanitizer",
    "matrix",
    "budget",
    "census",
    "leak",
    "slope",
    "metamorphic",
    "coverage",
    "ledger",
)


class RegistryError(Exception):
    """A gate package that cannot be used: the message names the entry point and the fix."""


@cache
def gates() -> dict[str, Gate]:
    """Every gate by name, in precedence order: BUILTIN, then third-party gates by name."""
    found = {name: _builtin(name) for name in BUILTIN}
    seen: dict[str, EntryPoint] = {}
    for ep in entry_points(group=GROUP):
        where = f"entry point {ep.name!r} = {ep.value!r} in group {GROUP!r}" + (
            f" (distribution {ep.dist.name})" if ep.dist is not None else ""
        )
        if ep.name in BUILTIN and ep.value == f"cxxgate.gates.{ep.name}:GATE":
            continue  # an older cxxgate's metadata, which still listed its own gates
        if ep.name in found:
            if ep.name in seen and seen[ep.name].value == ep.value:
                continue  # the same distribution seen twice on sys.path
            earlier = seen[ep.name].value if ep.name in seen else "a built-in gate"
            msg = f"{where}: gate name {ep.name!r} is already registered by {earlier!r}"
            raise RegistryError(msg)
        try:
            gate = ep.load()
        except Exception as exc:
            msg = f"{where}: cannot be loaded: {type(exc).__name__}: {exc}"
            raise RegistryError(msg) from exc
        _check(gate, ep.name, where)
        found[ep.name] = gate
        seen[ep.name] = ep
    builtin = {name: found[name] for name in BUILTIN}
    third = {name: found[name] for name in sorted(set(found) - set(BUILTIN))}
    return builtin | third


def _builtin(name: str) -> Gate:
    gate = importlib.import_module(f"cxxgate.gates.{name}").GATE
    _check(gate, name, f"built-in gate cxxgate.gates.{name}")
    return gate  # type: ignore[no-any-return]


def _check(gate: object, name: str, where: str) -> None:
    if not isinstance(gate, Gate):
        msg = f"{where}: is a {type(gate).__name__}, expected a cxxgate.api.Gate"
        raise RegistryError(msg)
    if gate.name != name:
        msg = f"{where}: the Gate calls itself {gate.name!r}; the two names must agree"
        raise RegistryError(msg)
