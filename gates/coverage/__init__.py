"""The coverage gate and gcov's JSON over its runs (gcovjson)."""

from cxxgate.gates.coverage.coverage import GATE

__all__ = ["GATE"]
