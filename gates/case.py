"""Case files: `cases/<id>/case.yaml`, validated, with every path resolved and checked."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from gates import registry
from gates.process import Caps
from gates.yamlfile import InputError, Strict, TreePath, load_model

VerdictWord = Literal["accept", "reject", "incomplete"]


class Expect(BaseModel):
    """What a shipped patch must end as: a verdict, optionally the row class and gate classes.

    Gate names are the extra keys (`negcomp: surface_regression`); they are checked
    against the registry when the case is loaded.
    """

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)
    verdict: VerdictWord
    row_class: str | None = Field(default=None, alias="class")

    def gate_classes(self) -> dict[str, str]:
        return {k: str(v) for k, v in (self.model_extra or {}).items()}


class KnownPatch(Strict):
    file: str
    name: str | None = None
    expect: Expect


class Limits(Strict):
    run_seconds: float = Field(default=5.0, gt=0, le=600)
    output_bytes: int = Field(default=1 << 20, gt=0)
    compile_seconds: float = Field(default=120.0, gt=0)
    # Caps on every candidate run (gates/process.py Caps): address space (resident memory
    # for sanitizer builds), the size one file may grow to, processes of the run's uid.
    memory_mib: int = Field(default=1024, ge=64, le=65536)
    file_mib: int = Field(default=64, ge=1, le=65536)
    processes: int = Field(default=64, ge=1, le=4096)

    def caps(self, flags: tuple[str, ...]) -> Caps:
        """The caps of a run of a binary built with these compile flags."""
        resident = Caps.reserves_address_space(flags)
        return Caps(self.memory_mib, self.file_mib, self.processes, resident)


def _gates_model() -> type[BaseModel]:
    # One optional field per registered gate, so a misspelt gate name is an unknown key.
    fields: dict[str, Any] = {
        name: (gate.config | None, None) for name, gate in registry.GATES.items()
    }
    return create_model("Gates", __config__=ConfigDict(extra="forbid", frozen=True), **fields)


Gates = _gates_model()


class CaseFile(Strict):
    summary: str
    std: str | None = None
    envelope: str = "gcc"
    writable: list[TreePath] = Field(min_length=1)
    allow_diagnostic_pragmas: bool = False  # see gates/tree.py: diagnostic_control
    include_dirs: list[TreePath] = Field(default_factory=list)
    public_headers: list[TreePath] = Field(default_factory=list)
    sources: list[TreePath] = Field(default_factory=list)
    reference: str | None = None
    limits: Limits = Limits()
    gates: Gates  # type: ignore[valid-type]
    patches: list[KnownPatch] = Field(default_factory=list)

    @field_validator("std")
    @classmethod
    def _std_shape(cls, v: str | None) -> str | None:
        if v is not None and not (v.startswith(("c++", "gnu++")) and len(v) <= 8):
            msg = f"expected a language standard such as 'c++20', got {v!r}"
            raise ValueError(msg)
        return v


@dataclass(frozen=True)
class Case:
    id: str
    dir: Path
    spec: CaseFile
    tree_digest: str  # sha256 over the base tree's paths and bytes
    # Oracles are read once per case, not once per graded patch.
    _oracles: dict[str, Path] = field(default_factory=dict, compare=False, repr=False)
    _texts: dict[Path, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def file(self) -> Path:
        return self.dir / "case.yaml"

    @property
    def tree(self) -> Path:
        return self.dir / "tree"

    def gate_config(self, name: str) -> Any:
        return getattr(self.spec.gates, name)

    def enabled_gates(self) -> list[str]:
        return [n for n in registry.GATES if self.gate_config(n) is not None]

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
        if path.is_relative_to(self.tree.resolve()):
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


def tree_digest(tree: Path, file: Path) -> str:
    """sha256 over the base tree's paths and bytes. A base tree holds folders and regular
    files only: a symlink would hand a host file to every compile and every copy."""
    h = hashlib.sha256()
    files: list[tuple[str, Path]] = []
    for folder, dirs, names in os.walk(tree):
        for name in dirs + names:
            path = Path(folder, name)
            mode = path.lstat().st_mode
            if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
                if stat.S_ISREG(mode):
                    files.append((path.relative_to(tree).as_posix(), path))
                continue
            kind = "a symlink" if stat.S_ISLNK(mode) else "not a regular file"
            msg = f"{file}: tree/: {path.relative_to(tree)} is {kind}; a base tree holds files"
            raise InputError(msg)
    for rel, path in sorted(files):
        h.update(rel.encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def load_case(case_dir: Path) -> Case:
    file = case_dir / "case.yaml"
    spec = load_model(file, CaseFile)
    tree = case_dir / "tree"
    if not tree.is_dir():
        msg = f"{file}: the case has no tree/ folder (the base sources a patch applies to)"
        raise InputError(msg)
    case = Case(case_dir.name, case_dir, spec, tree_digest(tree, file))
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
        msg = f"{file}: gates: no gate is enabled; known gates: {sorted(registry.GATES)}"
        raise InputError(msg)
    names: set[str] = set()
    for i, known in enumerate(spec.patches):
        case.oracle(known.file, f"patches[{i}].file")
        name = patch_name(known)
        if name in names or name in {"reference", "base"}:
            msg = f"{file}: patches[{i}]: patch name {name!r} is used twice or reserved"
            raise InputError(msg)
        names.add(name)
        for gate in known.expect.gate_classes():
            if gate not in enabled:
                msg = (
                    f"{file}: patches[{i}].expect.{gate}: not an enabled gate of this case; "
                    f"enabled: {enabled}"
                )
                raise InputError(msg)
    return case


def patch_name(known: KnownPatch) -> str:
    return known.name or Path(known.file).stem
