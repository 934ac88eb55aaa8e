"""What a candidate's program leaves in its folders is removed whatever its shape
(cxxgate/util/removal.py, used by cxxgate/runs/run.py remove_work and `doit prune`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from cxxgate.util import removal

_DIR = os.O_RDONLY | os.O_DIRECTORY


def _hostile(top: Path, outside: Path, depth: int) -> None:
    """Folders `depth` deep (a program that chdirs as it goes: no path is too long), at
    each level a file, and along the way links out, a FIFO, closed folders, and the
    names the removal moves folders up to."""
    top.mkdir()
    fd = os.open(top, _DIR)
    for level in range(depth):
        os.mkdir("a", dir_fd=fd)
        (Path(f"/proc/self/fd/{fd}") / "f").write_text("x")
        if level % 500 == 0:
            os.symlink(outside, "out", dir_fd=fd)
            os.symlink(outside / "keep", "keep", dir_fd=fd)
            os.mkfifo("fifo", dir_fd=fd)
            os.mkdir(".rm0", dir_fd=fd)
            os.mkdir("shut", 0o000, dir_fd=fd)
        inner = os.open("a", _DIR, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.fchmod(fd, 0o000)
    os.close(fd)
    os.chmod(top, 0o000)  # a run's mount point is its own: it may close it too


def test_a_tree_thousands_deep_with_links_and_closed_folders_is_removed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("harness")
    modes = outside.stat().st_mode, (outside / "keep").stat().st_mode
    top = tmp_path / "work"
    _hostile(top, outside, 3000)
    if os.geteuid() == 0:  # what removing it was (a harness that is not root: PermissionError)
        with pytest.raises(RecursionError):
            shutil.rmtree(top, ignore_errors=True)
    removal.remove_tree(top)
    assert not os.path.lexists(top)
    assert sorted(p.name for p in outside.iterdir()) == ["keep"]
    assert (outside / "keep").read_text() == "harness"
    assert (outside.stat().st_mode, (outside / "keep").stat().st_mode) == modes


def test_a_file_or_nothing_is_removed_too(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    removal.remove_tree(tmp_path / "f")
    removal.remove_tree(tmp_path / "absent")
    assert list(tmp_path.iterdir()) == []
