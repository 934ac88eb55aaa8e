"""The plain loop a real-world grade is measured against, by hand (never in CI): for every
instance, every state a grade builds (the gold patch, the base with the test patch, and
each prediction of `--predictions`), a fresh checkout at the base commit, the patches
applied with `git apply`, then the benchmark's recipe: `cmake` (the project's own flags
and default build type, Ninja), a full build, and `ctest`. No cache, nothing shared
between states or instances: what a harness without cells and ccache does.

    python bench/realworld_naive.py --instances fmt.jsonl --repo path/to/fmt \\
        [--predictions preds.jsonl] [--options "-DX=ON"] [--work DIR] [--cxxgate DIR]

Prints one line per tree (seconds, compiles, ctest's exit) and the totals; with
`--cxxgate DIR` (bench/realworld.py's `--work` folder of the same instances), its cold
seconds and compiles beside them, from that run's `run.json`. Compiles are the object
files Ninja built (`.ninja_log`). The states are built one after another with Ninja's
default parallelism, as the grade's project builds are.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from cxxgate.library.swe_import import case_id, options_of, parse_record  # noqa: E402


def sh(argv: list[str], cwd: Path, timeout: float = 7200) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, text=True, capture_output=True, check=False, timeout=timeout
    )


def states(instances: Path, predictions: Path | None) -> list[tuple[str, str, str, list[str]]]:
    """(case, state, base commit, patches to apply in order) for every tree to build."""
    preds: dict[str, list[str]] = {}
    if predictions is not None:
        for line in predictions.read_text().splitlines():
            if line.strip():
                p = json.loads(line)
                ident = p.get("instance_id") or f"{p['org']}__{p['repo']}-{p['number']}"
                text = p.get("model_patch") or p.get("fix_patch") or ""
                preds.setdefault(case_id(ident), []).append(text)
    trees = []
    for line in instances.read_text().splitlines():
        if not line.strip():
            continue
        inst = parse_record(json.loads(line))
        trees.append((inst.case_id, "gold", inst.base_commit, [inst.test_patch, inst.gold]))
        trees.append((inst.case_id, "base", inst.base_commit, [inst.test_patch]))
        for i, text in enumerate(preds.get(inst.case_id, [])):
            trees.append(
                (inst.case_id, f"prediction{i}", inst.base_commit, [inst.test_patch, text])
            )
    return trees


def build_one(
    repo: Path, where: Path, commit: str, patches: list[str], options: list[str]
) -> tuple[float, int, str]:
    """(seconds, compiles, what happened) of one plain checkout + build + ctest."""
    start = time.monotonic()
    if sh(["git", "clone", "-q", "--no-checkout", str(repo), str(where)], repo).returncode:
        return 0.0, 0, "clone failed"
    if sh(["git", "checkout", "-q", commit], where).returncode:
        return 0.0, 0, f"checkout of {commit} failed"
    for i, text in enumerate(patches):
        patch = where.parent / f"{where.name}.{i}.diff"
        patch.write_text(text if text.endswith("\n") else text + "\n")
        if sh(["git", "apply", str(patch)], where).returncode:
            return time.monotonic() - start, 0, f"patch {i} does not apply"
    build = where / "build"
    if sh(["cmake", "-S", ".", "-B", "build", "-G", "Ninja", *options], where).returncode:
        return time.monotonic() - start, 0, "configure failed"
    built = sh(["cmake", "--build", "build"], where).returncode
    log = build / ".ninja_log"
    # .ninja_log: "start end mtime target hash", tab-separated, after a "# ninja log" line.
    fields = [ln.split("\t") for ln in log.read_text().splitlines()] if log.is_file() else []
    compiles = sum(1 for f in fields if len(f) >= 4 and f[3].endswith(".o"))
    if built:
        return time.monotonic() - start, compiles, "build failed"
    tested = sh(["ctest", "--test-dir", "build", "--output-on-failure"], where)
    return time.monotonic() - start, compiles, f"ctest exit {tested.returncode}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=Path, required=True)
    ap.add_argument("--repo", type=Path, required=True)
    ap.add_argument("--predictions", type=Path)
    ap.add_argument("--options", default="", help='CMake -D options ("-DX=ON ...")')
    ap.add_argument("--work", type=Path)
    ap.add_argument("--cxxgate", type=Path, help="bench/realworld.py's --work folder")
    args = ap.parse_args(argv)
    work = (args.work or Path(tempfile.mkdtemp(prefix="cxxgate-naive-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    options = options_of(args.options)
    total, compiles = 0.0, 0
    for case, state, commit, patches in states(args.instances, args.predictions):
        seconds, built, said = build_one(
            args.repo.resolve(), work / f"{case}.{state}", commit, patches, options
        )
        total, compiles = total + seconds, compiles + built
        print(f"{case}  {state:<12} {seconds:7.0f} s  {built:5d} compile(s)  {said}", flush=True)
    print(f"\nplain loop: {total:.0f} s, {compiles} compile(s)")
    run = args.cxxgate / "run.json" if args.cxxgate else None
    if run is not None and run.is_file():
        ours = json.loads(run.read_text())
        print(
            f"cxxgate cold: {ours['seconds']:.0f} s, {ours['compiles']} compile(s) "
            f"(ratio {total / max(ours['seconds'], 1):.2f}x time, "
            f"{compiles / max(ours['compiles'], 1):.2f}x compiles)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
