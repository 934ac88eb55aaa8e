"""What a grade selects: `[tool.cxxgate]` in the eval repository's pyproject.toml, then the
`name=value` doit variables on the command line, which win.

    [tool.cxxgate]
    cases = "mycases"         # the case library (default: cases/)
    out = "build"             # the build folder (default: .grade/)
    envelopes = "envs.yaml"   # default: envelopes.yaml in the case library, if it has one
    seed = 7                  # pin the batch's seed (default: the build folder's, below)
    ccache_remote = "redis://cache.example:6379"   # ccache's remote storage (shards share it)

Envelopes: the package's own (cxxgate/toolchain/envelopes.yaml), which the chosen file adds to and
overrides by name; a case library without envelopes.yaml grades with the package's alone.

Compiles go through ccache (cxxgate/toolchain/ccache.py), its cache in `<out>/ccache`;
CXXGATE_CCACHE=0 turns that off. A remote storage: `ccache_remote`, or the environment's
CXXGATE_CCACHE_REMOTE, which wins (a shard runner sets it per worker).

The batch's **seed** (what a gate that draws inputs at run time draws them from, e.g.
gate `metamorphic`; never in a case or a prompt): `seed=N`, else `[tool.cxxgate] seed`, else
the build folder's own, `<out>/seed`, written with a random one the first time a gate asks.
`doit rotate_seed` writes a new one there (between nightly batches). `Settings.seed` is the
one value a batch used.

Relative paths are taken from the folder holding pyproject.toml (doit runs in the folder
of dodo.py); command-line paths from the current folder.
"""

from __future__ import annotations

import os
import secrets
import tomllib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from doit import get_var
from pydantic import Field, ValidationError

from cxxgate.store.layout import Layout
from cxxgate.toolchain import ccache
from cxxgate.util import atomic
from cxxgate.util.yamlfile import InputError, Strict, key_path

SEED_LIMIT = 1 << 63  # seeds are 0 <= seed < 2**63: any C++ driver reads them as uint64


class ToolTable(Strict):
    """`[tool.cxxgate]`: the same names as the doit variables."""

    cases: str = "cases"
    out: str = ".grade"
    envelopes: str | None = None
    case: str = ""
    patches: str = ""
    report_only: bool = False
    keep: int = 0  # prune after each grade, keeping what the last N grades refer to
    seed: int | None = Field(default=None, ge=0, lt=SEED_LIMIT)
    ccache_remote: str = ""  # ccache's remote_storage URL(s), e.g. redis://127.0.0.1:6379


class SettingsError(Exception):
    """pyproject.toml's [tool.cxxgate] is wrong: the message names the file and the key."""


@dataclass(frozen=True)
class Settings:
    """Read once per doit invocation, when dodo.py imports cxxgate.graph.tasks."""

    library: Path
    out: Path
    envelopes: Path
    only: frozenset[str]
    batch: Path | None
    report_only: bool
    allow_bump: bool = False  # `doit freeze` under CI=true; command line only, never the file
    keep: int = 0
    across: bool = False  # `doit compare` across identities; command line only
    shard: tuple[int, int] | None = None  # `shard=I/N`: grade the I-th of N slices of the cases
    merge_from: tuple[Path, ...] = ()  # `doit merge from=DIR,DIR`: shard build folders
    verbosity: int | None = None  # `verbosity=2`: doit's -v 2, every task listed
    table: bool = False  # `table=1`: the grade prints the whole table (as verbosity=2 does)
    given_seed: int | None = None  # seed=N, or [tool.cxxgate] seed

    @cached_property
    def seed(self) -> int:
        """The batch's seed: the one given, else the build folder's (made on first use)."""
        if self.given_seed is not None:
            return self.given_seed
        file = Layout(self.out).seed
        if not file.exists():
            write_seed(file, new_seed())
        return read_seed(file)

    def seed_used(self) -> int | None:
        """The seed this grade's gates drew from, if any asked (the history records it)."""
        if self.given_seed is not None:
            return self.given_seed
        file = Layout(self.out).seed
        return read_seed(file) if file.exists() else None

    @classmethod
    def load(cls, root: Path | None = None) -> Settings:
        root = (root or Path.cwd()).resolve()
        table = _tool_table(root / "pyproject.toml")

        def path(var: str, configured: str) -> Path:
            given = get_var(var, "") or ""
            return Path(given).resolve() if given else (root / configured).resolve()

        library = path("cases", table.cases)
        only = get_var("case", "") or table.case
        batch = get_var("patches", "") or ""
        report_only = get_var("report_only", "")
        allow_bump = (get_var("allow_bump", "") or "") in {"1", "yes", "true"}
        keep = get_var("keep", "") or ""
        shard = _shard(get_var("shard", "") or "")
        merge_from = tuple(Path(d).resolve() for d in (get_var("from", "") or "").split(",") if d)
        if keep and not keep.isdigit():
            raise SettingsError(f"keep={keep}: expected a number of grades (keep=5)")
        verbosity = get_var("verbosity", "") or ""
        if verbosity not in {"", "0", "1", "2"}:
            msg = f"verbosity={verbosity}: expected 0, 1 or 2 (as doit's -v)"
            raise SettingsError(msg)
        seed = get_var("seed", "") or ""
        print_table = get_var("table", "") or ""
        where = ccache.REMOTE
        if table.ccache_remote and not os.environ.get(ccache.REMOTE):
            # The compiles read it there (cxxgate/toolchain/ccache.py), in this process's threads.
            os.environ[ccache.REMOTE] = table.ccache_remote
            where = f"{root / 'pyproject.toml'}: [tool.cxxgate] ccache_remote"
        remote = os.environ.get(ccache.REMOTE, "")
        if remote.startswith("file:") and ccache.file_storage(remote) is None:
            msg = f"{where}={remote}: expected file:/absolute/folder (or redis://host:port)"
            raise SettingsError(msg)
        return cls(
            library=library,
            out=path("out", table.out),
            envelopes=path("envelopes", table.envelopes or str(library / "envelopes.yaml")),
            only=frozenset(c for c in only.split(",") if c),
            batch=Path(batch).resolve() if batch else _configured(root, table.patches),
            report_only=report_only in {"1", "yes", "true"}
            if report_only
            else table.report_only,
            allow_bump=allow_bump,
            keep=int(keep) if keep else table.keep,
            across=(get_var("across", "") or "") in {"1", "yes", "true"},
            shard=shard,
            merge_from=merge_from,
            verbosity=int(verbosity) if verbosity else None,
            table=print_table in {"1", "yes", "true"},
            given_seed=_seed_var(seed) if seed else table.seed,
        )


def _shard(value: str) -> tuple[int, int] | None:
    if not value:
        return None
    index, _, count = value.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise SettingsError(f"shard={value}: expected I/N with 1 <= I <= N, e.g. shard=2/4")
    return int(index), int(count)


def new_seed() -> int:
    return secrets.randbelow(SEED_LIMIT)


def read_seed(file: Path) -> int:
    text = file.read_text().strip()
    if not _is_seed(text):
        msg = f"{file}: expected the batch seed, a decimal below 2**63, found {text[:40]!r}"
        raise InputError(msg)
    return int(text)


def write_seed(file: Path, seed: int) -> None:
    atomic.write_text(file, f"{seed}\n")


def _seed_var(value: str) -> int:
    if not _is_seed(value):
        msg = f"seed={value}: expected a decimal below 2**63"
        raise SettingsError(msg)
    return int(value)


def _is_seed(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 19 and int(text) < SEED_LIMIT


def _configured(root: Path, value: str) -> Path | None:
    return (root / value).resolve() if value else None


def _tool_table(file: Path) -> ToolTable:
    if not file.is_file():
        return ToolTable()
    try:
        data = tomllib.loads(file.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        msg = f"{file}: cannot read it as TOML: {exc}"
        raise SettingsError(msg) from exc
    table = data.get("tool", {}).get("cxxgate", {})
    try:
        return ToolTable.model_validate(table)
    except ValidationError as exc:
        lines = [f"{file}: [tool.cxxgate]: {exc.error_count()} problem(s):"]
        for err in exc.errors():
            lines.append(f"  tool.cxxgate.{key_path(err['loc'])}: {err['msg']}")
        raise SettingsError("\n".join(lines)) from exc
