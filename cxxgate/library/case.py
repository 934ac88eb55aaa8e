"""Case files: `cases/<id>/case.yaml`, validated, with every path resolved and checked."""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from cxxgate.host.process import Caps
from cxxgate.intake.repo import BuildSpec, RepoSpec, base_tree
from cxxgate.results.result import ROW_CLASSES
from cxxgate.util.yamlfile import InputError, Strict, TreePath, load_model

VerdictWord = Literal["accept", "reject", "incomplete"]


class GateSpec(Protocol):
    """What a case needs of a gate (cxxgate.contract.gate.Gate is one): its section's model and
    its classes. A protocol, so the case model never imports the gates it validates."""

    @property
    def config(self) -> type[BaseModel]: ...

    @property
    def severity(self) -> tuple[str, ...]: ...

    def classes(self) -> frozenset[str]: ...


GateExpect = str | list[str]  # a class, or a list meaning "one of"


class Expect(BaseModel):
    """What a shipped patch must end as: a verdict, optionally the row class and gate classes.

    Gate names are the extra keys (`negcomp: surface_regression`, or a list for "one of");
    they are checked against the discovered gates and their classes when the case is loaded.
    """

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)
    verdict: VerdictWord
    row_class: str | None = Field(default=None, alias="class")

    def gate_classes(self) -> dict[str, GateExpect]:
        return dict(self.model_extra or {})


class KnownPatch(Strict):
    file: str
    name: str | None = None
    expect: Expect


class Limits(Strict):
    run_seconds: float = Field(default=5.0, gt=0, le=3600)
    output_bytes: int = Field(default=1 << 20, gt=0)
    compile_seconds: float = Field(default=120.0, gt=0)
    # A repository case's whole CMake build (configure, then build) and its whole ctest
    # run are one call each: limits of their own, sized for real projects (a full fmt
    # test build takes minutes). Each test within the run has run_seconds (ctest --timeout).
    build_seconds: float = Field(default=1800.0, gt=0)
    test_seconds: float = Field(default=3600.0, gt=0)
    # Caps on every candidate run (cxxgate/host/process.py Caps): address space (resident memory
    # for sanitizer builds), the size one file may grow to, processes of the run's uid.
    memory_mib: int = Field(default=1024, ge=64, le=65536)
    file_mib: int = Field(default=64, ge=1, le=65536)
    processes: int = Field(default=64, ge=1, le=4096)

    def caps(self, flags: tuple[str, ...]) -> Caps:
        """The caps of a run of a binary built with these compile flags."""
        resident = Caps.reserves_address_space(flags)
        return Caps(self.memory_mib, self.file_mib, self.processes, resident)


class CaseFile(Strict):
    """case.yaml. `gates` is validated by a model made from the discovered gates (see
    `case_file_model`): one optional section per gate, so a misspelt gate is an unknown key."""

    summary: str
    std: str | None = None
    envelope: str = "gcc"
    writable: list[TreePath] = Field(min_length=1)
    allow_diagnostic_pragmas: bool = False  # see cxxgate/intake/tree.py: diagnostic_control
    include_dirs: list[TreePath] = Field(default_factory=list)
    public_headers: list[TreePath] = Field(default_factory=list)
    sources: list[TreePath] = Field(default_factory=list)
    reference: str | None = None
    limits: Limits = Limits()
    # A case from a git repository (cxxgate/intake/repo.py) instead of tree/, built with CMake.
    repo: RepoSpec | None = None
    build: BuildSpec | None = None
    gates: BaseModel
    patches: list[KnownPatch] = Field(default_factory=list)

    @field_validator("std")
    @classmethod
    def _std_shape(cls, v: str | None) -> str | None:
        if v is not None and not (v.startswith(("c++", "gnu++")) and len(v) <= 8):
            msg = f"expected a language standard such as 'c++20', got {v!r}"
            raise ValueError(msg)
        return v


def case_file_model(gates: Mapping[str, GateSpec]) -> type[CaseFile]:
    key = tuple((name, gate.config) for name, gate in gates.items())
    return _case_file_model(key)


@cache
def _case_file_model(gates: tuple[tuple[str, type[BaseModel]], ...]) -> type[CaseFile]:
    fields: dict[str, Any] = {name: (config | None, None) for name, config in gates}
    gates = create_model("Gates", __config__=ConfigDict(extra="forbid", frozen=True), **fields)
    return create_model("CaseFile", __base__=CaseFile, gates=(gates, ...))


@dataclass(frozen=True)
class Case:
    id: str
    dir: Path
    spec: CaseFile
    tree_digest: str  # sha256 over the base tree's paths and bytes
    gates: tuple[str, ...]  # every registered gate, in table order
    # Oracles are read once per case, not once per graded patch.
    _oracles: dict[str, Path] = field(default_factory=dict, compare=False, repr=False)
    _texts: dict[Path, str] = field(default_factory=dict, compare=False, repr=False)
    base: Path | None = None  # a repository case's extracted commit (cxxgate/intake/repo.py)
    data: tuple[tuple[str, str], ...] = ()  # its build.data: (absolute path, digest)

    @property
    def file(self) -> Path:
        return self.dir / "case.yaml"

    @property
    def tree(self) -> Path:
        return self.base if self.base is not None else self.dir / "tree"

    def gate_config(self, name: str) -> Any:
        return getattr(self.spec.gates, name)

    def enabled_gates(self) -> list[str]:
        """The gates this case's file configures, in the registry's order."""
        return [n for n in self.gates if self.gate_config(n) is not None]

    def oracle(self, rel: str, key: str) -> Path:
        """A file the case owns outside its tree (probe, golden, patch): must exist."""
        if rel not in self._oracles:
            self._oracles[rel] = self._check_oracle(rel, key)
        return self._oracles[rel]

    def oracle_text(self, rel: str, key: str) -> str:
        path = self.oracle(rel, key)
        if path not in self._texts:
            self._texts[path] = path.read_text()
        return self._texts[path]

    def _check_oracle(self, rel: str, key: str) -> Path:
        path = (self.dir / rel).resolve()
        if not path.is_relative_to(self.dir.resolve()):
            msg = f"{self.file}: {key}: {rel!r} points outside the case folder"
            raise InputError(msg)
        if path.is_relative_to((self.dir / "tree").resolve()):
            msg = (
                f"{self.file}: {key}: {rel!r} lies inside tree/, where a patch could "
                "rewrite it; oracles live beside the tree (e.g. probes/)"
            )
            raise InputError(msg)
        if not path.is_file():
            msg = f"{self.file}: {key}: file {rel!r} does not exist"
            raise InputError(msg)
        return path

    def header_include(self, header: str) -> str:
        """How a consumer spells the include of a public header (relative to its include dir)."""
        for inc in self.spec.include_dirs:
            prefix = inc.rstrip("/") + "/"
            if header.startswith(prefix):
                return header[len(prefix) :]
        return header


def tree_digest(tree: Path, where: str, *, data: bool = False) -> str:
    """sha256 over a folder's paths and bytes (`where` begins its errors): a case's base
    tree, or (`data`) a data folder, whose folder names and execute bits count too and
    whose every file and folder must be readable by the unprivileged uid its tests run as
    (cxxgate/host/sandbox.py).
    Either holds folders and regular files only: a symlink would hand a host file to every
    compile and every copy, or point outside what the sandbox shows."""
    h = hashlib.sha256()
    files: list[tuple[str, Path]] = []
    holds = "a data folder" if data else "a base tree"
    for folder, dirs, names in os.walk(tree):
        for name in dirs + names:
            path = Path(folder, name)
            rel = path.relative_to(tree).as_posix()
            mode = path.lstat().st_mode
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                kind = "a symlink" if stat.S_ISLNK(mode) else "not a regular file"
                msg = f"{where}: {rel} is {kind}; {holds} holds folders and regular files"
                raise InputError(msg)
            if data:
                _readable_by_others(mode, where, rel)
            if stat.S_ISREG(mode):
                files.append((rel, path))
            elif data:
                h.update(b"d" + rel.encode() + b"\0")
    for rel, path in sorted(files):
        h.update(rel.encode() + b"\0")
        if data:
            h.update(b"x" if path.stat().st_mode & 0o111 else b"-")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def _readable_by_others(mode: int, where: str, rel: str) -> None:
    need = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
    if mode & need != need:
        msg = f"{where}: {rel} is not readable by others (mode {mode & 0o777:o})"
        raise InputError(msg + "; the tests run as an unprivileged uid")


# Where a sandbox mounts its own folders (cxxgate/host/sandbox.py, cxxgate/cells/ctest.py):
# a data folder there would hide them, or they it.
_RESERVED = ("/src", "/reports", "/proc", "/dev")
# Many cases of one project name the same data folder: its files are read once per process.
_data_digests: dict[Path, str] = {}


def data_digest(path: Path, where: str, guarded: Iterable[Path] = ()) -> str:
    """The digest of data folder `path` (absolute), refused with `where` in the message
    when it is no folder, holds a folder the harness keeps from candidates (`guarded`: the
    case folder with its gold patch, the build folder), or sits where a sandbox mounts."""
    if not path.is_dir():
        raise InputError(f"{where}: not a folder")
    _readable_by_others(path.stat().st_mode, where, ".")
    for kept in guarded:
        if kept.is_relative_to(path):
            raise InputError(f"{where}: holds {kept}, which candidates must not see")
    reserved = [r for r in _RESERVED if path.is_relative_to(r)]
    if path in (Path("/"), Path("/tmp")) or reserved:
        raise InputError(f"{where}: the sandbox mounts its own folders there")
    if path not in _data_digests:
        _data_digests[path] = tree_digest(path, where, data=True)
    return _data_digests[path]


def data_folders(
    file: Path, build: BuildSpec, repos: Path | None
) -> tuple[tuple[str, str], ...]:
    """A case's `build.data` folders: (absolute path, digest of its files)."""
    guarded = [file.parent.resolve(), *([repos.parent.resolve()] if repos is not None else [])]
    found = []
    for i, entry in enumerate(build.data):
        path = (Path(entry) if Path(entry).is_absolute() else file.parent / entry).resolve()
        found.append((str(path), data_digest(path, f"{file}: build.data[{i}] ({path})", guarded)))
    return tuple(found)


def load_case(case_dir: Path, gates: Mapping[str, GateSpec], repos: Path | None = None) -> Case:
    """Load and check a case; `gates` are the registered gates (cxxgate.contract.registry), in
    table order. A repository case's commit is extracted under `repos` (the build
    folder's cache; a temporary folder's when not given)."""
    file = case_dir / "case.yaml"
    spec = load_model(file, case_file_model(gates))
    tree = case_dir / "tree"
    data = data_folders(file, spec.build, repos) if spec.build is not None else ()
    if spec.repo is not None:
        if tree.exists():
            msg = f"{file}: repo: the case has both repo: and a tree/ folder; keep one"
            raise InputError(msg)
        cache = repos if repos is not None else Path(tempfile.gettempdir()) / "cxxgate-repos"
        tree, digest = base_tree(file, spec.repo, cache)
        case = Case(case_dir.name, case_dir, spec, digest, tuple(gates), base=tree, data=data)
    elif not tree.is_dir():
        msg = f"{file}: the case has no tree/ folder (the base sources a patch applies to)"
        raise InputError(msg)
    else:
        digest = tree_digest(tree, f"{file}: tree/")
        case = Case(case_dir.name, case_dir, spec, digest, tuple(gates), data=data)
    for i, inc in enumerate(spec.include_dirs):
        if not (tree / inc).is_dir():
            msg = f"{file}: include_dirs[{i}]: {inc!r} is not a folder under tree/"
            raise InputError(msg)
    for i, header in enumerate(spec.public_headers):
        if not (tree / header).is_file():
            msg = f"{file}: public_headers[{i}]: {header!r} is not a file under tree/"
            raise InputError(msg)
    if spec.reference is not None:
        case.oracle(spec.reference, "reference")
    enabled = case.enabled_gates()
    if not enabled:
        msg = f"{file}: gates: no gate is enabled; known gates: {sorted(gates)}"
        raise InputError(msg)
    names: set[str] = set()
    for i, known in enumerate(spec.patches):
        case.oracle(known.file, f"patches[{i}].file")
        name = patch_name(known)
        if name in names or name in {"reference", "base"}:
            msg = f"{file}: patches[{i}]: patch name {name!r} is used twice or reserved"
            raise InputError(msg)
        names.add(name)
        _check_expect(file, f"patches[{i}].expect", known.expect, enabled, gates)
    return case


def _check_expect(
    file: Path, key: str, expect: Expect, enabled: list[str], gates: Mapping[str, GateSpec]
) -> None:
    """Expected classes are words the gates can return: a typo is an input error here,
    not an expectation that can never hold."""
    every = set().union(*(gates[g].classes() for g in enabled)) | ROW_CLASSES
    if expect.row_class is not None and expect.row_class not in every:
        msg = f"{file}: {key}.class: {expect.row_class!r} is not a class; one of {sorted(every)}"
        raise InputError(msg)
    for gate, want in expect.gate_classes().items():
        if gate not in enabled:
            msg = f"{file}: {key}.{gate}: not an enabled gate of this case; enabled: {enabled}"
            raise InputError(msg)
        wanted = [want] if isinstance(want, str) else want
        if not (isinstance(wanted, list) and wanted and all(isinstance(w, str) for w in wanted)):
            msg = f"{file}: {key}.{gate}: expected a class or a list of classes, got {want!r}"
            raise InputError(msg)
        allowed = gates[gate].classes()
        for word in wanted:
            # A gate may qualify its class (`compile_fail:rel`): the word before ':' counts.
            if word not in allowed and word.partition(":")[0] not in gates[gate].severity:
                msg = (
                    f"{file}: {key}.{gate}: {word!r} is not a class of gate {gate!r}; "
                    f"one of {sorted(allowed)}"
                )
                raise InputError(msg)


def patch_name(known: KnownPatch) -> str:
    return known.name or Path(known.file).stem
