"""A real-world run, by hand (never in CI): import dataset records, grade predictions,
and set our resolved/unresolved beside the benchmark's own labels.

    python bench/realworld.py --instances fmt.jsonl --predictions preds.jsonl \\
        --repo path/to/fmt (a clone or a bundle) [--labels results.json] [--work DIR]
        [--options "-DX=ON ..."] [--data "DIR ..."] [--jobs N]

`--instances`: SWE-bench or Multi-SWE-bench records (jsonl); `--predictions`: the patches
to grade (SWE-bench predictions or Multi-SWE-bench patch files `{org, repo, number,
fix_patch}`: the dataset file itself grades each instance's gold patch); `--labels`: the
benchmark's results.json (`resolved_ids` / `unresolved_ids`). The case library and the
build folder go under `--work` (default: a new folder under /tmp), cold: the first grade
there builds everything. Prints one line per instance (ours, the label, match, our class,
the gold patch's class and base + test patch's), the grade's seconds, the compiles
and ccache's line, and exits 1 when a label disagrees. `--jobs`: doit's `-n` (default: the
machine's cores). Run again on the same `--work`, it grades only what is not done yet.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from cxxgate.library.swe_import import case_id  # noqa: E402


def doit(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "doit", "-f", str(PROJECT / "dodo.py"), *args]
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    return subprocess.run(cmd, cwd=PROJECT, env=env, text=True, capture_output=True, check=False)


def labels_of(path: Path | None) -> dict[str, bool]:
    if path is None:
        return {}
    data = json.loads(path.read_text())
    # Multi-SWE-bench's results.json says `resolved`; SWE-bench's reports `resolved_ids`.
    resolved = data.get("resolved_ids", data.get("resolved", []))
    found = {case_id(i): True for i in resolved}
    found.update({case_id(i): False for i in data.get("unresolved_ids", [])})
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=Path, required=True)
    ap.add_argument("--predictions", type=Path, required=True)
    ap.add_argument("--repo", type=Path, required=True)
    ap.add_argument("--labels", type=Path)
    ap.add_argument("--work", type=Path)
    ap.add_argument("--options", default="", help='CMake -D options for import ("-DX=ON ...")')
    ap.add_argument("--data", default="", help='folders the builds read ("DIR ..."; build.data)')
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="doit -n (threads)")
    args = ap.parse_args(argv)
    work = (args.work or Path(tempfile.mkdtemp(prefix="cxxgate-realworld-"))).resolve()
    cases, out = work / "cases", work / "out"
    cases.mkdir(parents=True, exist_ok=True)
    extra = [f"options={args.options}"] if args.options else []
    extra += [f"data={args.data}"] if args.data else []
    imported = doit(
        work,
        "import",
        f"instances={args.instances.resolve()}",
        f"repo={args.repo.resolve()}",
        f"cases={cases}",
        *extra,
    )
    print(imported.stdout[-4000:], imported.stderr[-2000:], sep="")
    start = time.monotonic()
    graded = doit(
        work,
        "-n",
        str(args.jobs),
        "grade",
        f"cases={cases}",
        f"out={out}",
        f"patches={args.predictions.resolve()}",
        "report_only=1",
    )
    seconds = time.monotonic() - start
    (work / "grade.log").write_text(graded.stdout + graded.stderr)
    report_file = out / "swe_report.json"
    if not report_file.is_file():
        print(graded.stdout[-6000:], graded.stderr[-3000:], sep="")
        print(f"no {report_file}: the grade did not report (log: {work / 'grade.log'})")
        return 1
    report = json.loads(report_file.read_text())
    labels = labels_of(args.labels)
    # The gold patch's row (`reference`) and the base tree's with the test patch (`base`).
    states = {
        (row["case"], row["role"]): row["class"]
        for row in map(json.loads, (out / "verdicts.jsonl").read_text().splitlines())
    }
    rows = [("instance", "ours", "label", "match", "class", "gold", "base")]
    mismatches = 0
    for ident, inst in sorted(report["instances"].items()):
        ours = "resolved" if inst["resolved"] else "unresolved"
        label = labels.get(ident.split("/")[0])
        said = "-" if label is None else "resolved" if label else "unresolved"
        match = "-" if label is None else "yes" if label == inst["resolved"] else "NO"
        mismatches += match == "NO"
        gold, base = (states.get((inst["case"], role), "-") for role in ("reference", "base"))
        rows.append((ident, ours, said, match, str(inst["class"]), gold, base))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    log = out / "compiler-calls.log"
    compiles = (
        sum(1 for line in log.read_text().splitlines() if line.split()[2:3] == ["compile"])
        if log.is_file()
        else 0
    )
    cache = next((ln for ln in graded.stdout.splitlines() if ln.startswith("ccache:")), "")
    rate = next((ln for ln in graded.stdout.splitlines() if ln.startswith("resolved:")), "")
    # Seconds of this run; compiles of every run in the work folder (cold only on a new one).
    print(f"\ngrade: {seconds:.0f} s, {compiles} compile(s) in {out.name}/ so far; {cache}")
    # For bench/realworld_naive.py's side-by-side line.
    (work / "run.json").write_text(json.dumps({"seconds": seconds, "compiles": compiles}) + "\n")
    print(rate)
    print(f"work folder: {work} (grade log: {work / 'grade.log'})")
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
