"""Patch intake, path guard and tree materialisation.

Decided before any gate runs: a patch that is not a diff, escapes the tree, carries a
binary hunk or a symlink is `malformed_patch`; one that touches a path outside the
case's writable set is `path_violation`; one that does not apply exactly (git apply:
context must match, no fuzz) is `patch_does_not_apply`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

import pathspec
from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

from gates import atomic, faults
from gates.layout import Layout

IntakeClass = Literal[
    "applied", "malformed_patch", "path_violation", "patch_does_not_apply", "harness_error"
]

_FORBIDDEN_MARKERS = {
    "GIT binary patch": "a binary hunk",
    "Binary files ": "a binary file change",
    "new file mode 120000": "a symlink",
    "new mode 120000": "a symlink",
}


@dataclass(frozen=True)
class Stamp:
    key: str
    status: IntakeClass
    detail: str
    changed: list[str] = field(default_factory=list)

    @property
    def applied(self) -> bool:
        return self.status == "applied"

    @classmethod
    def load(cls, path: Path) -> Stamp:
        data = json.loads(path.read_text())
        data.pop("applied", None)
        return cls(**data)


def guard(text: bytes, writable: list[str]) -> Stamp:
    """Check a patch without applying it; the stamp's key is filled in by the caller."""
    if not text.strip():
        return Stamp("", "applied", "empty patch: the base tree itself")
    try:
        body = text.decode("utf-8")
    except UnicodeDecodeError:
        return Stamp("", "malformed_patch", "not UTF-8 text, so not a unified diff")
    for marker, what in _FORBIDDEN_MARKERS.items():
        if marker in body:
            return Stamp("", "malformed_patch", f"the diff carries {what}, which is not accepted")
    try:
        patch = PatchSet(body)
    except UnidiffParseError as exc:
        return Stamp("", "malformed_patch", f"not a well-formed unified diff: {exc}")
    if len(patch) == 0:
        return Stamp("", "malformed_patch", "no file headers (---/+++) found: not a unified diff")
    touched: list[str] = []
    for pf in patch:
        for raw in (pf.source_file, pf.target_file):
            if raw == "/dev/null":
                continue
            problem, path = _tree_path(raw)
            if problem:
                return Stamp("", "malformed_patch", f"{raw!r}: {problem}")
            if path not in touched:
                touched.append(path)
    spec = pathspec.GitIgnoreSpec.from_lines(writable)
    outside = [p for p in touched if not spec.match_file(p)]
    if outside:
        return Stamp(
            "",
            "path_violation",
            f"touches paths outside the writable set {writable}: {', '.join(outside)}",
            touched,
        )
    return Stamp("", "applied", "", touched)


def _tree_path(raw: str) -> tuple[str, str]:
    path = raw.split("\t", 1)[0]
    if path.startswith(("a/", "b/")):
        path = path[2:]
    pure = PurePosixPath(path)
    if pure.is_absolute() or path.startswith("~"):
        return "absolute paths escape the tree", path
    if ".." in pure.parts:
        return "'..' escapes the tree", path
    if not path or path == ".":
        return "empty path", path
    return "", pure.as_posix()


def materialise(
    base: Path, patch_file: Path | None, writable: list[str], key: str, layout: Layout
) -> Stamp:
    """Copy the base tree, apply the patch strictly, and write the tree's stamp."""
    text = patch_file.read_bytes() if patch_file else b""
    stamp = guard(text, writable)
    target = layout.tree(key)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(target, ignore_errors=True)
    if stamp.applied:
        work = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=target.parent))
        tree = work / "tree"
        shutil.copytree(base, tree, symlinks=False)
        error = _apply(tree, text) if text.strip() else ""
        if error:
            stamp = Stamp("", "patch_does_not_apply", error, stamp.changed)
            shutil.rmtree(work)
            faults.raise_if_disk_full_said(error, target.parent)  # git could not write
        else:
            tree.rename(target)
            work.rmdir()
    stamp = Stamp(key, stamp.status, stamp.detail, stamp.changed)
    out = layout.tree_stamp(key)
    atomic.write_text(out, json.dumps({**asdict(stamp), "applied": stamp.applied}, indent=1) + "\n")
    return stamp


def _apply(tree: Path, text: bytes) -> str:
    # git apply never fuzzes: every context line must match. The ceiling keeps it from
    # finding the project's own repository above .grade/ and applying there.
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_CEILING_DIRECTORIES": str(tree.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(tree.parent),
        "LC_ALL": "C",
    }
    proc = subprocess.run(
        ["git", "apply", "--whitespace=nowarn", "-p1", "-"],
        input=text,
        cwd=tree,
        env=env,
        capture_output=True,
        check=False,
        timeout=60,
    )
    if proc.returncode != 0:
        return proc.stderr.decode(errors="replace").strip() or "git apply failed"
    return ""
