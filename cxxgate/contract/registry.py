"""The known gates, found through the `cxxgate.gates` entry-point group.

The engine never imports a gate module: cxxgate's own gates and a third-party package's
register the same way, in their `pyproject.toml`:

    [project.entry-points."cxxgate.gates"]
    negcomp = "cxxgate.gates.negcomp:GATE"

Each entry point names a `cxxgate.contract.gate.Gate` whose `name` is the entry point's name (the
key a case.yaml uses under `gates:`).
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points

from cxxgate.contract.gate import Gate

GROUP = "cxxgate.gates"


class RegistryError(Exception):
    """A gate package that cannot be used: the message names the entry point and the fix."""


@cache
def gates() -> dict[str, Gate]:
    """Every registered gate by name, in table order (`Gate.order`, then name)."""
    found: dict[str, tuple[Gate, EntryPoint]] = {}
    for ep in entry_points(group=GROUP):
        where = f"entry point {ep.name!r} = {ep.value!r} in group {GROUP!r}" + (
            f" (distribution {ep.dist.name})" if ep.dist is not None else ""
        )
        if ep.name in found:
            if found[ep.name][1].value == ep.value:
                continue  # the same distribution seen twice on sys.path
            earlier = found[ep.name][1].value
            msg = f"{where}: gate name {ep.name!r} is already registered by {earlier!r}"
            raise RegistryError(msg)
        try:
            gate = ep.load()
        except Exception as exc:
            msg = f"{where}: cannot be loaded: {type(exc).__name__}: {exc}"
            raise RegistryError(msg) from exc
        if not isinstance(gate, Gate):
            msg = f"{where}: is a {type(gate).__name__}, expected a cxxgate.contract.gate.Gate"
            raise RegistryError(msg)
        if gate.name != ep.name:
            msg = f"{where}: the Gate calls itself {gate.name!r}; the two names must agree"
            raise RegistryError(msg)
        found[ep.name] = (gate, ep)
    if not found:
        msg = (
            f"no gate is registered in the entry-point group {GROUP!r}: is cxxgate installed "
            "(`pip install -e .` in a checkout)?"
        )
        raise RegistryError(msg)
    ordered = sorted(found.values(), key=lambda pair: (pair[0].order, pair[0].name))
    return {gate.name: gate for gate, _ in ordered}
