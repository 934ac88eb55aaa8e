"""Runs are bounded: time limit, output cap, leftover children, all classified as data."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FIXTURES, SHIPPED, run_grade

from cxxgate.cells import ctest
from cxxgate.cells.cell import build
from cxxgate.contract import registry
from cxxgate.host import sandbox
from cxxgate.host.process import Caps, bounded
from cxxgate.library.case import Limits, load_case
from cxxgate.results import faults
from cxxgate.runs.run import RunResult, RunSpec, execute, run_uid
from cxxgate.store.layout import Layout
from cxxgate.toolchain.cellspec import CellSpec, Unit
from cxxgate.toolchain.envelope import Envelopes
from cxxgate.util.yamlfile import InputError

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
        "limits/hog": "functional_regression",
        "limits/bigfile": "functional_regression",
        "limits/forks": "functional_regression",
    }
    summaries = {k: r["gates"]["negcomp"]["summary"] for k, r in grade.rows.items()}
    assert "address-space limit" in summaries["limits/hog"]
    assert "file size limit (SIGXFSZ)" in summaries["limits/bigfile"]
    if sandbox.drop_uid():  # only a root harness sets the process cap (cxxgate/host/process.py)
        assert "process limit" in summaries["limits/forks"]
    # A run's folder keeps its evidence only: the 64 MiB the spill reached is gone.
    assert not list((grade.out / "runs").glob("*/*/work*"))


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


# ---- resource caps on candidate runs (cxxgate/host/process.py Caps) --------------------------


def _program(layout: Layout, text: str, envelope: str = "dbg") -> CellSpec:
    """A real executable cell built by the harness from one translation unit."""
    layout.tree("t").mkdir(parents=True, exist_ok=True)
    layout.tree_stamp("t").write_text(json.dumps({"applied": True}))
    spec = CellSpec(
        kind="exe", tree_key="t", units=(Unit("prog.cpp", text),), tree_sources=(),
        include_dirs=(), envelope=Envelopes(SHIPPED / "envelopes.yaml").get(envelope),
        compile_seconds=120,
    )
    layout.cell(spec.key).mkdir(parents=True, exist_ok=True)
    cell = build(spec, layout)
    assert cell.status == "ok", [s.output for s in cell.steps]
    return spec


def _run(tmp_path: Path, text: str, caps: Caps | None = None, envelope: str = "dbg",
         timeout: float = 20) -> RunResult:
    layout = Layout(tmp_path / "out")
    cell = _program(layout, text, envelope)
    flags = cell.envelope.flags
    caps = caps or Limits().caps(flags)
    run = RunSpec(cell_key=cell.key, env=cell.envelope.run_env, timeout=timeout, caps=caps)
    layout.run(run.key).mkdir(parents=True, exist_ok=True)
    return execute(run, layout)


HOG = """#include <cstddef>
#include <cstdio>
#include <vector>
int main() {
  std::vector<char> hoard(std::size_t{3} << 29, 1);  // 1.5 GiB, every page touched
  std::printf("kept %zu bytes\\n", hoard.size());
}
"""


def test_a_memory_hog_is_stopped_at_the_address_space_cap(tmp_path: Path) -> None:
    run = _run(tmp_path, HOG)
    assert not run.passed and b"kept" not in run.stdout
    assert run.detail == "address-space limit: an allocation failed under the 1024 MiB cap"


SPILL = """#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <vector>
int main(int, char** argv) {
  if (argv[1][0] == 'i') std::signal(SIGXFSZ, SIG_IGN);  // then write() fails with EFBIG
  std::FILE* f = std::fopen("spill.bin", "wb");
  std::setvbuf(f, nullptr, _IONBF, 0);
  std::vector<char> block(1 << 20, 'x');
  long written = 0;
  for (int i = 0; i < 200; ++i) {  // 200 MB
    std::size_t n = std::fwrite(block.data(), 1, block.size(), f);
    written += static_cast<long>(n);
    if (n != block.size()) {
      std::fprintf(stderr, "short write: %s\\n", std::strerror(errno));
      break;
    }
  }
  std::printf("%ld\\n", written);
  return written == 200L << 20 ? 0 : 1;
}
"""


@pytest.mark.parametrize(("mode", "how"), [("default", "SIGXFSZ"), ("ignore", "EFBIG")])
def test_a_file_is_stopped_at_the_size_cap(tmp_path: Path, mode: str, how: str) -> None:
    layout = Layout(tmp_path / "out")
    cell = _program(layout, SPILL)
    run = RunSpec(cell_key=cell.key, args=(mode,), timeout=20, caps=Limits().caps(()))
    result = execute(run, layout)
    assert not result.passed
    assert result.detail == f"file size limit ({how}): a file reached the 64 MiB cap"
    if how == "EFBIG":  # the program lived to say how far it got
        assert int(result.stdout) <= 64 << 20
    assert not (layout.run(run.key) / "work").exists()


FORKS = """#include <signal.h>
#include <unistd.h>
#include <cstdio>
int main() {
  int children = 0;
  while (children < 1000) {
    pid_t child = fork();
    if (child < 0) break;
    if (child == 0) {
      pause();
      _exit(0);
    }
    ++children;
  }
  std::printf("uid=%d children=%d\\n", static_cast<int>(getuid()), children);
}
"""


@pytest.mark.skipif(not sandbox.drop_uid(), reason="the process cap needs a root harness")
def test_a_fork_bomb_is_held_under_the_process_cap(tmp_path: Path) -> None:
    run = _run(tmp_path, FORKS, Caps(processes=40))
    uid, children = (int(f.split("=")[1]) for f in run.stdout.decode().split())
    assert uid != 0  # an unprivileged uid of the run's own: the kernel counts its processes
    assert 0 < children < 40


GROW = """#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <vector>
int main() {
  std::vector<char*> kept;
  for (int i = 0; i < 64; ++i) {  // up to 1 GiB, 16 MiB at a time, every page touched
    char* block = new char[16 << 20];
    std::memset(block, i, 16 << 20);
    kept.push_back(block);
    usleep(20000);
  }
  std::printf("grew to %zu blocks\\n", kept.size());
  for (char* block : kept) delete[] block;
}
"""


def test_an_asan_build_is_stopped_by_the_resident_memory_watch(tmp_path: Path) -> None:
    caps = Limits(memory_mib=256).caps(("-fsanitize=address,undefined",))
    assert caps.resident  # no address-space limit: ASan's shadow reserves terabytes
    run = _run(tmp_path, GROW, caps, envelope="asan")
    assert run.status == "signaled" and run.signal == 9
    assert run.detail == "killed: resident memory over 256 MiB"
    assert b"grew" not in run.stdout


QUIET = '#include <cstdio>\nint main() { std::puts("fine"); }\n'


def test_an_asan_build_runs_under_the_watch_not_an_address_space_limit(tmp_path: Path) -> None:
    watched = _run(tmp_path / "watched", QUIET, envelope="asan")
    assert watched.passed and watched.stdout == b"fine\n"
    # The same build under RLIMIT_AS cannot map its shadow: why sanitizer runs are watched.
    limited = _run(tmp_path / "limited", QUIET, Caps(resident=False), envelope="asan")
    assert not limited.passed and "AddressSanitizer" in limited.stderr


LITTER = """#include <sys/stat.h>
#include <cstdio>
int main() {
  std::FILE* f = std::fopen("litter.txt", "w");
  std::fputs("left behind", f);
  std::fclose(f);
  mkdir("locked", 0700);
  std::fclose(std::fopen("locked/inner.txt", "w"));
  chmod("locked", 0);  // a folder the harness cannot list without fixing its mode
  std::puts("evidence");
}
"""


def test_the_work_folder_is_deleted_and_the_evidence_kept(tmp_path: Path) -> None:
    run = _run(tmp_path, LITTER)
    assert run.passed
    folder = Path(run.stdout_path).parent
    assert sorted(p.name for p in folder.iterdir()) == ["result.json", "stderr", "stdout"]
    assert run.stdout == b"evidence\n"


def test_limits_are_validated_naming_the_key(tmp_path: Path) -> None:
    case = tmp_path / "limits"
    shutil.copytree(FIXTURES / "limits" / "limits", case)
    text = (case / "case.yaml").read_text()
    (case / "case.yaml").write_text(text.replace("output_bytes: 65536", "memory_mib: 0"))
    with pytest.raises(InputError) as err:
        load_case(case, registry.gates())
    assert str(case / "case.yaml") in str(err.value)
    assert "limits.memory_mib" in str(err.value) and "greater than or equal to 64" in str(err.value)


# Prints what /tmp holds afterwards (fwrite's count includes bytes still buffered).
TMPFILL = """#include <csignal>
#include <cstdio>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <vector>
int main() {
  std::signal(SIGXFSZ, SIG_IGN);  // a write past the file cap fails instead of killing
  struct statfs fs;
  bool tmpfs = statfs("/tmp", &fs) == 0 && fs.f_type == 0x01021994;
  bool found = std::fopen("/tmp/left", "r") != nullptr;  // what an earlier run left
  std::fclose(std::fopen("/tmp/left", "w"));
  std::vector<char> block(1 << 20, 'x');
  long held = 0;
  for (const char* name : {"/tmp/a", "/tmp/b"}) {  // 2 x 80 MiB asked, 64 MiB each cap
    std::FILE* f = std::fopen(name, "wb");
    if (f == nullptr) return 1;
    for (int i = 0; i < 80; ++i) std::fwrite(block.data(), 1, block.size(), f);
    std::fclose(f);
    struct stat st;
    if (stat(name, &st) == 0) held += static_cast<long>(st.st_size);
  }
  std::printf("%d %d %ld\\n", tmpfs, found, held);
}
"""


@pytest.mark.skipif(not sandbox.available(), reason="bubblewrap cannot run here")
def test_the_sandbox_tmp_is_the_runs_own_folder(tmp_path: Path) -> None:
    """/tmp is a folder on disk, made for the run and deleted after it, as /work: a tmpfs
    let a run pin kernel memory no cap sees (millions of empty files). Each file holds at
    most file_mib; a run never sees what an earlier one left."""
    for _ in range(2):
        run = _run(tmp_path, TMPFILL)
        assert run.stdout.decode().split() == ["0", "0", str(2 * (64 << 20))], run.stdout
        assert not any(p.name.startswith("tmp") for p in Path(run.stdout_path).parent.iterdir())


# Sleeps, writes 1 MiB to a file in /tmp, sleeps again: fails when the write did.
TMPWRITE = """#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>
int main() {
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  std::vector<char> block(1 << 20, 'x');
  std::FILE* f = std::fopen("/tmp/scratch", "wb");
  bool ok = f != nullptr && std::fwrite(block.data(), 1, block.size(), f) == block.size();
  ok = f != nullptr && std::fclose(f) == 0 && ok;
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  return ok ? 0 : 1;
}
"""


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A file system of 256 MiB of its own (a tmpfs: needs a root harness that may mount)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(mount)],
                          capture_output=True, check=False)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(folder: Path, start: float, hold: float) -> None:
    """Another run of the batch: fills the disk after `start` seconds, frees it `hold`
    seconds later."""
    time.sleep(start)
    with (folder / "filler").open("wb") as f:
        try:
            while True:
                f.write(b"\0" * (1 << 20))
                f.flush()
        except OSError:
            pass
    time.sleep(hold)
    (folder / "filler").unlink()


def test_a_run_that_met_a_disk_another_run_filled_is_not_its_fault(small_disk: Path) -> None:
    """A run's /tmp is on the disk every run shares (no longer a private tmpfs): a run
    that fills it and frees it again before its neighbour ends failed the neighbour's
    write, and that failure was recorded as the neighbour's. The disk is watched while a
    run runs: nothing is recorded, the grade stops on a full disk (faults.py)."""
    layout = Layout(small_disk / "out")
    cell = _program(layout, TMPWRITE)
    spec = RunSpec(cell_key=cell.key, env=cell.envelope.run_env, timeout=20,
                   caps=Limits().caps(cell.envelope.flags))  # fmt: skip
    layout.run(spec.key).mkdir(parents=True, exist_ok=True)
    assert execute(spec, layout).passed  # alone, it passes
    filler = threading.Thread(target=_fill, args=(small_disk, 0.1, 1.0))
    filler.start()
    try:
        with pytest.raises(OSError) as raised:
            execute(spec, layout)
    finally:
        filler.join()
    assert raised.value.errno == errno.ENOSPC and "while the program ran" in str(raised.value)
    assert not layout.run_result(spec.key).exists()
    assert sorted(p.name for p in layout.run(spec.key).iterdir()) == ["stderr", "stdout"]


def test_a_run_killed_while_the_oom_killer_ran_is_not_its_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SIGKILL while the kernel's OOM killer ran (its count in /proc/vmstat moved) is the
    machine's memory running out, perhaps for a neighbour's memfd files no cap counts: a
    harness fault, retried, never the run's result. The count is stood in for (an OOM on
    this machine would take the suite down with it); the SIGKILL is the program's own."""
    program = "#include <csignal>\nint main() { std::raise(SIGKILL); }\n"
    calm = _run(tmp_path / "calm", program)  # recorded: bwrap says 128 + SIGKILL
    assert not calm.passed and 9 in (calm.signal, calm.exit - 128), calm
    counts = iter(range(100))
    monkeypatch.setattr(faults, "oom_kills", lambda: next(counts))
    with pytest.raises(RuntimeError, match="OOM killer ran while this run was killed"):
        _run(tmp_path / "oom", program)


def test_a_run_the_output_cap_killed_is_its_verdict_whatever_the_oom_killer_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The harness's own SIGKILL (here the output cap's) is the run's verdict even while the
    OOM killer's count moves: a flood is output_overflow, not a harness fault."""
    counts = iter(range(100))
    monkeypatch.setattr(faults, "oom_kills", lambda: next(counts))
    flood = '#include <cstdio>\nint main() { for (;;) std::fputs("yyyyyyyy\\n", stdout); }\n'
    layout = Layout(tmp_path / "out")
    cell = _program(layout, flood)
    spec = RunSpec(cell_key=cell.key, env=cell.envelope.run_env, timeout=20,
                   caps=Limits().caps(cell.envelope.flags), output_cap=10_000)  # fmt: skip
    layout.run(spec.key).mkdir(parents=True, exist_ok=True)
    run = execute(spec, layout)
    assert run.status == "output_overflow", run


def test_a_compile_that_failed_while_the_oom_killer_ran_is_not_its_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The OOM killer's first pick is the biggest process, a neighbour's compiler: its
    `Killed signal terminated program cc1plus` was the candidate's compile_error, cached.
    A failed tool call while the count moved is a harness fault; a calm one stays a
    verdict."""

    def compile_broken(out: Path) -> str:
        layout = Layout(out)
        layout.tree("t").mkdir(parents=True, exist_ok=True)
        layout.tree_stamp("t").write_text(json.dumps({"applied": True}))
        spec = CellSpec(
            kind="exe", tree_key="t", units=(Unit("prog.cpp", "int main() { return }\n"),),
            tree_sources=(), include_dirs=(),
            envelope=Envelopes(SHIPPED / "envelopes.yaml").get("dbg"), compile_seconds=120,
        )  # fmt: skip
        layout.cell(spec.key).mkdir(parents=True, exist_ok=True)
        return build(spec, layout).status

    assert compile_broken(tmp_path / "calm") == "compile_error"
    counts = iter(range(100))
    monkeypatch.setattr(faults, "oom_kills", lambda: next(counts))
    with pytest.raises(faults.ToolUnavailable, match="OOM killer ran"):
        compile_broken(tmp_path / "oom")


def test_a_ctest_command_that_succeeded_is_kept_whatever_the_oom_killer_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/proc/vmstat oom_kill counts every OOM kill of the machine, another container's
    cgroup OOM too: a test command that succeeded lost nothing to it and is kept; one that
    failed while the count moved is a harness fault (a killed test fails its command)."""
    layout = Layout(tmp_path / "out")
    spec = CellSpec(
        kind="exe", tree_key="t", units=(), tree_sources=(), include_dirs=(),
        envelope=Envelopes(SHIPPED / "envelopes.yaml").get("dbg"), compile_seconds=120,
    )  # fmt: skip
    layout.compiler_log.parent.mkdir(parents=True, exist_ok=True)
    counts = iter(range(100))
    monkeypatch.setattr(faults, "oom_kills", lambda: next(counts))

    def command(status: int) -> int | None:
        work = tmp_path / f"work{status}"
        for name in ("build", "reports", "src"):
            (work / name).mkdir(parents=True)
        with run_uid() as uid:
            for folder in (work / "build", work / "reports", work / "src"):
                if uid is not None:
                    os.chown(folder, uid, uid)
            at = sandbox.NEUTRAL_BUILD if sandbox.available() else str(work)
            test: tuple[str, dict[str, str], float] = (at, {}, 10.0)
            argv = ["/bin/sh", "-c", f"exit {status}"]
            return ctest._boxed(spec, layout, work, uid, Caps(), argv, "t", test).exit

    assert command(0) == 0
    with pytest.raises(RuntimeError, match="OOM killer ran while the tests ran"):
        command(8)
