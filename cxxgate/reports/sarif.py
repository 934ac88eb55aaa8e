"""`findings.sarif`: the grade's findings that have a file and line, as SARIF 2.1.0, so
code-scanning tools can show them on the diff.

One run, tool `cxxgate`; one rule per (gate, class) met, id `<gate>/<class>`; one result per
finding of every row. Paths are relative to the patched tree, against the base id
`SRCROOT` (the checkout the patch applies to: a CI job maps it to its own working copy).
Each result says which row and gate it came from in its properties; a finding whose line
is unknown (0) carries no region.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cxxgate.util import atomic
from cxxgate.verdicts.evidence import Evidence

SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
BASE = "SRCROOT"
_TOOL_URI = "https://pypi.org/project/cxxgate/"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cxxgate")
    except PackageNotFoundError:
        return "0"


def render(rows: list[dict[str, Any]], evidence: Evidence) -> dict[str, Any]:
    rules: dict[str, int] = {}
    results = []
    for row in rows:
        for gate, f in evidence.findings(row):
            rule = f"{gate}/{f.rule}"
            index = rules.setdefault(rule, len(rules))
            location: dict[str, Any] = {"artifactLocation": {"uri": f.path, "uriBaseId": BASE}}
            if f.line > 0:
                region = {"startLine": f.line}
                if f.column > 0:
                    region["startColumn"] = f.column
                location["region"] = region
            status = row["gates"].get(gate, {}).get("status", "")
            results.append(
                {
                    "ruleId": rule,
                    "ruleIndex": index,
                    "level": "error" if status == "fail" else "note",
                    "message": {"text": f.message},
                    "locations": [{"physicalLocation": location}],
                    "properties": {
                        "case": row["case"],
                        "patch": row["patch"],
                        "role": row["role"],
                        "verdict": row["verdict"],
                    },
                }
            )
    driver = {
        "name": "cxxgate",
        "version": _version(),
        "informationUri": _TOOL_URI,
        "rules": [
            {"id": rule, "name": rule.split("/", 1)[1], "shortDescription": {"text": rule}}
            for rule in rules
        ],
    }
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": driver},
                "originalUriBaseIds": {
                    BASE: {"description": {"text": "the tree the patch applies to"}}
                },
                "results": results,
            }
        ],
    }


def write(path: Path, rows: list[dict[str, Any]], evidence: Evidence) -> None:
    atomic.write_text(path, json.dumps(render(rows, evidence), indent=1, sort_keys=True) + "\n")
