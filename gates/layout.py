"""Where every build output lives: one folder (default `.grade/`), never inside a case."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layout:
    root: Path

    def tree(self, key: str) -> Path:
        return self.root / "trees" / key

    def tree_stamp(self, key: str) -> Path:
        return self.root / "trees" / f"{key}.json"

    def cell(self, key: str) -> Path:
        return self.root / "cells" / key[:2] / key

    def run(self, key: str) -> Path:
        return self.root / "runs" / key[:2] / key

    def row(self, case: str, patch: str) -> Path:
        return self.root / "results" / case / patch

    def gate_result(self, case: str, patch: str, gate: str) -> Path:
        return self.row(case, patch) / f"{gate}.json"

    def verdict(self, case: str, patch: str) -> Path:
        return self.row(case, patch) / "verdict.json"

    def fold(self, case: str) -> Path:
        return self.root / "folds" / f"{case}.json"

    def stored_patch(self, sha: str) -> Path:
        return self.root / "patches" / f"{sha}.diff"

    @property
    def compiler_log(self) -> Path:
        """One line per compiler invocation; benchmarks and tests count them."""
        return self.root / "compiler-calls.log"

    @property
    def verdicts(self) -> Path:
        return self.root / "verdicts.jsonl"

    @property
    def table(self) -> Path:
        return self.root / "table.txt"

    @property
    def cell_record(self) -> Path:
        return self.root / "cells.txt"
