"""The verdict fold: one (case, patch) row from its intake stamp and its gate results,
judged against the case's reference state."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cxxgate.intake.tree import Stamp
from cxxgate.library.rows import Row
from cxxgate.results.result import BASELINE_RED, HARNESS_ERROR, GateResult
from cxxgate.util import atomic


@dataclass(frozen=True)
class Reference:
    """The reference row's results, and the base tree's for a bug-fix case."""

    stamp: Stamp
    results: dict[str, GateResult]
    base_stamp: Stamp | None = None
    base_results: dict[str, GateResult] | None = None


@dataclass
class Verdict:
    case: str
    patch: str
    role: str
    sha: str
    source: str
    model: str | None
    verdict: str  # accept | reject | incomplete
    klass: str
    detail: str
    gates: dict[str, dict[str, str]]
    broken: dict[str, dict[str, str]]  # gate -> {class, why}: see reference_problems
    expect: dict[str, str | list[str]] | None
    expect_problems: list[str]
    identity: dict[str, object]
    evidence: list[str] = field(default_factory=list)
    cells: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data["class"] = data.pop("klass")
        return data

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Verdict:
        data = dict(data)
        data["klass"] = data.pop("class")
        return cls(**data)  # type: ignore[arg-type]

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_text(path, json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n")


def reference_problems(gates: list[str], ref: Reference) -> dict[str, dict[str, str]]:
    """Gates the reference state cannot vouch for: `{gate: {class, why}}`.

    The class is what candidates get for that gate: `baseline_red` when the reference is
    red (the case is wrong, not the model), or the reference's own incomplete class (e.g.
    `toolchain_missing`) when it could not be graded at all.
    """
    if not ref.stamp.applied:
        return _all(gates, f"the reference patch is {ref.stamp.status}: {ref.stamp.detail}")
    broken: dict[str, dict[str, str]] = {}
    for gate in gates:
        res = ref.results[gate]
        if res.status == "incomplete":
            why = f"the reference could not be graded: {res.klass}: {res.summary}"
            broken[gate] = {"class": res.klass, "why": why}
        elif res.status != "pass":
            why = f"not green on the reference: {res.klass}: {res.summary}"
            broken[gate] = {"class": BASELINE_RED, "why": why}
    if ref.base_results is None:
        return broken
    assert ref.base_stamp is not None
    if not ref.base_stamp.applied:
        return _all(gates, f"the base tree did not materialise: {ref.base_stamp.detail}")
    f2p_total = 0
    undecided = False
    for gate in gates:
        base = ref.base_results[gate]
        if base.status == "incomplete" and gate not in broken:
            # A base tree that could not be graded (a harness fault, a missing compiler)
            # says nothing about the case: pass its class on, not baseline_red.
            why = f"the base tree could not be graded: {base.klass}: {base.summary}"
            broken[gate] = {"class": base.klass, "why": why}
            undecided = True
            continue
        # A fail-to-pass group (one check, or every check made of one program) must have
        # a failing check on the base tree: a program that prints the wrong answer fails
        # its stdout check while its sanitizer check passes.
        f2p_failed: dict[str, bool] = {}
        for check in base.checks:
            f2p_total += check.fail_to_pass
            if check.incomplete or gate in broken:
                continue
            if check.fail_to_pass:
                group = check.group or check.name
                f2p_failed[group] = f2p_failed.get(group, False) or not check.ok
            elif not check.ok:
                why = (
                    f"pass-to-pass check '{check.name}' fails on the base tree: "
                    f"{check.klass}: {check.detail}"
                )
                broken[gate] = {"class": BASELINE_RED, "why": why}
        passing = [g for g, failed in f2p_failed.items() if not failed]
        if passing and gate not in broken:
            why = (
                f"fail-to-pass check '{passing[0]}' already passes on the base tree, "
                "so it cannot see the change"
            )
            broken[gate] = {"class": BASELINE_RED, "why": why}
    if f2p_total == 0 and not undecided:
        no_proof = _all(
            gates, "the case declares a reference patch but no fail_to_pass check proves it"
        )
        return no_proof | broken
    return broken


def _all(gates: list[str], why: str) -> dict[str, dict[str, str]]:
    return {g: {"class": BASELINE_RED, "why": why} for g in gates}


def fold(
    row: Row,
    stamp: Stamp,
    results: dict[str, GateResult],
    broken: dict[str, dict[str, str]],
    identity: dict[str, object],
    controls: list[str] | None = None,
) -> Verdict:
    """`controls`: diagnostic-control lines the row's compiled units got beyond the
    reference side's (cxxgate/cells/preprocessed.py); any makes the row `diagnostic_control`."""
    gates: dict[str, dict[str, str]] = {}
    evidence: list[str] = [f"trees/{stamp.key}"]
    cells: list[str] = []
    for name, res in results.items():
        shown = res
        if name in broken and row.role in {"known", "candidate"} and res.status != "not_applicable":
            shown = GateResult(name, "incomplete", broken[name]["class"], broken[name]["why"])
        gates[name] = {"status": shown.status, "class": shown.klass, "summary": shown.summary}
        # The row lists where to look: the tree, each gate's result file (which keeps the
        # gate's own evidence lines, e.g. budget samples) and the cell and run folders.
        evidence.append(f"results/{row.case}/{row.name}/{name}.json")
        evidence += [e for e in res.evidence if e.startswith(("cells/", "runs/", "scans/"))]
        cells += res.cells
    verdict, klass, detail = _decide(row, stamp, gates, controls or [])
    expect: dict[str, str | list[str]] | None = None
    problems: list[str] = []
    if row.expect is not None:
        expect = {
            "verdict": row.expect.verdict,
            **row.expect.gate_classes(),
        }
        if row.expect.row_class:
            expect["class"] = row.expect.row_class
        problems = _expect_problems(expect, verdict, klass, gates)
    return Verdict(
        case=row.case,
        patch=row.name,
        role=row.role,
        sha=row.sha,
        source=row.source,
        model=row.model,
        verdict=verdict,
        klass=klass,
        detail=detail,
        gates=gates,
        broken=broken,
        expect=expect,
        expect_problems=problems,
        identity=identity,
        evidence=sorted(set(evidence)),
        cells=sorted(cells),
    )


def _decide(
    row: Row, stamp: Stamp, gates: dict[str, dict[str, str]], controls: list[str]
) -> tuple[str, str, str]:
    """The row's verdict and class. Precedence: a harness fault in intake, then intake's
    rejection, an empty patch, diagnostic control; then the first gate that failed names
    the class, else the first that was incomplete, gates taken in registry order (`gates`
    holds them so: cxxgate/contract/registry.py BUILTIN, then third-party gates by name)."""
    if stamp.status == HARNESS_ERROR:
        return "incomplete", HARNESS_ERROR, stamp.detail
    if not stamp.applied:
        return "reject", stamp.status, stamp.detail
    if row.role in {"candidate", "known"} and not stamp.changed:
        return "reject", "empty_patch", stamp.detail or "the patch changes nothing"
    if controls:
        # Whatever the gates said, they said it with some warnings switched off.
        shown = "; ".join(controls[:8]) + (
            f"; and {len(controls) - 8} more" if len(controls) > 8 else ""
        )
        return (
            "reject",
            "diagnostic_control",
            "the compiled units' preprocessed output holds diagnostic control the reference's "
            f"did not, which would switch -Werror off for the patch's own code: {shown}",
        )
    statuses = {g: v["status"] for g, v in gates.items()}
    for status, word in (("fail", "reject"), ("incomplete", "incomplete")):
        hit = [g for g, s in statuses.items() if s == status]
        if hit:
            return word, gates[hit[0]]["class"], f"{hit[0]}: {gates[hit[0]]['summary']}"
    return "accept", "accept", ""


def _expect_problems(
    expect: dict[str, str | list[str]], verdict: str, klass: str, gates: dict[str, dict[str, str]]
) -> list[str]:
    problems = []
    if expect["verdict"] != verdict:
        problems.append(f"verdict {verdict!r}, expected {expect['verdict']!r}")
    if "class" in expect and expect["class"] != klass:
        problems.append(f"class {klass!r}, expected {expect['class']!r}")
    for gate, want in expect.items():
        if gate in {"verdict", "class"}:
            continue
        got = gates.get(gate, {}).get("class", "not run")
        if got not in ([want] if isinstance(want, str) else want):
            shown = repr(want) if isinstance(want, str) else f"one of {want!r}"
            problems.append(f"{gate} {got!r}, expected {shown}")
    return problems
