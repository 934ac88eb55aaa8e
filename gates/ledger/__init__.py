"""The ledger gate and its helpers: the C++ AST ledger (ledger_ast, ledger_flow), its rules,
and what the objects hold (ledger_objects)."""

from cxxgate.gates.ledger.ledger import GATE

__all__ = ["GATE"]
