"""The small interface every gate implements, and what the pipeline hands it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from cxxgate.results.result import ENGINE_CLASSES, GateResult
from cxxgate.runs.run import RunResult, RunSpec
from cxxgate.runs.scan import ScanResult, ScanSpec
from cxxgate.store import codehash
from cxxgate.store.codehash import TEMPLATES
from cxxgate.toolchain.cellspec import CellResult, CellSpec
from cxxgate.util.yamlfile import InputError

if TYPE_CHECKING:
    from cxxgate.library.case import Case
    from cxxgate.toolchain.envelope import Envelope, Envelopes


def _no_seed() -> int:
    msg = "this context was made without the batch's seed (Context.batch_seed)"
    raise RuntimeError(msg)


@dataclass(frozen=True)
class Context:
    """One (case, tree) a gate is asked about."""

    case: Case
    tree_key: str
    envelopes: Envelopes
    reference_tree_key: str  # the case's reference state, for gates that measure against it
    # The batch's seed (cxxgate/library/settings.py Settings.seed), asked for only by the gates that
    # draw inputs at run time: the build folder's seed file is made on first use.
    batch_seed: Callable[[], int] = field(default=_no_seed, compare=False)
    # The base tree (the empty patch): the reference tree itself when the case has no
    # reference patch. What a patch added is what its tree has and this one lacks.
    base_tree_key: str = ""

    @property
    def base_key(self) -> str:
        return self.base_tree_key or self.reference_tree_key

    @property
    def seed(self) -> int:
        return self.batch_seed()

    def envelope(self, name: str, key: str) -> Envelope:
        """A named envelope, with the case's language standard; `key` is the case.yaml key
        that named it, for the error message."""
        if name not in self.envelopes.names():
            msg = (
                f"{self.case.file}: {key}: unknown envelope {name!r}; "
                f"{self.envelopes.path} defines {self.envelopes.names()}"
            )
            raise InputError(msg)
        return self.envelopes.get(name).with_std(self.case.spec.std)

    def gate_envelope(self, gate: str, override: str | None) -> Envelope:
        """The gate's own envelope if its section names one, else the case's."""
        key = f"gates.{gate}.envelope" if override else "envelope"
        return self.envelope(override or self.case.spec.envelope, key)


@dataclass
class Plan:
    """The cells, runs and scans a gate needs, by names of its own choosing."""

    cells: dict[str, CellSpec] = field(default_factory=dict)
    runs: dict[str, RunSpec] = field(default_factory=dict)
    scans: dict[str, ScanSpec] = field(default_factory=dict)


@dataclass(frozen=True)
class Outputs:
    cells: dict[str, CellResult]
    runs: dict[str, RunResult]
    scans: dict[str, ScanResult] = field(default_factory=dict)


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
    # The folder its probes are rendered from (probe.render_from); None: the engine's
    # templates/<name>/ (a built-in gate's). Only these templates enter its key.
    templates: Path | None = None

    @property
    def template_folder(self) -> Path:
        return self.templates if self.templates is not None else TEMPLATES / self.name

    @cached_property
    def code(self) -> str:
        """Hash of the gate's module and of the modules beside it that it uses (a helper
        shared by two gates): what the gate's classification depends on besides the
        engine."""
        return codehash.of_module_and_siblings(self.classify.__module__)

    def classes(self) -> frozenset[str]:
        """Every class this gate's result may carry: its own, `accept`, and the classes
        the engine decides for any gate (missing compiler, red reference, ...)."""
        return frozenset(self.severity) | ENGINE_CLASSES
