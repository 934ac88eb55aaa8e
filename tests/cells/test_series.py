"""Paired series over lanes (cxxgate/runs/run.py): the lanes run in order and the series
ends after the first lane that decides against the candidate."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_limits import _program

from cxxgate.runs.run import RunSpec, execute
from cxxgate.store.layout import Layout

# Both sides read one word: the reference echoes it at once; the candidate sleeps on
# `hang`, spins ~0.3 s on `slow`, answers `odd` with another line, else echoes it.
REFERENCE = """#include <iostream>
#include <string>
int main() { std::string w; std::cin >> w; std::cout << w << "\\n"; }
"""
CANDIDATE = """#include <chrono>
#include <iostream>
#include <string>
#include <thread>
int main() {
  std::string w; std::cin >> w;
  if (w == "hang") std::this_thread::sleep_for(std::chrono::seconds(30));
  if (w == "slow") {
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < end) {}
  }
  std::cout << (w == "odd" ? "even" : w) << "\\n";
}
"""


def _lanes(tmp_path: Path, lanes: list[str], stop_ratio: float | None = None) -> list[str]:
    """The lane of each sample the series ran, in order."""
    layout = Layout(tmp_path / "out")
    reference, candidate = _program(layout, REFERENCE), _program(layout, CANDIDATE)
    spec = RunSpec(
        cell_key=candidate.key,
        env=candidate.envelope.run_env,
        timeout=2,
        reference=reference.key,
        rounds=2,
        lanes=tuple((f"{i}-{word}", f"{word}\n") for i, word in enumerate(lanes)),
        stop_ratio=stop_ratio,
    )
    result = execute(spec, layout)
    return [s["lane"] for s in result.samples]


def test_every_lane_runs_when_none_decides(tmp_path: Path) -> None:
    ran = _lanes(tmp_path, ["a", "slow", "b"])
    assert ran == ["0-a"] * 4 + ["1-slow"] * 4 + ["2-b"] * 4


@pytest.mark.parametrize(
    ("lanes", "stop_ratio", "last"),
    [
        (["a", "hang", "b"], None, ["1-hang"] * 2),  # stopped at its limit: no second round
        (["a", "odd", "b"], None, ["1-odd"] * 4),  # other results than the reference's
        (["a", "slow", "b"], 3.0, ["1-slow"] * 4),  # far slower than the reference
    ],
)
def test_the_series_ends_after_the_lane_that_decides(
    tmp_path: Path, lanes: list[str], stop_ratio: float | None, last: list[str]
) -> None:
    assert _lanes(tmp_path, lanes, stop_ratio) == ["0-a"] * 4 + last
