"""The side-by-side benchmark's batch generator (bench/): its variants of the shipped
patches change their bytes and still apply as the originals do, and the generated
header-only case's patches apply to its tree. No grade, no compile: figures belong to
the benchmark itself (python bench/side_by_side.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT

ROOT = PROJECT
sys.path.insert(0, str(ROOT / "bench"))

import benchlib  # noqa: E402
import heavycase  # noqa: E402


def applies(tree: Path, patch: bytes, work: Path) -> bool:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(tree, work)
    proc = subprocess.run(
        ["git", "apply", "--whitespace=nowarn", "-"], cwd=work, input=patch, capture_output=True
    )
    return proc.returncode == 0


def test_variants_differ_and_apply_like_the_originals(tmp_path: Path) -> None:
    varied = 0
    for case, path in benchlib.shipped_patches(ROOT / "cases"):
        text = path.read_bytes().decode("latin-1")
        variant = benchlib.vary(text, 3)
        if variant is None:
            continue
        varied += 1
        assert variant != text and "bench variant 3" in variant
        tree = ROOT / "cases" / case / "tree"
        work = tmp_path / "t"
        assert applies(tree, variant.encode("latin-1"), work) == applies(
            tree, path.read_bytes(), work
        ), path
    assert varied >= 100  # most shipped patches add a C++ line


def test_heavy_case_patches_apply(tmp_path: Path) -> None:
    case = tmp_path / heavycase.NAME
    patches = heavycase.write(case)
    assert heavycase.header_lines(case) > 2000
    for patch in patches:
        assert applies(case / "tree", patch.read_bytes(), tmp_path / "t"), patch.name


@pytest.mark.parametrize("k", [1, 2])
def test_vary_skips_continued_lines(k: int) -> None:
    diff = "--- a/x.hpp\n+++ b/x.hpp\n@@ -1 +1,2 @@\n a\n+#define M \\\n"
    assert benchlib.vary(diff, k) is None
