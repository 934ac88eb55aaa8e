"""Rows: the (case, patch) pairs a grade covers, from the case library and from a batch.

Every case contributes its reference state first (the empty patch, or its declared
reference patch plus the base tree for a bug-fix case). Then either its shipped patches
with their `expect`, or the candidate patches of a batch (`patches=PATH`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gates import atomic
from gates.case import Case, Expect, patch_name
from gates.layout import Layout

Role = Literal["reference", "base", "known", "candidate"]


@dataclass(frozen=True)
class Row:
    case: str
    name: str
    role: Role
    file: Path | None  # None: the empty patch
    sha: str
    source: str  # where the patch came from, for messages
    expect: Expect | None = None
    model: str | None = None

    @property
    def id(self) -> str:
        return f"{self.case}/{self.name}"


@dataclass(frozen=True)
class Orphan:
    """A batch entry that cannot be graded: unknown case, unreadable line."""

    case: str
    name: str
    klass: str
    detail: str
    model: str | None = None


EMPTY_SHA = hashlib.sha256(b"").hexdigest()


def sha_of(path: Path | None) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path else EMPTY_SHA


def case_rows(case: Case, with_known: bool) -> list[Row]:
    rows: list[Row] = []
    ref = case.spec.reference
    if ref is None:
        rows.append(Row(case.id, "reference", "reference", None, EMPTY_SHA, "base tree"))
    else:
        path = case.dir / ref
        rows.append(Row(case.id, "reference", "reference", path, sha_of(path), str(path)))
        rows.append(Row(case.id, "base", "base", None, EMPTY_SHA, "base tree"))
    if with_known:
        for known in case.spec.patches:
            path = case.dir / known.file
            rows.append(
                Row(
                    case.id,
                    patch_name(known),
                    "known",
                    path,
                    sha_of(path),
                    str(path),
                    expect=known.expect,
                )
            )
    return rows


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str) -> str:
    """A row name usable in task names and paths: no '/', ':', '=' or spaces."""
    return _UNSAFE.sub("_", text).strip("._") or "patch"


def batch_rows(
    source: Path, cases: dict[str, Case], layout: Layout
) -> tuple[list[Row], list[Orphan]]:
    """Candidate rows from a folder `<case>/<name>.diff` or a JSON Lines predictions file."""
    if source.is_dir():
        return _folder_rows(source, cases)
    return _jsonl_rows(source, cases, layout)


def _folder_rows(root: Path, cases: dict[str, Case]) -> tuple[list[Row], list[Orphan]]:
    rows: list[Row] = []
    orphans: list[Orphan] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root)
        if path.suffix not in {".diff", ".patch"}:
            continue
        if len(rel.parts) != 2:
            orphans.append(
                Orphan(
                    "?",
                    safe_name(str(rel)),
                    "malformed_input",
                    f"{path}: expected the layout <case>/<name>.diff",
                )
            )
            continue
        case_id, name = rel.parts[0], safe_name(path.stem)
        if case_id not in cases:
            orphans.append(
                Orphan(case_id, name, "unknown_case", f"{path}: no case {case_id!r} in the library")
            )
            continue
        rows.append(Row(case_id, name, "candidate", path, sha_of(path), str(path)))
    return rows, orphans


def _jsonl_rows(
    file: Path, cases: dict[str, Case], layout: Layout
) -> tuple[list[Row], list[Orphan]]:
    rows: list[Row] = []
    orphans: list[Orphan] = []
    seen: Counter[tuple[str, str]] = Counter()
    for lineno, line in enumerate(file.read_text().splitlines(), 1):
        if not line.strip():
            continue
        where = f"{file}:{lineno}"
        try:
            entry = json.loads(line)
            case_id = entry["instance_id"]
            model = entry.get("model_name_or_path") or "model"
            patch = entry["model_patch"]
            if not isinstance(case_id, str) or not isinstance(model, str):
                raise TypeError("instance_id and model_name_or_path must be strings")
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            orphans.append(
                Orphan(
                    "?",
                    f"line{lineno}",
                    "malformed_input",
                    f"{where}: expected a JSON object with instance_id, "
                    f"model_name_or_path, model_patch ({exc})",
                )
            )
            continue
        base = safe_name(model)
        seen[(case_id, base)] += 1
        name = base if seen[(case_id, base)] == 1 else f"{base}~{seen[(case_id, base)]}"
        if case_id not in cases:
            orphans.append(
                Orphan(
                    case_id,
                    name,
                    "unknown_case",
                    f"{where}: no case {case_id!r} in the library",
                    model,
                )
            )
            continue
        if patch is None:
            data = b""  # no answer at all: graded as the empty patch
        elif isinstance(patch, str):
            data = patch.encode()
        else:
            data = repr(patch).encode()  # not text: kept so the intake calls it malformed
        sha = hashlib.sha256(data).hexdigest()
        stored = layout.stored_patch(sha)
        if not stored.exists():
            stored.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_bytes(stored, data)  # content-addressed: never half a patch
        rows.append(Row(case_id, name, "candidate", stored, sha, where, model=model))
    return rows, orphans
