"""Removing a folder a candidate's program (or its build) filled: `rm -rf` that holds.

shutil.rmtree, which never follows a link, does the common case. It recurses once per
level: a run that nested 3000 folders in its /tmp or /work made it raise RecursionError,
so the run's task was a harness error, and so was every retry (each starts by removing
what the last one left), and `doit prune` stopped on it (ignore_errors does not cover a
RecursionError). A harness that is not root ran the program as its own user, which may
have closed any folder to itself (the top one too: it is the run's mount point). Both
cases fall back to coreutils, which walk any depth and never follow a link: `chmod -R
u+rwx` (not needed by root) and `rm -rf`.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path


def remove_tree(top: Path) -> None:
    """Delete `top` (a folder, or a file or link) and everything under it."""
    if not os.path.lexists(top):
        return
    if top.is_symlink() or not top.is_dir():
        top.unlink()
        return
    try:
        shutil.rmtree(top)
        return
    except (OSError, RecursionError):
        pass
    if os.geteuid() != 0:
        subprocess.run(["chmod", "-R", "u+rwx", "--", str(top)], capture_output=True, check=False)
    done = subprocess.run(["rm", "-rf", "--", str(top)], capture_output=True, check=False)
    if os.path.lexists(top):
        said = done.stderr.decode(errors="replace").strip()[-300:]
        raise OSError(errno.ENOTEMPTY, f"rm -rf failed: {said}", str(top))
