"""ccache as the compiler launcher (cxxgate/toolchain/ccache.py), on the real ccache, g++,
bubblewrap and redis-server: a hit gives back this tree's paths, it never comes back for a tree that
would compile differently, it changes no verdict, and build folders share a remote cache."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from conftest import Grade, build_program, case_library, make_tree, run_doit

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
    return build_program(layout, tree, PROBE, manifest, "warn")


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


# A file name as a driver's or ccache's own error line.
FORGED = ("collect2: fatal error: cannot find 'ld'", "ccache: error: Failed to create a file")


@pytest.mark.skipif(shutil.which("clang++") is None, reason="clang++ is not installed")
@pytest.mark.parametrize("line", FORGED)
def test_a_machine_fault_line_in_a_candidates_diagnostics_is_the_candidates(
    layout: Layout, tmp_path: Path, line: str
) -> None:
    """clang prints a file name as it is: a `#line` name with a newline gives a line of
    its diagnostics that reads as the linker's or ccache's own error. The compile is the
    candidate's compile_error (the toolchain builds, the compiler ran under ccache and
    failed), not a harness fault retried every run."""
    manifest = _manifest(tmp_path)
    manifest.write_text(
        ENVELOPES.replace("envelopes:", "  clang: {command: clang++, family: clang}\nenvelopes:")
        + "  cl: {toolchain: clang, std: c++20, flags: [-O0]}\n"
    )
    source = f'#line 1 "{line}\\n"\nint broken = ;\n'
    make_tree(layout, "t1" * 12, {"include/x.hpp": HEADER, "src/a.cpp": source})
    spec = CellSpec(
        kind="exe", tree_key="t1" * 12, units=(PROBE,), tree_sources=("src/*.cpp",),
        include_dirs=("include",), envelope=Envelopes(manifest).get("cl"), compile_seconds=60,
    )  # fmt: skip
    cell = build(spec, layout)
    assert cell.status == "compile_error", [s.output for s in cell.steps]
    assert any(s.output.startswith(line + "\n") for s in cell.steps), cell.steps


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


@pytest.fixture(params=["redis", "file"])
def remote(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A remote storage: a real redis-server, or a folder (`file:`, as the suite shares)."""
    if request.param == "redis":
        return str(request.getfixturevalue("redis_url"))
    # A space in the folder's name: ccache reads the URL percent-decoded.
    return f"file:{quote(str(tmp_path / 'shared cache'))}"


def test_two_build_folders_share_compiles_through_a_remote(tmp_path: Path, remote: str) -> None:
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

    env = {ccache.REMOTE: remote}
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
    from cxxgate.library.settings import Settings, SettingsError

    (tmp_path / "pyproject.toml").write_text('[tool.cxxgate]\nccache_remote = "redis://h:1"\n')
    monkeypatch.delenv(ccache.REMOTE, raising=False)
    Settings.load(tmp_path)
    assert os.environ[ccache.REMOTE] == "redis://h:1"
    monkeypatch.setenv(ccache.REMOTE, "redis://mine:2")
    Settings.load(tmp_path)
    assert os.environ[ccache.REMOTE] == "redis://mine:2"
    monkeypatch.setenv(ccache.REMOTE, "file:shared")
    with pytest.raises(SettingsError, match="CXXGATE_CCACHE_REMOTE=file:shared: expected file:/"):
        Settings.load(tmp_path)


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


# A CMake project's build (cxxgate/cells/cmake.py): the grade's cache is shared by every
# tree's build, and only the case's own trees (CellSpec.trusted) may write it.
PROJECT = {
    "CMakeLists.txt": "cmake_minimum_required(VERSION 3.16)\nproject(p CXX)\n"
    "add_library(p src/a.cpp src/b.cpp)\n",
    "src/a.cpp": "int a() { return 1; }\n",
    "src/b.cpp": "int b() { return 2; }\n",
}
# After its honest compiles, a candidate's build tries to write every file of the cache
# it can find (the grade's cache folder, every folder the harness's launcher names: its
# CCACHE_DIR, its storage), and leaves a link where the harness copies the compile
# database to (its cell folder), with other bytes in the build's own database.
HOSTILE = """\
add_custom_target(forge ALL COMMAND sh ${{CMAKE_SOURCE_DIR}}/forge.sh {store} {cell} VERBATIM)
add_dependencies(forge p)
"""
FORGE = """\
log=forge.log
for d in "$1" $(sed -n "s/^CCACHE_[A-Z_]*=//p" .cxxgate-launch | grep -o "/[^ '|]*"); do
  [ -d "$d" ] || continue
  find "$d" -type f | while read -r f; do
    if printf x >> "$f" 2>/dev/null; then echo "wrote $f"; else echo "refused $f"; fi
  done >> $log
  if echo forged > "$d/forged" 2>/dev/null; then echo "wrote $d/forged" >> $log; fi
done
victim=$(find "$1" -type f ! -name forged | head -n 1)
echo forged > compile_commands.json
ln -sf "$victim" "$2/compile_commands.json"
exit 0
"""
needs_cmake = pytest.mark.skipif(
    not sandbox.available() or shutil.which("cmake") is None or shutil.which("ninja") is None,
    reason="a project build needs bubblewrap, cmake and ninja",
)


def _project(tree: str, manifest: Path, *, trusted: bool) -> CellSpec:
    return CellSpec(
        kind="cmake",
        tree_key=tree,
        units=(),
        tree_sources=(),
        include_dirs=(),
        envelope=Envelopes(manifest).get("warn"),
        compile_seconds=120,
        trusted=trusted,
    )


def _cached(result: CellResult) -> dict[str, str]:
    """ccache's word on each object the build compiled, by object name."""
    return {Path(s.source).name: s.cache for s in result.compile_steps()}


def _snapshot(folder: Path) -> dict[str, str]:
    """Every path under `folder`: a file's bytes (sha256), a link's target, a folder."""
    found = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            found[rel] = f"link {os.readlink(path)}"
        elif path.is_file():
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[rel] = "folder"
    return found


def _entries(folder: Path) -> list[str]:
    """The results and manifests stored under `folder` (ccache's tag file aside)."""
    return [
        k
        for k, v in _snapshot(folder).items()
        if v != "folder" and k.split("/")[-1] != "CACHEDIR.TAG"
    ]


@needs_cmake
def test_a_candidates_build_cannot_write_the_shared_cache(layout: Layout, tmp_path: Path) -> None:
    """The reference's build fills the cache; a candidate's build whose custom command
    writes into every cache folder it can find, and links the cell's compile database to
    a cache file, still builds, and the cache's files keep every byte."""
    manifest = _manifest(tmp_path)
    make_tree(layout, "r1" * 12, PROJECT)
    reference = build(_project("r1" * 12, manifest, trusted=True), layout)
    assert reference.status == "ok", reference.detail
    assert _cached(reference) == {"a.cpp.o": "miss", "b.cpp.o": "miss"}
    store = ccache.folder(layout.root)
    before = _snapshot(store)
    assert _entries(store)

    spec = _project("c1" * 12, manifest, trusted=False)
    cell = layout.cell(spec.key)
    lists = PROJECT["CMakeLists.txt"] + HOSTILE.format(store=store, cell=cell)
    make_tree(layout, "c1" * 12, {**PROJECT, "CMakeLists.txt": lists, "forge.sh": FORGE})
    candidate = build(spec, layout)
    assert candidate.status == "ok", candidate.detail
    assert _snapshot(store) == before
    # It did try: it found the cache's files, and was refused each one.
    log = (cell / "build" / "forge.log").read_text()
    assert f"refused {store}/" in log, log
    assert f"wrote {store}/" not in log.replace(f"wrote {store}/forged", ""), log
    # The harness's copy of the database replaced the link and did not follow it.
    assert not (cell / "compile_commands.json").is_symlink()
    assert (cell / "compile_commands.json").read_text() == "forged\n"


@needs_cmake
def test_a_candidates_unchanged_compiles_hit_the_references_results(
    layout: Layout, tmp_path: Path
) -> None:
    """The point of the shared cache: a candidate that changes one file hits the
    reference's result for the other (reported as a hit, not a remote one), and its own
    compile of the changed file is stored nowhere other trees read."""
    manifest = _manifest(tmp_path)
    make_tree(layout, "r1" * 12, PROJECT)
    make_tree(layout, "c2" * 12, {**PROJECT, "src/b.cpp": "int b() { return 3; }\n"})
    reference = build(_project("r1" * 12, manifest, trusted=True), layout)
    assert _cached(reference) == {"a.cpp.o": "miss", "b.cpp.o": "miss"}
    store = ccache.folder(layout.root)
    before = _snapshot(store)
    candidate = build(_project("c2" * 12, manifest, trusted=False), layout)
    assert candidate.status == "ok", candidate.detail
    assert _cached(candidate) == {"a.cpp.o": "hit", "b.cpp.o": "miss"}
    assert _snapshot(store) == before


@needs_cmake
def test_only_the_case_trees_build_stores_its_compiles(layout: Layout, tmp_path: Path) -> None:
    """A candidate that builds first stores nothing (the reference's build then misses
    too); the reference's build stores each object (a result and a manifest), and a later
    candidate of the same bytes hits them all."""
    manifest = _manifest(tmp_path)
    for tree in ("c3", "r1", "c4"):
        make_tree(layout, tree * 12, PROJECT)
    store = ccache.folder(layout.root)
    first = build(_project("c3" * 12, manifest, trusted=False), layout)
    assert first.status == "ok", first.detail
    assert _cached(first) == {"a.cpp.o": "miss", "b.cpp.o": "miss"}
    assert _entries(store) == []
    reference = build(_project("r1" * 12, manifest, trusted=True), layout)
    assert _cached(reference) == {"a.cpp.o": "miss", "b.cpp.o": "miss"}
    assert len(_entries(store)) == 4
    later = build(_project("c4" * 12, manifest, trusted=False), layout)
    assert _cached(later) == {"a.cpp.o": "hit", "b.cpp.o": "hit"}


# A command of the build that tries to set a key in the remote storage.
POKE = """\
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), 2).sendall(b"SET forged 1\\r\\n")
    print("poke: sent")
except OSError as exc:
    print(f"poke: {{exc}}")
"""


@needs_cmake
def test_a_project_build_never_reaches_the_remote_storage(
    layout: Layout, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    """CXXGATE_CCACHE_REMOTE is for the harness's own compiles: a project build, trusted or
    not, has no network, so neither ccache nor a command of the build (this one tries to
    SET a key) reaches the server. (So before project builds' cache went read-only too:
    kept as the reason they do not use the remote storage.)"""
    monkeypatch.setenv(ccache.REMOTE, redis_url)
    manifest = _manifest(tmp_path)
    port = int(redis_url.rsplit(":", 1)[1])
    lists = PROJECT["CMakeLists.txt"]
    lists += "add_custom_target(poke ALL COMMAND python3 ${CMAKE_SOURCE_DIR}/poke.py VERBATIM)\n"
    make_tree(layout, "r1" * 12, PROJECT)
    poking = {**PROJECT, "CMakeLists.txt": lists, "poke.py": POKE.format(port=port)}
    make_tree(layout, "c5" * 12, poking)
    assert build(_project("r1" * 12, manifest, trusted=True), layout).status == "ok"
    candidate = build(_project("c5" * 12, manifest, trusted=False), layout)
    assert candidate.status == "ok", candidate.detail
    built = next(s for s in candidate.steps if s.phase == "build")
    # Its own network namespace: loopback there has no server behind it.
    assert "poke: [Errno" in built.output and "poke: sent" not in built.output, built.output
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(b"DBSIZE\r\n")
        assert conn.recv(64) == b":0\r\n"
