"""Where every build output lives: one folder (default `.grade/`), never inside a case.

Paths are built from one formatted string each: planning a batch of thousands of
patches asks for hundreds of thousands of them, and pathlib's per-segment joins showed up
as the largest cost of loading the task graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layout:
    root: Path

    def _at(self, rel: str) -> Path:
        return Path(f"{self.root}/{rel}")

    def tree(self, key: str) -> Path:
        return self._at(f"trees/{key}")

    def tree_stamp(self, key: str) -> Path:
        return self._at(f"trees/{key}.json")

    def cell(self, key: str) -> Path:
        return self._at(f"cells/{key[:2]}/{key}")

    def run(self, key: str) -> Path:
        return self._at(f"runs/{key[:2]}/{key}")

    def scan(self, key: str) -> Path:
        return self._at(f"scans/{key[1:3]}/{key}")

    def scan_result(self, key: str) -> Path:
        return self._at(f"scans/{key[1:3]}/{key}/result.json")

    def cell_result(self, key: str) -> Path:
        return self._at(f"cells/{key[:2]}/{key}/result.json")

    def run_result(self, key: str) -> Path:
        return self._at(f"runs/{key[:2]}/{key}/result.json")

    def gate_result(self, case: str, patch: str, gate: str) -> Path:
        return self._at(f"results/{case}/{patch}/{gate}.json")

    def verdict(self, case: str, patch: str) -> Path:
        return self._at(f"results/{case}/{patch}/verdict.json")

    def fold(self, case: str) -> Path:
        return self._at(f"folds/{case}.json")

    def prompt(self, case: str) -> Path:
        return self._at(f"prompts/{case}.md")

    def stored_patch(self, sha: str) -> Path:
        return self._at(f"patches/{sha}.diff")

    @property
    def compiler_log(self) -> Path:
        """One line per compiler invocation; benchmarks and tests count them."""
        return self.root / "compiler-calls.log"

    @property
    def history(self) -> Path:
        return self.root / "history.sqlite3"

    @property
    def run_log(self) -> Path:
        """One line per execution of a built binary (candidate, reference, probe)."""
        return self.root / "runs.log"

    @property
    def grade_inputs(self) -> Path:
        """What a grade reported besides its rows (input errors, orphans): `doit merge`
        reads it from each shard."""
        return self.root / "grade.json"

    @property
    def seed(self) -> Path:
        """The build folder's batch seed (cxxgate/library/settings.py)."""
        return self.root / "seed"

    @property
    def verdicts(self) -> Path:
        return self.root / "verdicts.jsonl"

    @property
    def junit(self) -> Path:
        return self.root / "junit.xml"

    @property
    def table(self) -> Path:
        return self.root / "table.txt"

    @property
    def cell_record(self) -> Path:
        return self.root / "cells.txt"

    @property
    def report_md(self) -> Path:
        return self.root / "report.md"

    @property
    def report_html(self) -> Path:
        return self.root / "report.html"

    @property
    def findings_sarif(self) -> Path:
        return self.root / "findings.sarif"
