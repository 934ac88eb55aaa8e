"""Faults of the machine never become a candidate's verdict, and never lose a batch.

A grade killed with SIGKILL and resumed, a `doit forget`, two grades on one build folder, a
full disk, a compiler that is missing, disappears or cannot run its cc1plus, a read-only
build folder: each run ends with one clear message or with the verdicts of a grade that was
never disturbed. Every test runs the real doit, g++ and bubblewrap on a small library:
token_handle (negcomp, trimmed to four rows) and ring (the runtime lanes, header-only).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import PROJECT, Grade, case_library, compiler_calls, run_grade

from cxxgate.cells.cell import build
from cxxgate.intake.tree import materialise
from cxxgate.results import faults
from cxxgate.store.layout import Layout
from cxxgate.toolchain import asmreads
from cxxgate.toolchain.cellspec import CellSpec, Unit
from cxxgate.toolchain.envelope import Envelopes

KEPT_PATCHES = {"token_handle": ["good_valid_reset", "public_ctor", "broken_build"]}
# What a row is, for comparing two grades: verdict, class, and each gate's class.
Outcome = dict[str, tuple[str, str, dict[str, str]]]


def small_library(dest: Path, *cases: str) -> Path:
    case_library(dest, *cases)
    for case, kept in KEPT_PATCHES.items():
        if case in cases:
            path = dest / case / "case.yaml"
            spec = yaml.safe_load(path.read_text())
            spec["patches"] = [p for p in spec["patches"] if Path(p["file"]).stem in kept]
            path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return dest


def outcome(grade: Grade) -> Outcome:
    return {
        row: (r["verdict"], r["class"], {g: v["class"] for g, v in r["gates"].items()})  # type: ignore[attr-defined]
        for row, r in grade.rows.items()
    }


def start_grade(out: Path, library: Path, *args: str) -> subprocess.Popen[str]:
    """`doit grade` as run_grade starts it, in the background, in its own process group."""
    cmd = [sys.executable, "-m", "doit", "-f", str(PROJECT / "dodo.py"), *args]
    cmd += ["grade", f"cases={library}", f"out={out}"]
    return subprocess.Popen(
        cmd,
        cwd=PROJECT,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def after_calls(proc: subprocess.Popen[str], out: Path, calls: int) -> int:
    """Wait until the compiler log has `calls` lines; the grade must still be running."""
    deadline = time.monotonic() + 600
    while compiler_calls(out) < calls:
        assert proc.poll() is None, f"the grade ended before {calls} compiler calls"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return compiler_calls(out)


def kill(proc: subprocess.Popen[str]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_library(tmp_path_factory.mktemp("faults") / "cases", "token_handle", "ring")


@dataclass(frozen=True)
class Undisturbed:
    """A grade nothing disturbed: what every disturbed one must end equal to."""

    out: Path
    rows: Outcome  # read once: a test below grades its folder again
    calls: int
    verdicts: dict[str, dict[str, object]]  # whole verdicts.jsonl rows

    def of(self, case: str) -> Outcome:
        return {k: v for k, v in self.rows.items() if k.startswith(f"{case}/")}


@pytest.fixture(scope="module")
def undisturbed(library: Path, tmp_path_factory: pytest.TempPathFactory) -> Undisturbed:
    grade = run_grade(tmp_path_factory.mktemp("undisturbed"), "-n", "2", library=library)
    assert grade.returncode == 0, grade.output[-3000:]
    rows = outcome(grade)
    assert {r[0] for r in rows.values()} == {"accept", "reject"}
    return Undisturbed(grade.out, rows, compiler_calls(grade.out), grade.rows)


def results_parse(out: Path) -> None:
    """Every result and record file left behind is whole JSON (written atomically)."""
    for path in [*out.glob("cells/*/*/result.json"), *out.glob("runs/*/*/result.json")]:
        json.loads(path.read_text())
    for path in [*out.glob("trees/*.json"), *out.glob("results/*/*/*.json")]:
        json.loads(path.read_text())


def written(proc: subprocess.Popen[str], out: Path, pattern: str, since: float) -> None:
    """Wait until a file matching `pattern` under `out` is written after `since` (a wall
    clock time); the grade must still run."""
    deadline = time.monotonic() + 600
    while not any(p.stat().st_mtime > since for p in out.glob(pattern)):
        assert proc.poll() is None, f"the grade ended before {pattern} appeared"
        assert time.monotonic() < deadline
        time.sleep(0.02)


@pytest.mark.slow
def test_killed_at_four_points_and_resumed_gives_the_undisturbed_verdicts(
    library: Path, undisturbed: Undisturbed, tmp_path: Path
) -> None:
    """SIGKILL during intake (the first tree stamp written), at about a quarter of the
    compiles (serial), at about 60% of the next run's (two threads), and as the first gate
    classifies; then one run to the end. Its verdicts.jsonl is the undisturbed one, row for
    row and field for field (these gates put no timing in a row). doit's records are saved
    every 5 s (cxxgate/graph/checkpoint.py): each run meets tasks its predecessor finished and
    recorded, and results it finished in its last seconds but never recorded."""
    out = tmp_path / "out"
    total = undisturbed.calls

    # (doit options, a share of the undisturbed compiler calls or a file to see written)
    points: list[tuple[tuple[str, ...], float | str]] = [
        ((), "trees/*.json"),
        ((), 0.25),
        (("-n", "2"), 0.6),
        (("-n", "2"), "results/*/*/[!v]*.json"),  # a gate result, not a verdict
    ]
    for args, point in points:
        since = time.time()
        proc = start_grade(out, library, *args)
        if isinstance(point, str):
            written(proc, out, point, since)
        else:
            after_calls(proc, out, compiler_calls(out) + int(total * point))
        kill(proc)
        results_parse(out)
    resumed = run_grade(out, library=library)
    assert resumed.returncode == 0, resumed.output[-3000:]
    assert "Traceback" not in resumed.output
    assert resumed.rows == undisturbed.verdicts
    assert outcome(resumed) == undisturbed.rows


# doit with 40 tasks and cxxgate's reporter, saving doit's records after every success (or
# never, as doit itself); task KILL_AT kills the process in the middle of its action.
RESUMABLE = """
import os, signal, sys
from pathlib import Path
from doit.cmd_base import ModuleTaskLoader
from doit.doit_cmd import DoitMain
from cxxgate.graph.progress import GradeProgress

FOLDER, KILL_AT, SAVE = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])

class Reporter(GradeProgress):
    SAVE_SECONDS = SAVE

def work(i, target):
    with open(FOLDER / "ran.log", "a") as log:
        log.write(f"{i}\\n")
    if i == KILL_AT:
        os.kill(os.getpid(), signal.SIGKILL)
    target.write_text("done")

def task_cell():
    for i in range(40):
        target = FOLDER / f"{i}.out"
        yield {"name": str(i), "actions": [(work, [i, target])], "targets": [str(target)],
               "file_dep": [__file__], "task_dep": [f"cell:{i - 1}"] if i else []}

config = {"reporter": Reporter, "backend": "sqlite3", "dep_file": str(FOLDER / "doit.db")}
loader = ModuleTaskLoader({"DOIT_CONFIG": config, "task_cell": task_cell})
sys.exit(DoitMain(loader).run(["-o", str(FOLDER / "log.txt")]))
"""


@pytest.mark.parametrize(("save", "resumed_from"), [(0.0, 25), (1e9, 0)])
def test_a_killed_run_resumes_after_the_tasks_it_finished(
    tmp_path: Path, save: float, resumed_from: int
) -> None:
    """With doit's records saved as tasks end (cxxgate/graph/checkpoint.py), a run killed in task
    25 is resumed there; saved only at exit, as doit does by itself, everything runs again."""
    script = tmp_path / "resumable.py"
    script.write_text(RESUMABLE)

    def run(kill_at: int) -> list[int]:
        log = tmp_path / "ran.log"
        log.unlink(missing_ok=True)
        subprocess.run(
            [sys.executable, str(script), str(tmp_path), str(kill_at), str(save)],
            env={**os.environ, "PYTHONPATH": str(PROJECT)},
            check=False,
        )
        return [int(line) for line in log.read_text().split()] if log.exists() else []

    assert run(kill_at=25) == list(range(26))
    assert run(kill_at=-1) == list(range(resumed_from, 40))
    assert run(kill_at=-1) == []


@pytest.mark.slow
def test_doit_forget_then_grade_gives_the_same_verdicts(
    library: Path, undisturbed: Undisturbed
) -> None:
    """doit forgets every task; the result files stay and every cell runs again."""
    cmd = [sys.executable, "-m", "doit", "-f", str(PROJECT / "dodo.py"), "forget", "--all"]
    forget = subprocess.run(
        [*cmd, f"cases={library}", f"out={undisturbed.out}"],
        cwd=PROJECT,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert forget.returncode == 0, forget.stderr
    again = run_grade(undisturbed.out, library=library)
    assert again.returncode == 0, again.output[-3000:]
    assert outcome(again) == undisturbed.rows


def cut_short(path: Path) -> None:
    """What a writer that is not atomic leaves when it dies: the first half of the file."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError):
        json.loads(path.read_bytes())


@pytest.mark.slow
def test_result_files_cut_short_are_made_again_never_trusted(
    library: Path, undisturbed: Undisturbed
) -> None:
    """One file of each kind cut in half, in a build folder doit remembers as finished:
    a tree stamp, a cell's and a run's result, a gate result, a verdict, a fold, and
    verdicts.jsonl. The next grade makes each again (the cell compiles again) and ends on the
    undisturbed verdicts; none is read as a result."""
    out = undisturbed.out
    row = next(r for r, v in undisturbed.verdicts.items() if v["verdict"] == "reject")
    case, patch = row.split("/")
    evidence = undisturbed.verdicts[row]["evidence"]
    assert isinstance(evidence, list)
    cell = next(out / e / "result.json" for e in evidence if e.startswith("cells/"))
    planted = [
        next(out / f"{e}.json" for e in evidence if e.startswith("trees/")),
        cell,
        next(iter(out.glob("runs/*/*/result.json"))),
        next(out / e for e in evidence if e.startswith("results/")),
        out / "results" / case / patch / "verdict.json",
        out / "folds" / f"{case}.json",
        out / "verdicts.jsonl",
    ]
    before = {path: path.read_bytes() for path in planted}
    for path in planted:
        cut_short(path)
    calls = compiler_calls(out)
    again = run_grade(out, library=library)
    assert again.returncode == 0, again.output[-3000:]
    assert "Traceback" not in again.output
    assert again.rows == undisturbed.verdicts
    assert compiler_calls(out) > calls  # the cell was built again, not believed
    # Made again from the same inputs: the same bytes, but for what a compile or a run
    # measures (its result is whole JSON again).
    for path in planted:
        if path.name == "result.json":
            json.loads(path.read_text())
        else:
            assert path.read_bytes() == before[path], path


@pytest.mark.slow
def test_a_second_grade_on_the_same_build_folder_refuses_at_once(
    library: Path, undisturbed: Undisturbed, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    first, second = (start_grade(out, library, "case=token_handle") for _ in range(2))
    outputs = {p.pid: p.communicate(timeout=600)[0] for p in (first, second)}
    codes = {p.pid: p.returncode for p in (first, second)}
    refused = [pid for pid, text in outputs.items() if "in use by another doit process" in text]
    assert len(refused) == 1, outputs
    (loser,) = refused
    (winner,) = set(outputs) - {loser}
    message = outputs[loser].strip()
    assert message == (
        f"out={out}: the build folder is in use by another doit process (pid {winner}); "
        "wait for it to finish, or grade into another out="
    )
    assert codes[loser] != 0
    assert codes[winner] == 0, outputs[winner][-3000:]
    rows = outcome(Grade(0, "", out))
    assert rows == undisturbed.of("token_handle")
    # The lock went with its holder: the folder grades again (nothing left to do).
    assert run_grade(out, "case=token_handle", library=library).returncode == 0


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """Mount a tmpfs (root only); skipped where mounting is not permitted."""
    mounted: list[Path] = []

    def mount(name: str, *options: str) -> Path:
        point = tmp_path / name
        point.mkdir()
        opts = ",".join(options)
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(point)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", "-l", str(point)], check=False)


@pytest.mark.slow
def test_a_full_disk_stops_with_one_message_and_the_next_run_finishes(
    library: Path, undisturbed: Undisturbed, tmpfs: Callable[..., Path]
) -> None:
    # About two fifths of what the whole grade writes: the disk fills mid-run.
    out = tmpfs("out", "size=2m")
    full = run_grade(out, library=library)
    assert full.returncode == 2, full.output[-3000:]
    assert "Traceback" not in full.output
    stops = [line for line in full.output.splitlines() if "no space left on device" in line]
    assert len(stops) == 1, full.output[-3000:]
    assert stops[0].startswith(f"cxxgate: stopped: no space left on device writing {out}/")
    assert "(task " in stops[0]
    subprocess.run(["mount", "-o", "remount,size=256m", str(out)], check=True)
    again = run_grade(out, library=library)
    assert again.returncode == 0, again.output[-3000:]
    assert outcome(again) == undisturbed.rows


def test_a_read_only_build_folder_is_named_before_planning(
    library: Path, tmpfs: Callable[..., Path]
) -> None:
    out = tmpfs("ro", "ro", "size=1m")
    for folder in (out, out / "sub"):
        grade = run_grade(folder, "case=ring", library=library)
        assert grade.returncode != 0
        assert grade.output.strip() == (
            f"out={folder}: the build folder is not writable: Read-only file system"
        )


def wrapped_toolchain(tmp_path: Path) -> tuple[Path, Path]:
    """A library whose gcc toolchain is a wrapper script outside /usr, and the wrapper's
    path (not yet written)."""
    library = small_library(tmp_path / "cases", "token_handle")
    wrapper = tmp_path / "toolchain" / "bin" / "g++"
    wrapper.parent.mkdir(parents=True)
    manifest = library / "envelopes.yaml"
    spec = yaml.safe_load(manifest.read_text())
    spec["toolchains"]["gcc"]["command"] = str(wrapper)
    # Declared, so the sandbox binds the whole toolchain folder (its -B folder included).
    spec["toolchains"]["gcc"]["prefix"] = str(wrapper.parent.parent)
    manifest.write_text(yaml.safe_dump(spec, sort_keys=False))
    return library, wrapper


def write_wrapper(wrapper: Path, *flags: str) -> None:
    wrapper.write_text(f'#!/bin/sh\nexec /usr/bin/g++ {" ".join(flags)} "$@"\n')
    wrapper.chmod(0o755)


def negcomp_classes(grade: Grade) -> dict[str, str]:
    return {row: gates["negcomp"] for row, (_, _, gates) in outcome(grade).items() if gates}


@pytest.mark.slow
def test_a_compiler_that_cannot_run_is_never_the_candidates_fault(
    undisturbed: Undisturbed, tmp_path: Path
) -> None:
    expected = undisturbed.of("token_handle")
    graded = {row for row, (_, _, gates) in expected.items() if gates.get("negcomp")}
    library, wrapper = wrapped_toolchain(tmp_path)
    out = tmp_path / "out"

    # Missing when the grade is planned: toolchain_missing, keyed by the toolchain's
    # identity ("not installed"), so nothing of it survives the compiler's return.
    missing = run_grade(out, library=library)
    assert missing.returncode != 0
    assert set(negcomp_classes(missing).values()) == {"toolchain_missing"}

    # Removed while the grade runs: the cells after it are harness faults, not compile
    # errors; the cells before it keep their (right) classes.
    write_wrapper(wrapper)
    proc = start_grade(out, library)
    after_calls(proc, out, compiler_calls(out) + 6)
    wrapper.unlink()
    proc.communicate(timeout=600)
    removed = negcomp_classes(Grade(proc.returncode, "", out))
    assert proc.returncode != 0
    assert "harness_error" in removed.values()
    for row in graded:
        assert removed[row] in ("harness_error", expected[row][2]["negcomp"]), row

    # Back, but its driver cannot execute cc1plus (a broken install): harness faults again.
    fake = wrapper.parent.parent / "broken"
    fake.mkdir()
    (fake / "cc1plus").write_text("#!/nonexistent/interpreter\n")
    (fake / "cc1plus").chmod(0o755)
    write_wrapper(wrapper, f"-B{fake}/")
    broken = run_grade(out, library=library)
    assert broken.returncode != 0
    classes = negcomp_classes(broken)
    assert "harness_error" in classes.values()
    for row in graded:
        assert classes[row] in ("harness_error", expected[row][2]["negcomp"]), row

    # Repaired: the undisturbed verdicts, nothing of the faults cached.
    write_wrapper(wrapper)
    repaired = run_grade(out, library=library)
    assert repaired.returncode == 0, repaired.output[-3000:]
    assert outcome(repaired) == expected


def test_a_compiler_gone_under_the_assembler_wrapper_is_the_machines_fault(
    tmp_path: Path,
) -> None:
    """gcc's object compiles run through cxxgate/toolchain/asmreads.py's sh wrapper: a
    compiler removed between the harness's check and the wrapper's call must still read as
    a driver that cannot execute, not as the candidate's compile error (it was cached as
    one, and outlived the repair)."""
    wrapper = asmreads.wrapper(tmp_path)
    gone = str(tmp_path / "toolchain" / "g++")
    argv = [str(wrapper), gone, "-c", "a.cpp", "-MD", "-MF", "a.d", "-o", "a.o"]
    ran = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert ran.returncode == 127
    assert gone in faults.infrastructure(argv, ran.stdout + ran.stderr, tmp_path)
    # A compiler that is there and fails is the candidate's, whatever the exit status.
    (tmp_path / "a.cpp").write_text("int main() { x }\n")
    argv[1] = "g++"
    ran = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert ran.returncode == 1
    assert faults.infrastructure(argv, ran.stdout + ran.stderr, tmp_path) == ""


def test_a_script_compiler_gone_under_its_shell_is_the_machines_fault(tmp_path: Path) -> None:
    """A compiler that is a script (a wrapper, as the suite's own toolchain is) removed
    between its start and the shell's open of it: sh says it cannot open the tool (seen
    once in a full suite run, cached as the candidate's compile error). The same words
    about a file the call did not run are nobody's fault but the candidate's."""
    gone = str(tmp_path / "toolchain" / "g++")
    argv = [gone, "-c", "a.cpp", "-o", "a.o"]
    ran = subprocess.run(["/bin/sh", gone], capture_output=True, text=True, check=False)
    assert ran.returncode != 0
    assert gone in faults.infrastructure(argv, ran.stdout + ran.stderr, tmp_path)
    other = ran.stderr.replace(gone, str(tmp_path / "other"))
    assert faults.infrastructure(argv, other, tmp_path) == ""


ENVELOPES = PROJECT / "cases" / "envelopes.yaml"


def _cell(layout: Layout, text: str, tree_key: str = "t") -> CellSpec:
    tree = layout.tree(tree_key)
    tree.mkdir(parents=True)
    layout.tree_stamp(tree_key).write_text(json.dumps({"applied": True}))
    spec = CellSpec(
        kind="exe",
        tree_key=tree_key,
        units=(Unit("probe.cpp", text),),
        tree_sources=(),
        include_dirs=(),
        envelope=Envelopes(ENVELOPES).get("gcc"),
        compile_seconds=60,
    )
    layout.cell(spec.key).mkdir(parents=True)
    return spec


def test_a_candidate_that_says_no_space_is_still_its_own_compile_error(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "out")
    spec = _cell(layout, "#error No space left on device\nint main() {}\n")
    result = build(spec, layout)
    assert result.status == "compile_error"
    assert "No space left on device" in result.steps[0].output


def test_a_compiler_out_of_space_raises_instead_of_a_compile_error(
    tmpfs: Callable[..., Path],
) -> None:
    layout = Layout(tmpfs("out", "size=1m"))
    spec = _cell(layout, "#include <iostream>\nint main() { std::cout << 42; }\n")
    ballast = layout.root / "ballast"
    with ballast.open("wb") as f:  # fill the disk to its last 16 KiB
        free = os.statvfs(layout.root).f_bavail * os.statvfs(layout.root).f_frsize
        f.write(b"\0" * (free - (16 << 10)))
    with pytest.raises(OSError) as raised:
        build(spec, layout)
    assert raised.value.errno == errno.ENOSPC
    assert not layout.cell_result(spec.key).exists()


HELLO = '#include <cstdio>\nint main() { std::puts("hi"); }\n'


def test_a_cell_built_again_under_its_own_key_compiles_again(tmp_path: Path) -> None:
    """What a resumed or forgotten grade asks: the cell's own key is in the reuse records,
    and is no earlier compile to adopt (adopting it copied a.out onto itself)."""
    layout = Layout(tmp_path / "out")
    spec = _cell(layout, HELLO)
    first = build(spec, layout)
    again = build(spec, layout)
    assert first.status == again.status == "ok"
    assert again.reused_from == ""
    assert again.binary and Path(again.binary).is_file()
    # Compile and link, then link again: the unit's object cell is content-keyed and kept.
    assert compiler_calls(layout.root) == 3


def test_a_reuse_record_naming_a_cleaned_cell_is_replaced(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "out")
    cleaned = build(_cell(layout, HELLO, "a"), layout)
    shutil.rmtree(layout.cell(cleaned.key))  # `doit clean` of that row
    second = build(_cell(layout, HELLO, "b"), layout)
    assert second.reused_from == ""  # nothing to adopt: it compiles, and is recorded
    third = build(_cell(layout, HELLO, "c"), layout)
    assert third.reused_from == second.key
    assert third.binary and Path(third.binary).is_file()


def test_a_patch_git_cannot_write_on_a_full_disk_is_not_patch_does_not_apply(
    tmpfs: Callable[..., Path], tmp_path: Path
) -> None:
    """git apply fails with "No space left on device" while it writes a new file: the disk's
    fault, not a patch that does not apply (that stamp would be cached)."""
    layout = Layout(tmpfs("out", "size=256k"))
    big = "".join(f"+// {'x' * 60}\n" for _ in range(6000))  # ~400 KB: more than the disk
    patch = tmp_path / "big.diff"
    patch.write_text(
        "diff --git a/src/big.cpp b/src/big.cpp\nnew file mode 100644\n--- /dev/null\n"
        f"+++ b/src/big.cpp\n@@ -0,0 +1,6000 @@\n{big}"
    )
    case = PROJECT / "cases" / "token_handle"
    with pytest.raises(OSError) as raised:
        materialise(case / "tree", patch, ["src/**"], "k", layout)
    assert raised.value.errno == errno.ENOSPC
    assert "failed to write" in str(raised.value)
    assert not layout.tree_stamp("k").exists()


# Each writer, run in a child that the kernel kills (SIGXFSZ) once it has written 64 KiB:
# a kill in the middle of writing a result file, at a known point.
KILLED_MID_WRITE = {
    "gate result": "from cxxgate.results.result import GateResult\n"
    "GateResult('negcomp', 'accept', 'accept', BIG).write(TARGET)\n",
    "run result": "from cxxgate.runs.run import RunResult, _write\n"
    "_write(LAYOUT, RunResult.without_run(KEY, 'label', 'ok', BIG))\n",
}


@pytest.mark.parametrize("writer", sorted(KILLED_MID_WRITE))
def test_a_result_file_killed_mid_write_keeps_its_old_contents(writer: str, tmp_path: Path) -> None:
    layout = Layout(tmp_path / "out")
    key = "k" * 24
    target = tmp_path / "gate.json" if writer == "gate result" else layout.run_result(key)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text('{"old": true}\n')
    child = (
        "import resource, signal, sys\nfrom pathlib import Path\n"
        "from cxxgate.store.layout import Layout\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # Python ignores it: die as C would\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, resource.RLIM_INFINITY))\n"
        f"TARGET, KEY = Path({str(target)!r}), {key!r}\n"
        f"LAYOUT = Layout(Path({str(layout.root)!r}))\n"
        "BIG = 'x' * (1 << 20)\n" + KILLED_MID_WRITE[writer]
    )
    proc = subprocess.run(
        [sys.executable, "-c", child],
        cwd=PROJECT,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == -signal.SIGXFSZ, proc.stderr
    assert json.loads(target.read_text()) == {"old": True}
