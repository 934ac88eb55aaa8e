"""Tool calls outside any cell: a tool's `--version` (toolchain and tool identities,
valgrind's), g++'s include search list, gcov over a coverage run's counts. The same
bounded, confined launch as a cell's tools (cxxgate/toolchain/toolcall.py `tool_call`, which
imports this module's environment), logged at INFO (there is no cell, so no compiler
log). It sits below cxxgate/toolchain/envelope.py and cxxgate/toolchain/tools.py, which ask for
identities, so that every tool the harness runs goes through one of these two modules."""

from __future__ import annotations

import logging
import tempfile
from functools import cache
from pathlib import Path

from cxxgate.host.process import Outcome, bounded
from cxxgate.host.sandbox import confine
from cxxgate.results import faults

# The compiler sees a pinned, poor environment: nothing from the caller's shell leaks in.
COMPILER_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C", "LANG": "C"}
OUTPUT_CAP = 4 << 20
log = logging.getLogger(__name__)


def ask(
    argv: list[str],
    *,
    cwd: Path | None = None,
    binds: tuple[tuple[str, str], ...] = (),
    stdin: str = "",
    seconds: float = 60,
    output_cap: int = OUTPUT_CAP,
) -> Outcome:
    """Run one tool, bounded and confined: in `cwd` (its only writable folder, e.g. a
    scratch folder holding the files it reads) or an empty scratch folder; it sees no
    tree; `binds` are the toolchain's declared prefix. Raises when the tool cannot be
    executed (cxxgate/results/faults.py)."""
    faults.check_executable(argv[0], COMPILER_ENV["PATH"])
    with tempfile.TemporaryDirectory(prefix="cxxgate-query-") as scratch:
        work = cwd or Path(scratch)
        confined, sandbox = confine(argv, cwd=work, read=[], write=[work], binds=binds)
        outcome = bounded(
            confined,
            cwd=work,
            env=COMPILER_ENV,
            stdin=stdin.encode(),
            timeout=seconds,
            output_cap=output_cap,
        )
    log.info("query %s (%s): exit %s", " ".join(argv), sandbox, outcome.exit)
    return outcome


def query(
    argv: list[str],
    *,
    binds: tuple[tuple[str, str], ...] = (),
    stdin: str = "",
    seconds: float = 60,
) -> tuple[int | None, str]:
    """A question to a toolchain while gates plan (g++'s include search list): the exit
    status (None: killed or timed out) and stdout + stderr."""
    outcome = ask(argv, binds=binds, stdin=stdin, seconds=seconds)
    text = outcome.stdout.decode(errors="replace") + outcome.stderr.decode(errors="replace")
    return (None if outcome.timed_out else outcome.exit), text


@cache
def version(path: str, binds: tuple[tuple[str, str], ...] = ()) -> str:
    """`path --version`'s stdout, whole: what a toolchain's or tool's identity hashes."""
    return ask([path, "--version"], binds=binds, seconds=30).stdout.decode(errors="replace")
