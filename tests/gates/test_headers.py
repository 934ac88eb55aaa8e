"""Gate `headers`: standalone probes over the shipped inventory case, graded by the real doit."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import Grade, case_library, in_tree_test_exit, run_grade

CASE = "inventory"
ITEM = "include/inventory/item.hpp"
STOCK = "include/inventory/stock.hpp"


@pytest.fixture(scope="module")
def graded(shipped: Grade) -> Grade:
    """The shared cold grade of the shipped library (tests/conftest.py)."""
    return shipped


def test_every_shipped_patch_lands_on_its_class(graded: Grade) -> None:
    assert graded.returncode == 0, graded.output
    expected = {
        "reference": "accept",
        "good_find": "accept",
        "tidy_includes": "missing_declaration",
        "drop_pragma_once": "other_compile_error",
    }
    for patch, klass in expected.items():
        assert graded.gate(f"{CASE}/{patch}", "headers")["class"] == klass, patch


def test_missing_declaration_although_the_driver_passes(graded: Grade, tmp_path: Path) -> None:
    """The project's driver includes <string> before the header, so it never notices."""
    tree = graded.tree(f"{CASE}/tidy_includes")
    assert in_tree_test_exit(tree, "tests/test_inventory.cpp", tmp_path) == 0
    summary = graded.gate(f"{CASE}/tidy_includes", "headers")["summary"]
    assert "#include <string>" in summary  # the compiler's own hint is kept for the reader


def test_one_record_per_header_and_lane(graded: Grade) -> None:
    row = graded.rows[f"{CASE}/tidy_includes"]
    prefix = f"{CASE}/tidy_includes headers header="
    records = [c for c in row["cells"] if c.startswith(prefix)]  # type: ignore[union-attr]
    assert sorted(records) == sorted(
        f"{CASE}/tidy_includes headers header={h} lane={lane} status=fail class=missing_declaration"
        for h in (ITEM, STOCK)
        for lane in ("standalone", "twice")
    )
    pragma = graded.rows[f"{CASE}/drop_pragma_once"]["cells"]
    row_id = f"{CASE}/drop_pragma_once headers"
    assert f"{row_id} header={ITEM} lane=standalone status=pass class=clean" in pragma  # type: ignore[operator]
    assert f"{row_id} header={ITEM} lane=twice status=fail class=other_compile_error" in pragma  # type: ignore[operator]
    assert f"{row_id} header={STOCK} lane=twice status=pass class=clean" in pragma  # type: ignore[operator]
    # The same record lands in cells.txt, which `diff -u` compares between runs.
    assert f"header={ITEM} lane=twice status=fail" in (graded.out / "cells.txt").read_text()


def test_pass_counts_every_public_header(graded: Grade) -> None:
    assert graded.gate(f"{CASE}/good_find", "headers")["summary"].startswith("2/2 checks ok")


def _edited_case(tmp_path: Path, edit: dict[str, object]) -> Path:
    library = case_library(tmp_path / "cases", CASE)
    file = library / CASE / "case.yaml"
    data = yaml.safe_load(file.read_text())
    data.update(edit)
    file.write_text(yaml.safe_dump(data, sort_keys=False))
    return library


def test_no_public_header_is_incomplete_never_clean(tmp_path: Path) -> None:
    library = _edited_case(
        tmp_path, {"public_headers": [], "gates": {"headers": {}}, "patches": []}
    )
    graded = run_grade(tmp_path / "out", f"case={CASE}", library=library)
    assert graded.returncode != 0
    ref = graded.gate(f"{CASE}/reference", "headers")
    assert (ref["status"], ref["class"]) == ("incomplete", "checked_nothing")
    # The grade names the case and the gate whose reference checked nothing.
    assert f"case {CASE}" in graded.output
    assert "gate headers" in graded.output
    assert "checked_nothing" in graded.output


def test_snippet_for_an_unknown_header_names_the_key(tmp_path: Path) -> None:
    library = _edited_case(
        tmp_path, {"gates": {"headers": {"snippets": {"include/inventory/nope.hpp": "return 0;"}}}}
    )
    graded = run_grade(tmp_path / "out", f"case={CASE}", library=library)
    assert graded.returncode != 0
    assert "gates.headers.snippets.include/inventory/nope.hpp" in graded.output
