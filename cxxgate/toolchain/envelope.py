"""Toolchains and envelopes: the pinned compile configurations every cell is built in.

A toolchain may declare the `prefix:` it is installed under (e.g. /opt/gcc-14): the
sandbox (cxxgate/host/sandbox.py) binds that folder read-only for its compiles, and nothing
else of it. Without a prefix, a compiler outside the system directories gets only its
own file bound at the path it is called by: enough for a wrapper script that calls a
system compiler, while a real toolchain elsewhere fails loudly (its reference turns red)
until its prefix is declared. Its folder is not bound: that folder could be a project's
`bin/`, beside the case library's oracles, and the sandbox must not guess.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from functools import cache, cached_property
from pathlib import Path
from typing import Literal

from pydantic import Field

from cxxgate.host.sandbox import is_system
from cxxgate.toolchain import toolquery
from cxxgate.util.yamlfile import InputError, Strict, load_model

Family = Literal["gcc", "clang"]


class ToolchainEntry(Strict):
    command: str
    family: Family
    prefix: str | None = None  # absolute folder the toolchain is installed under


class EnvelopeEntry(Strict):
    toolchain: str
    std: str = "c++20"
    flags: list[str] = Field(default_factory=list)
    link_flags: list[str] = Field(default_factory=list)
    defines: list[str] = Field(default_factory=list)
    run_env: dict[str, str] = Field(default_factory=dict)


class Manifest(Strict):
    toolchains: dict[str, ToolchainEntry] = Field(default_factory=dict)
    envelopes: dict[str, EnvelopeEntry] = Field(default_factory=dict)


# The envelopes every case library has: a library's own envelopes.yaml adds to them and
# overrides them by name (a toolchain or an envelope of the same name is the library's).
DEFAULTS = Path(__file__).with_name("envelopes.yaml")


@dataclass(frozen=True)
class Toolchain:
    """A compiler as found on this machine; `path` is None when it is not installed."""

    name: str
    command: str
    family: Family
    path: str | None  # as found on PATH; None when not installed
    version: str  # first line of `--version`, for humans
    version_sha: str  # sha256 of the resolved path and the whole `--version` text, for keys
    # What the sandbox binds read-only for this toolchain: (source, destination) pairs.
    binds: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Envelope:
    name: str
    toolchain: Toolchain
    std: str
    flags: tuple[str, ...]
    link_flags: tuple[str, ...]
    defines: tuple[str, ...]
    run_env: tuple[tuple[str, str], ...]

    @cached_property
    def id(self) -> str:
        """Hashes every field, the toolchain's identity included."""
        blob = json.dumps(asdict(self), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()

    def with_std(self, std: str | None) -> Envelope:
        return self if std is None or std == self.std else replace(self, std=std)


@cache
def identify(name: str, command: str, family: Family, prefix: str | None = None) -> Toolchain:
    path = shutil.which(command)
    if path is None:
        return Toolchain(name, command, family, None, "not installed", "")
    # Invoke the name as found on PATH: clang++ resolves to clang-14, which drives the
    # link as C (no libstdc++). Identity hashes the resolved target and its version text.
    resolved = str(Path(path).resolve())
    binds = _binds(Path(path), prefix)
    text = toolquery.version(path, binds)
    first = text.splitlines()[0] if text else "unknown"
    digest = hashlib.sha256(f"{resolved}\n{text}".encode()).hexdigest()
    return Toolchain(name, command, family, path, first, digest, binds)


def _binds(path: Path, prefix: str | None) -> tuple[tuple[str, str], ...]:
    """The declared prefix, and the compiler's own file where the sandbox would not show
    it otherwise: at its resolved path, and at the path argv calls it by."""
    binds: list[tuple[str, str]] = []
    called, resolved = path.absolute(), path.resolve()
    if prefix is not None and Path(prefix).is_dir():  # absent: a toolchain not installed here
        root = Path(prefix).resolve()
        binds.append((str(root), str(root)))
        if called.is_relative_to(root) and resolved.is_relative_to(root):
            return tuple(binds)
    if not is_system(resolved):
        binds.append((str(resolved), str(resolved)))
    if not is_system(called) and called != resolved:
        binds.append((str(resolved), str(called)))
    return tuple(binds)


class Envelopes:
    """The manifest of named envelopes, with toolchains identified once per process."""

    def __init__(self, path: Path, *, protect: Iterable[Path] = (), optional: bool = False) -> None:
        """The package's DEFAULTS, overridden by name by the manifest at `path`; with
        `optional`, a missing file means the defaults alone (a library without its own
        envelopes.yaml). `protect`: folders no toolchain prefix may overlap (the case
        library and the build folder); the manifest's own folder always is one."""
        defaults = load_model(DEFAULTS, Manifest)
        own = Manifest() if optional and not path.exists() else load_model(path, Manifest)
        self.path = path if path.exists() else DEFAULTS
        self.manifest = Manifest(
            toolchains={**defaults.toolchains, **own.toolchains},
            envelopes={**defaults.envelopes, **own.envelopes},
        )
        guarded = [path.parent, *protect]
        for name, tc in own.toolchains.items():
            if tc.prefix is not None:
                _check_prefix(path, f"toolchains.{name}.prefix", tc.prefix, guarded)
        for name, env in self.manifest.envelopes.items():
            if env.toolchain not in self.manifest.toolchains:
                msg = (
                    f"{path}: envelopes.{name}.toolchain: unknown toolchain {env.toolchain!r}; "
                    f"known: {sorted(self.manifest.toolchains)}"
                )
                raise InputError(msg)

    def names(self) -> list[str]:
        return sorted(self.manifest.envelopes)

    def get(self, name: str) -> Envelope:
        entry = self.manifest.envelopes[name]
        tc = self.manifest.toolchains[entry.toolchain]
        return Envelope(
            name=name,
            toolchain=identify(entry.toolchain, tc.command, tc.family, tc.prefix),
            std=entry.std,
            flags=tuple(entry.flags),
            link_flags=tuple(entry.link_flags),
            defines=tuple(entry.defines),
            run_env=tuple(sorted(entry.run_env.items())),
        )


def _check_prefix(file: Path, key: str, prefix: str, guarded: list[Path]) -> None:
    """A prefix is bound into every compile's sandbox: it must hold neither the oracles
    nor the build outputs (nor lie inside them). One that does not exist is no error: the
    manifest may name toolchains this machine lacks (their cells are toolchain_missing)."""
    where = f"{file}: {key}: {prefix!r}"
    if not Path(prefix).is_absolute():
        raise InputError(f"{where} must be an absolute folder (e.g. /opt/gcc-14)")
    root = Path(prefix).resolve()
    for folder in guarded:
        guard = folder.resolve()
        if guard.is_relative_to(root) or root.is_relative_to(guard):
            msg = (
                f"{where} overlaps {guard}: the sandbox binds a toolchain's prefix into "
                "every compile, and a patch's code would read the case library or the build "
                "folder through it; install the toolchain in a folder of its own"
            )
            raise InputError(msg)
