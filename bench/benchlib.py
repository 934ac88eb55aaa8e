"""What the benchmarks share: running doit on a library and a build folder, counting the
log lines the harness writes, listing the shipped patches, and making distinct patch bytes
out of them (a comment appended to an added line)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import yaml

PROJECT = Path(__file__).resolve().parent.parent
CXX_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".ipp", ".inl", ".c", ".cc", ".cpp", ".cxx")


def doit(
    out: Path, library: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[float, subprocess.CompletedProcess[str]]:
    """`python -m doit -f dodo.py ARGS cases=LIBRARY out=OUT` on this checkout, timed."""
    cmd = [sys.executable, "-m", "doit", "-f", str(PROJECT / "dodo.py"), *args]
    cmd += [f"cases={library}", f"out={out}"]
    full = {**os.environ, "PYTHONPATH": str(PROJECT), **(env or {})}
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, check=False, env=full)
    return time.perf_counter() - start, proc


def freeze(out: Path, library: Path) -> float:
    """Re-pin identity.lock (a user's `doit freeze` after an intended change); its seconds."""
    seconds, proc = doit(out, library, "freeze", "allow_bump=1")
    if proc.returncode != 0:
        raise RuntimeError(f"doit freeze failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return seconds


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def tree_cases(library: Path) -> list[Path]:
    """The library's cases with a tree/ folder, in a fixed order. Repository cases (a CMake
    project graded by its own suite) are left out of the batches: the naive loop has no
    CMake side to compare them with."""
    cases = (p for p in library.iterdir() if (p / "case.yaml").is_file())
    return sorted(p for p in cases if (p / "tree").is_dir())


def shipped_patches(library: Path) -> list[tuple[str, Path]]:
    """(case, patch file) for every shipped patch of every tree case, in a fixed order."""
    found = []
    for case in tree_cases(library):
        spec = yaml.safe_load((case / "case.yaml").read_text())
        found += [(case.name, case / known["file"]) for known in spec.get("patches", [])]
    return found


def predictions(library: Path, n: int, distinct: bool = False) -> list[dict[str, str]]:
    """N predictions cycling through the shipped patches; `distinct`: the k-th cycle's
    patches carry variant k (see `vary`), so most predictions differ in bytes."""
    patches = [(case, path.read_text(errors="replace")) for case, path in shipped_patches(library)]
    preds = []
    for i in range(n):
        case, text = patches[i % len(patches)]
        cycle = i // len(patches)
        if distinct and cycle:
            text = vary(text, cycle) or text
        preds.append(
            {"instance_id": case, "model_name_or_path": f"model{i:05d}", "model_patch": text}
        )
    return preds


def write_jsonl(path: Path, rows: list[dict[str, str]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


_FILE = re.compile(r"^\+\+\+ (?:b/)?(\S+)")


def vary(diff: str, k: int) -> str | None:
    """The same change with other bytes: ` // bench variant k` appended to the last line
    the diff adds to a C/C++ file (not a continued line). None when there is no such line."""
    out = diff.splitlines(keepends=True)
    current = ""
    target = None
    for i, line in enumerate(out):
        m = _FILE.match(line)
        if m:
            current = m.group(1)
            continue
        body = line.rstrip("\r\n")
        if (
            line.startswith("+")
            and current.endswith(CXX_SUFFIXES)
            and not body.endswith("\\")
            and 'R"' not in body  # a raw string would take the comment in
        ):
            target = i
    if target is None:
        return None
    line = out[target]
    body = line.rstrip("\r\n")
    out[target] = f"{body} // bench variant {k}{line[len(body) :]}"
    return "".join(out)
