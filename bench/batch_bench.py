"""A nightly-style batch: N candidate patches for one case that edit only a library
source, graded cold twice in one run, with cell reuse (cxxgate/cells/reuse.py) and without
(CXXGATE_REUSE=0). Prints seconds and compiler invocations, and the ratios.

    python bench/batch_bench.py            # 40 candidates, -n 2
    python bench/batch_bench.py 200
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
SOURCE = PROJECT / "cases/token_handle/tree/src/token_handle.cpp"


def candidates(n: int) -> list[str]:
    """Diffs that each change the text describe() prints: src/ only, all different."""
    original = SOURCE.read_text()
    old = '"token(empty)"'
    assert old in original
    lines = original.splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if old in ln)
    diffs = []
    for i in range(n):
        new_line = lines[at].replace(old, f'"token(empty #{i})"')
        hunk = "".join(
            [f" {ln}" for ln in lines[max(0, at - 3) : at]]
            + [f"-{lines[at]}", f"+{new_line}"]
            + [f" {ln}" for ln in lines[at + 1 : at + 4]]
        )
        start = max(0, at - 3) + 1
        count = min(len(lines), at + 4) - (start - 1)
        diffs.append(
            "--- a/src/token_handle.cpp\n+++ b/src/token_handle.cpp\n"
            f"@@ -{start},{count} +{start},{count} @@\n{hunk}"
        )
    return diffs


def grade(preds: Path, out: Path, reuse: bool) -> tuple[float, int, int]:
    env = {**os.environ, "PYTHONPATH": str(PROJECT), "CXXGATE_REUSE": "1" if reuse else "0"}
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "doit",
            "-f",
            str(PROJECT / "dodo.py"),
            "-n",
            "2",
            "grade",
            "case=token_handle",
            f"patches={preds}",
            f"out={out}",
            "report_only=1",
        ],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    seconds = time.perf_counter() - start
    log = out / "compiler-calls.log"
    return seconds, len(log.read_text().splitlines()) if log.exists() else 0, proc.returncode


def main(argv: list[str]) -> int:
    n = int(argv[0]) if argv else 40
    with tempfile.TemporaryDirectory(prefix="cxxgate-batch-") as tmp:
        preds = Path(tmp) / "preds.jsonl"
        preds.write_text(
            "".join(
                json.dumps(
                    {"instance_id": "token_handle", "model_name_or_path": f"m{i}", "model_patch": d}
                )
                + "\n"
                for i, d in enumerate(candidates(n))
            )
        )
        plain = grade(preds, Path(tmp) / "plain", reuse=False)
        shared = grade(preds, Path(tmp) / "shared", reuse=True)
    print(f"{n} candidates editing src/ only, token_handle, doit -n 2, cold")
    print(f"{'':<14} {'seconds':>8} {'compiler calls':>15} {'exit':>5}")
    for name, (seconds, calls, code) in (("no reuse", plain), ("reuse", shared)):
        print(f"{name:<14} {seconds:>8.2f} {calls:>15} {code:>5}")
    print(
        f"ratio reuse/no reuse: seconds {shared[0] / plain[0]:.3f}, "
        f"compiler calls {shared[1] / plain[1]:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
