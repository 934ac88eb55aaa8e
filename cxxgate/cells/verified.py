"""What a test unit's compile makes, remembered by what it read.

The harness compiles each test unit again (cxxgate/cells/ctest.py `_again`) to check that
the object the build linked is what the unit's command makes: a custom command may
rewrite it after the compile. A compile costs seconds (Catch2's main, 16 s) and most
trees compile the same units from the same files, so the object's digest is kept under a
key of everything that decides it: the toolchain, the command (its output left out), the
folder it runs in, and the bytes of every file its preprocessor read, as the harness's
own `-E -MD` of the unit listed them (the build's dependency files are the build's
word). Only the harness writes this store: after a compile by a system compiler driver
in the sealed view, or from the base tree's build (CellSpec.trusted), which fills the
compile cache every candidate's build reads and so is trusted as that cache is (on fmt,
the again-compiles were 290 to 450 s of each tree's suite cell). The reference's units
are compiled again all the same: whether a unit's compile makes the same bytes twice is
judged on the reference (gates/tests/testunits.py `rewritten`). A unit that read a file
the harness cannot read again (outside the tree, the build and the system) is compiled
every time.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path

from cxxgate.util import atomic

_SYSTEM = ("/usr/",)


def depfile_paths(text: str) -> list[str]:
    """The prerequisites of a make rule as GCC writes one (`-MD`): continuation lines
    joined, `\\ ` an escaped space, `$$` a dollar."""
    body = text.replace("\\\n", " ").partition(": ")[2]
    found, word, escaped = [], "", False
    for ch in body:
        if escaped:
            word += ch if ch in " #\\" else f"\\{ch}"
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch.isspace():
            if word:
                found.append(word.replace("$$", "$"))
            word = ""
        else:
            word += ch
    if word:
        found.append(word.replace("$$", "$"))
    return found


@cache
def _system_file(path: str, stamp: tuple[int, int]) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def key(
    toolchain: str, argv: list[str], cwd: str, deps: list[str], host: Callable[[str], bytes | None]
) -> str | None:
    """The store's key for a compile that read `deps` (as the compile saw them; `host`
    gives one's bytes from the host, None when the harness cannot read it again), or
    None when one of them cannot be read."""
    files = []
    for dep in sorted(set(deps)):
        seen = os.path.normpath(os.path.join(cwd, dep))
        if seen.startswith(_SYSTEM):
            try:
                st = os.stat(seen)
                files.append([seen, _system_file(seen, (st.st_mtime_ns, st.st_size))])
            except OSError:
                return None
            continue
        data = host(seen)
        if data is None:
            return None
        files.append([seen, hashlib.sha256(data).hexdigest()])
    blob = json.dumps({"toolchain": toolchain, "argv": argv, "cwd": cwd, "files": files})
    return hashlib.sha256(blob.encode()).hexdigest()


class Store:
    """key -> the sha256 of the object its compile made, one small file per key."""

    def __init__(self, root: Path) -> None:
        self.root = root / "verified"

    def get(self, key: str) -> str | None:
        entry = self.root / key[:2] / key
        try:
            digest = entry.read_text().strip() or None
            os.utime(entry)  # used now: `doit prune` keeps what the kept grades used
        except OSError:
            return None
        return digest

    def put(self, key: str, digest: str) -> None:
        (self.root / key[:2]).mkdir(parents=True, exist_ok=True)
        atomic.write_text(self.root / key[:2] / key, digest + "\n")
