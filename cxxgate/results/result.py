"""Gate results as data: the checks a gate made, and the class it decided."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final, Literal

from cxxgate.util import atomic

Status = Literal["pass", "fail", "incomplete", "not_applicable"]

# Classes every gate may return besides its own, decided outside the gate.
TOOLCHAIN_MISSING = "toolchain_missing"
BASELINE_RED = "baseline_red"
VACUOUS = "checked_nothing"
HARNESS_ERROR: Final = "harness_error"
# A program whose candidate objects hold code that runs before the harness's own (a
# `.preinit_array` entry, an IFUNC, an early constructor priority): refused at its link
# (cxxgate/cells/premain.py), the class of every gate that planned it (cxxgate/graph/actions.py).
PREMAIN_HOOK: Final = "premain_hook"
# What a patch stopped at intake carries as every gate's class (cxxgate/intake/tree.py).
INTAKE_CLASSES = frozenset(
    {
        "malformed_patch",
        "path_violation",
        "patch_does_not_apply",
        "diagnostic_control",
        "empty_patch",
    }
)
ENGINE_CLASSES = (
    frozenset({"accept", TOOLCHAIN_MISSING, BASELINE_RED, VACUOUS, HARNESS_ERROR, PREMAIN_HOOK})
    | INTAKE_CLASSES
)
# A row's class besides its gates' classes (cxxgate/verdicts/verdict.py, cxxgate/library/rows.py).
ROW_CLASSES = ENGINE_CLASSES | {"unknown_case", "malformed_input"}


@dataclass(frozen=True)
class Check:
    """One thing a gate verified: a unit compiled, a run matched, a header probed."""

    name: str
    ok: bool
    klass: str  # the gate's class word for this check ("accept" when ok)
    detail: str = ""
    fail_to_pass: bool = False  # must fail on the base tree, pass on the reference
    # Fail-to-pass checks of one group (the checks made of one program) fail on the base
    # tree together: one failing is enough. Empty: the check is its own group.
    group: str = ""
    incomplete: bool = False  # could not be decided (missing compiler, missing oracle)


@dataclass(frozen=True)
class Finding:
    """A problem with a place in the patched tree (a diagnostic, a probe's failing line, a
    removed assertion): what the SARIF and HTML reports show on the diff. `path` is relative
    to the tree, `line` 1-based (0 when only the file is known)."""

    rule: str  # the gate's class word for it
    message: str
    path: str
    line: int = 0
    column: int = 0


@dataclass(frozen=True)
class GateResult:
    gate: str
    status: Status
    klass: str
    summary: str
    checks: list[Check] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    cells: list[str] = field(default_factory=list)  # one diffable line per cell/run
    findings: list[Finding] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data["class"] = data.pop("klass")
        for check in data["checks"]:
            check["class"] = check.pop("klass")
        return data

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_text(path, json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: Path) -> GateResult:
        data = json.loads(path.read_text())
        data["klass"] = data.pop("class")
        checks = []
        for c in data.pop("checks"):
            c["klass"] = c.pop("class")
            checks.append(Check(**c))
        findings = [Finding(**f) for f in data.pop("findings", [])]
        return cls(checks=checks, findings=findings, **data)

    @classmethod
    def from_checks(
        cls, gate: str, checks: list[Check], severity: tuple[str, ...], evidence: list[str]
    ) -> GateResult:
        """Fold checks: incomplete beats fail beats pass; the most severe class names it.

        `severity` lists the gate's failure classes, most severe first. No checks at all is
        `incomplete`: a gate that verified nothing has not passed.
        """
        if not checks:
            return cls(gate, "incomplete", VACUOUS, "no check ran", checks, evidence)
        undecided = [c for c in checks if c.incomplete]
        failed = [c for c in checks if not c.ok and not c.incomplete]
        ok = len(checks) - len(undecided) - len(failed)
        counts = f"{ok}/{len(checks)} checks ok"
        if undecided:
            first = undecided[0]
            return cls(
                gate, "incomplete", first.klass, f"{counts}; {first.detail}", checks, evidence
            )
        if failed:
            rank = {k: i for i, k in enumerate(severity)}
            worst = min(failed, key=lambda c: rank.get(c.klass, len(rank)))
            also = sorted({c.klass for c in failed} - {worst.klass})
            more = f" (also: {', '.join(also)})" if also else ""
            return cls(
                gate,
                "fail",
                worst.klass,
                f"{counts}; {worst.name}: {worst.detail}{more}",
                checks,
                evidence,
            )
        return cls(gate, "pass", "accept", counts, checks, evidence)
