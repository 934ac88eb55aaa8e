"""Base trees from a git repository: `repo: {path, commit}` in case.yaml, in place of tree/.

The repository is a bundle file or a clone (a folder), relative to the case folder or
absolute. It is cloned bare into a cache under the build folder, keyed by the bundle's
digest (or "clone") and the commit, and the commit is extracted with `git archive`. The
extraction admits folders and regular files only: an absolute path, a '..' or a link
(symbolic or hard) in the archive is an input error naming the path, like a symlink in
tree/ (cxxgate/library/case.py). Files keep the commit's time as their mtime (git archive's), so a
patched file is always newer than the base's, which the CMake builds rely on
(cxxgate/cells/cmake.py). The tree digest is the commit and the sha256 over the extracted
paths and bytes, computed once and kept beside the cached tree.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from cxxgate.intake.tree import git_env
from cxxgate.util import atomic
from cxxgate.util.yamlfile import InputError, Strict

_SHA = re.compile(r"[0-9a-f]{40}")


class RepoSpec(Strict):
    path: str  # a bundle file or a clone, relative to the case folder or absolute
    commit: str  # the base commit, 40 hex digits

    @field_validator("commit")
    @classmethod
    def _full_sha(cls, v: str) -> str:
        if not _SHA.fullmatch(v):
            msg = f"expected a full 40-hex commit id, got {v!r}"
            raise ValueError(msg)
        return v


class BuildSpec(Strict):
    """`build:` of a repository case; `build: cmake` means every default."""

    system: Literal["cmake"] = "cmake"
    options: list[str] = Field(default_factory=list)  # extra -D options to configure with
    targets: list[str] = Field(default_factory=list)  # default: all
    # CMAKE_BUILD_TYPE; none: the project's own default, as a plain `cmake ..` (the
    # benchmarks' recipe) builds it.
    build_type: str | None = None
    # Per envelope name: another CMAKE_BUILD_TYPE for the builds in that envelope.
    build_types: dict[str, str] = Field(default_factory=dict)
    # Folders the build and its tests read that the repository does not hold (test data
    # a project downloads at build time: nlohmann/json's json_test_data), absolute or
    # relative to the case folder. Each is seen read-only at its own absolute path, so an
    # option names it (-DJSON_TestDataDirectory=/data/json_test_data); its files are part
    # of the build's key (cxxgate/library/case.py: data_folders).
    data: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"system": data} if isinstance(data, str) else data

    @field_validator("options")
    @classmethod
    def _defines(cls, v: list[str]) -> list[str]:
        for opt in v:
            if not opt.startswith("-D") or "=" not in opt:
                msg = f"expected -DNAME=VALUE options, got {opt!r}"
                raise ValueError(msg)
        return v

    def type_for(self, envelope: str) -> str | None:
        return self.build_types.get(envelope, self.build_type)


# Names how a tree is extracted: a cached tree made another way is not reused (before
# "attrs", git archive's export-ignore left files out).
EXTRACTION = "attrs"


def source(case_dir: Path, spec: RepoSpec) -> Path:
    return Path(spec.path) if Path(spec.path).is_absolute() else case_dir / spec.path


def base_tree(case_file: Path, spec: RepoSpec, cache: Path) -> tuple[Path, str]:
    """The commit's tree, extracted under `cache` (once), and its digest."""
    src = source(case_file.parent, spec)
    if src.is_file():
        ident = hashlib.sha256(src.read_bytes()).hexdigest()[:16]
    elif (src / ".git").exists() or (src / "HEAD").is_file():
        ident = "clone"
    else:
        msg = f"{case_file}: repo.path: {spec.path!r} is neither a git bundle file nor a clone"
        raise InputError(msg)
    home = cache / f"{spec.commit}-{ident}-{EXTRACTION}"
    tree, digest_file = home / "tree", home / "digest"
    if digest_file.is_file() and tree.is_dir():
        return tree, digest_file.read_text().strip()
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{spec.commit[:12]}.", dir=cache))
    try:
        archive = _archive(case_file, src, spec.commit, work)
        out = work / "tree"
        digest = _extract(case_file, archive, out, spec.commit)
        atomic.write_text(work / "digest", digest + "\n")
        shutil.rmtree(work / "git", ignore_errors=True)
        archive.unlink()
        shutil.rmtree(home, ignore_errors=True)
        work.rename(home)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tree, digest


def _git(args: list[str], cwd: Path, scratch: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=git_env(scratch), capture_output=True, check=False, timeout=600
    )


def _archive(case_file: Path, src: Path, commit: str, work: Path) -> Path:
    bare = work / "git"
    cloned = _git(["clone", "--bare", "--quiet", str(src.resolve()), str(bare)], work, work)
    if cloned.returncode != 0:
        said = cloned.stderr.decode(errors="replace").strip()
        msg = f"{case_file}: repo.path: git cannot clone {str(src)!r}: {said}"
        raise InputError(msg)
    found = _git(["cat-file", "-e", f"{commit}^{{commit}}"], bare, work)
    if found.returncode != 0:
        msg = f"{case_file}: repo.commit: {commit} is not a commit of {str(src)!r}"
        raise InputError(msg)
    # The commit's tree as a checkout has it: `export-ignore` / `export-subst` in the
    # project's .gitattributes would drop files (simdjson leaves out its .gitignore, which
    # a gold patch then edits) or rewrite them. $GIT_DIR/info/attributes overrides them.
    (bare / "info").mkdir(exist_ok=True)
    (bare / "info" / "attributes").write_text("* -export-ignore -export-subst\n")
    archive = work / "tree.tar"
    made = _git(["archive", "--format=tar", f"--output={archive}", commit], bare, work)
    if made.returncode != 0:
        said = made.stderr.decode(errors="replace").strip()
        msg = f"{case_file}: repo.commit: git archive {commit} failed: {said}"
        raise InputError(msg)
    return archive


def _extract(case_file: Path, archive: Path, out: Path, commit: str) -> str:
    """Extract folders and regular files only; the digest of commit, paths and bytes."""
    h = hashlib.sha256(commit.encode() + b"\0")
    out.mkdir()
    with tarfile.open(archive) as tar:
        members = []
        for m in tar.getmembers():
            if m.type == tarfile.XGLTYPE or m.type == tarfile.XHDTYPE:
                continue
            if m.name == "pax_global_header":
                continue
            pure = PurePosixPath(m.name)
            if pure.is_absolute() or ".." in pure.parts:
                msg = f"{case_file}: repo: {commit}: {m.name!r} escapes the tree"
                raise InputError(msg)
            if not (m.isfile() or m.isdir()):
                kind = "a symlink" if m.issym() else "a hard link" if m.islnk() else "special"
                msg = (
                    f"{case_file}: repo: {commit}: {m.name} is {kind}; a base tree holds "
                    "folders and regular files only"
                )
                raise InputError(msg)
            members.append(m)
        tar.extractall(out, members=members, filter="data")
    files = sorted((p.relative_to(out).as_posix(), p) for p in out.rglob("*") if p.is_file())
    for rel, path in files:
        h.update(rel.encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()
