"""Which witnesses survive the preprocessor: ask it, with the case's envelope.

Each file holding witnesses is preprocessed (`g++ -E`) as a copy with one marker per
witness: an identifier placed first in the witness's arguments (or first in a test's
body), defined by a forced include to expand to a second identifier. The witness survives
when that second identifier reaches the output as code: an `#if 0` or an `#ifdef` never
defined drops the marker with the witness, `assert` under NDEBUG and a witness macro
redefined to nothing drop their arguments, and a macro that only stringifies them turns
the marker into text, never into its expansion. Marker names carry a fresh random tag per
file, so a patched source cannot name them (`#undef`, or spell the expansion itself).

The copy lives in a scratch folder; `-iquote` the original's folder keeps its quoted
includes resolving as before. The preprocessor runs through cxxgate/toolcall.py (logged,
bounded, sandboxed: it reads the tree and writes only the scratch folder).
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cxxgate import diagnostics, toolcall
from cxxgate.cellspec import CellSpec
from cxxgate.envelope import Envelope, Toolchain
from cxxgate.gates import cppsource
from cxxgate.layout import Layout


@dataclass(frozen=True)
class FileLive:
    detail: str  # "" when the preprocessor took the file; else its first error
    live: list[bool | None]  # per marker, in the order given; None: could not be told


def envelope_params(env: Envelope) -> dict[str, Any]:
    """An envelope as scan parameters (JSON): its id, hence the toolchain's identity,
    enters the scan's key."""
    return {"id": env.id, **asdict(env)}


def envelope_from(params: dict[str, Any]) -> Envelope:
    tc = dict(params["toolchain"])
    tc["binds"] = tuple(tuple(b) for b in tc["binds"])
    return Envelope(
        name=params["name"],
        toolchain=Toolchain(**tc),
        std=params["std"],
        flags=tuple(params["flags"]),
        link_flags=tuple(params["link_flags"]),
        defines=tuple(params["defines"]),
        run_env=tuple((k, v) for k, v in params["run_env"]),
    )


def marked(source: bytes, marks: list[int], tag: str) -> bytes:
    """`source` with marker `cxxgate_<tag>_m<i>` inserted at byte offset marks[i]."""
    out = source
    for i, offset in sorted(enumerate(marks), key=lambda p: p[1], reverse=True):
        out = out[:offset] + f" {_marker(tag, i)} ".encode() + out[offset:]
    return out


# The -E output of a patched file is written to disk: a macro that expands without end
# must stop at a size (SIGXFSZ: the file is then "not preprocessed", which fails closed).
OUTPUT_FILE_CAP = 256 << 20


def _capped() -> list[str]:
    prlimit = shutil.which("prlimit")
    return [prlimit, f"--fsize={OUTPUT_FILE_CAP}", "--"] if prlimit else []


def _marker(tag: str, i: int) -> str:
    return f"cxxgate_{tag}_m{i}"


def _expansion(tag: str, i: int) -> str:
    return f"cxxgate_{tag}_live{i}"


def liveness(
    tree: Path,
    files: dict[str, list[int]],
    env: Envelope,
    include_dirs: tuple[str, ...],
    compile_seconds: float,
) -> dict[str, FileLive]:
    """Preprocess each file of `files` (tree-relative path -> marker offsets)."""
    layout = Layout(tree.parent.parent)  # trees live at <build>/trees/<key>
    spec = CellSpec(
        kind="syntax",
        tree_key=tree.name,
        units=(),
        tree_sources=(),
        include_dirs=include_dirs,
        envelope=env,
        compile_seconds=compile_seconds,
        label="census preprocess",
    )
    base = toolcall.compile_argv(spec, tree)
    scratch = layout.root / "scans" / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{tree.name[:12]}-", dir=scratch))
    out: dict[str, FileLive] = {}
    try:
        for n, (rel, marks) in enumerate(sorted(files.items())):
            out[rel] = _one(layout, spec, base, tree, rel, marks, work, n)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _one(
    layout: Layout,
    spec: CellSpec,
    base: list[str],
    tree: Path,
    rel: str,
    marks: list[int],
    work: Path,
    n: int,
) -> FileLive:
    tag = secrets.token_hex(6)
    original = tree / rel
    copy = work / f"w{n}{original.suffix}"
    copy.write_bytes(marked(original.read_bytes(), marks, tag))
    header = work / f"w{n}.markers.h"
    header.write_text(
        "".join(f"#define {_marker(tag, i)} {_expansion(tag, i)}\n" for i in range(len(marks)))
    )
    result = work / f"w{n}.i"
    argv = [*_capped(), *base, "-w", "-E", "-iquote", str(original.parent)]
    argv += ["-include", header.name, "-x", "c++", copy.name, "-o", result.name]
    step = toolcall.tool_call(layout, spec, "compile", str(original), argv, work, read=[tree])
    if step.timed_out or step.exit != 0 or not result.exists():
        first = diagnostics.first_error(diagnostics.parse(step, str(tree)))
        why = first.brief() if first else ("timed out" if step.timed_out else "failed")
        why = why.replace(copy.name, rel)
        return FileLive(f"the preprocessor rejects {rel}: {why}", [None] * len(marks))
    text = result.read_bytes()
    return FileLive(
        "", [cppsource.has_identifier(text, _expansion(tag, i)) for i in range(len(marks))]
    )
