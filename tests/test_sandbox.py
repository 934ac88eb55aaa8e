"""The compiler sees its tree and its cell folder, not the case library's oracles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SHIPPED

from cxxgate import sandbox
from cxxgate.cell import CellSpec, Unit, build
from cxxgate.envelope import Envelopes
from cxxgate.layout import Layout

pytestmark = pytest.mark.skipif(not sandbox.available(), reason="bubblewrap cannot run here")


def _cell(tmp_path: Path, text: str) -> tuple[str, str]:
    layout = Layout(tmp_path / "out")
    (layout.tree("t") / "include").mkdir(parents=True)
    (layout.tree("t") / "include/lib.hpp").write_text("inline int answer() { return 42; }\n")
    layout.tree_stamp("t").write_text(json.dumps({"applied": True}))
    spec = CellSpec(
        kind="syntax", tree_key="t", units=(Unit("probe.cpp", text),), tree_sources=(),
        include_dirs=("include",), envelope=Envelopes(SHIPPED / "envelopes.yaml").get("gcc"),
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
