"""The grade's progress display (cxxgate/graph/progress.py): a live display on a terminal, a few
plain lines in a log, every task at verbosity 2; the grade's own summary after them.

The terminal is a real pseudo-terminal around a real cold grade of `discarded` trimmed to
its reference and one rejected patch (6 cells, 2 runs); the log is the shipped library's
grade (the session fixture, through a pipe); the counting is checked on an in-memory doit
run whose clock the test steps.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import PROJECT, Grade, case_library, run_grade
from doit import doit_cmd
from doit.cmd_base import ModuleTaskLoader
from doit.doit_cmd import DoitMain

from cxxgate.graph.progress import GradeProgress
from cxxgate.library.settings import Settings, SettingsError

CASE = "discarded"
CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
LIVE = re.compile(r"(\d+)/(\d+) tasks (\d+) compiles, (\d+) runs, (\d+) rejects")
FINAL = re.compile(
    r"^progress: (\d+)/(\d+) tasks, (\d+) compiles, (\d+) runs, (\d+) rejects(?:, \d+ failed)? in "
)
TASK_LINE = re.compile(r"^(\.  |-- )\S+:")


def cell_tasks(out: Path) -> list[Path]:
    """The cells' result files, but the objects' (built by the cells that link them, not
    tasks of their own: cxxgate/cells/cell.py)."""
    results = out.glob("cells/*/*/result.json")
    return [p for p in results if json.loads(p.read_text())["kind"] != "object"]


def expected_counts(out: Path) -> tuple[int, int, int, int]:
    """(tasks, cells, runs, rejects) of a cold grade, from the files it left: one file per
    tree, cell, run, scan, gate result, verdict and fold task, and the grade task."""
    cells = len(cell_tasks(out))
    runs = len(list(out.glob("runs/*/*/result.json")))
    scans = len(list(out.glob("scans/*/*/result.json")))
    results = len(list(out.glob("results/*/*/*.json")))  # gate results and verdicts
    trees = len(list(out.glob("trees/*.json")))
    folds = len(list(out.glob("folds/*.json")))
    rows = [json.loads(line) for line in (out / "verdicts.jsonl").read_text().splitlines()]
    rejects = sum(r["verdict"] == "reject" for r in rows)
    return trees + cells + runs + scans + results + folds + 1, cells, runs, rejects


def grade_in_a_terminal(out: Path, library: Path) -> tuple[int, str]:
    """`doit grade` with stdout and stderr on a pseudo-terminal of 200 columns."""
    master, slave = pty.openpty()
    termios.tcsetwinsize(slave, (50, 200))
    cmd = [sys.executable, "-m", "doit", "-f", str(PROJECT / "dodo.py"), "grade"]
    cmd += [f"cases={library}", f"out={out}"]
    proc = subprocess.Popen(
        cmd,
        cwd=PROJECT,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        # COLUMNS and LINES beat the terminal's size for rich; pytest's may be in os.environ.
        env={
            **os.environ,
            "PYTHONPATH": str(PROJECT),
            "TERM": "xterm-256color",
            "COLUMNS": "200",
            "LINES": "50",
        },
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # EIO: every writer of the terminal has gone
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return proc.wait(timeout=600), b"".join(chunks).decode(errors="replace")


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = case_library(tmp_path_factory.mktemp("progress") / "cases", CASE)
    path = dest / CASE / "case.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["patches"] = [p for p in spec["patches"] if "unsigned_only" in p["file"]]
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return dest


@pytest.fixture(scope="module")
def terminal(library: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    out = tmp_path_factory.mktemp("progress") / "out"
    code, text = grade_in_a_terminal(out, library)
    return out, code, text


def test_a_terminal_shows_done_over_total_and_the_final_counts(
    terminal: tuple[Path, int, str],
) -> None:
    out, code, text = terminal
    assert code == 0, text[-3000:]
    plain = CSI.sub("", text).replace("\r", "\n")
    frames = LIVE.findall(plain)
    assert len(frames) > 1, plain[-3000:]  # redrawn as tasks end, not printed once
    tasks, cells, runs, rejects = expected_counts(out)
    assert cells == 6 and runs == 2 and rejects == 1  # the trimmed case, graded cold
    done, total, compiles, ran, rejected = map(int, frames[-1])
    assert (done, total, compiles, ran, rejected) == (tasks, tasks, cells, runs, rejects)
    assert all(int(f[1]) == tasks for f in frames)
    # The grade's own summary follows the display (the table stays in table.txt); no line
    # per task, no log line.
    lines = plain.splitlines()
    assert "2 rows: 1 accept, 1 reject" in lines
    assert "classes: 1 accept, 1 functional_regression" in lines
    assert f"reports in {out}/: table.txt" in plain
    assert "grade ok: every row ended as expected" in plain
    assert not [line for line in plain.splitlines() if TASK_LINE.match(line)]
    assert "progress:" not in plain


@pytest.mark.parametrize("knob", [("verbosity=2",), ("-v", "2")])
def test_verbosity_2_lists_every_task(
    library: Path, terminal: tuple[Path, int, str], knob: tuple[str]
) -> None:
    """doit's own -v 2, and `verbosity=2` as a variable like the other settings: every task
    is named (here all up to date), and the display steps aside."""
    out, code, _ = terminal
    assert code == 0
    warm = run_grade(out, *knob, library=library)
    assert warm.returncode == 0, warm.output[-3000:]
    listed = {line.split(None, 1)[1] for line in warm.output.splitlines() if TASK_LINE.match(line)}
    cells = {f"cell:{p.parent.name}" for p in cell_tasks(out)}
    rows = {f"verdict:{CASE}/{p.parent.name}" for p in out.glob(f"results/{CASE}/*/verdict.json")}
    assert cells and rows and cells | rows <= listed
    tasks, *_ = expected_counts(out)
    assert len(listed) == tasks - 1  # every task but the grade, which prints its summary
    assert "progress:" not in warm.output
    # The variable prints the whole table too, as `table=1` does; doit's own -v does not.
    table = (out / "table.txt").read_text()
    assert (table in warm.output) == (knob == ("verbosity=2",))
    assert "grade ok: every row ended as expected" in warm.output


def test_a_log_gets_a_few_plain_lines_and_a_final_count(shipped: Grade) -> None:
    """The shipped library's cold grade, through a pipe: periodic lines, never one per task,
    and a final line with every task done."""
    assert shipped.returncode == 0, shipped.output[-3000:]
    lines = shipped.output.splitlines()
    assert not [line for line in lines if TASK_LINE.match(line)]
    finals = [m for line in lines if (m := FINAL.match(line))]
    assert len(finals) == 1
    done, total, compiles, runs, rejects = map(int, finals[0].groups())
    tasks, cells, ran, rejected = expected_counts(shipped.out)
    assert (done, total, compiles, runs, rejects) == (tasks, tasks, cells, ran, rejected)
    periodic = [line for line in lines if line.startswith("progress: ") and " ETA " in line]
    h, m, sec = map(int, finals[0].string.rsplit(" in ", 1)[1].split(":"))
    assert len(periodic) <= (3600 * h + 60 * m + sec) / GradeProgress.PLAIN_SECONDS + 1
    assert len(lines) < tasks / 2  # the grade's summary and these lines
    # The grade's summary follows the final count; the table is in table.txt only.
    rows = len((shipped.out / "verdicts.jsonl").read_text().splitlines())
    summary = shipped.output.index(f"\n{rows} rows: ")
    assert summary > shipped.output.index(finals[0].group(0))
    assert (shipped.out / "table.txt").read_text().splitlines()[0] not in shipped.output


# ---- the counting, on an in-memory doit run -----------------------------------------------


class Stepped(GradeProgress):
    """One second passes each time the reporter looks at its clock."""

    now = 0.0

    @classmethod
    def tick(cls) -> float:
        cls.now += 1.0
        return cls.now

    clock = tick


def show_table() -> None:
    print("the table")


def write_verdict(path: Path, verdict: str) -> None:
    path.write_text(json.dumps({"verdict": verdict}))


def in_memory_run(tmp_path: Path, *args: str) -> tuple[int, str]:
    """200 compiles, 50 runs, 30 verdicts (10 rejects), one task that fails, and a grade
    task that prints its own output, as cxxgate names them."""
    Stepped.now = 0.0
    rows = tmp_path / "rows"
    rows.mkdir(exist_ok=True)

    def task_cell() -> Any:
        for i in range(200):
            yield {"name": str(i), "actions": [(lambda: None, [])]}

    def task_exec() -> Any:
        for i in range(50):
            yield {"name": str(i), "actions": [(lambda: None, [])], "task_dep": [f"cell:{i}"]}
        yield {"name": "broken", "actions": [(lambda: False, [])]}

    def task_verdict() -> Any:
        for i in range(30):
            target = rows / f"{i}.json"
            verdict = "reject" if i % 3 == 0 else "accept"
            yield {
                "name": str(i),
                "actions": [(write_verdict, [target, verdict])],
                "targets": [str(target)],
                "task_dep": [f"exec:{i}"],
            }

    def task_grade() -> Any:
        return {
            "actions": [(show_table, [])],
            "task_dep": [f"verdict:{i}" for i in range(30)]
            + [f"exec:{i}" for i in range(50)]
            + [f"cell:{i}" for i in range(200)],
            "verbosity": 2,
        }

    log = tmp_path / "log.txt"
    namespace = {
        "DOIT_CONFIG": {
            "reporter": Stepped,
            "backend": "sqlite3",
            "dep_file": str(tmp_path / "doit.sqlite3"),
            "continue": True,
            "default_tasks": ["exec:broken", "grade"],
        },
        "task_cell": task_cell,
        "task_exec": task_exec,
        "task_verdict": task_verdict,
        "task_grade": task_grade,
    }
    code = DoitMain(ModuleTaskLoader(namespace)).run(["-o", str(log), *args])
    return code, log.read_text()


def test_a_log_line_every_ten_seconds_and_failures_as_doit_prints_them(tmp_path: Path) -> None:
    code, log = in_memory_run(tmp_path)
    assert code != 0  # exec:broken failed
    lines = log.splitlines()
    periodic = [line for line in lines if line.startswith("progress: ") and " ETA " in line]
    # 281 tasks end before the grade starts, one clock second each: a line every tenth.
    assert len(periodic) == 28
    assert periodic[0] == (
        "progress: 10/282 tasks (3%), 9 compiles, 0 runs, 0 rejects, 1 failed, 1.0 tasks/s, "
        "0:00:10 elapsed, ETA 0:04:32"
    )
    assert lines.count("TaskFailed - taskid:exec:broken") == 1
    final = [line for line in lines if FINAL.match(line)]
    assert final == [
        "progress: 282/282 tasks, 200 compiles, 50 runs, 10 rejects, 1 failed in 0:04:43"
    ]
    assert not [line for line in lines if TASK_LINE.match(line)]


def test_in_memory_verbosity_2_is_doits_console(tmp_path: Path) -> None:
    code, log = in_memory_run(tmp_path, "-v", "2")
    assert code != 0
    lines = log.splitlines()
    assert sum(line.startswith(".  cell:") for line in lines) == 200
    assert ".  grade" in lines and "TaskFailed - taskid:exec:broken" in lines
    assert "progress:" not in log


@pytest.mark.parametrize(("given", "expected"), [("2", 2), ("0", 0), ("", None)])
def test_verbosity_is_read_as_doits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str, expected: int | None
) -> None:
    monkeypatch.setattr(doit_cmd, "_CMDLINE_VARS", {"verbosity": given} if given else {})
    assert Settings.load(tmp_path).verbosity == expected


def test_a_verbosity_doit_would_refuse_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(doit_cmd, "_CMDLINE_VARS", {"verbosity": "loud"})
    with pytest.raises(SettingsError, match=r"^verbosity=loud: expected 0, 1 or 2"):
        Settings.load(tmp_path)
