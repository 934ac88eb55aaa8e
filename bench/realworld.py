"""A real-world run, by hand (never in CI): import dataset records, grade predictions,
and set our resolved/unresolved beside the benchmark's own labels.

    python bench/realworld.py --instances fmt.jsonl --predictions preds.jsonl \\
        --repo path/to/fmt (a clone or a bundle) [--labels results.json] [--work DIR]
        [--options "-DX=ON ..."] [--data "DIR ..."] [--jobs N] [--batch N]

`--instances`: SWE-bench or Multi-SWE-bench records (jsonl); `--predictions`: the patches
to grade (SWE-bench predictions or Multi-SWE-bench patch files `{org, repo, number,
fix_patch}`: the dataset file itself grades each instance's gold patch); `--labels`: the
benchmark's results.json (`resolved_ids` / `unresolved_ids`). The case library and the
build folder go under `--work` (default: a new folder under /tmp), cold: the first grade
there builds everything. Prints one line per instance (ours, the label, match, our class,
the gold patch's class and base + test patch's), the grade's seconds, the compiles
and ccache's line, and exits 1 when a label disagrees. `--jobs`: doit's `-n` (default: the
machine's cores). Run again on the same `--work`, it grades only what is not done yet.
`--batch N`: grade N instances at a time in the one build folder (cells and the compile
cache shared), each batch's rows printed and kept in `--work`/batches/ as it ends, so a run
cut short (a session, a machine) keeps what it finished; a batch already kept is not
graded again. The seconds are then the sum of the batches' (run.json).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
    ap.add_argument("--batch", type=int, default=0, help="instances per grade (0: all at once)")
    args = ap.parse_args(argv)
    work = (args.work or Path(tempfile.mkdtemp(prefix="cxxgate-realworld-"))).resolve()
    cases, out = work / "cases", work / "out"
    cases.mkdir(parents=True, exist_ok=True)
    # One run per work folder: a second one would rewrite the batch library the first is
    # grading (the grade's own lock comes later, after the import and the subset).
    lock = (work / "realworld.lock").open("w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"{work}: another bench/realworld.py run uses this work folder", file=sys.stderr)
        return 2
    extra = [f"options={args.options}"] if args.options else []
    extra += [f"data={args.data}"] if args.data else []
    imported = doit(
        work,
        "import",
        f"instances={args.instances.resolve()}",
        f"repo={args.repo.resolve()}",
        f"cases={cases}",
        # The run's own build folder, not the checkout's default: two runs from one
        # checkout (two repositories at once) would wait on each other's import.
        f"out={out}",
        *extra,
    )
    print(imported.stdout[-4000:], imported.stderr[-2000:], sep="")
    ids = [case_id(instance_of(json.loads(ln))) for ln in _lines(args.instances)]
    ids = [i for i in ids if (cases / i).is_dir()]
    size = args.batch or len(ids)
    batches = [ids[i : i + size] for i in range(0, len(ids), size)]
    labels = labels_of(args.labels)
    seconds, rows, cache = 0.0, [], ""
    for n, batch in enumerate(batches):
        folder = work / "batches" / f"{n:03d}" if args.batch else work
        done = folder / "rows.json"
        if args.batch and done.is_file():
            kept = json.loads(done.read_text())
            seconds += kept["seconds"]
            rows += kept["rows"]
            continue
        library = cases
        predictions = args.predictions.resolve()
        if args.batch:
            library, predictions = _subset(folder, work / f"cases-{n:03d}", batch, args)
        start = time.monotonic()
        graded = doit(
            work,
            "-n",
            str(args.jobs),
            "grade",
            f"cases={library}",
            f"out={out}",
            f"patches={predictions}",
            "report_only=1",
        )
        took = time.monotonic() - start
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "grade.log").write_text(graded.stdout + graded.stderr)
        report_file = out / "swe_report.json"
        if not report_file.is_file():
            print(graded.stdout[-6000:], graded.stderr[-3000:], sep="")
            print(f"no {report_file}: the grade did not report (log: {folder / 'grade.log'})")
            return 1
        found = _rows(json.loads(report_file.read_text()), out, labels)
        cache = next((ln for ln in graded.stdout.splitlines() if ln.startswith("ccache:")), "")
        if args.batch:
            for name in ("swe_report.json", "verdicts.jsonl", "table.txt"):
                if (out / name).is_file():
                    shutil.copy(out / name, folder / name)
            done.write_text(json.dumps({"seconds": took, "rows": found, "ccache": cache}))
            print(f"batch {n + 1}/{len(batches)}: {len(batch)} instance(s), {took:.0f} s; {cache}")
            _print(found)
        seconds += took
        rows += found
    print()
    _print(rows)
    mismatches = sum(r[3] == "NO" for r in rows)
    resolved = sum(r[1] == "resolved" for r in rows)
    log = out / "compiler-calls.log"
    compiles = (
        sum(1 for line in log.read_text().splitlines() if line.split()[2:3] == ["compile"])
        if log.is_file()
        else 0
    )
    print(f"\ngrade: {seconds:.0f} s, {compiles} compile(s) in {out.name}/ so far; {cache}")
    # For bench/realworld_naive.py's side-by-side line.
    (work / "run.json").write_text(json.dumps({"seconds": seconds, "compiles": compiles}) + "\n")
    if rows:
        print(f"resolved: {resolved}/{len(rows)} ({100 * resolved / len(rows):.1f}%)")
    matched = sum(r[3] == "yes" for r in rows)
    if labels:
        print(f"labels: {matched} of {sum(r[3] != '-' for r in rows)} reproduced")
    print(f"work folder: {work}")
    return 1 if mismatches else 0


def instance_of(record: dict[str, Any]) -> str:
    """A record's or a prediction's instance id, SWE-bench's or Multi-SWE-bench's."""
    if "instance_id" in record:
        return str(record["instance_id"])
    return f"{record['org']}__{record['repo']}-{record['number']}"


def _lines(path: Path) -> list[str]:
    return [ln for ln in path.read_text().splitlines() if ln.strip()]


def _subset(
    folder: Path, library: Path, batch: list[str], args: argparse.Namespace
) -> tuple[Path, Path]:
    """A library of this batch's case folders, beside `cases` (a case may name its
    repository relative to its folder), and this batch's predictions in `folder`."""
    cases = library.parent / "cases"
    if library.exists():
        shutil.rmtree(library)
    library.mkdir(parents=True)
    folder.mkdir(parents=True, exist_ok=True)
    if (cases / "envelopes.yaml").is_file():
        shutil.copy(cases / "envelopes.yaml", library)
    for case in batch:
        shutil.copytree(cases / case, library / case)
    lines = _lines(args.predictions)
    kept = [ln for ln in lines if case_id(instance_of(json.loads(ln))) in batch]
    subset = folder / "predictions.jsonl"
    subset.write_text("".join(ln + "\n" for ln in kept))
    return library, subset


Row = list[str]


def _rows(report: dict[str, Any], out: Path, labels: dict[str, bool]) -> list[Row]:
    """One row per instance: ours, the label, whether they match, our class, and the gold
    patch's and base + test patch's classes."""
    # The gold patch's row (`reference`) and the base tree's with the test patch (`base`).
    states = {
        (row["case"], row["role"]): row["class"]
        for row in map(json.loads, (out / "verdicts.jsonl").read_text().splitlines())
    }
    rows = []
    for ident, inst in sorted(report["instances"].items()):
        ours = "resolved" if inst["resolved"] else "unresolved"
        label = labels.get(ident.split("/")[0])
        said = "-" if label is None else "resolved" if label else "unresolved"
        match = "-" if label is None else "yes" if label == inst["resolved"] else "NO"
        gold, base = (states.get((inst["case"], role), "-") for role in ("reference", "base"))
        rows.append([ident, ours, said, match, str(inst["class"]), gold, base])
    return rows


def _print(rows: list[Row]) -> None:
    table = [["instance", "ours", "label", "match", "class", "gold", "base"], *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


if __name__ == "__main__":
    raise SystemExit(main())
