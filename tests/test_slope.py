"""Gate `slope` against hostile patches that hide work from the count (cases/dedupe), on a
private grade of a few rows (real g++, valgrind, doit), and its profile reading on real
callgrind output."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import case_library, run_grade

from cxxgate.gates import slope

HIDDEN = {
    "reserve": "accept",
    "quadratic": "steep",
    "on_thread": "steep",
    "above_table": "steep",
    "preload_switch": "measurement_tamper",
    "rewrite_profile": "measurement_tamper",
}


def _library(dest: Path, patches: dict[str, str]) -> Path:
    library = case_library(dest, "dedupe")
    case_file = library / "dedupe" / "case.yaml"
    lines = case_file.read_text().splitlines(keepends=True)
    head = lines[: lines.index("patches:\n") + 1]
    keep = [ln for ln in lines if any(f"patches/{p}.diff" in ln for p in patches)]
    case_file.write_text("".join(head + keep))
    return library


@pytest.fixture(scope="module")
def hidden(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    root = tmp_path_factory.mktemp("slope")
    grade = run_grade(root / "out", "seed=77", library=_library(root / "cases", HIDDEN))
    assert grade.returncode == 0, grade.output[-3000:]
    return {p: grade.gate(f"dedupe/{p}", "slope") for p in [*HIDDEN, "reference"]}


@pytest.mark.parametrize("patch", sorted(HIDDEN))
def test_hidden_work_lands_on_its_class(hidden: dict[str, dict[str, str]], patch: str) -> None:
    assert hidden[patch]["class"] == HIDDEN[patch], hidden[patch]["summary"]


def test_each_hole_is_named(hidden: dict[str, dict[str, str]]) -> None:
    assert "cost lines add up to" in str(hidden["rewrite_profile"]["summary"])
    assert "natively the function grows far steeper" in str(hidden["preload_switch"]["summary"])
    # The table alone fits the reference's line: only the drawn sizes' tail is steep.
    above = str(hidden["above_table"]["summary"])
    table, tail = slope_exponents(above)
    assert table < 1.3 and tail > 2.0, above


def slope_exponents(summary: str) -> tuple[float, float]:
    m = re.search(r"exponent ([\d.]+) .*tail \[[\d, ]+\]: ([\d.]+)", summary)
    assert m is not None, summary
    return float(m[1]), float(m[2])


def test_drawn_sizes_lie_beyond_the_table_and_follow_the_seed() -> None:
    cfg = slope.Config(header="include/x.hpp", function="f", sizes=[256, 512, 1024, 2048])
    a, b = slope.drawn_sizes(cfg, "c", 1), slope.drawn_sizes(cfg, "c", 2)
    assert a == slope.drawn_sizes(cfg, "c", 1) and a != b
    for drawn in (a, b):
        assert 3072 < drawn[0] <= 4096 < 5120 < drawn[1] <= 6144


def _callgrind(tmp_path: Path, source: str, *args: str) -> list[Path]:
    tool = slope.valgrind()
    if tool is None:
        pytest.skip("valgrind is not installed")
    (tmp_path / "t.cpp").write_text(source)
    subprocess.run(["g++", "-O1", "-pthread", "t.cpp", "-o", "t"], cwd=tmp_path, check=True)
    subprocess.run(
        [
            tool[0],
            "--tool=callgrind",
            "--dump-before=*mark*",
            "--separate-threads=no",
            "--trace-children=yes",
            "--callgrind-out-file=cg.%p",
            "-q",
            "./t",
            *args,
        ],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    return sorted(tmp_path.glob("cg.*"))


THREADS = """
#include <initializer_list>
#include <thread>
__attribute__((noinline, noipa)) void mark() { asm volatile(""); }
__attribute__((noinline, noipa)) long work(long n) {
  long s = 0;
  std::thread t([&] { for (long i = 0; i < n * n; ++i) s += i ^ (s >> 3); });
  t.join();
  return s;
}
int main() {
  long r = 0;
  for (long n : {100, 400}) { mark(); r += work(n); mark(); }
  return r == 7;
}
"""


def test_every_thread_counts_and_totals_are_recounted(tmp_path: Path) -> None:
    files = _callgrind(tmp_path, THREADS)
    for path in files:  # callgrind's own totals are the sum of its cost lines
        slope._totals(path)
    run = type("Run", (), {"kept": str(tmp_path)})()
    prof = slope.profile_of(run)
    assert prof is not None and len(prof.parts) == 5 and prof.children == 0
    small, large = prof.parts[1], prof.parts[3]
    assert small > 100 * 100 and large > 12 * small  # the worker thread's n^2 is counted
    # A totals line rewritten by hand no longer adds up.
    target = next(p for p in files if p.name.endswith(".4"))
    target.write_text(target.read_text().replace(f"totals: {large}", "totals: 1000"))
    with pytest.raises(slope.Forged, match="cost lines add up to"):
        slope.profile_of(run)


def test_charged_counts_work_left_running_after_the_call() -> None:
    ref = slope.Profile([9, 100, 50, 200, 60], 0)
    cand = slope.Profile([9, 100, 550, 200, 60], 7)
    assert slope.charged(cand, ref, 2) == [600, 207]
    assert slope.charged(slope.Profile([1, 2, 3], 0), ref, 2) is None
    json.dumps(slope.charged(ref, ref, 2))
    assert shutil.which("g++")
