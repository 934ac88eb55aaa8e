"""The tests gate (a project's own suite) and its helpers: the framework's reports
(testreports) and units (testunits)."""

from cxxgate.gates.tests.tests import GATE

__all__ = ["GATE"]
