"""Result and record files are written whole or not at all.

A grade can be killed at any instant (SIGKILL, a full disk, a power cut of the CI runner),
and every later run trusts what it finds under the build folder: a half-written result.json
would be read as a harness fault at best, as a verdict at worst. So each such file is
written to a temporary name in its own folder and renamed over the old one: a reader sees
the old file or the new one. No fsync: the threat is a killed process, not a lost kernel.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode())


def write_bytes(path: Path, data: bytes) -> None:
    # Same folder, so the rename never crosses a file system; the name is private to this
    # thread (doit -n runs actions in threads) and never matches a result's name or glob.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_if_changed(path: Path, text: str) -> bool:
    """Write `text` unless the file already holds it; whether it wrote. A rendered probe or
    harness unit written again by a rebuilt cell keeps its mtime: nothing that watches
    times (ccache's "file too new" check, make-style tools) sees a change that is not one."""
    data = text.encode()
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass  # absent or unreadable: write it
    write_bytes(path, data)
    return True
