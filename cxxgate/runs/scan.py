"""Scans: content-keyed reads of a tree by Python code (a C++ parse, a witness or literal
inventory, an include closure). They are the source gates' cells: a scan is a doit task of
its own, keyed by the tree, the function's code, its parameters and the bytes of any case
file it reads, so a warm re-run parses nothing and two gates asking the same question of
the same tree share one task.

A scan function is `fn(tree: Path, params: dict) -> dict` (JSON-able): it reads the
patched tree (never writes it) and the case files it declared as `inputs`. It may run a
compiler or the preprocessor only through cxxgate/toolchain/toolcall.py, and then puts the
envelope's `id` (toolchain identity) into its params so that enters the key.

A scan may also read what cells and runs stored (`cells`, `runs`: their keys, which enter
its key; its task waits for them): it finds their result files under `params["results"]`
(key -> path), e.g. gcov over a coverage run's counts (gates/coverage/gcovjson.py), so a tool that
reads a run's leftovers runs once per run, not once per classification.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from cxxgate.runs.run import result_path as run_result_path
from cxxgate.store import codehash
from cxxgate.store.layout import Layout
from cxxgate.toolchain.cellspec import result_path as cell_result_path
from cxxgate.util import atomic

ScanStatus = Literal["ok", "no_tree", "harness_error"]
ScanFn = Callable[[Path, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class ScanSpec:
    tree_key: str
    func: str  # "package.module:function"
    params: str = "{}"  # JSON text with sorted keys (use ScanSpec.of)
    inputs: tuple[str, ...] = ()  # case files (outside the tree) the function reads
    label: str = field(default="", compare=False)
    cells: tuple[str, ...] = ()  # keys of cells whose stored results it reads
    runs: tuple[str, ...] = ()  # keys of runs whose stored results it reads

    @classmethod
    def of(
        cls,
        tree_key: str,
        func: ScanFn,
        params: dict[str, Any] | None = None,
        inputs: tuple[Path, ...] = (),
        label: str = "",
        cells: tuple[str, ...] = (),
        runs: tuple[str, ...] = (),
    ) -> ScanSpec:
        return cls(
            tree_key,
            f"{func.__module__}:{func.__qualname__}",
            json.dumps(params or {}, sort_keys=True),
            tuple(str(p) for p in inputs),
            label or func.__name__,
            cells,
            runs,
        )

    @cached_property
    def key(self) -> str:
        module = self.func.partition(":")[0]
        importlib.import_module(module)
        blob = {
            "tree": self.tree_key,
            "func": self.func,
            "params": self.params,
            "inputs": [(p, codehash.of_text(Path(p).read_bytes())) for p in self.inputs],
            "code": [codehash.of_module_and_siblings(module), codehash.of_modules("runs.scan")],
        }
        if self.cells or self.runs:  # absent otherwise: a tree-only scan's key stays as it was
            blob["after"] = [self.cells, self.runs]
        return "s" + codehash.of_text(json.dumps(blob, sort_keys=True))[:23]

    def function(self) -> ScanFn:
        module, _, name = self.func.partition(":")
        fn: ScanFn = getattr(importlib.import_module(module), name)
        return fn


@dataclass(frozen=True)
class ScanResult:
    key: str
    label: str
    status: ScanStatus
    detail: str
    data: dict[str, Any]

    @classmethod
    def load(cls, path: Path) -> ScanResult:
        return cls(**json.loads(path.read_text()))


def result_path(layout: Layout, key: str) -> Path:
    return layout.scan_result(key)


def execute(spec: ScanSpec, layout: Layout) -> ScanResult:
    """Run the scan on its tree and write its result (whole, or not at all)."""
    tree = layout.tree(spec.tree_key)
    stamp = layout.tree_stamp(spec.tree_key)
    applied = stamp.exists() and json.loads(stamp.read_text()).get("applied", False)
    if applied:
        params = json.loads(spec.params)
        if spec.cells or spec.runs:
            params["results"] = {str(k): str(p) for k, p in result_files(spec, layout).items()}
        data = spec.function()(tree, params)
        result = ScanResult(spec.key, spec.label, "ok", "", data)
    else:
        result = ScanResult(spec.key, spec.label, "no_tree", "the patch did not produce a tree", {})
    target = result_path(layout, spec.key)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(target, json.dumps(asdict(result), indent=1, sort_keys=True) + "\n")
    return result


def result_files(spec: ScanSpec, layout: Layout) -> dict[str, Path]:
    """The stored results a scan reads (cells', then runs'), by key: its task's inputs."""
    files = {k: cell_result_path(layout, k) for k in spec.cells}
    return files | {k: run_result_path(layout, k) for k in spec.runs}


def error_result(spec: ScanSpec) -> Callable[[str], dict[str, Any]]:
    return lambda tb: asdict(ScanResult(spec.key, spec.label, "harness_error", tb, {}))
