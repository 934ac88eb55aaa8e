"""Patch intake, path guard and tree materialisation.

Decided before any gate runs, from what `git apply` itself reads in the patch bytes:

- `malformed_patch`: not a diff (git finds no patch in it); a path that escapes the tree
  or lacks the a/ or b/ prefix `-p1` strips; a binary hunk; a file mode whose type is not
  a regular file's, however spelt (symlink, gitlink); a symlink or special file in the
  applied tree.
- `path_violation`: a path added, removed, renamed, copied to, or whose bytes or mode
  changed, outside the case's writable set.
- `patch_does_not_apply`: git apply refuses it (context must match, no fuzz).
- `diagnostic_control`, from the text: a changed file gains a directive that controls
  diagnostics (cxxgate/intake/pragmas.py), which would switch -Werror off for the patch's own
  code. The text scan only adds findings (directives in code the preprocessor skipped,
  spellings g++ does not know, typed line markers); what each compile really got is
  decided from the compile cells' own preprocessed output, in the verdict fold
  (cxxgate/cells/preprocessed.py). A case allows them with `allow_diagnostic_pragmas: true`.

A patch that applies but changes no file's bytes (a mode only, say) applies with no
changed paths, and the verdict fold calls it `empty_patch`. A diff whose every line ends
in CRLF is normalised to LF first (the stamp says so). The guard runs twice: on git's
own listing of the paths before applying (`git apply --numstat`, forward and reversed,
so a rename or copy gives both of its paths), and on the applied tree compared with the
base tree, read with lstat: the authoritative list of what changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

import pathspec

from cxxgate.intake import pragmas
from cxxgate.intake.patchtext import header_problem, mode_problem, normalise
from cxxgate.results import faults
from cxxgate.store.layout import Layout
from cxxgate.util import atomic

IntakeClass = Literal[
    "applied",
    "malformed_patch",
    "path_violation",
    "patch_does_not_apply",
    "diagnostic_control",
    "harness_error",
]


@dataclass(frozen=True)
class Stamp:
    key: str
    status: IntakeClass
    detail: str
    # Applied: the paths whose content the patch changed (added, removed, other bytes),
    # from the applied tree. Refused: the paths git says the patch touches.
    changed: list[str] = field(default_factory=list)

    @property
    def applied(self) -> bool:
        return self.status == "applied"

    @classmethod
    def load(cls, path: Path) -> Stamp:
        data = json.loads(path.read_text())
        data.pop("applied", None)
        return cls(**data)


def git_env(scratch: Path) -> dict[str, str]:
    """The environment of a git call of the harness: no repository above `scratch`, no
    user or system config."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_CEILING_DIRECTORIES": str(scratch),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "HOME": str(scratch),
        "LC_ALL": "C",
    }


class _Git:
    """git apply below a scratch folder: no repository above it, no user or system config."""

    def __init__(self, scratch: Path) -> None:
        # The ceiling keeps git from finding the project's own repository above .grade/:
        # there it would apply to the repository, and list only the paths under its
        # current folder. git honours a ceiling only above the folder it runs in, so
        # every call runs in a folder below the scratch (this one, or the tree).
        self.listing = scratch / "listing"
        self.listing.mkdir(exist_ok=True)
        self.env = git_env(scratch)

    def apply(self, args: list[str], text: bytes, cwd: Path) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            ["git", "apply", *args, "-p1", "-"],
            input=text,
            cwd=cwd,
            env=self.env,
            capture_output=True,
            check=False,
            timeout=60,
        )


def guard(text: bytes, writable: list[str]) -> Stamp:
    """Check a patch without applying it; the stamp's key is filled in by the caller."""
    with tempfile.TemporaryDirectory(prefix="cxxgate-intake.") as scratch:
        return _guard(_Git(Path(scratch)), text, writable)


def _guard(git: _Git, text: bytes, writable: list[str]) -> Stamp:
    if not text.strip():
        return Stamp("", "applied", "empty patch: the base tree itself")
    text, note = normalise(text)
    listing = git.apply(["--numstat", "--summary", "-z"], text, git.listing)
    if listing.returncode != 0:
        said = _said(listing) or "git apply found no patch in it"
        return Stamp("", "malformed_patch", f"not a diff git can read: {said}")
    problem = header_problem(text)
    if problem:
        return Stamp("", "malformed_patch", problem)
    reverse = git.apply(["--numstat", "-z", "-R"], text, git.listing)
    if reverse.returncode != 0:
        return Stamp("", "malformed_patch", f"not a diff git can reverse: {_said(reverse)}")
    problem, touched = _listed_paths(listing.stdout, reverse.stdout)
    if problem:
        return Stamp("", "malformed_patch", problem)
    outside = _outside(touched, writable)
    if outside:
        return Stamp(
            "",
            "path_violation",
            f"touches paths outside the writable set {writable}: {', '.join(outside)}",
            touched,
        )
    return Stamp("", "applied", note, touched)


def _said(proc: subprocess.CompletedProcess[bytes]) -> str:
    lines = proc.stderr.decode("utf-8", errors="replace").strip().splitlines()
    return "; ".join(lines[:3])


def _listed_paths(forward: bytes, reverse: bytes) -> tuple[str, list[str]]:
    """Paths from `git apply --numstat -z` read forward (each file's new name) and reversed
    (its old name), and the modes `--summary` names."""
    touched: list[str] = []
    for listing in (forward, reverse):
        for record in listing.split(b"\0"):
            if b"\t" not in record:
                continue  # the --summary text follows the last record
            added, _, raw = record.split(b"\t", 2)
            if added == b"-":
                return "the diff carries a binary hunk, which is not accepted", []
            problem, path = _tree_path(raw)
            if problem:
                return f"{raw.decode('utf-8', errors='backslashreplace')!r}: {problem}", []
            if path not in touched:
                touched.append(path)
    summary = forward.rsplit(b"\0", 1)[-1].decode("utf-8", errors="replace")
    for word in re.findall(r"mode (?:change )?([0-7]+)(?: => ([0-7]+))?", summary):
        for mode in filter(None, word):
            problem = mode_problem(int(mode, 8))
            if problem:
                return f"git apply --summary: {problem}", []
    return "", touched


def _tree_path(raw: bytes) -> tuple[str, str]:
    try:
        path = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "the path is not UTF-8", ""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        return "the path holds a control character", path
    pure = PurePosixPath(path)
    if pure.is_absolute() or path.startswith("~"):
        return "absolute paths escape the tree", path
    if ".." in pure.parts:
        return "'..' escapes the tree", path
    if not path or pure.as_posix() == ".":
        return "empty path", path
    return "", pure.as_posix()


def _outside(paths: list[str], writable: list[str]) -> list[str]:
    spec = pathspec.GitIgnoreSpec.from_lines(writable)
    return [p for p in paths if not spec.match_file(p)]


def materialise(
    base: Path,
    patch_file: Path | None,
    writable: list[str],
    key: str,
    layout: Layout,
    allow_diagnostic_pragmas: bool = False,
    prepare: Callable[[Path], object] | None = None,
) -> Stamp:
    """Copy the base tree, apply the patch strictly, check what changed, and write the
    tree's stamp. `prepare`, when given, edits the copy before the patch is applied."""
    text = patch_file.read_bytes() if patch_file else b""
    target = layout.tree(key)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(target, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=target.parent))
    try:
        stamp = _materialise(base, text, writable, work, allow_diagnostic_pragmas, prepare)
        if stamp.applied:
            (work / "tree").rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    stamp = Stamp(key, stamp.status, stamp.detail, stamp.changed)
    out = layout.tree_stamp(key)
    atomic.write_text(out, json.dumps({**asdict(stamp), "applied": stamp.applied}, indent=1) + "\n")
    return stamp


def _materialise(
    base: Path,
    text: bytes,
    writable: list[str],
    work: Path,
    allow_pragmas: bool,
    prepare: Callable[[Path], object] | None,
) -> Stamp:
    git = _Git(work)
    stamp = _guard(git, text, writable)
    if not stamp.applied:
        return stamp
    tree = work / "tree"
    copy_tree(base, tree)
    if prepare is not None:
        prepare(tree)
    if not text.strip():
        return stamp
    before = _snapshot(tree)
    proc = git.apply(["--whitespace=nowarn"], normalise(text)[0], tree)
    if proc.returncode != 0:
        said = proc.stderr.decode("utf-8", errors="replace").strip() or "git apply failed"
        faults.raise_if_disk_full_said(said, work)  # git could not write: not the patch's fault
        return Stamp("", "patch_does_not_apply", said, stamp.changed)
    return _judge(base, before, _snapshot(tree), tree, writable, stamp, allow_pragmas)


def _judge(
    base: Path,
    before: dict[str, _Entry],
    after: dict[str, _Entry],
    tree: Path,
    writable: list[str],
    stamp: Stamp,
    allow_pragmas: bool,
) -> Stamp:
    """What the patch really did, from the trees: the authoritative guard."""
    odd = sorted(p for p, e in after.items() if e.kind != "file")
    if odd:
        shown = ", ".join(f"{p} ({after[p].kind})" for p in odd)
        return Stamp("", "malformed_patch", f"the applied tree holds {shown}", odd)
    changed = sorted(
        p
        for p in before.keys() | after.keys()
        if p not in before or p not in after or before[p].digest != after[p].digest
    )
    moded = sorted(
        p for p in before.keys() & after.keys() if before[p].executable != after[p].executable
    )
    outside = _outside(sorted(set(changed) | set(moded)), writable)
    if outside:
        return Stamp(
            "",
            "path_violation",
            f"changes paths outside the writable set {writable}: {', '.join(outside)}",
            outside,
        )
    if not allow_pragmas:
        extra = pragmas.added(
            {p: (base / p).read_bytes() for p in changed if p in before},
            {p: (tree / p).read_bytes() for p in changed if p in after},
        )
        found = [f"{path}:{d.line}: {d.shown}" for path, d in extra]
        if found:
            return Stamp(
                "",
                "diagnostic_control",
                "the patch adds diagnostic-control directives, which would switch -Werror "
                f"off for its own code: {'; '.join(found)}",
                changed,
            )
    detail = stamp.detail
    if not changed:
        what = f"only file modes changed: {', '.join(moded)}" if moded else "nothing changed"
        detail = "; ".join(filter(None, [f"no file's bytes changed ({what})", detail]))
    return Stamp("", "applied", detail, changed)


@dataclass(frozen=True)
class _Entry:
    kind: str  # file, symlink, fifo, socket, device
    executable: bool
    digest: str


def _snapshot(root: Path) -> dict[str, _Entry]:
    """Every non-directory under root by its relative path, read with lstat: a link is
    recorded as a link, never followed."""
    entries: dict[str, _Entry] = {}
    stack = [root]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as listing:
            for entry in listing:
                info = entry.stat(follow_symlinks=False)
                rel = Path(entry.path).relative_to(root).as_posix()
                if stat.S_ISDIR(info.st_mode):
                    stack.append(Path(entry.path))
                elif stat.S_ISREG(info.st_mode):
                    digest = hashlib.sha256(Path(entry.path).read_bytes()).hexdigest()
                    entries[rel] = _Entry("file", bool(info.st_mode & stat.S_IXUSR), digest)
                else:
                    entries[rel] = _Entry(_kind(info.st_mode), False, "")
    return entries


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "device"


def copy_tree(source: Path, dest: Path) -> None:
    """Copy a tree of folders and regular files, never following a link: a symlink or
    special file in it is an error naming the path."""
    for rel, entry in sorted(_snapshot(source).items()):
        if entry.kind != "file":
            msg = (
                f"{source / rel}: a {entry.kind} in a case's tree; a tree holds folders and "
                "regular files only"
            )
            raise ValueError(msg)
    shutil.copytree(source, dest, symlinks=True)
