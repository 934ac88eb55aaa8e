"""Harness faults as data. An action that meets a broken harness (a full disk, a bug in a
gate) writes a `harness_error` result in place of its output instead of failing its doit
task, so the rest of a batch still runs and the table names the fault; such a result is
never up to date, so the next run retries it (`settled`).
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cxxgate.results import faults
from cxxgate.results.result import HARNESS_ERROR, GateResult
from cxxgate.runs.run import RunResult, RunSpec
from cxxgate.toolchain.cellspec import CellResult, CellSpec
from cxxgate.util import atomic


def guarded(
    target: Path, fallback: Callable[[str], dict[str, Any]], fn: Callable[..., Any], *args: Any
) -> tuple[Callable[[], None], list[Any]]:
    """Run fn; on an exception, write a harness_error result in place of its output. A full
    disk is not one task's fault: it stops the grade (cxxgate/results/faults.py)."""

    def action() -> None:
        try:
            fn(*args)
        except Exception as exc:
            faults.stop_if_disk_full(exc, target)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                text = json.dumps(fallback(traceback.format_exc()), indent=1) + "\n"
                atomic.write_text(target, text)
            except OSError as write_error:
                faults.stop_if_disk_full(write_error, target)
                raise

    return (action, [])


def settled(target: Path) -> Callable[..., bool]:
    """Up to date only if the result is settled: not a harness fault, and not a result the
    host decided (`host_bound`, a CMake configure's failure): the next run makes both again."""

    def check(task: Any, values: Any) -> bool:
        try:
            data = json.loads(target.read_text())
        except (OSError, ValueError):
            return False
        return data.get("status") != HARNESS_ERROR and not data.get("host_bound")

    return check


def whole_json(target: Path) -> Callable[..., bool]:
    """Up to date only if the target reads as JSON: a file cut short (by a writer that was
    not atomic, a disk) is made again, never trusted because it exists."""

    def check(task: Any, values: Any) -> bool:
        try:
            json.loads(target.read_bytes())
        except (OSError, ValueError):
            return False
        return True

    return check


def stamp_error(key: str) -> Callable[[str], dict[str, Any]]:
    return lambda tb: {
        "key": key,
        "status": HARNESS_ERROR,
        "detail": tb,
        "changed": [],
        "applied": False,
    }


def cell_error(spec: CellSpec) -> Callable[[str], dict[str, Any]]:
    return lambda tb: asdict(
        CellResult(
            key=spec.key,
            kind=spec.kind,
            label=spec.label,
            status=HARNESS_ERROR,
            detail=tb,
            envelope=spec.envelope.name,
            toolchain=spec.envelope.toolchain.name,
            tree_root="",
            steps=[],
            binary=None,
        )
    )


def run_error(spec: RunSpec) -> Callable[[str], dict[str, Any]]:
    return lambda tb: asdict(RunResult.without_run(spec.key, spec.label, HARNESS_ERROR, tb))


def gate_error(gate: str) -> Callable[[str], dict[str, Any]]:
    return lambda tb: GateResult(
        gate, "incomplete", HARNESS_ERROR, tb.strip().splitlines()[-1], evidence=[tb]
    ).to_json()
