"""Removing a folder a candidate's program (or its build) filled: `rm -rf` that holds.

shutil.rmtree recurses once per level: a run that nested 3000 folders in its /tmp or
/work made it raise RecursionError, so the run's task was a harness error, and so was
every retry (each starts by removing what the last one left), and `doit prune` stopped
on it (ignore_errors does not cover a RecursionError). Here each folder met below the
top is moved up to the top (a rename within the same tree) before its parent is
removed: at most two folders are open at once, whatever the depth.

A harness that is not root ran the program as its own user, which may have closed any
folder to itself (the top one included: it is the run's mount point): each is given
back mode 0700 before it is read. Nothing is followed through a link: a link is removed,
never its target, and a mode is set on the folder a descriptor holds, not on a path a
program may have swapped.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove_tree(top: Path) -> None:
    """Delete `top` (a folder, or a file) and everything under it."""
    if not top.is_dir() or top.is_symlink():
        top.unlink(missing_ok=True)
        return
    mine = os.geteuid() != 0  # root reads and deletes whatever the modes say
    if mine:
        _own(str(top), None)
    topfd = os.open(top, _DIR_FLAGS)
    try:
        hoisted = 0
        while names := _listed(topfd):
            for name in names:
                if not _is_dir(name, topfd):
                    os.unlink(name, dir_fd=topfd)
                    continue
                if mine:
                    _own(name, topfd)
                fd = os.open(name, _DIR_FLAGS, dir_fd=topfd)
                try:
                    for child in _listed(fd):
                        if not _is_dir(child, fd):
                            os.unlink(child, dir_fd=fd)
                            continue
                        if mine:
                            _own(child, fd)  # a folder moved to another parent needs it
                        while _exists(f".rm{hoisted}", topfd):
                            hoisted += 1
                        os.rename(child, f".rm{hoisted}", src_dir_fd=fd, dst_dir_fd=topfd)
                finally:
                    os.close(fd)
                os.rmdir(name, dir_fd=topfd)
    finally:
        os.close(topfd)
    top.rmdir()


def _listed(fd: int) -> list[str]:
    with os.scandir(fd) as entries:
        return [e.name for e in entries]


def _is_dir(name: str, fd: int) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def _exists(name: str, fd: int) -> bool:
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _own(name: str, fd: int | None) -> None:
    """Mode 0700 on folder `name` (in folder `fd`), not through a link: the folder an
    O_PATH descriptor holds is changed through /proc (Linux has no lchmod)."""
    path_fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY, dir_fd=fd)
    try:
        os.chmod(f"/proc/self/fd/{path_fd}", 0o700)
    finally:
        os.close(path_fd)
