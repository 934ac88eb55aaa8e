"""history.sqlite3, `doit compare` and `doit prune` on real grades of two small cases."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import SHIPPED, binary_runs, case_library, compiler_calls, run_doit, run_grade

from cxxgate.store import prune


def test_compare_lists_flips_within_an_identity_and_prune_keeps_recent_work(
    tmp_path: Path,
) -> None:
    library = case_library(tmp_path / "cases", "discarded", "bounded_index")
    out = tmp_path / "out"
    night = tmp_path / "night" / "discarded"
    night.mkdir(parents=True)
    candidate = night / "model_a.diff"
    patches = SHIPPED / "discarded/patches"

    # Night 1: the model's candidate is the good patch; night 2 it widens the API.
    shutil.copy(patches / "good_to_chars.diff", candidate)
    first = run_grade(out, "case=discarded", f"patches={night.parent}", library=library)
    assert first.returncode == 0, first.output
    assert "the first of its identity" in first.output
    shutil.copy(patches / "accepts_double.diff", candidate)
    second = run_grade(
        out, "case=discarded", f"patches={night.parent}", "report_only=1", library=library
    )
    assert second.returncode == 0, second.output
    assert "1 row(s) flipped since #1" in second.output
    compare = run_doit(out, "compare", library=library)
    assert compare.returncode == 0, compare.output
    assert (
        "discarded/model_a: accept (accept) [negcomp=accept] -> reject (surface_regression) "
        "[negcomp=surface_regression] (patch changed)" in compare.output
    )
    with sqlite3.connect(out / "history.sqlite3") as db:
        exits = db.execute("select exit, counts from grades order by id").fetchall()
    assert [e for e, _ in exits] == [0, 0]
    assert '"surface_regression": 1' in exits[1][1]

    # Another selection is another identity: not compared unless asked, and the pins named.
    other = run_grade(out, "case=bounded_index", library=library)
    assert other.returncode == 0, other.output
    refused = run_doit(out, "compare", library=library)
    assert refused.returncode != 0
    assert "different identities" in refused.output
    assert "bounded_index: graded in only one of the two" in refused.output
    assert run_doit(out, "compare", "across=1", library=library).returncode == 0

    # Keep the last grade only: discarded's cells and doit's memory of them go; the kept
    # case still grades warm, with no compile and no run.
    # The store of verified test units keeps what was used since the grade before the
    # kept one (a hit refreshes an entry's time).
    calls, runs = compiler_calls(out), binary_runs(out)
    unused, used = out / "verified/aa/aa01", out / "verified/bb/bb01"
    for entry in (unused, used):
        entry.parent.mkdir(parents=True)
        entry.write_text("digest\n")
    os.utime(unused, (1000, 1000))
    pruned = run_doit(out, "prune", "keep=1", library=library)
    assert pruned.returncode == 0, pruned.output
    assert "doit forgot" in pruned.output
    assert "1 verified" in pruned.output, pruned.output
    assert not unused.exists() and used.exists()
    assert not (out / "results/discarded").exists() or not any(
        (out / "results/discarded").iterdir()
    )
    with sqlite3.connect(out / "doit.sqlite3") as db:
        tasks = [t for (t,) in db.execute("select task_id from doit")]
    assert not [t for t in tasks if "discarded/" in t]
    cells = {p.name for p in (out / "cells").glob("*/*")}
    assert all(k.split(":")[1] in cells for k in tasks if k.startswith("cell:"))
    warm = run_grade(out, "case=bounded_index", library=library)
    assert warm.returncode == 0, warm.output
    assert (compiler_calls(out), binary_runs(out)) == (calls, runs)
    with sqlite3.connect(out / "history.sqlite3") as db:
        assert db.execute("select count(*) from grades").fetchone() == (2,)
    # The pruned case grades afresh.
    again = run_grade(out, "case=discarded", library=library)
    assert again.returncode == 0, again.output
    assert compiler_calls(out) > calls


@pytest.mark.skipif(shutil.which("ccache") is None, reason="ccache is needed")
def test_project_compiles_are_trimmed_oldest_first(tmp_path: Path) -> None:
    """ccache's file storage of project compiles is trimmed to a size, the least recently
    written or used entries first (a trusted build's hit refreshes an entry)."""
    folder = tmp_path / "projects"
    (folder / "a").mkdir(parents=True)
    for name, when in (("old", 1000), ("new", 2000), ("newest", 3000)):
        (folder / "a" / name).write_bytes(os.urandom(100_000))
        os.utime(folder / "a" / name, (when, when))
    assert prune.trim(folder, "250k") == 1
    assert sorted(p.name for p in (folder / "a").iterdir()) == ["new", "newest"]
