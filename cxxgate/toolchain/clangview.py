"""libclang sees the tree where the compile saw it.

libclang parses in-process, on the host: the tree at its own path, the whole file system
around it. A compile under bubblewrap with ccache on (cxxgate/toolchain/ccache.py) sees
the tree at /src/project and little else. A patch that asks which it is in (`#if
__has_include("/src/project/tests/check.hpp")`, or a host file such as /etc/passwd)
showed libclang a comparison helper left alone and the compile one specialised to pass
every check (cases/witness `guarded_specialised`). So the parse is given the compile's
view through a virtual file system that holds nothing else (clang's `-ivfsoverlay`,
`fallthrough: false`): the system's folders and files as a compile's sandbox shows them
(cxxgate/host/sandbox.py `shown`, no /proc: the compile has none either), the devices
bubblewrap's /dev holds, the toolchain's declared binds, the build folder's compile cache
(ccache.shown), the tree at /src/project, and empty folders at /tmp and at the working
folder's neutral path. Without that sandbox the compile sees the host as
libclang does, with `__FILE__` mapped to /src/project (cxxgate/toolchain/toolcall.py
`compile_argv`); the parse maps it the same way.

What a compile's working folder holds (a cell's other units, its lock file) is not
shown: README, threat model."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cxxgate.host import sandbox
from cxxgate.host.sandbox import NEUTRAL_BUILD, NEUTRAL_TREE
from cxxgate.toolchain import ccache


@contextmanager
def parse_view(
    tree: Path, binds: tuple[tuple[str, str], ...] = ()
) -> Iterator[tuple[Path, list[str]]]:
    """(the tree as the parse names it, the flags that show it so): the file names
    libclang reports lie under the first. `tree` is a build folder's (`<out>/trees/<key>`)."""
    if ccache.view() != "neutral":
        yield tree, [f"-ffile-prefix-map={tree}={NEUTRAL_TREE}"]
        return
    with tempfile.TemporaryDirectory(prefix="cxxgate-clangview-") as folder:
        empty = Path(folder) / "empty"
        empty.mkdir()
        shown = [*sandbox.shown(), *((dest, Path(src)) for src, dest in binds)]
        shown += [(str(p), p) for p in ccache.shown(tree.parent.parent)]
        shown += [(NEUTRAL_TREE, tree), ("/tmp", empty), (NEUTRAL_BUILD, empty)]
        roots = [_entry(inside, real) for inside, real in shown]
        # Devices are there to be asked for; read, they are empty (`#include "/dev/zero"`
        # would read for ever in this process: the compile has a time limit).
        nothing = Path(folder) / "nothing"
        nothing.write_bytes(b"")
        roots += [_entry(device, nothing) for device in sandbox.DEVICES]
        overlay = Path(folder) / "view.json"
        overlay.write_text(
            json.dumps(
                {
                    "version": 0,
                    "case-sensitive": "true",
                    "use-external-names": False,
                    "fallthrough": False,
                    "roots": roots,
                }
            )
        )
        yield Path(NEUTRAL_TREE), ["-ivfsoverlay", str(overlay)]


def _entry(inside: str, real: Path) -> dict[str, str]:
    kind = "directory-remap" if real.is_dir() else "file"
    return {"type": kind, "name": inside, "external-contents": str(real)}
