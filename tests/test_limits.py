"""Runs are bounded: time limit, output cap, leftover children, all classified as data."""

from __future__ import annotations

import time
from pathlib import Path

from conftest import FIXTURES, run_grade

from cxxgate.process import bounded

ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}


def test_hostile_must_build_units_are_classified(tmp_path: Path) -> None:
    grade = run_grade(tmp_path / "out", library=FIXTURES / "limits")
    assert grade.returncode == 0, grade.output
    classes = {k: r["gates"]["negcomp"]["class"] for k, r in grade.rows.items()}
    assert classes == {
        "limits/reference": "accept",
        "limits/spin": "hang",
        "limits/flood": "output_overflow",
        "limits/orphan": "accept",
        "limits/fail": "functional_regression",
    }


def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    script = f"(sleep 2; touch {marker}) & sleep 30"
    start = time.monotonic()
    out = bounded(["sh", "-c", script], cwd=tmp_path, env=ENV, timeout=0.5, output_cap=100)
    assert out.timed_out and out.signal == 9
    assert time.monotonic() - start < 2
    time.sleep(2.5)
    assert not marker.exists()  # the background child died with the group


def test_output_cap_stops_a_flood(tmp_path: Path) -> None:
    out = bounded(["yes"], cwd=tmp_path, env=ENV, timeout=10, output_cap=10_000)
    assert out.overflowed and not out.timed_out
    assert len(out.stdout) <= 10_001


def test_leftover_child_is_killed_and_reported(tmp_path: Path) -> None:
    out = bounded(["sh", "-c", "sleep 30 & echo done"], cwd=tmp_path, env=ENV, timeout=10,
                  output_cap=1000)
    assert out.exit == 0 and out.stdout == b"done\n"
    assert out.stray_processes and out.wall_seconds < 1


def test_stdin_env_and_rusage_are_the_childs_own(tmp_path: Path) -> None:
    out = bounded(["sh", "-c", "cat; echo $LC_ALL"], cwd=tmp_path, env=ENV, stdin=b"in\n",
                  timeout=5, output_cap=1000)
    assert out.stdout == b"in\nC\n"
    assert out.max_rss_kib > 0 and out.cpu_seconds >= 0
