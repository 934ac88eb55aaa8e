"""Rows: the (case, patch) pairs a grade covers, from the case library and from a batch.

Every case contributes its reference state first (the empty patch, or its declared
reference patch plus the base tree for a bug-fix case). Then either its shipped patches
with their `expect`, or the candidate patches of a batch (`patches=PATH`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cxxgate.library.case import Case, Expect, patch_name
from cxxgate.store.layout import Layout
from cxxgate.util import atomic

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
# Row names every case already uses; a candidate never takes one of them.
RESERVED = frozenset({"reference", "base"})


def case_folder(instance_id: str) -> str:
    """The case an instance id names: characters a folder or a task name cannot hold
    become '_' (`org/repo:pr-1` -> `org_repo_pr-1`); `doit import` names folders so."""
    return _UNSAFE.sub("_", instance_id).strip("._") or "instance"


def safe_name(text: str) -> str:
    """A row name usable in task names and paths: no '/', ':', '=' or spaces."""
    return _UNSAFE.sub("_", text).strip("._") or "patch"


class _Names:
    """Candidate row names, unique per case and never a reserved one: a model called
    `reference`, or two files that differ only in characters a path cannot hold, get
    `~2`, `~3`, ... rather than replacing another row."""

    def __init__(self) -> None:
        self.taken: dict[str, set[str]] = {}

    def claim(self, case: str, wanted: str) -> str:
        taken = self.taken.setdefault(case, set(RESERVED))
        name, n = wanted, 1
        while name in taken:
            n += 1
            name = f"{wanted}~{n}"
        taken.add(name)
        return name


def batch_rows(
    source: Path, cases: Collection[str], layout: Layout
) -> tuple[list[Row], list[Orphan]]:
    """Candidate rows from a folder `<case>/<name>.diff` or a JSON Lines predictions file."""
    if source.is_dir():
        return _folder_rows(source, cases)
    return _jsonl_rows(source, cases, layout)


def _folder_rows(root: Path, cases: Collection[str]) -> tuple[list[Row], list[Orphan]]:
    rows: list[Row] = []
    orphans: list[Orphan] = []
    names = _Names()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root)
        if path.suffix not in {".diff", ".patch"}:
            continue
        if len(rel.parts) != 2:
            orphans.append(
                Orphan(
                    "?",
                    names.claim("?", safe_name(str(rel))),
                    "malformed_input",
                    f"{path}: expected the layout <case>/<name>.diff",
                )
            )
            continue
        case_id, name = rel.parts[0], names.claim(rel.parts[0], safe_name(path.stem))
        if case_id not in cases:
            orphans.append(
                Orphan(case_id, name, "unknown_case", f"{path}: no case {case_id!r} in the library")
            )
            continue
        rows.append(Row(case_id, name, "candidate", path, sha_of(path), str(path)))
    return rows, orphans


class _BadLine(ValueError):
    """A predictions line that cannot be graded; the message says why."""


_SHAPE = "expected a JSON object with instance_id, model_name_or_path, model_patch"


def _prediction(raw: bytes, first: bool) -> tuple[str, str, bytes]:
    """(case id, model, patch bytes) of one predictions line."""
    try:
        # utf-8-sig on the first line only: a BOM there is an editor's, not the data's.
        text = raw.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError as exc:
        msg = f"not UTF-8 text (byte {exc.start}: {raw[exc.start : exc.start + 1]!r})"
        raise _BadLine(msg) from exc
    try:
        entry = json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"not JSON ({exc.msg} at column {exc.colno}); {_SHAPE}"
        raise _BadLine(msg) from exc
    if not isinstance(entry, dict):
        msg = f"found a JSON {type(entry).__name__}; {_SHAPE}"
        raise _BadLine(msg)
    case_id, model = entry.get("instance_id"), entry.get("model_name_or_path") or "model"
    if "model_patch" not in entry and {"org", "repo", "number", "fix_patch"} <= entry.keys():
        # Multi-SWE-bench's patch files: {org, repo, number, fix_patch}, named as its
        # instances are (cxxgate/library/swe_import.py); its dataset records (which also carry
        # an instance_id) read the same way: their gold patches as predictions.
        if case_id is None:
            case_id = f"{entry['org']}__{entry['repo']}-{entry['number']}"
        entry = {**entry, "model_patch": entry["fix_patch"]}
    if not isinstance(case_id, str) or not isinstance(model, str) or "model_patch" not in entry:
        msg = f"instance_id and model_name_or_path must be strings; {_SHAPE}"
        raise _BadLine(msg)
    patch = entry["model_patch"]
    if patch is None:
        return case_id, model, b""  # no answer at all: graded as the empty patch
    if not isinstance(patch, str):
        # Not text: kept as its JSON form, so intake calls it malformed_patch.
        return case_id, model, json.dumps(patch).encode()
    try:
        return case_id, model, patch.encode()
    except UnicodeEncodeError as exc:
        # JSON can spell a lone surrogate (\ud800); no diff holds one.
        msg = f"model_patch holds a lone surrogate at character {exc.start}, not text"
        raise _BadLine(msg) from exc


def _jsonl_rows(
    file: Path, cases: Collection[str], layout: Layout
) -> tuple[list[Row], list[Orphan]]:
    """One row per line, decoded line by line: a bad line is its own malformed_input row
    and the rest of the batch grades. Lines end at b"\n" only (JSON text may hold U+2028,
    which str.splitlines would cut)."""
    rows: list[Row] = []
    orphans: list[Orphan] = []
    names = _Names()
    for lineno, raw in enumerate(file.read_bytes().split(b"\n"), 1):
        raw = raw.removesuffix(b"\r")
        if not raw.strip():
            continue
        where = f"{file}:{lineno}"
        try:
            case_id, model, data = _prediction(raw, lineno == 1)
        except _BadLine as exc:
            orphans.append(
                Orphan("?", names.claim("?", f"line{lineno}"), "malformed_input", f"{where}: {exc}")
            )
            continue
        if case_id not in cases:
            case_id = case_folder(case_id)  # an instance id as `doit import` names its case
        name = names.claim(case_id, safe_name(model))
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
        sha = hashlib.sha256(data).hexdigest()
        stored = layout.stored_patch(sha)
        if not stored.exists():
            stored.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_bytes(stored, data)  # content-addressed: never half a patch
        rows.append(Row(case_id, name, "candidate", stored, sha, where, model=model))
    return rows, orphans
