"""The compiler sees its tree and its cell folder, not the case library's oracles."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import SHIPPED, case_library, run_grade

from cxxgate.cells.cell import build
from cxxgate.host import sandbox, userns
from cxxgate.runs import run
from cxxgate.store.layout import Layout
from cxxgate.toolchain.cellspec import CellSpec, Unit
from cxxgate.toolchain.envelope import Envelopes
from cxxgate.util.yamlfile import InputError

pytestmark = pytest.mark.skipif(not sandbox.available(), reason="bubblewrap cannot run here")


def _cell(tmp_path: Path, text: str, envelopes: Envelopes | None = None) -> tuple[str, str]:
    envelopes = envelopes or Envelopes(SHIPPED / "envelopes.yaml")
    layout = Layout(tmp_path / "out")
    (layout.tree("t") / "include").mkdir(parents=True)
    (layout.tree("t") / "include/lib.hpp").write_text("inline int answer() { return 42; }\n")
    layout.tree_stamp("t").write_text(json.dumps({"applied": True}))
    spec = CellSpec(
        kind="syntax", tree_key="t", units=(Unit("probe.cpp", text),), tree_sources=(),
        include_dirs=("include",), envelope=envelopes.get("gcc"),
        compile_seconds=60,
    )
    layout.cell(spec.key).mkdir(parents=True)
    result = build(spec, layout)
    return result.status, result.steps[0].output if result.steps else ""


def test_tree_headers_are_visible(tmp_path: Path) -> None:
    status, _ = _cell(tmp_path, '#include "lib.hpp"\nint main() { return answer() - 42; }\n')
    assert status == "ok"


def test_an_oracle_outside_the_tree_cannot_be_included(tmp_path: Path) -> None:
    secret = tmp_path / "golden.txt"
    secret.write_text('"the expected output"\n')
    # Outside the sandbox this compiles: the file exists and holds a string literal.
    text = f'const char* answer_key =\n#include "{secret}"\n;\nint main() {{}}\n'
    status, output = _cell(tmp_path, text)
    assert status == "compile_error"
    assert "No such file or directory" in output


# ---- the toolchain's binding: a declared prefix, never a guessed folder --------------

WRAPPER = '#!/bin/sh\n# a site wrapper: pins the system compiler\nexec /usr/bin/g++ "$@"\n'


def _project(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A project-like folder: bin/g++ (a wrapper) beside a case library holding an oracle."""
    project = tmp_path / "project"
    wrapper = project / "bin" / "g++"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    library = case_library(project / "cases", "token_handle")
    oracle = library / "token_handle" / "golden.txt"
    oracle.write_text('"the expected output"\n')
    return project, library, oracle


def _manifest(library: Path, command: Path, prefix: Path | None = None) -> Path:
    """The shipped manifest with its gcc toolchain pointed at `command` (and `prefix`)."""
    path = library / "envelopes.yaml"
    extra = f", prefix: {prefix}" if prefix is not None else ""
    text = path.read_text().replace(
        "gcc: {command: g++, family: gcc}", f"gcc: {{command: {command}, family: gcc{extra}}}"
    )
    path.write_text(text)
    return path


def _steal(oracle: Path) -> str:
    return f'const char* answer_key =\n#include "{oracle}"\n;\nint main() {{}}\n'


def test_a_wrapper_without_prefix_sees_no_project(tmp_path: Path) -> None:
    project, library, oracle = _project(tmp_path)
    envelopes = Envelopes(_manifest(library, project / "bin" / "g++"))
    tc = envelopes.get("gcc").toolchain
    assert tc.binds == ((str(project / "bin/g++"), str(project / "bin/g++")),)  # itself only
    status, _ = _cell(tmp_path / "a", '#include "lib.hpp"\nint main() { return answer() - 42; }\n',
                      envelopes)
    assert status == "ok"  # the wrapper ran, in the sandbox, and reached the system g++
    # With the project's folder bound (bin/'s parent), this compiled: the oracle was read.
    status, output = _cell(tmp_path / "b", _steal(oracle), envelopes)
    assert status == "compile_error" and "No such file or directory" in output


def test_a_prefix_holding_the_case_library_is_refused_at_load(tmp_path: Path) -> None:
    project, library, _ = _project(tmp_path)
    manifest = _manifest(library, project / "bin" / "g++", prefix=project)
    with pytest.raises(InputError) as err:
        Envelopes(manifest)
    msg = str(err.value)
    assert str(manifest) in msg and "toolchains.gcc.prefix" in msg and "overlaps" in msg
    # The grade refuses it as an input error, naming the file and the key.
    grade = run_grade(tmp_path / "out", library=library)
    assert grade.returncode != 0
    assert str(manifest) in grade.output and "toolchains.gcc.prefix" in grade.output


def test_a_prefix_holding_the_build_folder_is_refused(tmp_path: Path) -> None:
    _, library, _ = _project(tmp_path)
    toolchain = tmp_path / "tools"
    (toolchain / "bin").mkdir(parents=True)
    manifest = _manifest(library, Path("/usr/bin/g++"), prefix=toolchain)
    with pytest.raises(InputError, match=r"toolchains\.gcc\.prefix.*overlaps"):
        Envelopes(manifest, protect=[toolchain / "out"])
    Envelopes(manifest, protect=[tmp_path / "elsewhere"])  # apart from it: accepted


def test_a_prefix_is_absolute_and_may_be_absent(tmp_path: Path) -> None:
    relative = _manifest(case_library(tmp_path / "a"), Path("/usr/bin/g++"), prefix=Path("opt"))
    with pytest.raises(InputError, match=r"toolchains\.gcc\.prefix: 'opt' must be an absolute"):
        Envelopes(relative)
    # A toolchain this machine lacks may name its prefix: it loads, and nothing is bound.
    absent = tmp_path / "not-installed"
    envelopes = Envelopes(_manifest(case_library(tmp_path / "b"), Path("/usr/bin/g++"), absent))
    assert envelopes.get("gcc").toolchain.binds == ()


def test_a_wrapper_in_a_declared_prefix_works_and_sees_only_it(tmp_path: Path) -> None:
    _, library, oracle = _project(tmp_path)
    toolchain = tmp_path / "toolchain"
    wrapper = toolchain / "bin" / "g++"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    (toolchain / "include").mkdir()
    (toolchain / "include" / "site.hpp").write_text("inline int site() { return 42; }\n")
    envelopes = Envelopes(_manifest(library, wrapper, prefix=toolchain))
    assert envelopes.get("gcc").toolchain.binds == ((str(toolchain), str(toolchain)),)
    uses_prefix = f'#include "{toolchain}/include/site.hpp"\nint main() {{ return site() - 42; }}\n'
    status, output = _cell(tmp_path / "a", uses_prefix, envelopes)
    assert status == "ok", output  # the prefix is bound: its files are the toolchain's
    status, output = _cell(tmp_path / "b", _steal(oracle), envelopes)
    assert status == "compile_error" and "No such file or directory" in output


@pytest.mark.skipif(not sandbox.drop_uid(), reason="needs a root harness that drops the uid")
def test_a_dropped_uid_may_write_its_tmp(tmp_path: Path) -> None:
    """A run's /tmp is a folder its dropped uid owns: fmt's posix-test (old GoogleTest
    capturing stderr through a file in /tmp) crashed on the gold patch when that uid could
    not create one there. /dev/shm, a tmpfs, stays closed to it."""
    tmp = run.fresh_folder(tmp_path / "tmp", 65534)
    argv = [*sandbox.run_args(tmp), *sandbox.drop_args(65534), "sh", "-c"]
    script = "echo x > /tmp/probe && cat /tmp/probe; touch /dev/shm/x 2>/dev/null || echo closed"
    done = subprocess.run([*argv, script], capture_output=True, text=True, check=False, timeout=30)
    assert (done.returncode, done.stdout) == (0, "x\nclosed\n"), done.stderr
    assert (tmp / "probe").read_text() == "x\n"


def _sh_in_a_run_sandbox(
    tmp_path: Path, drop: bool, script: str
) -> tuple[subprocess.CompletedProcess[str], str, Path, Path]:
    """`sh -c script` in a candidate run's sandbox (as the run's own uid with `drop`, in
    bwrap's user namespace otherwise): its result, the sandbox's name, /work and /tmp."""
    if drop and not sandbox.drop_uid():
        pytest.skip("needs a root harness that drops the uid")
    uid = 0x60000000 + 0xFFFF if drop else None
    work, tmp = run.fresh_folder(tmp_path / "work", uid), run.fresh_folder(tmp_path / "tmp", uid)
    spec = run.RunSpec(cell_key="k", args=("-c", script))
    with userns.closed(drop) as (closed, fds):
        argv, box = run._sandboxed(Path("/bin/sh"), work, tmp, spec, None, uid, closed)
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30,
                              pass_fds=fds)  # fmt: skip
    return done, box, work, tmp


@pytest.mark.skipif(not sandbox.available(), reason="bubblewrap cannot run here")
@pytest.mark.parametrize("drop", [False, True], ids=["user-namespace", "dropped-uid"])
def test_a_run_writes_its_folders_only_not_the_sandboxs_own_tmpfs(
    tmp_path: Path, drop: bool
) -> None:
    """The sandbox's root and /dev are tmpfs bwrap made (half the memory each, no size):
    in a user namespace (a harness that is not root, or root without setpriv) the run's
    own uid owned them and wrote there outside every cap. Both are read-only now; /tmp and
    /work stay writable, device nodes open."""
    script = (
        "for f in /x /dev/x /dev/shm/x; do touch $f 2>/dev/null && echo wrote $f; done;"
        "touch /tmp/t /work/w && echo > /dev/null && head -c 1 /dev/zero | wc -c"
    )
    done, box, work, tmp = _sh_in_a_run_sandbox(tmp_path, drop, script)
    assert (box, done.returncode, done.stdout) == ("bwrap", 0, "1\n"), done.stderr
    assert (tmp / "t").exists() and (work / "w").exists()


@pytest.mark.skipif(not sandbox.available(), reason="bubblewrap cannot run here")
@pytest.mark.parametrize("drop", [False, True], ids=["user-namespace", "dropped-uid"])
def test_a_run_makes_no_user_namespace_of_its_own(tmp_path: Path, drop: bool) -> None:
    """In a user namespace of its own a run mounted a tmpfs of any size and filled it
    (memory outside every cap, whatever /tmp is): none can be made; processes and
    threads still can (clone3 says ENOSYS, glibc falls back to clone)."""
    script = (
        "unshare -Urm sh -c 'mount -t tmpfs -o size=4g none /tmp && echo mounted' 2>/dev/null;"
        "(echo forked) & wait; python3 -c 'import threading as t; x = t.Thread(target=print,"
        " args=(\"thread\",)); x.start(); x.join()'"
    )
    done, _, _, _ = _sh_in_a_run_sandbox(tmp_path, drop, script)
    assert (done.returncode, done.stdout) == (0, "forked\nthread\n"), done.stderr
