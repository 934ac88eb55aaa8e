"""A nightly batch: N predictions (default 1,000) cycling through every shipped patch of
the shipped cases, graded into one build folder in one run:

1. cold (`-n 2`), 2. warm no-op, 3. after a prompt edit + `doit freeze`.

Prints seconds, compiler invocations and binary runs per step (targets: steps 2 and 3
under 3 s, with 0 compiles and 0 runs). The library is a private copy (its prompt is
edited), the identity lock included.

    python bench/nightly_bench.py            # 1,000 predictions
    python bench/nightly_bench.py 200
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

PROJECT = Path(__file__).resolve().parent.parent


def predictions(library: Path, n: int) -> list[dict[str, str]]:
    patches = []
    for case in sorted(p for p in library.iterdir() if (p / "case.yaml").is_file()):
        spec = yaml.safe_load((case / "case.yaml").read_text())
        for known in spec.get("patches", []):
            patches.append((case.name, (case / known["file"]).read_text(errors="replace")))
    return [
        {
            "instance_id": patches[i % len(patches)][0],
            "model_name_or_path": f"model{i:05d}",
            "model_patch": patches[i % len(patches)][1],
        }
        for i in range(n)
    ]


def doit(out: Path, library: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    cmd = [sys.executable, "-m", "doit", "-f", str(PROJECT / "dodo.py"), *args]
    cmd += [f"cases={library}", f"out={out}"]
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, check=False, env=env)
    return time.perf_counter() - start, proc


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def main(argv: list[str]) -> int:
    n = int(argv[0]) if argv else 1000
    with tempfile.TemporaryDirectory(prefix="cxxgate-nightly-") as tmp:
        library = Path(tmp) / "cases"
        shutil.copytree(PROJECT / "cases", library)
        preds = Path(tmp) / "preds.jsonl"
        preds.write_text("".join(json.dumps(p) + "\n" for p in predictions(library, n)))
        out = Path(tmp) / "out"
        grade = ("-n", "2", "grade", f"patches={preds}", "report_only=1")
        rows = []
        for step in ("cold", "warm no-op", "prompt edited + frozen"):
            freeze = 0.0
            if step == "prompt edited + frozen":
                prompt = library / "token_handle/prompt.md.j2"
                prompt.write_text(prompt.read_text() + "\nKeep the diff small.\n")
                freeze, frozen = doit(out, library, "freeze", "allow_bump=1")
                assert frozen.returncode == 0, frozen.stdout + frozen.stderr
            calls, runs = lines(out / "compiler-calls.log"), lines(out / "runs.log")
            seconds, proc = doit(out, library, *grade)
            if proc.returncode != 0:
                print(proc.stdout[-3000:], proc.stderr[-3000:])
                return 1
            rows.append(
                (
                    step,
                    seconds,
                    freeze,
                    lines(out / "compiler-calls.log") - calls,
                    lines(out / "runs.log") - runs,
                )
            )
    print(f"{n} predictions over the shipped patches, doit -n 2, one build folder")
    print(f"{'step':<24} {'grade s':>8} {'freeze s':>9} {'compiles':>9} {'runs':>6}")
    for step, seconds, freeze, calls, runs in rows:
        print(f"{step:<24} {seconds:>8.2f} {freeze:>9.2f} {calls:>9} {runs:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
