"""The known gates, by the name a case.yaml uses. Adding a gate is one line here."""

from __future__ import annotations

from gates import budget, consumer, headers, matrix, negcomp, sanitizer, symbols
from gates.gate import Gate

GATES: dict[str, Gate] = {
    g.name: g
    for g in (
        negcomp.GATE,
        consumer.GATE,
        headers.GATE,
        symbols.GATE,
        sanitizer.GATE,
        matrix.GATE,
        budget.GATE,
    )
}
