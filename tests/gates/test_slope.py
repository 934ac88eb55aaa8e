"""Gate `slope` against hostile patches that hide work from the count (cases/dedupe), as
the shared shipped grade found them (real g++, valgrind, doit), and its profile reading on
real callgrind output."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import Grade

from cxxgate.contract import probe
from cxxgate.gates import slope

HIDDEN = {
    "reserve": "accept",
    "quadratic": "steep",
    "on_thread": "steep",
    "above_table": "steep",
    "preload_switch": "measurement_tamper",
    "rewrite_profile": "measurement_tamper",
    # The red team's: each accepted by the driver of before (sizes up to 3x the table,
    # values below n, 7 calls a process, `count`/`native` in argv, a native bar raised by
    # the counted exponent).
    "above_drawn": "measurement_tamper",
    "big_values": "steep",
    "after_calls": "measurement_tamper",
    "argv_mode": "steep",
    "maps_padding": "measurement_tamper",
    "forge_consistent": "measurement_tamper",
}


@pytest.fixture(scope="module")
def hidden(shipped: Grade) -> dict[str, dict[str, str]]:
    """The gate's verdicts on dedupe's patches, from the suite's one shipped grade."""
    return {p: shipped.gate(f"dedupe/{p}", "slope") for p in [*HIDDEN, "reference"]}


@pytest.mark.parametrize("patch", sorted(HIDDEN))
def test_hidden_work_lands_on_its_class(hidden: dict[str, dict[str, str]], patch: str) -> None:
    assert hidden[patch]["class"] == HIDDEN[patch], hidden[patch]["summary"]


def test_each_hole_is_named(hidden: dict[str, dict[str, str]]) -> None:
    assert "cost lines add up to" in str(hidden["rewrite_profile"]["summary"])
    for patch in (
        "preload_switch",
        "maps_padding",
        "forge_consistent",
        "after_calls",
        "above_drawn",
    ):
        # Quadratic natively: past the native limit, or far over the reference's native
        # time, whatever the count said (maps_padding's counted tail is steep on purpose).
        summary = str(hidden[patch]["summary"])
        assert "native: natively" in summary, summary
        assert "ran into its limit at" in summary or "tamper_ratio 4.0)" in summary, summary
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
    edge = 1.5 * 2048 * (cfg.reach / 1.5) ** 0.5  # the two log-scale slices meet here
    for drawn in (a, b):
        assert 1.5 * 2048 < drawn[0] <= edge + 1 < drawn[1] <= cfg.reach * 2048 + 1


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_the_native_schedule_reaches_far_and_calls_many_times(seed: int) -> None:
    """Many calls (a patch counting its calls meets more than it can wait for), the large
    ones 16x to native_reach x the table's max, the last past two thirds of the calls."""
    cfg = slope.Config(header="include/x.hpp", function="f", sizes=[256, 512, 1024, 4096])
    entries = slope.native_schedule(cfg, "c", seed)
    assert entries == slope.native_schedule(cfg, "c", seed)
    schedule = [n for n, _ in entries]
    assert cfg.native_calls[0] <= len(schedule) <= cfg.native_calls[1]
    big = [i for i, n in enumerate(schedule) if n > 4096]
    assert len(big) == cfg.native_big
    assert all(16 * 4096 <= schedule[i] <= cfg.native_reach * 4096 for i in big)
    assert big[-1] >= 2 * len(schedule) // 3 > 40
    assert all(1024 <= n <= 4096 for i, n in enumerate(schedule) if i not in big)
    # Every input shape has a big call (sorted, reversed, all equal, ...), the small calls
    # draw theirs.
    assert {entries[i][1] for i in big} == set(range(slope.SHAPES))
    assert len({shape for _, shape in entries}) == slope.SHAPES


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_scale_processes_hold_one_big_call_and_many_small(seed: int) -> None:
    """`first`: its process's only call, of E elements; `small`: calls of M/4..M summing to
    E, more of them than a patch that changes after its 513th call can wait for."""
    cfg = slope.Config(header="include/x.hpp", function="f", sizes=[256, 512, 1024, 4096])
    first, small = slope.scale_schedules(cfg, "c", seed)
    assert first != slope.scale_schedules(cfg, "c", seed + 10)[0]
    total = first[0][0]
    assert len(first) == 1 and 0.75 * cfg.scale * 4096 <= total <= cfg.scale * 4096
    assert total <= sum(n for n, _ in small) < total + 4096
    assert all(1024 <= n <= 4096 for n, _ in small) and len(small) > 600
    shapes = slope.lane_schedules(cfg, "c", seed)["shapes"]
    assert sorted(k for _, k in shapes) == list(range(slope.SHAPES))
    assert all(n == total // slope.SHAPES for n, _ in shapes)


def test_the_driver_has_one_mode_and_spreads_its_values(tmp_path: Path) -> None:
    """The same argv for both lanes (none): the schedule comes on stdin. Values cover the
    32-bit range, whatever n; repeats are there to find."""
    cfg = slope.Config(header="include/x.hpp", function="f", sizes=[256, 512, 1024, 4096])
    text = probe.render(
        slope.DRIVER,
        header_include='"x.hpp"',
        sizes=cfg.sizes,
        seed=9,
        probe="cxxgate_probe_t",
        marker="cxxgate_mark_t",
        function="f",
    )
    assert "int main() {" in text and "argc" not in text and '"native"' not in text
    # The pinned function reports what it was given: the largest value, and whether any
    # value came twice.
    (tmp_path / "x.hpp").write_text(
        "#include <cstdint>\n#include <cstdio>\n#include <set>\n#include <vector>\n"
        "inline std::size_t f(const std::vector<std::uint32_t>& v) {\n"
        "  std::uint32_t top = 0;\n  for (auto x : v) top = x > top ? x : top;\n"
        "  std::set<std::uint32_t> seen(v.begin(), v.end());\n"
        '  std::fprintf(stderr, "%u %d\\n", top, int(seen.size() < v.size()));\n'
        "  return v.size();\n}\n"
    )
    (tmp_path / "d.cpp").write_text(text)
    subprocess.run(["g++", "-std=c++20", "-O1", "d.cpp", "-o", "d"], cwd=tmp_path, check=True)
    run = subprocess.run(
        ["./d"], cwd=tmp_path, input="300:0 300:0 300:0 5000:0\n", capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert len(run.stdout.splitlines()) == 4
    seen = [line.split() for line in run.stderr.splitlines()]
    assert len(seen) == 4 and len({s[0] for s in seen}) == 4  # call i's input: (seed, n, i)'s
    assert all(int(top) > 1 << 30 for top, _ in seen)  # not tied to n
    assert all(repeat == "1" for _, repeat in seen)
    # The shapes: sorted, reversed, all equal, all distinct, low 12 bits zero.
    (tmp_path / "x.hpp").write_text(
        "#include <algorithm>\n#include <cstdint>\n#include <cstdio>\n#include <set>\n"
        "#include <vector>\n"
        "inline std::size_t f(const std::vector<std::uint32_t>& v) {\n"
        "  std::set<std::uint32_t> seen(v.begin(), v.end());\n"
        "  bool low = std::all_of(v.begin(), v.end(), [](auto x) { return (x & 0xfff) == 0; });\n"
        '  std::fprintf(stderr, "%d %d %zu %d\\n", int(std::is_sorted(v.begin(), v.end())),\n'
        "    int(std::is_sorted(v.rbegin(), v.rend())), seen.size(), int(low));\n"
        "  return v.size();\n}\n"
    )
    subprocess.run(["g++", "-std=c++20", "-O1", "d.cpp", "-o", "d"], cwd=tmp_path, check=True)
    run = subprocess.run(
        ["./d"],
        cwd=tmp_path,
        input="999:0 999:1 999:2 999:3 999:4 999:5\n",
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    shapes = [line.split() for line in run.stderr.splitlines()]
    assert shapes[0][:2] == ["0", "0"] and int(shapes[0][2]) < 999  # drawn: repeats, no order
    assert shapes[1][0] == "1" and shapes[2][1] == "1"  # sorted, reversed
    assert shapes[3][2] == "1" and shapes[4][2] == "999" and shapes[5][3] == "1"
    bad = subprocess.run(["./d"], cwd=tmp_path, input=b"10:6\n", capture_output=True)
    assert bad.returncode == 2
    # No argv at all: an argument is refused, not read as a mode.
    assert subprocess.run(["./d"], cwd=tmp_path, input="", capture_output=True).returncode == 2


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
