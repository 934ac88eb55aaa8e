"""The census gate and its helpers: witnesses of the reference and patched trees, their
callees, which executed, which survive, what linked."""

from cxxgate.gates.census.census import GATE

__all__ = ["GATE"]
