"""Shards (`doit grade shard=I/N`), `doit merge`, and the Dask runner: the merged grade is
the single-machine grade, byte for byte."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT, SHIPPED, Grade, case_library, run_doit, run_grade

REPORTS = ("verdicts.jsonl", "table.txt", "junit.xml", "cells.txt", "report.md", "findings.sarif")


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two cheap cases and a batch: a candidate each, and one for a case nobody has."""
    root = tmp_path_factory.mktemp("batch")
    library = case_library(root / "cases", "discarded", "hostile_intake")
    patches = root / "night"
    for case, name, source in (
        ("discarded", "model_a", "discarded/patches/accepts_double.diff"),
        ("hostile_intake", "model_b", "hostile_intake/patches/good_bounds.diff"),
        ("no_such_case", "model_c", "discarded/patches/good_to_chars.diff"),
    ):
        (patches / case).mkdir(parents=True, exist_ok=True)
        shutil.copy(SHIPPED / source, patches / case / f"{name}.diff")
    return library, patches


@pytest.fixture(scope="module")
def single(batch: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Grade:
    library, patches = batch
    out = tmp_path_factory.mktemp("single")
    return run_grade(out, f"patches={patches}", "report_only=1", library=library)


def _same_reports(a: Path, b: Path) -> None:
    for name in REPORTS:
        assert _stable(a / name) == _stable(b / name), name


def _stable(path: Path) -> str:
    """cells.txt's ccache column counts what each build folder's cache already held."""
    text = path.read_text()
    return re.sub(r" ccache=\S+", "", text) if path.name == "cells.txt" else text


def test_shards_merge_into_the_single_grade(
    batch: tuple[Path, Path], single: Grade, tmp_path: Path
) -> None:
    library, patches = batch
    assert single.returncode == 0, single.output
    shards = [
        run_grade(
            tmp_path / f"s{i}",
            f"shard={i}/2",
            f"patches={patches}",
            "report_only=1",
            library=library,
        )
        for i in (1, 2)
    ]
    cases = [{r.split("/")[0] for r in s.rows} - {"no_such_case"} for s in shards]
    assert cases[0] and cases[1] and not cases[0] & cases[1]  # by case, disjoint
    assert cases[0] | cases[1] == {"discarded", "hostile_intake"}
    folders = ",".join(str(s.out) for s in shards)
    merged = run_doit(tmp_path / "m", "merge", f"from={folders}", "report_only=1", library=library)
    assert merged.returncode == single.returncode, merged.output
    _same_reports(single.out, merged.out)
    assert "history: grade #1" in merged.output

    missing = run_doit(tmp_path / "m2", "merge", f"from={shards[0].out}", library=library)
    assert missing.returncode != 0 and "missing shard(s) 2/2" in missing.output
    twice = run_doit(
        tmp_path / "m3", "merge", f"from={shards[0].out},{shards[0].out}", library=library
    )
    assert twice.returncode != 0 and "given twice" in twice.output
    bad = run_grade(tmp_path / "bad", "shard=3/2", library=library)
    assert bad.returncode != 0 and "shard=3/2: expected I/N" in bad.output


@pytest.mark.slow
def test_a_local_dask_cluster_grades_like_one_machine(
    batch: tuple[Path, Path], single: Grade, tmp_path: Path
) -> None:
    library, patches = batch
    out = tmp_path / "dask"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cxxgate.dask_grade",
            "shards=2",
            f"project={PROJECT}",
            f"cases={library}",
            f"patches={patches}",
            "report_only=1",
            f"out={out}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
        timeout=900,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )
    assert proc.returncode == single.returncode, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "shard 1/2: exit 0" in proc.stdout and "shard 2/2: exit 0" in proc.stdout
    _same_reports(single.out, out)
