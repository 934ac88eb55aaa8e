"""The known gates, by the name a case.yaml uses. Adding a gate is one line here."""

from __future__ import annotations

from gates import negcomp
from gates.gate import Gate

GATES: dict[str, Gate] = {g.name: g for g in (negcomp.GATE,)}
