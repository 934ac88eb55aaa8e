"""Shards (`doit grade shard=I/N`), `doit merge`, and the Dask runner: the merged grade is
the single-machine grade, byte for byte."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT, SHIPPED, Grade, case_library, run_doit, run_grade

from cxxgate.batch import merge
from cxxgate.store.layout import Layout

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
            "cxxgate.batch.dask_grade",
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


def _rows(folder: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (folder / "verdicts.jsonl").read_text().splitlines()]


def _write_rows(folder: Path, rows: list[dict[str, object]]) -> None:
    text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)
    (folder / "verdicts.jsonl").write_text(text)


def test_merge_refuses_edited_rows_edited_evidence_and_a_case_graded_twice(
    batch: tuple[Path, Path], tmp_path: Path
) -> None:
    """A shard's grade.json holds the digests of its rows and their evidence: a row edited
    from reject to accept, or a gate result rewritten, is refused naming shard, case and
    patch; a shard that repeats another shard's case (its row flipped, its digests made
    to match) is refused as a case graded by two shards."""
    library, patches = batch
    args = (f"patches={patches}", "report_only=1")
    shards = [run_grade(tmp_path / f"s{i}", f"shard={i}/2", *args, library=library) for i in (1, 2)]

    def merged(*folders: Path) -> Grade:
        out = tmp_path / f"m{len(list(tmp_path.glob('m*')))}"
        where = f"from={','.join(map(str, folders))}"
        return run_doit(out, "merge", where, "report_only=1", library=library)

    ok = merged(shards[0].out, shards[1].out)
    assert ok.returncode == 0, ok.output

    # Which shard holds a rejected row: that row is edited to accept.
    holder = next(s.out for s in shards if any(r["verdict"] == "reject" for r in _rows(s.out)))
    other = next(s.out for s in shards if s.out != holder)
    edited = tmp_path / "edited"
    shutil.copytree(holder, edited, symlinks=True)
    rows = _rows(edited)
    target = next(r for r in rows if r["verdict"] == "reject")
    target["verdict"], target["class"] = "accept", ""
    _write_rows(edited, rows)
    proc = merged(edited, other)
    assert proc.returncode != 0
    assert "verdicts.jsonl edited" in proc.output
    assert f"case {target['case']!r}, patch {target['patch']!r}" in proc.output

    # A gate result rewritten under an unchanged row.
    rewritten = tmp_path / "rewritten"
    shutil.copytree(holder, rewritten, symlinks=True)
    row = next(r for r in _rows(rewritten) if r["verdict"] == "reject")
    gate_file = next(str(e) for e in row["evidence"] if str(e).startswith("results/"))  # type: ignore[union-attr]
    (rewritten / gate_file).write_text((rewritten / gate_file).read_text().replace("fail", "pass"))
    proc = merged(rewritten, other)
    assert proc.returncode != 0 and "evidence differs" in proc.output and gate_file in proc.output

    # The other shard's case repeated in this one, flipped, with digests that match.
    repeated = tmp_path / "repeated"
    shutil.copytree(holder, repeated, symlinks=True)
    foreign = dict(_rows(other)[0])
    foreign["verdict"] = "reject" if foreign["verdict"] == "accept" else "accept"
    _write_rows(repeated, [*_rows(repeated), foreign])
    inputs = json.loads((repeated / "grade.json").read_text())
    inputs["rows"][f"{foreign['case']}/{foreign['patch']}"] = merge.digests(
        Layout(repeated), foreign
    )
    (repeated / "grade.json").write_text(json.dumps(inputs))
    proc = merged(repeated, other)
    assert proc.returncode != 0
    assert f"case {foreign['case']!r} graded by two shards" in proc.output


def test_merge_refuses_shards_of_different_batches(
    batch: tuple[Path, Path], tmp_path: Path
) -> None:
    """Shard 1/2 graded from another batch (same case, same patch name, other honest bytes)
    merged with shard 2/2 of the real one: each shard's grade.json carries the whole
    batch's manifest, and the merge refuses shards whose manifests differ, naming the
    shard and the entries that differ."""
    library, patches = batch
    other = tmp_path / "other"
    shutil.copytree(patches, other)
    swapped = SHIPPED / "discarded/patches/good_to_chars.diff"
    shutil.copy(swapped, other / "discarded/model_a.diff")
    first = run_grade(
        tmp_path / "s1", "shard=1/2", f"patches={other}", "report_only=1", library=library
    )
    second = run_grade(
        tmp_path / "s2", "shard=2/2", f"patches={patches}", "report_only=1", library=library
    )
    manifests = [
        json.loads((s.out / "grade.json").read_text())["manifest"] for s in (first, second)
    ]
    assert manifests[0]["batch"] != manifests[1]["batch"]
    assert {k: v for k, v in manifests[0].items() if k != "batch"} == {
        k: v for k, v in manifests[1].items() if k != "batch"
    }
    assert ["discarded", "model_a"] in [e[:2] for e in manifests[1]["batch"]]  # not its case
    where = f"from={first.out},{second.out}"
    proc = run_doit(tmp_path / "m", "merge", where, "report_only=1", library=library)
    assert proc.returncode != 0
    assert "shard 2/2 graded another batch than shard 1/2" in proc.output, proc.output
    assert "model_a" in proc.output
