"""Gate `metamorphic` on its shipped case (`intervals`), real g++, doit and bubblewrap.

The shipped rows come from the shared cold grade (tests/conftest.py `shipped`), graded
with the build folder's own random seed: every expectation below holds whatever the seed.
One small private grade (reference + one patch) shows `seed=N` replaying a counterexample
and `doit rotate_seed` changing the seed without a compile.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT, SHIPPED, Grade, case_library, compiler_calls, make_tree, run_grade

from cxxgate.cells.cell import build
from cxxgate.gates.metamorphic import Failure, parse_report
from cxxgate.runs.run import RunSpec, execute
from cxxgate.store.layout import Layout
from cxxgate.toolchain.cellspec import CellSpec, Unit
from cxxgate.toolchain.envelope import Envelopes

CASE = "intervals"
# Every class of the gate, each reached by a shipped patch.
REACHED = {
    "good_in_place": "accept",
    "assumes_sorted": "relation:permutation",
    "sorts_small": "relation:permutation",
    "shrink_nested": "relation:dominated",
    "bitmap_domain": "relation:scaling",
    "forge_report": "relation:permutation",
    "exit_when_unsorted": "crash",
    "lookahead_at": "crash",
    "stage_swap": "crash",
    "stall_on_nested": "hang",
    "no_touch": "snapshot_mismatch",
    "const_ref": "build_fail",
    "ifunc_forge": "premain_hook",
    "report_fn_forge": "premain_hook",
    "nonce_scan_forge": "crash",
    # Red team round 2: the tree's own strtol/strtoull (libc's names) refused at the link.
    "libc_interpose": "premain_hook",
}
# Range-limited (red team): which relation breaks first depends on the seed.
# count_calls: permutation (an unrelated call sits between its two calls), or cover when
# the seed's first trial is empty (its one computed call returns nothing either way).
RANGE_LIMITED = ("radix20", "chunked_large", "perm_cache", "count_calls")
SEED = re.compile(r"^seed (\d+), 200 trials: ")


def _gate_json(grade: Grade, patch: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(
        (grade.out / "results" / CASE / patch / "metamorphic.json").read_text()
    )
    return data


def _relations_run(grade: Grade, patch: str) -> dict[str, object]:
    """The relation stage's run result of a row, found through its evidence."""
    for rel in _gate_json(grade, patch)["evidence"]:  # type: ignore[attr-defined]
        result = grade.out / rel / "result.json"
        if rel.startswith("runs/") and result.exists():
            data: dict[str, object] = json.loads(result.read_text())
            if data["label"] == "metamorphic relations":
                return data
    raise AssertionError(f"{patch}: no relation run in its evidence")


# ---- the shipped case --------------------------------------------------------------------


def test_reference_green_and_every_patch_as_expected(shipped: Grade) -> None:
    rows = {k: v for k, v in shipped.rows.items() if k.startswith(f"{CASE}/")}
    assert rows[f"{CASE}/reference"]["verdict"] == "accept"
    assert not rows[f"{CASE}/reference"]["broken"]
    assert set(rows) == {f"{CASE}/{p}" for p in [*REACHED, *RANGE_LIMITED, "reference"]}
    for name, row in rows.items():
        assert not row.get("expect_problems"), (name, row["expect_problems"])


@pytest.mark.parametrize("patch", sorted(REACHED))
def test_class_reached(shipped: Grade, patch: str) -> None:
    assert shipped.gate(f"{CASE}/{patch}", "metamorphic")["class"] == REACHED[patch]


def test_every_row_records_the_build_folders_seed(shipped: Grade) -> None:
    seed = (shipped.out / "seed").read_text().strip()
    # A program refused before it links (premain_hook) never ran a stage: no seed to show.
    ran = [p for p, klass in REACHED.items() if klass != "premain_hook"]
    for patch in [*ran, "reference"]:
        summary = shipped.gate(f"{CASE}/{patch}", "metamorphic")["summary"]
        m = SEED.match(summary)
        assert m is not None and m[1] == seed, summary
        assert f"seed={seed} trials=200" in _gate_json(shipped, patch)["evidence"]  # type: ignore[operator]


def test_counterexample_in_the_verdict(shipped: Grade) -> None:
    summary = shipped.gate(f"{CASE}/assumes_sorted", "metamorphic")["summary"]
    # The shuffled input, what the candidate merged, and what it merged from sorted input.
    m = re.search(
        r"relation permutation: broke at trial (\d+): input (.+); merged (.+); "
        r"merged sorted first (.+)$",
        summary,
    )
    assert m is not None, summary
    assert m[3] != m[4]
    summary = shipped.gate(f"{CASE}/shrink_nested", "metamorphic")["summary"]
    assert re.search(r"adding \[-?\d+,-?\d+\) inside \[-?\d+,-?\d+\) merged ", summary), summary
    # The pass carries its count: every relation on every trial.
    checks = _gate_json(shipped, "reference")["checks"]
    relations = next(c for c in checks if c["name"] == "relations")  # type: ignore[attr-defined]
    assert relations["ok"]
    assert "held on 200 trials (permutation 200, dominated" in relations["detail"]


def test_snapshots_pass_where_relations_fail(shipped: Grade) -> None:
    """The sorted-input patch matches every snapshot: only the relation stage rejects it."""
    for patch in ("assumes_sorted", "shrink_nested", "bitmap_domain", "count_calls"):
        checks = _gate_json(shipped, patch)["checks"]
        snaps = [c for c in checks if c["name"].startswith("snapshot ")]  # type: ignore[attr-defined]
        assert len(snaps) == 4 and all(c["ok"] for c in snaps), (patch, snaps)


def test_forged_lines_are_not_the_report(shipped: Grade) -> None:
    """forge_report printed "every relation held" on stdout, stderr and the report
    descriptor, and its nonce read came too late: only the driver's nonce lines count."""
    run = _relations_run(shipped, "forge_report")
    printed = Path(str(run["stdout_path"])).read_text()
    assert "held permutation 200\n" in printed and "done 200\n" in printed
    report = Path(str(run["report_path"])).read_text()
    assert report.startswith("fail permutation ")
    assert "done" not in report and "held permutation" not in report


def test_early_exit_is_a_crash_not_a_pass(shipped: Grade) -> None:
    run = _relations_run(shipped, "exit_when_unsorted")
    # Exit status 0, and no failure reported: only the harness entry tells it apart.
    assert (run["status"], run["exit"], run["returned"]) == ("exited", 0, False)
    assert Path(str(run["report_path"])).read_text() == ""


def test_a_swapped_stage_is_a_crash(shipped: Grade) -> None:
    """stage_swap fed the driver a snapshot stage of nothing in place of the relations:
    exit 0 and main returned, but `done` echoes a stage the harness did not give."""
    seed = (shipped.out / "seed").read_text().strip()
    summary = shipped.gate(f"{CASE}/stage_swap", "metamorphic")["summary"]
    assert f"the driver finished stage 'golden', not 'relations {seed} 200'" in summary
    snaps = [c for c in _gate_json(shipped, "stage_swap")["checks"] if c["name"] != "relations"]  # type: ignore[attr-defined]
    assert len(snaps) == 4 and all(c["ok"] for c in snaps)


# ---- the report protocol -----------------------------------------------------------------


def test_parse_report() -> None:
    rep = parse_report(
        "out 1 5\nout 7 9\nheld permutation 200\n"
        "fail dominated 17 input [1,4) merged [1,4); adding [2,3) inside [1,4) merged [1,3)\n"
        "fail scaling 3 later\nheld\ndone relations 7 200\nnonsense\n"
    )
    assert rep.out == ["1 5", "7 9"]
    assert rep.held == {"permutation": 200}
    # The first failure is the one reported; text after the trial is kept whole.
    assert rep.fail == Failure(
        "dominated", 17, "input [1,4) merged [1,4); adding [2,3) inside [1,4) merged [1,3)"
    )
    assert rep.done == "relations 7 200"
    assert rep.unreadable == ["fail scaling 3 later", "held", "nonsense"]
    assert parse_report("done\nfail permutation seven text\n").done is None
    assert parse_report("fail permutation seven text\n").fail is None


# ---- seeds: replay, rotation -------------------------------------------------------------


def _doit(out: Path, library: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """doit with a task of our choosing (run_grade always asks for `grade`)."""
    cmd = [sys.executable, "-m", "doit", "-f", str(PROJECT / "dodo.py"), *args]
    return subprocess.run(
        [*cmd, f"cases={library}", f"out={out}"],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        check=False,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )


def _one_patch_library(dest: Path, patch: str = "assumes_sorted") -> Path:
    library = case_library(dest, CASE)
    case_file = library / CASE / "case.yaml"
    lines = case_file.read_text().splitlines(keepends=True)
    head = lines[: lines.index("patches:\n") + 1]
    keep = [ln for ln in lines if f"patches/{patch}.diff" in ln]
    case_file.write_text("".join(head + keep))
    return library


def _relation(grade: Grade) -> tuple[str, str]:
    """(seed, failing relation and counterexample) of the assumes_sorted row."""
    summary = grade.gate(f"{CASE}/assumes_sorted", "metamorphic")["summary"]
    m = re.match(r"seed (\d+), 200 trials: \d+/\d+ checks ok; (relation .*)$", summary)
    assert m is not None, summary
    return m[1], m[2]


def test_seed_replays_and_rotates_without_compiling(tmp_path: Path) -> None:
    library = _one_patch_library(tmp_path / "cases")
    out = tmp_path / "out"
    first = run_grade(out, "seed=1234", library=library)
    assert first.returncode == 0, first.output[-2000:]
    seed, broke = _relation(first)
    assert seed == "1234" and broke.startswith("relation permutation: broke at trial ")
    assert not (out / "seed").exists()  # given: the build folder's seed was never needed
    compiled = compiler_calls(out)
    assert compiled > 0

    rotated = _doit(out, library, "rotate_seed")
    assert rotated.returncode == 0, rotated.stdout + rotated.stderr
    new_seed = (out / "seed").read_text().strip()
    assert f"-> {new_seed}" in rotated.stdout

    second = run_grade(out, "-v", "2", library=library)  # -v 2: every executed task named
    assert second.returncode == 0, second.output[-2000:]
    assert _relation(second)[0] == new_seed != "1234"
    assert compiler_calls(out) == compiled
    # Only the two relation runs (reference, patch) ran again: the snapshots' keys hold
    # no seed.
    assert len(re.findall(r"^\.  exec:", second.output, re.M)) == 2, second.output

    # Replay: drop every stored run, grade with the first seed: the same counterexample,
    # from a fresh execution, still without a compile.
    shutil.rmtree(out / "runs")
    replay = run_grade(out, "seed=1234", library=library)
    assert replay.returncode == 0, replay.output[-2000:]
    assert _relation(replay) == (seed, broke)
    assert compiler_calls(out) == compiled
    assert (out / "seed").read_text().strip() == new_seed  # seed=N does not rotate
    # The history keeps the seed of each grade, for the nightly batches it compares.
    with sqlite3.connect(out / "history.sqlite3") as db:
        seeds = [s for (s,) in db.execute("select seed from grades order by id")]
    assert seeds == ["1234", new_seed, "1234"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sizes_across_scales_reach_a_small_input_special_case(tmp_path: Path, seed: int) -> None:
    """A patch that sorts only inputs of at most 12 intervals passes every snapshot; the
    relation stage draws sizes up to a few thousand from (seed, trial), whatever the seed,
    and its counterexample is larger than the special case."""
    library = _one_patch_library(tmp_path / "cases", "sorts_small")
    grade = run_grade(tmp_path / "out", f"seed={seed}", library=library)
    assert grade.returncode == 0, grade.output[-2000:]
    gate = grade.gate(f"{CASE}/sorts_small", "metamorphic")
    assert gate["class"] == "relation:permutation", gate["summary"]
    shown = re.search(r"broke at trial \d+: input (.+?); merged ", gate["summary"])
    assert shown is not None, gate["summary"]
    total = re.search(r"\((\d+) in all\)", shown[1])
    size = int(total[1]) if total else len(re.findall(r"\[-?\d+,-?\d+\)", shown[1]))
    assert size > 12, gate["summary"]


@pytest.mark.parametrize("seed", [1, 2])
def test_coordinates_and_sizes_reach_range_limited_code(tmp_path: Path, seed: int) -> None:
    """radix20 sorts on 20 bits (right within +/-524288), chunked_large merges blocks of
    4096 apart: both pass every snapshot; trials draw coordinates across int and sizes up
    to 24581, whatever the seed, so a relation breaks."""
    library = case_library(tmp_path / "cases", CASE)
    case_file = library / CASE / "case.yaml"
    lines = case_file.read_text().splitlines(keepends=True)
    head = lines[: lines.index("patches:\n") + 1]
    keep = [ln for ln in lines if "patches/radix20.diff" in ln or "chunked_large.diff" in ln]
    case_file.write_text("".join(head + keep))
    grade = run_grade(tmp_path / "out", f"seed={seed}", library=library)
    assert grade.returncode == 0, grade.output[-2000:]
    for patch in ("radix20", "chunked_large"):
        gate = grade.gate(f"{CASE}/{patch}", "metamorphic")
        assert str(gate["class"]).startswith("relation:"), gate["summary"]
        assert "snapshot" not in str(gate["summary"]).split("; ", 1)[1], gate["summary"]


def test_bad_seed_is_named(tmp_path: Path) -> None:
    library = _one_patch_library(tmp_path / "cases")
    bad = _doit(tmp_path / "out", library, "grade", "seed=12x")
    assert bad.returncode != 0
    assert "seed=12x: expected a decimal below 2**63" in bad.stderr
    (tmp_path / "out").mkdir(exist_ok=True)
    (tmp_path / "out" / "seed").write_text("yesterday\n")
    broken = _doit(tmp_path / "out", library, "grade")
    assert broken.returncode != 0
    assert f"{tmp_path / 'out' / 'seed'}: expected the batch seed" in broken.stdout + broken.stderr


# ---- what runs after main: the entry hands back main's status ---------------------------

AFTER_MAIN = """
#include <cstdlib>
#include <unistd.h>
int answer() {
  // Registered from the function under test: runs after main returned, whatever it returned.
  static const int once = std::atexit(+[] { _exit(0); });
  return once;
}
"""


@pytest.mark.parametrize(("status", "returned"), [(0, True), (1, False), (3, False)])
def test_an_atexit_exit_0_after_a_failing_main_is_not_a_return(
    tmp_path: Path, status: int, returned: bool
) -> None:
    """The process exits 0 every time (the tree's atexit handler calls _exit(0)); only a
    main that returned 0 counts as returned: the entry hands its status back with the
    nonce, and a failure turned into exit 0 after it is not main's return."""
    layout = Layout(tmp_path / "out")
    make_tree(layout, "a", {"src/lib.cpp": AFTER_MAIN})
    main = f"int answer();\nint main() {{ return answer() * 0 + {status}; }}\n"
    spec = CellSpec(
        kind="exe",
        tree_key="a",
        units=(Unit("main.cpp", main),),
        tree_sources=("src/*.cpp",),
        include_dirs=(),
        envelope=Envelopes(SHIPPED / "envelopes.yaml").get("dbg"),
        compile_seconds=120,
        entry=True,
    )
    cell = build(spec, layout)
    assert cell.status == "ok", cell.detail
    run = execute(RunSpec(cell_key=cell.key, label=f"main returns {status}"), layout)
    assert run.exit == 0
    assert run.returned is returned
