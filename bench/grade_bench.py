"""Cold grade, warm re-run, prompt-edit and one-patch-edit re-runs of a case library:
seconds and compiler invocations, measured in one run on a private copy of the project.
An edit moves a pin of identity.lock: each edited step runs `doit freeze allow_bump=1`
first (not timed), as a user re-pins an intended change.

    python bench/grade_bench.py                  # the shipped library
    python bench/grade_bench.py case=token_handle -n 2
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import PROJECT, lines


def calls(out: Path) -> int:
    return lines(out / "compiler-calls.log")


def grade(project: Path, out: Path, extra: list[str]) -> tuple[float, int, int]:
    before = calls(out)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "doit", "-f", str(project / "dodo.py"), *extra, "grade",
         f"out={out}"],
        cwd=project, capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": str(project)},
    )
    return time.perf_counter() - start, calls(out) - before, proc.returncode


def freeze(project: Path, out: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "doit", "-f", str(project / "dodo.py"), "freeze",
         "allow_bump=1", f"out={out}"],
        cwd=project, capture_output=True, check=True,
        env={**os.environ, "PYTHONPATH": str(project)},
    )


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="cxxgate-bench-") as tmp:
        project = Path(tmp) / "project"
        for name in ("cxxgate", "cases"):  # the links cxxgate/gates, cxxgate/templates followed
            if (PROJECT / name).exists():
                shutil.copytree(PROJECT / name, project / name,
                                ignore=shutil.ignore_patterns("__pycache__"))
        for name in ("dodo.py", "pyproject.toml"):
            shutil.copy(PROJECT / name, project)
        out = Path(tmp) / "out"
        rows = []
        rows.append(("cold", *grade(project, out, argv)))
        rows.append(("warm (nothing changed)", *grade(project, out, argv)))
        prompt = project / "cases/token_handle/prompt.md.j2"
        prompt.write_text(prompt.read_text() + "\nKeep the diff small.\n")
        freeze(project, out)
        rows.append(("prompt edited + frozen", *grade(project, out, argv)))
        patch = project / "cases/token_handle/patches/good_valid_reset.diff"
        patch.write_text(patch.read_text().replace("valid()", "is_valid()"))
        freeze(project, out)
        rows.append(("one patch edited + frozen", *grade(project, out, argv)))
    cold = rows[0][1]
    print(f"{'step':<24} {'seconds':>8} {'compiler calls':>15} {'vs cold':>8} {'exit':>5}")
    for name, seconds, n, code in rows:
        print(f"{name:<24} {seconds:>8.2f} {n:>15} {seconds / cold:>8.3f} {code:>5}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
