"""Cells are reused across trees only when every file they read is the same, and the
trees list the same files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SHIPPED, Grade, make_tree, run_grade

from cxxgate.cells.cell import build
from cxxgate.cells.reuse import parse_depfile
from cxxgate.store.layout import Layout
from cxxgate.toolchain.cellspec import CellResult, CellSpec, Unit
from cxxgate.toolchain.envelope import Envelopes

PROBE = Unit("probe.cpp", '#include "lib.hpp"\nint main() { return answer() - 42; }\n')


def _build(layout: Layout, tree: str, kind: str = "syntax") -> CellResult:
    spec = CellSpec(
        kind=kind,  # type: ignore[arg-type]
        tree_key=tree,
        units=(PROBE,),
        tree_sources=("src/*.cpp",) if kind == "exe" else (),
        include_dirs=("include",),
        envelope=Envelopes(SHIPPED / "envelopes.yaml").get("gcc"),
        compile_seconds=60,
    )
    layout.cell(spec.key).mkdir(parents=True, exist_ok=True)
    return build(spec, layout)


BASE = {
    "include/lib.hpp": "int answer();\n",
    "src/lib.cpp": '#include "lib.hpp"\nint answer() { return 42; }\n',
}


def test_reused_only_when_what_was_read_is_the_same(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "out")
    make_tree(layout, "a", BASE)
    make_tree(layout, "src_only", {**BASE, "src/lib.cpp": "int answer() { return 41; }\n"})
    make_tree(layout, "header", {**BASE, "include/lib.hpp": "long answer();\n"})
    make_tree(layout, "new_file", {**BASE, "include/extra.hpp": "\n"})
    first = _build(layout, "a")
    assert first.status == "ok" and first.reused_from == ""
    calls = len(layout.compiler_log.read_text().splitlines())

    again = _build(layout, "src_only")  # the probe never reads src/
    assert again.reused_from == first.key and again.status == "ok"
    assert again.tree_root == str(layout.tree("src_only"))
    assert str(layout.tree("a")) not in json.dumps([s.argv for s in again.steps])
    assert len(layout.compiler_log.read_text().splitlines()) == calls

    assert _build(layout, "header").reused_from == ""  # a file it read changed
    assert _build(layout, "new_file").reused_from == ""  # a new file could shadow an include


def test_an_executable_is_reused_with_its_binary(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "out")
    make_tree(layout, "a", BASE)
    first = _build(layout, "a", "exe")
    make_tree(layout, "same", BASE)
    again = _build(layout, "same", "exe")
    assert again.reused_from == first.key
    assert again.binary and Path(again.binary).is_file() and again.binary != first.binary
    make_tree(
        layout, "src", {**BASE, "src/lib.cpp": '#include "lib.hpp"\nint answer() { return 7; }\n'}
    )
    assert _build(layout, "src", "exe").reused_from == ""  # the library source was read


def test_depfile_parsing_handles_continuations_and_spaces() -> None:
    text = "probe.o: probe.cpp /t/include/lib.hpp \\\n /t/my\\ dir/x.hpp\nlib.hpp:\n"
    assert parse_depfile(text) == ["probe.cpp", "/t/include/lib.hpp", "/t/my dir/x.hpp"]


def _reused(out: Path, kind: str | None = None) -> int:
    results = [json.loads(p.read_text()) for p in (out / "cells").glob("*/*/result.json")]
    return sum(1 for r in results if r.get("reused_from") and kind in (None, r["kind"]))


def _verdicts(grade: Grade) -> dict[str, object]:
    # Evidence paths name other cells when reused; everything else must be the same.
    return {k: {**v, "evidence": None} for k, v in grade.rows.items()}


def test_patches_touching_only_sources_share_header_probes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    patch = (SHIPPED / "token_handle/patches/broken_build.diff").read_text()
    batch = tmp_path / "batch"
    (batch / "token_handle").mkdir(parents=True)
    # Two candidates that edit only src/: their must-fail probes read only headers.
    (batch / "token_handle/one.diff").write_text(patch)
    drop_const = "+std::string TokenHandle::describe() {"
    (batch / "token_handle/two.diff").write_text(patch.replace(drop_const, drop_const + " "))
    args = (f"patches={batch}", "case=token_handle", "report_only=1")
    shared = run_grade(tmp_path / "shared", *args)
    assert shared.returncode == 0, shared.output
    assert _reused(shared.out, "syntax") == 16  # 4 must-fail units and 4 twins, each candidate
    assert _reused(shared.out, "object") == 4  # the 2 must_build units' objects, each candidate

    monkeypatch.setenv("CXXGATE_REUSE", "0")
    plain = run_grade(tmp_path / "plain", *args)
    assert _reused(plain.out) == 0
    assert _verdicts(plain) == _verdicts(shared)
