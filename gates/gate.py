"""The small interface every gate implements, and what the pipeline hands it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel

from gates.cell import CellResult, CellSpec
from gates.result import GateResult
from gates.run import RunResult, RunSpec

if TYPE_CHECKING:
    from gates.case import Case
    from gates.envelope import Envelopes


@dataclass(frozen=True)
class Context:
    """One (case, tree) a gate is asked about."""

    case: Case
    tree_key: str
    envelopes: Envelopes
    reference_tree_key: str  # the case's reference state, for gates that measure against it


@dataclass
class Plan:
    """The cells and runs a gate needs, by names of its own choosing."""

    cells: dict[str, CellSpec] = field(default_factory=dict)
    runs: dict[str, RunSpec] = field(default_factory=dict)


@dataclass(frozen=True)
class Outputs:
    cells: dict[str, CellResult]
    runs: dict[str, RunResult]


@dataclass(frozen=True)
class Gate:
    """What a gate module hands the registry.

    `config` is the model of its case.yaml section; `severity` its failure classes, most
    severe first; `plan` names the cells and runs it needs for one tree; `classify` turns
    their stored results into a GateResult, without compiling or running anything.
    """

    name: str
    doc: str
    config: type[BaseModel]
    severity: tuple[str, ...]
    plan: Callable[[Context], Plan]
    classify: Callable[[Context, Plan, Outputs], GateResult]
