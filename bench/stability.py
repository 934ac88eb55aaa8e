"""Does a measuring gate (slope, budget) give the same class for every shipped patch, run
after run, with the machine's other core busy?

One cold grade of the case builds the cells; then, `--runs` times, the run
results are deleted (cells kept: compiles are not what is measured) and the case graded
again, so every callgrind profile and every wall series runs afresh while a busy-loop
process holds a core. Prints, per patch, its class on each run (for slope, the spread of
the fitted exponent), and exits non-zero when a patch's class changed between runs.

    python bench/stability.py [--runs 10] [--case dedupe] [--gate slope] [--no-load]
    python bench/stability.py --case hot_path --gate budget
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
EXPONENT = re.compile(r"exponent ([\d.]+) \(r\^2 ([\d.]+)\)")
WALL = re.compile(r"ratio ([\d.]+)")


def grade(out: Path, case: str, gate_name: str) -> tuple[float, dict[str, dict[str, str]]]:
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
            f"cases={PROJECT / 'cases'}",
            f"out={out}",
            f"case={case}",
        ],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        check=False,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )
    seconds = time.perf_counter() - start
    if not (out / "verdicts.jsonl").exists():
        raise SystemExit(f"grade produced no verdicts:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    rows = {}
    for line in (out / "verdicts.jsonl").read_text().splitlines():
        row = json.loads(line)
        if gate_name in row["gates"]:
            gate = dict(row["gates"][gate_name])
            # An accepted row's summary only counts checks: its fit is in the evidence.
            result = out / "results" / row["case"] / row["patch"] / f"{gate_name}.json"
            evidence = json.loads(result.read_text())["evidence"] if result.exists() else []
            gate["fit"] = next((e for e in evidence if e.startswith("exponent")), "")
            gate["wall"] = next((e for e in evidence if e.startswith("wall")), "")
            rows[row["patch"]] = gate
    return seconds, rows


def busy_core() -> subprocess.Popen[bytes]:
    """A process that keeps one core at 100% until it is killed."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--case", default="dedupe")
    parser.add_argument("--gate", default="slope")
    parser.add_argument("--no-load", action="store_true", help="leave the other core idle")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="cxxgate-stability-bench."))
    load = None if args.no_load else busy_core()
    try:
        cold, _ = grade(out, args.case, args.gate)
        print(f"cold grade (compiles + first runs): {cold:.1f} s; busy core: {load is not None}")
        classes: dict[str, list[str]] = defaultdict(list)
        exponents: dict[str, list[float]] = defaultdict(list)
        ratios: dict[str, list[float]] = defaultdict(list)  # advisory wall lane
        walls = []
        for i in range(args.runs):
            shutil.rmtree(out / "runs", ignore_errors=True)
            seconds, rows = grade(out, args.case, args.gate)
            walls.append(seconds)
            for patch, gate in rows.items():
                classes[patch].append(gate["class"])
                m = EXPONENT.search(gate["fit"])
                if m:
                    exponents[patch].append(float(m[1]))
                w = WALL.search(gate["wall"])
                if w:
                    ratios[patch].append(float(w[1]))
            print(f"run {i + 1}: {seconds:.1f} s")
    finally:
        if load is not None:
            os.killpg(load.pid, signal.SIGKILL)
            load.wait()
        shutil.rmtree(out, ignore_errors=True)
    unstable = 0
    print(f"\n{'patch':<14} {'class (runs)':<34} {'exponent min..max':<18} wall ratio (advisory)")
    for patch in sorted(classes):
        seen = sorted(set(classes[patch]))
        unstable += len(seen) > 1
        shown = ", ".join(f"{c} x{classes[patch].count(c)}" for c in seen)
        exp = exponents.get(patch)
        spread = f"{min(exp):.4f}..{max(exp):.4f}" if exp else "-"
        wall = ratios.get(patch)
        wide = f"{min(wall):.2f}..{max(wall):.2f}" if wall else "-"
        print(f"{patch:<14} {shown:<34} {spread:<18} {wide}")
    print(f"\nre-grade (runs only): median {sorted(walls)[len(walls) // 2]:.1f} s per run")
    print(f"patches whose class changed between runs: {unstable}")
    return 1 if unstable else 0


if __name__ == "__main__":
    raise SystemExit(main())
