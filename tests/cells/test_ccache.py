"""ccache as the compiler launcher (cxxgate/toolchain/ccache.py), on the real ccache, g++,
bubblewrap and redis-server: a hit gives back this tree's paths, it never comes back for a tree that
would compile differently, it changes no verdict, and build folders share a remote cache."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from conftest import Grade, case_library, make_tree, run_doit

from cxxgate.cells import reuse
from cxxgate.cells.cell import build
from cxxgate.host import sandbox
from cxxgate.results import faults
from cxxgate.store.layout import Layout
from cxxgate.toolchain import ccache
from cxxgate.toolchain.cellspec import CellResult, CellSpec, Step, Unit
from cxxgate.toolchain.envelope import Envelopes

pytestmark = pytest.mark.skipif(ccache.binary() is None, reason="ccache is not installed")

HEADER = "#pragma once\ninline int answer() { return 42; }\n"
# -Wall's -Wmisleading-indentation: in TABBED the tab makes `b = 2;` look guarded by the
# `if`; both preprocess (`-E`) to the same text, since -E keeps a line's indent as a count.
SOURCE = (
    '#include "x.hpp"\n'
    "int h(bool c, int& a, int& b) {\n  if (c)\n\ta = 1;\n b = 2;\n  return a + b;\n}\n"
)
TABBED = SOURCE.replace("\n b = 2;", "\n\tb = 2;")
PROBE = Unit("main.cpp", '#include "x.hpp"\nint main() { int unused; return answer() - 42; }\n')
# Warnings stay warnings: a compile with diagnostics is cached (a failed one never is).
ENVELOPES = """\
toolchains:
  gcc: {command: g++, family: gcc}
envelopes:
  warn: {toolchain: gcc, std: c++20, flags: [-O0, -g, -Wall, -Wextra]}
"""


def _build(layout: Layout, tree: str, manifest: Path) -> CellResult:
    spec = CellSpec(
        kind="exe",
        tree_key=tree,
        units=(PROBE,),
        tree_sources=("src/*.cpp",),
        include_dirs=("include",),
        envelope=Envelopes(manifest).get("warn"),
        compile_seconds=60,
    )
    return build(spec, layout)


def _files(step: Step) -> set[str]:
    """The `file` of every location of GCC's JSON diagnostics."""
    return set(re.findall(r'"file": "([^"]+)"', step.output))


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Layout]:
    monkeypatch.setenv("CXXGATE_REUSE", "0")  # every cell compiles: ccache is what reuses
    monkeypatch.delenv(ccache.SWITCH, raising=False)
    monkeypatch.delenv(ccache.REMOTE, raising=False)
    yield Layout(tmp_path / "out")


def _manifest(tmp_path: Path) -> Path:
    path = tmp_path / "envelopes.yaml"
    path.write_text(ENVELOPES)
    return path


@pytest.mark.skipif(not sandbox.available(), reason="bubblewrap cannot run here")
def test_a_hit_in_another_tree_gives_back_this_trees_paths(layout: Layout, tmp_path: Path) -> None:
    """Two trees, the same bytes: the second tree's compiles are ccache hits (the trees
    are shown at one neutral path), and what comes back names the second tree: its
    dependency files (what reuse.py records) and its diagnostics (what gates classify)."""
    manifest = _manifest(tmp_path)
    files = {"include/x.hpp": HEADER, "src/a.cpp": TABBED}
    first, second = make_tree(layout, "t1" * 12, files), make_tree(layout, "t2" * 12, files)
    a, b = _build(layout, "t1" * 12, manifest), _build(layout, "t2" * 12, manifest)
    assert a.status == b.status == "ok"
    assert [s.cache for s in a.compile_steps()] == ["miss", "miss"]
    assert [s.cache for s in b.compile_steps()] == ["hit", "hit"]
    assert {s.sandbox for s in b.steps} == {"bwrap"}

    # Diagnostics: the unused variable (main.cpp, in the cell) and the misleading
    # indentation (src/a.cpp, in the tree), at the second tree's path.
    tree_step = next(s for s in b.compile_steps() if s.source == "src/a.cpp")
    assert "misleading-indentation" in tree_step.output
    assert _files(tree_step) == {f"{second}/src/a.cpp"}
    assert "unused variable" in b.compile_steps()[0].output
    # Dependency files: this tree's paths only.
    # A program's compiles are its object cells' (cxxgate/cells/cell.py): their folders hold them.
    deps = {
        p
        for part in b.parts
        for d in layout.cell(part).glob("tu*.d")
        for p in reuse.parse_depfile(d.read_text())
    }
    assert {f"{second}/include/x.hpp", f"{second}/src/a.cpp"} <= deps
    assert not any(str(first) in p or p.startswith("/src/") for p in deps)
    # reuse.py recorded the files both compiles read; with the first tree's paths it
    # would have recorded none for the second (an empty dependency set: reuse anything).
    # Per object (the probe read the header, the tree's source both files) and for the
    # program (what its objects read); never an empty set.
    records = [json.loads(p.read_text()) for p in (layout.root / "reuse").rglob("*.deps")]
    assert {tuple(r) for r in records} == {("include/x.hpp",), ("include/x.hpp", "src/a.cpp")}
    assert Path(b.binary or "").is_file()


@pytest.mark.skipif(not sandbox.available(), reason="bubblewrap cannot run here")
def test_no_hit_for_a_tree_that_compiles_differently(layout: Layout, tmp_path: Path) -> None:
    """Same bytes in every file the first compile read, yet a different compile: a new
    header shadowing an include (the listing is ccache's namespace), and a tab that only
    the raw bytes show (ccache's preprocessor mode would have hit; depend mode does not)."""
    manifest = _manifest(tmp_path)
    files = {"include/x.hpp": HEADER, "src/a.cpp": SOURCE}
    make_tree(layout, "t1" * 12, files)
    shadow = make_tree(layout, "t3" * 12, {**files, "src/x.hpp": "#error shadowed\n"})
    tabbed = make_tree(layout, "t4" * 12, {**files, "src/a.cpp": TABBED})
    clean = _build(layout, "t1" * 12, manifest)
    assert clean.status == "ok" and "misleading" not in json.dumps([s.output for s in clean.steps])

    shadowed = _build(layout, "t3" * 12, manifest)
    # main.cpp reads include/x.hpp as before, but in a tree listing other names: a miss.
    assert [s.cache for s in shadowed.compile_steps()] == ["miss", "miss"]
    assert shadowed.status == "compile_error"
    assert f"{shadow}/src/x.hpp" in _files(shadowed.compile_steps()[1])

    tab = _build(layout, "t4" * 12, manifest)
    step = next(s for s in tab.compile_steps() if s.source == "src/a.cpp")
    assert step.cache == "miss" and "misleading-indentation" in step.output
    assert _files(step) == {f"{tabbed}/src/a.cpp"}


def test_without_bubblewrap_a_tree_keeps_its_own_paths_and_misses(
    layout: Layout, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sandbox `none`: no neutral path to show the tree at, so another tree's compile is a
    miss (argv differs), and the same cell built again hits with the same paths."""
    monkeypatch.setattr(sandbox, "available", lambda: False)
    manifest = _manifest(tmp_path)
    files = {"include/x.hpp": HEADER, "src/a.cpp": TABBED}
    make_tree(layout, "t1" * 12, files)
    second = make_tree(layout, "t2" * 12, files)
    _build(layout, "t1" * 12, manifest)
    b = _build(layout, "t2" * 12, manifest)
    assert {s.sandbox for s in b.steps} == {"none"}
    assert [s.cache for s in b.compile_steps()] == ["miss", "miss"]
    unit = layout.cell(b.key) / PROBE.name
    written = unit.stat().st_mtime_ns
    for part in b.parts:  # objects forgotten (`doit forget`, a kill): compiled again
        layout.cell_result(part).unlink(missing_ok=True)
    again = _build(layout, "t2" * 12, manifest)
    assert unit.stat().st_mtime_ns == written  # a unit is written only when its text changed
    assert [s.cache for s in again.compile_steps()] == ["hit", "hit"]
    tree_step = next(s for s in again.compile_steps() if s.source == "src/a.cpp")
    assert _files(tree_step) == {f"{second}/src/a.cpp"}


def test_a_failing_ccache_is_the_machines_fault(layout: Layout, tmp_path: Path) -> None:
    """ccache that cannot work (its temporary folder is a file) fails the compile with
    its own error line: a harness fault (retried next run,
    cxxgate/verdicts/harness_error.py), never the candidate's compile_error."""
    manifest = _manifest(tmp_path)
    make_tree(layout, "t1" * 12, {"include/x.hpp": HEADER, "src/a.cpp": SOURCE})
    ccache.folder(layout.root).mkdir(parents=True)
    (ccache.folder(layout.root) / "tmp").write_text("not a folder\n")
    with pytest.raises(faults.ToolUnavailable, match="ccache: error"):
        _build(layout, "t1" * 12, manifest)


def _rows(grade: Grade) -> dict[str, dict[str, object]]:
    """Rows without what differs between libraries and build folders (the identity pins,
    the evidence folders, the patch file's path; none is a verdict)."""
    out = {}
    for key, row in grade.rows.items():
        out[key] = {k: v for k, v in row.items() if k not in {"identity", "evidence", "source"}}
    return out


def _steps(out: Path) -> list[Step]:
    """The compiles the build folder's cells ran (an adopted cell ran none), once each:
    a program's result repeats its objects' steps."""
    cells = [CellResult.load(p) for p in sorted((out / "cells").glob("*/*/result.json"))]
    steps = [s for c in cells if not c.reused_from for s in c.compile_steps()]
    return list({tuple(s.argv): s for s in steps}.values())


def test_ccache_off_grades_the_same_as_the_shipped_grade(shipped: Grade, tmp_path: Path) -> None:
    """CXXGATE_CCACHE=0 changes no verdict: a case of the shipped grade (ccache on, `-n 2`)
    graded again without it gives the same rows and the same cell records but for the
    ccache column."""
    library = case_library(tmp_path / "cases", "discarded")
    off = run_doit(tmp_path / "off", "grade", library=library, CXXGATE_CCACHE="0")
    assert off.returncode == 0, off.output
    assert "ccache: off" in off.output
    assert {s.cache for s in _steps(off.out)} == {""}
    on = {k: v for k, v in _rows(shipped).items() if k.startswith("discarded/")}
    assert _rows(off) == on

    def records(out: Path) -> list[str]:
        lines = (out / "cells.txt").read_text().splitlines()
        return [re.sub(r" ccache=\S+", "", ln) for ln in lines if ln.startswith("discarded/")]

    assert records(off.out) == records(shipped.out)

    # The same cells (paired by label: a row's evidence is sorted by key, and the keys
    # differ), compiled through ccache at neutral paths and bare at the real ones:
    # different keys under bubblewrap (the view of the tree is in the key), the same object
    # bytes (no sanitizer here names a source path).
    def cells(grade: Grade, evidence: object) -> dict[str, Path]:
        assert isinstance(evidence, list)
        found = [grade.out / e for e in evidence if e.startswith("cells/")]
        return {json.loads((c / "result.json").read_text())["label"]: c for c in found}

    pairs = []
    for key, row in off.rows.items():
        mine, theirs = cells(off, row["evidence"]), cells(shipped, shipped.rows[key]["evidence"])
        assert mine.keys() == theirs.keys()
        for label, cell in mine.items():
            assert (cell.name != theirs[label].name) == sandbox.available()
            for obj in sorted(cell.glob("tu*.o")):
                if (theirs[label] / obj.name).is_file():
                    pairs.append((obj, theirs[label] / obj.name))
    assert pairs, "no object built in both grades"
    assert [a.read_bytes() == b.read_bytes() for a, b in pairs] == [True] * len(pairs)
    assert "ccache=off" in (off.out / "cells.txt").read_text()
    assert re.search(r"ccache: [1-9]\d* hit", shipped.output), shipped.output[-2000:]


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A real redis-server on loopback, on a free port, no persistence; stopped after."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_two_build_folders_share_compiles_through_redis(tmp_path: Path, redis_url: str) -> None:
    """Two shards grade the same library, each in its own build folder with its own local
    cache, one remote storage: the second compiles only what ccache never stores (failed
    compiles); everything else comes from the first shard's results, with the same rows.
    The library kinds (archive, consumer) go through ccache too."""
    library = case_library(tmp_path / "cases", "normalise")
    case_yaml = library / "normalise/case.yaml"
    data = yaml.safe_load(case_yaml.read_text())
    data["gates"] = {"consumer": data["gates"]["consumer"]}
    data["patches"] = [p for p in data["patches"] if "renamed_api" in p["file"]]
    case_yaml.write_text(yaml.safe_dump(data, sort_keys=False))

    env = {ccache.REMOTE: redis_url}
    one = run_doit(tmp_path / "one", "grade", library=library, **env)
    assert one.returncode == 0, one.output
    two = run_doit(tmp_path / "two", "grade", library=library, **env)
    assert two.returncode == 0, two.output
    assert _rows(one) == _rows(two)

    first, second = _steps(one.out), _steps(two.out)
    kinds = {CellResult.load(p).kind for p in (two.out / "cells").glob("*/*/result.json")}
    assert {"archive", "consumer"} <= kinds
    assert {s.cache for s in first if s.exit == 0} == {"miss"}
    remote = [s for s in second if s.cache == "remote"]
    misses = [s for s in second if s.cache == "miss"]
    assert remote, [(s.source, s.cache) for s in second]
    assert all(s.cache in {"remote", "hit"} for s in second if s.exit == 0)
    # ccache never stores a failed compile: renamed_api's consumer fails in both shards.
    assert misses and all(s.exit != 0 for s in misses)
    assert f"{len(remote)} from remote storage" in two.output
    assert re.search(rf"{len(misses)} miss\(es\)", two.output)
    assert re.search(r" ccache=\d+/0", (two.out / "cells.txt").read_text())


def test_remote_storage_from_pyproject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[tool.cxxgate] ccache_remote reaches the compiles; the environment's value wins."""
    from cxxgate.library.settings import Settings

    (tmp_path / "pyproject.toml").write_text('[tool.cxxgate]\nccache_remote = "redis://h:1"\n')
    monkeypatch.delenv(ccache.REMOTE, raising=False)
    Settings.load(tmp_path)
    assert os.environ[ccache.REMOTE] == "redis://h:1"
    monkeypatch.setenv(ccache.REMOTE, "redis://mine:2")
    Settings.load(tmp_path)
    assert os.environ[ccache.REMOTE] == "redis://mine:2"


# Inline assembly that embeds a tree file at /src/project, where ccache's sandbox shows
# the tree (and nowhere without ccache: then the assembler cannot find it).
INCBIN = (
    'asm(".section .rodata\\n.globl blob\\nblob:\\n.incbin \\"/src/project/src/blob.dat\\"\\n'
    '.byte 0\\n.text\\n");\n'
    'extern "C" const char blob[];\nint h() { return blob[0]; }\n'
)


@pytest.mark.skipif(not sandbox.available(), reason="bubblewrap cannot run here")
@pytest.mark.parametrize("cache", ["1", "0"])
@pytest.mark.parametrize("reuse_on", ["1", "0"])
def test_an_assembler_read_is_refused_with_or_without_caches(
    layout: Layout, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: str, reuse_on: str
) -> None:
    """Two trees, the same src/a.cpp, a different src/blob.dat that `.incbin` reads: no
    dependency file names it, so neither ccache nor reuse.py could tell the trees apart
    (the second was served the first's object). Both are refused, the same way, whether
    ccache and reuse are on or off; and the refusal is never stored as a hit."""
    monkeypatch.setenv(ccache.SWITCH, cache)
    monkeypatch.setenv("CXXGATE_REUSE", reuse_on)
    manifest = _manifest(tmp_path)
    files = {"include/x.hpp": HEADER, "src/a.cpp": INCBIN}
    make_tree(layout, "t5" * 12, {**files, "src/blob.dat": "A"})
    make_tree(layout, "t6" * 12, {**files, "src/blob.dat": "B"})
    for tree in ("t5" * 12, "t6" * 12):
        result = _build(layout, tree, manifest)
        assert result.status == "compile_error", result
        step = next(s for s in result.compile_steps() if s.source == "src/a.cpp")
        assert step.exit != 0 and step.cache != "hit"
        if cache == "1":  # the tree is at /src/project: the assembler read the blob
            assert "the assembler read /src/project/src/blob.dat" in step.output
        else:  # the tree at its own path: /src/project/... does not exist
            assert "blob.dat" in step.output


def test_an_assembler_read_of_the_trees_own_path_is_refused(
    layout: Layout, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ccache the tree is at its own path, which the source can name: the read
    succeeds, and is refused all the same; the same source without the asm compiles."""
    monkeypatch.setenv(ccache.SWITCH, "0")
    manifest = _manifest(tmp_path)
    tree = layout.tree("t7" * 12)
    source = INCBIN.replace("/src/project/", f"{tree}/")
    make_tree(
        layout, "t7" * 12, {"include/x.hpp": HEADER, "src/a.cpp": source, "src/blob.dat": "A"}
    )
    result = _build(layout, "t7" * 12, manifest)
    step = next(s for s in result.compile_steps() if s.source == "src/a.cpp")
    assert result.status == "compile_error"
    assert f"the assembler read {tree}/src/blob.dat" in step.output
    plain = make_tree(layout, "t8" * 12, {"include/x.hpp": HEADER, "src/a.cpp": SOURCE})
    assert plain and _build(layout, "t8" * 12, manifest).status == "ok"
