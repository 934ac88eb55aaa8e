"""`<out>/swe_report.json` and the resolved-rate line: a grade of cases with a `tests`
gate (SWE-bench style, `doit import`) as the benchmarks report it, so a result can be
set beside theirs.

Per instance (a case; with several candidates for one case, each `case/patch`), in the
shape of Multi-SWE-bench's report.json: `resolved` (the `tests` gate accepted: every
fail-to-pass and pass-to-pass test passed), the gate's class, and test maps
`f2p_tests`, `p2p_tests` and `fixed_tests` (the fail-to-pass tests that now pass), each
test as `{run, test, fix}` with PASS / FAIL / SKIP / NONE: `test` on the base tree with
the test patch, `fix` on the graded patch with it; `run` (the base without the test
patch) is not built by the gate, so NONE. At the top, like their final report:
`total_instances`, `resolved_instances`, `unresolved_instances`, `resolved_ids`,
`unresolved_ids`. Beside the benchmark's fields, `proof`: per passing test, what showed
it ran (`GoogleTest report`, `Catch2 report`, `doctest report`, `exit status`, `ctest`).

The rows reported are the candidates (the predictions); a grade without candidates
reports each case's reference (its gold patch), which is what a check of the dataset
itself wants.
"""

from __future__ import annotations

import json
from typing import Any

from cxxgate.store.layout import Layout
from cxxgate.util import atomic
from cxxgate.verdicts.verdict import Verdict

GATE = "tests"
FILE = "swe_report.json"


def _status(check: dict[str, Any] | None) -> str:
    if check is None:
        return "NONE"
    if check.get("ok"):
        return "PASS"
    if check.get("class") == "test_missing":
        return "SKIP" if check.get("detail") == "skipped" else "NONE"
    if check.get("detail") == "not built":  # the tree did not build: the test never ran
        return "NONE"
    return "FAIL"


def _proof(check: dict[str, Any]) -> str:
    """What a passing test's check had as proof (cxxgate/gates/tests.py spells it in the
    detail): `<framework> report`, `exit status`, or `ctest` (its word alone)."""
    detail = str(check.get("detail", ""))
    if not check.get("ok"):
        return ""
    if "(proof: exit status only" in detail:
        return "exit status"
    said = detail.partition("(proof: ")[2]
    return said.partition(":")[0] if " report" in said.partition(":")[0] else "ctest"


def _checks(layout: Layout, case: str, patch: str) -> dict[str, dict[str, Any]]:
    """The `tests` gate's checks of one row, by test name (none when not stored here)."""
    path = layout.gate_result(case, patch, GATE)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(c["name"]): c for c in data.get("checks", []) if isinstance(c, dict)}


def instance(layout: Layout, row: Verdict, base: Verdict | None) -> dict[str, Any]:
    gate = row.gates.get(GATE, {})
    resolved = gate.get("status") == "pass" and gate.get("class") == "accept"
    fixed = _checks(layout, row.case, row.patch)
    before = _checks(layout, base.case, base.patch) if base is not None else {}
    f2p: dict[str, dict[str, str]] = {}
    p2p: dict[str, dict[str, str]] = {}
    proofs: dict[str, str] = {}
    for name, check in fixed.items():
        if check.get("class") == "path_violation" or name in {"build", "test_files"}:
            continue  # the gate's own checks, not tests
        entry = {"run": "NONE", "test": _status(before.get(name)), "fix": _status(check)}
        (f2p if check.get("fail_to_pass") else p2p)[name] = entry
        if _proof(check):
            proofs[name] = _proof(check)
    return {
        "case": row.case,
        "patch": row.patch,
        "model": row.model,
        "resolved": resolved,
        "class": gate.get("class", row.klass),
        "fixed_tests": {n: t for n, t in f2p.items() if t["fix"] == "PASS"},
        "f2p_tests": f2p,
        "p2p_tests": p2p,
        "s2p_tests": {},
        "n2p_tests": {},
        # Per passing test, what proved it ran: a framework's report or the exit status.
        "proof": proofs,
    }


def write(layout: Layout, verdicts: list[Verdict]) -> str:
    """Write swe_report.json when some row has a `tests` gate; the line to print ("" when
    none has)."""
    graded = [v for v in verdicts if GATE in v.gates]
    if not graded:
        return ""
    rows = [v for v in graded if v.role == "candidate"] or [
        v for v in graded if v.role == "reference"
    ]
    bases = {v.case: v for v in graded if v.role == "base"}
    per_case: dict[str, int] = {}
    for v in rows:
        per_case[v.case] = per_case.get(v.case, 0) + 1
    instances = {}
    for v in rows:
        ident = v.case if per_case[v.case] == 1 else f"{v.case}/{v.patch}"
        instances[ident] = instance(layout, v, bases.get(v.case))
    resolved = sorted(i for i, r in instances.items() if r["resolved"])
    unresolved = sorted(i for i, r in instances.items() if not r["resolved"])
    report = {
        "total_instances": len(instances),
        "resolved_instances": len(resolved),
        "unresolved_instances": len(unresolved),
        "resolved_ids": resolved,
        "unresolved_ids": unresolved,
        "instances": instances,
    }
    path = layout.root / FILE
    atomic.write_text(path, json.dumps(report, indent=1, sort_keys=True) + "\n")
    rate = 100.0 * len(resolved) / len(instances)
    what = "candidates" if rows[0].role == "candidate" else "references"
    return (
        f"resolved: {len(resolved)}/{len(instances)} ({rate:.1f}%) of the {what}; "
        f"per instance in {path}\n"
    )
