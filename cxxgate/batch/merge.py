"""Shards: `doit grade shard=I/N` grades a slice of the cases into its own build folder and
writes, beside its verdicts.jsonl, `grade.json` (input errors, orphans, the shard);
`doit merge from=DIR,DIR,...` folds the shards back into one grade: the same verdicts.jsonl,
table, JUnit file and exit status as one machine grading the whole batch, and one history
entry. Every shard of the same N must be there exactly once.

A shard's grade.json carries, per row, the sha256 of the row's JSON and of each evidence
file it lists (the tree stamp, the gate results, the verdict file, the cell, run and scan
result files). `doit merge` recomputes them and refuses a shard whose row or evidence
changed since it was graded, naming shard, case and patch; it refuses a case graded by
two shards (rows that repeat, or contradict, another shard's). The digests travel with
the rows: they catch a row edited alone, or evidence that does not belong to it, not an
author who recomputes grade.json too (that needs a key the shard's host does not hold).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cxxgate.library.rows import Orphan
from cxxgate.store.layout import Layout
from cxxgate.util import atomic
from cxxgate.verdicts.verdict import Verdict


class MergeError(Exception):
    """Shard folders that cannot be merged: the message names the folder and why."""


def write_inputs(
    layout: Layout,
    orphans: list[Orphan],
    errors: list[str],
    report_only: bool,
    shard: tuple[int, int] | None,
    verdicts: list[Verdict] | None = None,
    manifest: dict[str, object] | None = None,
) -> None:
    data = {
        "manifest": manifest,
        "errors": errors,
        "orphans": [asdict(o) for o in orphans],
        "report_only": report_only,
        "shard": list(shard) if shard else None,
        "rows": {f"{v.case}/{v.patch}": digests(layout, v.to_json()) for v in verdicts or []},
    }
    atomic.write_text(layout.grade_inputs, json.dumps(data, indent=1, sort_keys=True) + "\n")


def digests(layout: Layout, row: dict[str, object]) -> dict[str, object]:
    """sha256 of a row's JSON (as verdicts.jsonl spells it) and of its evidence files."""
    files: dict[str, str] = {}
    for rel in _evidence_files(row):
        path = layout.root / rel
        files[rel] = _sha(path.read_bytes()) if path.is_file() else "missing"
    return {"row": _sha(json.dumps(row, sort_keys=True).encode()), "evidence": files}


def _evidence_files(row: dict[str, object]) -> list[str]:
    """The files behind a row's evidence entries: a tree's stamp, a cell's, run's or scan's
    result file, a gate's result file as it is, and the row's own verdict file."""
    out = [f"results/{row['case']}/{row['patch']}/verdict.json"]
    evidence = row.get("evidence")
    for entry in evidence if isinstance(evidence, list) else []:
        entry = str(entry)
        if entry.startswith("trees/"):
            out.append(f"{entry}.json")
        elif entry.startswith(("cells/", "runs/", "scans/")):
            out.append(f"{entry}/result.json")
        else:
            out.append(entry)
    return sorted(set(out))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_row(folder: Path, index: int, count: int, row: dict[str, object], kept: object) -> None:
    """The row and its evidence as the shard graded them, or MergeError naming both."""
    name = f"{folder}: shard {index}/{count}, case {row.get('case')!r}, patch {row.get('patch')!r}"
    if not isinstance(kept, dict):
        raise MergeError(f"{name}: grade.json holds no digest for this row")
    if _sha(json.dumps(row, sort_keys=True).encode()) != kept.get("row"):
        raise MergeError(f"{name}: the row differs from the one graded (verdicts.jsonl edited)")
    now = digests(Layout(folder), row)["evidence"]
    if now != kept.get("evidence"):
        assert isinstance(now, dict)
        was = kept.get("evidence") if isinstance(kept.get("evidence"), dict) else {}
        assert isinstance(was, dict)
        changed = sorted(k for k in now.keys() | was.keys() if now.get(k) != was.get(k))
        raise MergeError(f"{name}: evidence differs from what was graded: {', '.join(changed)}")


def _check_manifest(
    folder: Path,
    index: int,
    count: int,
    manifest: object,
    first: tuple[Path, int, dict[str, Any]] | None,
) -> dict[str, Any]:
    """The shard's batch manifest, the same as the first shard's, or MergeError naming the
    shard and what differs."""
    name = f"{folder}: shard {index}/{count}"
    if not isinstance(manifest, dict) or not isinstance(manifest.get("batch"), list):
        raise MergeError(
            f"{name}: grade.json holds no batch manifest (graded by an older cxxgate?)"
        )
    if first is None or first[2] == manifest:
        return manifest
    other, at, theirs = first
    keys = sorted(k for k in manifest.keys() | theirs.keys() if manifest.get(k) != theirs.get(k))
    said = []
    for key in keys:
        if key == "batch":
            mine = {tuple(e) for e in manifest["batch"]}
            them = {tuple(e) for e in theirs.get("batch", [])}
            only = sorted(mine - them)[:3] + sorted(them - mine)[:3]
            said.append(f"batch (differing entries: {only})")
        else:
            said.append(f"{key} ({manifest.get(key)!r} vs {theirs.get(key)!r})")
    raise MergeError(
        f"{name} graded another batch than shard {at}/{count} ({other}): {'; '.join(said)}"
    )


def _check_in_batch(
    folder: Path, index: int, count: int, row: dict[str, Any], batch: set[tuple[str, ...]]
) -> None:
    """A candidate row's patch is the one the manifest lists; a case's own rows (reference,
    known patches) are files of its folder, which the manifest's library digest covers."""
    name = f"{folder}: shard {index}/{count}, case {row.get('case')!r}, patch {row.get('patch')!r}"
    entry = (row.get("case"), row.get("patch"), row.get("sha"))
    if row.get("role") == "candidate" and entry not in batch:
        raise MergeError(f"{name}: sha {row.get('sha')} is not in the batch manifest")


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
    graded_by: dict[str, tuple[int, Path]] = {}  # case -> the shard whose rows it has
    first: tuple[Path, int, dict[str, Any]] | None = None  # the manifest the others must match
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
        kept = inputs.get("rows")
        if not isinstance(kept, dict):
            raise MergeError(
                f"{folder}: grade.json holds no row digests (graded by an older cxxgate?)"
            )
        manifest = _check_manifest(folder, index, count, inputs.get("manifest"), first)
        first = first or (folder, index, manifest)
        batch = {tuple(entry) for entry in manifest["batch"]}
        seen: set[str] = set()
        for line in lines:
            row = json.loads(line)
            if (row["case"], row["patch"]) in orphaned:
                continue
            ident = f"{row['case']}/{row['patch']}"
            if ident in seen:
                raise MergeError(f"{folder}: shard {index}/{count} holds {ident} twice")
            seen.add(ident)
            _check_row(folder, index, count, row, kept.get(ident))
            _check_in_batch(folder, index, count, row, batch)
            other = graded_by.setdefault(row["case"], (index, folder))
            if other[0] != index:
                raise MergeError(
                    f"case {row['case']!r} graded by two shards: {other[0]}/{count} "
                    f"({other[1]}) and {index}/{count} ({folder}, patch {row['patch']!r})"
                )
            verdicts.append(Verdict.from_json(row))
        gone = sorted(set(kept) - seen - {f"{c}/{p}" for c, p in orphaned})
        if gone:
            raise MergeError(f"{folder}: rows graded but missing from verdicts.jsonl: {gone}")
    if len(counts) != 1:
        raise MergeError(f"shards of different N: {sorted(counts)} ({', '.join(map(str, dirs))})")
    (count,) = counts
    missing = sorted(set(range(1, count + 1)) - shards.keys())
    if missing:
        raise MergeError(f"missing shard(s) {', '.join(f'{i}/{count}' for i in missing)}")
    return verdicts, list(orphans.values()), list(errors)
