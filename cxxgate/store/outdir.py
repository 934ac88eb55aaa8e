"""The build folder: writable, and one grade at a time.

Two doit processes on one folder would run the same cells at once (one compiling into a
folder the other is reading, both rewriting doit's database), and a read-only folder used
to surface as a sqlite traceback that never named `out=`. So before anything is planned the
folder is checked by writing to it, and an exclusive lock is taken on a file in it: a second
grade refuses at once, naming the folder and the process holding it. Refuse, not wait: a
grade can take an hour, and a command that sits silent looks hung; the message says what
to do. The lock is flock(2) on an open file, so the kernel drops it when the holder ends,
however it ends (SIGKILL included): no stale lock file to clean up.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

LOCK_NAME = "grade.lock"
_held: dict[Path, int] = {}  # out folder -> lock fd, kept open for the life of the process


def claim(out: Path) -> int:
    """Check that `out` can be written, and take its lock for the life of this process.
    Exits with one line naming `out=` when either fails."""
    if out in _held:  # dodo.py loaded twice in one process
        return _held[out]
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out, prefix=".writable."):
            pass
        fd = os.open(out / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise SystemExit(f"out={out}: the build folder is not writable: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        raise SystemExit(
            f"out={out}: the build folder is in use by another doit process ({holder}); "
            "wait for it to finish, or grade into another out="
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    _held[out] = fd
    return fd


def _holder(fd: int) -> str:
    # The holder writes its pid just after it takes the lock; in that instant it is unknown.
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return f"pid {text}" if text.isdigit() else "pid unknown"
