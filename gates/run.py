"""Runs: the one place a candidate binary is executed.

Pinned argv, stdin and environment; a time limit and an output cap with the process
group killed; peak RSS and CPU from this child's own accounting; a bubblewrap sandbox
where the machine allows one (no network, no view of the case's oracles).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal

from gates import codehash
from gates.cell import CellResult
from gates.cell import result_path as cell_result_path
from gates.layout import Layout
from gates.process import bounded

RunStatus = Literal["exited", "signaled", "hang", "output_overflow", "not_built", "harness_error"]

BASE_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "LANG": "C", "HOME": "/nonexistent"}


@dataclass(frozen=True)
class RunSpec:
    cell_key: str
    args: tuple[str, ...] = ()
    stdin: str = ""
    env: tuple[tuple[str, str], ...] = ()
    timeout: float = 5.0
    output_cap: int = 1 << 20
    label: str = field(default="", compare=False)

    @property
    def key(self) -> str:
        blob = {
            "cell": self.cell_key,
            "args": self.args,
            "stdin": codehash.of_text(self.stdin),
            "env": self.env,
            "timeout": self.timeout,
            "output_cap": self.output_cap,
            "code": codehash.of_modules("run", "process"),
        }
        return codehash.of_text(json.dumps(blob, sort_keys=True))[:24]


@dataclass(frozen=True)
class RunResult:
    key: str
    label: str
    status: RunStatus
    exit: int | None
    signal: int | None
    stdout_sha: str
    wall_seconds: float
    cpu_seconds: float
    max_rss_kib: int
    stray_processes: bool
    sandbox: str
    argv: list[str]
    stdout_path: str
    stderr_path: str

    @classmethod
    def load(cls, path: Path) -> RunResult:
        return cls(**json.loads(path.read_text()))

    @property
    def stdout(self) -> bytes:
        return Path(self.stdout_path).read_bytes() if self.stdout_path else b""

    @property
    def stderr(self) -> str:
        return Path(self.stderr_path).read_text(errors="replace") if self.stderr_path else ""

    @property
    def passed(self) -> bool:
        return self.status == "exited" and self.exit == 0


def result_path(layout: Layout, key: str) -> Path:
    return layout.run(key) / "result.json"


def execute(spec: RunSpec, layout: Layout) -> RunResult:
    key = spec.key
    out = layout.run(key)
    out.mkdir(parents=True, exist_ok=True)
    cell = CellResult.load(cell_result_path(layout, spec.cell_key))
    if cell.binary is None:
        return _write(
            layout,
            RunResult(
                key, spec.label, "not_built", None, None, "", 0.0, 0.0, 0, False, "", [], "", ""
            ),
        )
    work = out / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    binary = Path(cell.binary)
    argv, sandbox = _sandboxed(binary, work, spec.args)
    outcome = bounded(
        argv,
        cwd=work,
        env={**BASE_ENV, **dict(spec.env)},
        stdin=spec.stdin.encode(),
        timeout=spec.timeout,
        output_cap=spec.output_cap,
    )
    (out / "stdout").write_bytes(outcome.stdout)
    (out / "stderr").write_bytes(outcome.stderr)
    status: RunStatus
    if outcome.timed_out:
        status = "hang"
    elif outcome.overflowed:
        status = "output_overflow"
    elif outcome.signal is not None:
        status = "signaled"
    else:
        status = "exited"
    return _write(
        layout,
        RunResult(
            key=key,
            label=spec.label,
            status=status,
            exit=outcome.exit,
            signal=outcome.signal,
            stdout_sha=codehash.of_text(outcome.stdout),
            wall_seconds=round(outcome.wall_seconds, 4),
            cpu_seconds=round(outcome.cpu_seconds, 4),
            max_rss_kib=outcome.max_rss_kib,
            stray_processes=outcome.stray_processes,
            sandbox=sandbox,
            argv=argv,
            stdout_path=str(out / "stdout"),
            stderr_path=str(out / "stderr"),
        ),
    )


def _write(layout: Layout, result: RunResult) -> RunResult:
    result_path(layout, result.key).write_text(json.dumps(asdict(result), indent=1) + "\n")
    return result


def _sandboxed(binary: Path, work: Path, args: tuple[str, ...]) -> tuple[list[str], str]:
    if not bwrap_works():
        return [str(binary), *args], "none"
    argv = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session"]
    for top in ("usr", "bin", "lib", "lib64", "sbin"):
        path = Path("/") / top
        if path.is_symlink():
            argv += ["--symlink", str(path.readlink()), str(path)]
        elif path.is_dir():
            argv += ["--ro-bind", str(path), str(path)]
    for extra in ("/etc/ld.so.cache", "/etc/ld.so.conf"):
        if Path(extra).exists():
            argv += ["--ro-bind", extra, extra]
    argv += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "--bind",
        str(work),
        "/work",
        "--ro-bind",
        str(binary),
        "/candidate",
        "--chdir",
        "/work",
        "/candidate",
        *args,
    ]
    return argv, "bwrap"


@cache
def bwrap_works() -> bool:
    """bubblewrap needs user namespaces, which some containers forbid: probe once."""
    if shutil.which("bwrap") is None:
        return False
    probe = subprocess.run(
        ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"],
        capture_output=True,
        check=False,
        timeout=30,
    )
    return probe.returncode == 0
