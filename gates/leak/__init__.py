"""The leak gate and its helpers: the answer key's bytes and literals in the source, and the
GIMPLE read of them."""

from cxxgate.gates.leak.leak import GATE

__all__ = ["GATE"]
