"""A nightly batch: N predictions (default 1,000) cycling through every shipped patch of
the shipped cases, graded into one build folder in one run:

1. cold (`-n 2`), 2. warm no-op, 3. after a prompt edit + `doit freeze`,
4. after one prediction's patch changed (bench/side_by_side.py asks for this step).

Prints seconds, compiler invocations and binary runs per step (targets: steps 2 and 3
under 3 s, with 0 compiles and 0 runs). The library is a private copy (its prompt is
edited), the identity lock included.

    python bench/nightly_bench.py            # 1,000 predictions
    python bench/nightly_bench.py 200
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from benchlib import PROJECT, doit, freeze, lines, predictions, vary, write_jsonl

Step = tuple[str, float, float, int, int]  # name, grade s, freeze s, compiles, runs


def measure(n: int, edit_patch: bool = False) -> list[Step]:
    """The steps above on N predictions; raises when a grade fails."""
    with tempfile.TemporaryDirectory(prefix="cxxgate-nightly-") as tmp:
        library = Path(tmp) / "cases"
        shutil.copytree(PROJECT / "cases", library)
        preds = Path(tmp) / "preds.jsonl"
        batch = predictions(library, n)
        write_jsonl(preds, batch)
        out = Path(tmp) / "out"
        grade = ("-n", "2", "grade", f"patches={preds}", "report_only=1")
        steps = ["cold", "warm no-op", "prompt edited + frozen"]
        steps += ["one patch edited"] if edit_patch else []
        rows: list[Step] = []
        for step in steps:
            frozen = 0.0
            if step == "prompt edited + frozen":
                prompt = library / "token_handle/prompt.md.j2"
                prompt.write_text(prompt.read_text() + "\nKeep the diff small.\n")
                frozen = freeze(out, library)
            if step == "one patch edited":
                first = next(i for i, p in enumerate(batch) if vary(p["model_patch"], 1))
                edited = vary(batch[first]["model_patch"], 1)
                assert edited is not None
                batch[first] = {**batch[first], "model_patch": edited}
                write_jsonl(preds, batch)
            calls, runs = lines(out / "compiler-calls.log"), lines(out / "runs.log")
            seconds, proc = doit(out, library, *grade)
            if proc.returncode != 0:
                msg = f"{step}: grade failed\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
                raise RuntimeError(msg)
            rows.append(
                (
                    step,
                    seconds,
                    frozen,
                    lines(out / "compiler-calls.log") - calls,
                    lines(out / "runs.log") - runs,
                )
            )
    return rows


def main(argv: list[str]) -> int:
    n = int(argv[0]) if argv else 1000
    try:
        rows = measure(n)
    except RuntimeError as exc:
        print(exc)
        return 1
    print(f"{n} predictions over the shipped patches, doit -n 2, one build folder")
    print(f"{'step':<24} {'grade s':>8} {'freeze s':>9} {'compiles':>9} {'runs':>6}")
    for step, seconds, frozen, calls, runs in rows:
        print(f"{step:<24} {seconds:>8.2f} {frozen:>9.2f} {calls:>9} {runs:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
