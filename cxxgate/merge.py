"""Shards: `doit grade shard=I/N` grades a slice of the cases into its own build folder and
writes, beside its verdicts.jsonl, `grade.json` (input errors, orphans, the shard);
`doit merge from=DIR,DIR,...` folds the shards back into one grade: the same verdicts.jsonl,
table, JUnit file and exit status as one machine grading the whole batch, and one history
entry. Every shard of the same N must be there exactly once.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from cxxgate import atomic
from cxxgate.layout import Layout
from cxxgate.rows import Orphan
from cxxgate.verdict import Verdict


class MergeError(Exception):
    """Shard folders that cannot be merged: the message names the folder and why."""


def write_inputs(
    layout: Layout,
    orphans: list[Orphan],
    errors: list[str],
    report_only: bool,
    shard: tuple[int, int] | None,
) -> None:
    data = {
        "errors": errors,
        "orphans": [asdict(o) for o in orphans],
        "report_only": report_only,
        "shard": list(shard) if shard else None,
    }
    atomic.write_text(layout.grade_inputs, json.dumps(data, indent=1, sort_keys=True) + "\n")


def read(dirs: tuple[Path, ...]) -> tuple[list[Verdict], list[Orphan], list[str]]:
    """The rows, orphans and input errors of every shard; what every shard reports alike
    (an unknown case, a global input error) once."""
    if not dirs:
        raise MergeError("doit merge: name the shard folders: from=DIR,DIR,...")
    verdicts: list[Verdict] = []
    orphans: dict[tuple[str, str, str], Orphan] = {}
    errors: dict[str, None] = {}
    shards: dict[int, Path] = {}
    counts: set[int] = set()
    for folder in dirs:
        layout = Layout(folder)
        try:
            inputs = json.loads(layout.grade_inputs.read_text())
            lines = layout.verdicts.read_text().splitlines()
        except (OSError, ValueError) as exc:
            raise MergeError(f"{folder}: not a finished grade ({exc})") from exc
        if inputs["shard"] is None:
            raise MergeError(f"{folder}: not a shard (graded without shard=I/N)")
        index, count = inputs["shard"]
        if index in shards:
            raise MergeError(f"{folder}: shard {index}/{count} given twice (also {shards[index]})")
        shards[index] = folder
        counts.add(count)
        for o in inputs["orphans"]:
            orphan = Orphan(**o)
            orphans.setdefault((orphan.case, orphan.name, orphan.klass), orphan)
        errors.update(dict.fromkeys(inputs["errors"]))
        orphaned = {(o["case"], o["name"]) for o in inputs["orphans"]}
        for line in lines:
            row = json.loads(line)
            if (row["case"], row["patch"]) not in orphaned:
                verdicts.append(Verdict.from_json(row))
    if len(counts) != 1:
        raise MergeError(f"shards of different N: {sorted(counts)} ({', '.join(map(str, dirs))})")
    (count,) = counts
    missing = sorted(set(range(1, count + 1)) - shards.keys())
    if missing:
        raise MergeError(f"missing shard(s) {', '.join(f'{i}/{count}' for i in missing)}")
    return verdicts, list(orphans.values()), list(errors)
