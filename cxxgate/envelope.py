"""Toolchains and envelopes: the pinned compile configurations every cell is built in."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from dataclasses import asdict, dataclass, replace
from functools import cache, cached_property
from pathlib import Path
from typing import Literal

from pydantic import Field

from cxxgate.yamlfile import InputError, Strict, load_model

Family = Literal["gcc", "clang"]


class ToolchainEntry(Strict):
    command: str
    family: Family


class EnvelopeEntry(Strict):
    toolchain: str
    std: str = "c++20"
    flags: list[str] = Field(default_factory=list)
    link_flags: list[str] = Field(default_factory=list)
    defines: list[str] = Field(default_factory=list)
    run_env: dict[str, str] = Field(default_factory=dict)


class Manifest(Strict):
    toolchains: dict[str, ToolchainEntry]
    envelopes: dict[str, EnvelopeEntry]


@dataclass(frozen=True)
class Toolchain:
    """A compiler as found on this machine; `path` is None when it is not installed."""

    name: str
    command: str
    family: Family
    path: str | None  # as found on PATH; None when not installed
    version: str  # first line of `--version`, for humans
    version_sha: str  # sha256 of the resolved path and the whole `--version` text, for keys


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
def identify(name: str, command: str, family: Family) -> Toolchain:
    path = shutil.which(command)
    if path is None:
        return Toolchain(name, command, family, None, "not installed", "")
    # Invoke the name as found on PATH: clang++ resolves to clang-14, which drives the
    # link as C (no libstdc++). Identity hashes the resolved target and its version text.
    resolved = str(Path(path).resolve())
    text = subprocess.run(
        [path, "--version"], capture_output=True, text=True, check=False, timeout=30
    ).stdout
    first = text.splitlines()[0] if text else "unknown"
    digest = hashlib.sha256(f"{resolved}\n{text}".encode()).hexdigest()
    return Toolchain(name, command, family, path, first, digest)


class Envelopes:
    """The manifest of named envelopes, with toolchains identified once per process."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.manifest = load_model(path, Manifest)
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
            toolchain=identify(entry.toolchain, tc.command, tc.family),
            std=entry.std,
            flags=tuple(entry.flags),
            link_flags=tuple(entry.link_flags),
            defines=tuple(entry.defines),
            run_env=tuple(sorted(entry.run_env.items())),
        )
