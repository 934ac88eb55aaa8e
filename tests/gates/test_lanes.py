"""The runtime lanes (gates sanitizer, matrix, budget) on their shipped cases, real g++.

One cold grade of the five cases is shared by the module; each class of the three gates
is asserted on the row that ships to reach it. Tests read verdict classes, never timings.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
from conftest import Grade

from cxxgate.store.layout import Layout

# (row, gate) -> class: every class of the three gates, each reached by a shipped patch.
REACHED = {
    # sanitizer
    ("label/good_snprintf", "sanitizer"): "accept",
    ("label/dangling_view", "sanitizer"): "sanitizer_fault",
    ("label/leaky_label", "sanitizer"): "sanitizer_fault",
    ("label/wrong_separator", "sanitizer"): "functional_mismatch",
    ("label/unused_helper", "sanitizer"): "build_fail",
    ("tally/heap_uninit", "sanitizer"): "twin_drift",
    ("tally/stack_uninit", "sanitizer"): "functional_mismatch",
    ("runaway/spin", "sanitizer"): "hang",
    ("runaway/fork_loop", "sanitizer"): "hang",
    ("runaway/flood", "sanitizer"): "output_overflow",
    # matrix
    ("ring/good_max_element", "matrix"): "accept",
    ("ring/signed_seq", "matrix"): "run_fail:asan+ubsan2",
    ("label/unused_helper", "matrix"): "compile_fail:dbg+rel",
    ("tally/stack_uninit", "matrix"): "compile_fail:rel",
    ("tally/heap_uninit", "matrix"): "disagreement",
    ("label/wrong_separator", "matrix"): "run_fail:dbg+rel+asan+ubsan2",
    # budget
    ("hot_path/good_resize", "budget"): "accept",
    ("hot_path/drop_reserve", "budget"): "over_rss",
    ("hot_path/text_roundtrip", "budget"): "over_wall",
    ("hot_path/off_by_one", "budget"): "stdout_mismatch",
    ("hot_path/salted", "budget"): "unstable_stdout",
    ("hot_path/length_guard", "budget"): "exit_mismatch",
    ("hot_path/narrow_counter", "budget"): "hang",
    ("runaway/flood", "budget"): "output_overflow",
    ("runaway/leftover_child", "budget"): "stray_process",
    # The golden line and exit 0 from a static initialiser: main never ran (harness entry).
    ("runaway/early_exit", "sanitizer"): "functional_mismatch",
    ("runaway/early_exit", "budget"): "exit_mismatch",
}


@pytest.fixture(scope="module")
def lanes(shipped: Grade) -> Grade:
    """The shared cold grade of the shipped library (tests/conftest.py)."""
    return shipped


def _gate_json(grade: Grade, row: str, gate: str) -> dict[str, object]:
    case, patch = row.split("/")
    data: dict[str, object] = json.loads(
        (grade.out / "results" / case / patch / f"{gate}.json").read_text()
    )
    return data


def test_every_shipped_patch_ends_as_expected(lanes: Grade) -> None:
    assert lanes.returncode == 0, lanes.output[-3000:]
    # Printed even under `-n 2`, where doit's threads swap sys.stdout around long tasks.
    assert "grade ok: every row ended as expected" in lanes.output
    rows = lanes.rows
    for row in ("label", "tally", "ring", "hot_path", "runaway"):
        assert rows[f"{row}/reference"]["verdict"] == "accept"
        assert not rows[f"{row}/reference"]["broken"]
    for name, row in rows.items():
        assert not row.get("expect_problems"), (name, row["expect_problems"])


@pytest.mark.parametrize(("row", "gate"), sorted(REACHED))
def test_class_reached(lanes: Grade, row: str, gate: str) -> None:
    assert lanes.gate(row, gate)["class"] == REACHED[row, gate]


def test_three_bits_side_by_side(lanes: Grade) -> None:
    # Only the perturbed twin sees the heap accumulator nobody initialised.
    checks = _gate_json(lanes, "tally/heap_uninit", "sanitizer")["checks"]
    bits = {c["name"].split()[0]: c["ok"] for c in checks}  # type: ignore[index, union-attr]
    assert bits == {"functional": True, "twin": False, "sanitizer": True}
    evidence = _gate_json(lanes, "tally/heap_uninit", "sanitizer")["evidence"]
    assert "probes/tally_main.cpp: functional=pass twin=fail sanitizer=pass" in evidence  # type: ignore[operator]


def test_sanitizer_summary_names_kind_and_top_frame(lanes: Grade) -> None:
    summary = lanes.gate("label/dangling_view", "sanitizer")["summary"]
    assert "heap-use-after-free at src/label.cpp:" in summary
    assert (
        "memory leak at src/label.cpp:4" in lanes.gate("label/leaky_label", "sanitizer")["summary"]
    )
    assert (
        "signed integer overflow at include/ring.hpp:"
        in lanes.gate("ring/signed_seq", "matrix")["summary"]
    )


def test_matrix_records_every_cell(lanes: Grade) -> None:
    evidence = [e for e in _gate_json(lanes, "ring/signed_seq", "matrix")["evidence"] if "[" in e]  # type: ignore[union-attr]
    assert len(evidence) == 4
    assert any("[dbg] compile=ok run=exited:0" in e and "sanitizer=-" in e for e in evidence)
    assert any("[asan]" in e and "signed integer overflow" in e for e in evidence)


def test_cells_shared_across_gates_are_built_once(lanes: Grade) -> None:
    def cells_of(row: str) -> int:
        """Cells built on this row's own tree."""
        tree = next(e for e in lanes.rows[row]["evidence"] if e.startswith("trees/"))  # type: ignore[union-attr]
        key = tree.split("/", 1)[1]
        results = [json.loads(p.read_text()) for p in (lanes.out / "cells").glob("*/*/result.json")]
        # The objects they link are cells too (cxxgate/cells/cell.py), counted apart.
        return sum(
            r["tree_root"].endswith(key) and r["kind"] not in ("object", "objects")
            for r in results
        )

    # sanitizer {dbg, dbg_pattern, asan} + matrix {dbg, rel, asan, ubsan2} + budget {rel}:
    # 8 asks, 5 distinct cells. The reference tree also carries the budget's meter.
    assert cells_of("hot_path/good_resize") == 5
    assert cells_of("hot_path/reference") == 6
    # No cell compiled anything twice: one log line per (cell, phase, source). A scan's
    # compiles (census: the marked copies of one tree it builds) are not cells.
    layout = Layout(lanes.out)
    log = (lanes.out / "compiler-calls.log").read_text().splitlines()
    entries = [tuple(line.split(maxsplit=3)[1:]) for line in log]
    counts = Counter(e for e in entries if layout.cell_result(e[0]).exists())
    assert counts and max(counts.values()) == 1


def test_budget_measures_the_program_not_the_harness(lanes: Grade) -> None:
    evidence = _gate_json(lanes, "runaway/reference", "budget")["evidence"]
    samples = [e for e in evidence if str(e).startswith("sample ")]  # type: ignore[union-attr]
    assert samples and all("metered=True" in s for s in samples)
    # A program that prints one line: its own peak RSS is a few MiB. A child forked from
    # the Python harness would report Python's size (15+ MiB) however small it is.
    rss = [int(s.split("rss=")[1].split("KiB")[0]) for s in samples]
    assert max(rss) < 12 * 1024, rss


def test_budget_series_is_interleaved(lanes: Grade) -> None:
    evidence = _gate_json(lanes, "hot_path/good_resize", "budget")["evidence"]
    sides = [str(e).split()[2] for e in evidence if str(e).startswith("sample ")]  # type: ignore[union-attr]
    assert sides == ["reference", "candidate"] * 6  # 1 warm-up + 5 timed rounds


def test_hostile_candidates_leave_nothing_behind(lanes: Grade) -> None:
    names = set()
    for proc in Path("/proc").iterdir():
        try:
            names.add((proc / "comm").read_text().strip())
        except OSError:
            continue
    assert not names & {"cxxgate-fork", "cxxgate-stray"}
    # The flood was cut at the cap, not stored in gigabytes.
    run_dirs = [p for p in (lanes.out / "runs").glob("*/*") if p.is_dir()]
    assert max(p.stat().st_size for d in run_dirs for p in d.glob("stdout*")) <= (1 << 20) + 1
    assert os.path.getsize(lanes.out / "verdicts.jsonl") < 1 << 20
