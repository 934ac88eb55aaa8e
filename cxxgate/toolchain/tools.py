"""The tools a cell runs besides the compiler (ar, nm, c++filt, abidiff, objcopy): where
they are and who they are. Their identity enters cell keys (cxxgate/toolchain/cellspec.py)."""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path

from cxxgate.store import codehash
from cxxgate.toolchain import toolquery
from cxxgate.toolchain.toolquery import COMPILER_ENV

# The tools each kind runs besides the compiler: their identity enters the cell key.
_TOOLS: dict[str, tuple[str, ...]] = {
    "archive": ("ar", "nm"),
    "shared": ("c++filt",),
    "consumer": (),
    "abidiff": ("abidiff",),
    "cmake": ("cmake", "ninja"),
    "ctest": ("ctest",),
}


@cache
def tool_path(name: str) -> str | None:
    found = shutil.which(name, path=COMPILER_ENV["PATH"])
    return str(Path(found).resolve()) if found else None


@cache
def tool_identities(kind: str) -> dict[str, str]:
    ids: dict[str, str] = {}
    for name in _TOOLS.get(kind, ()):
        path = tool_path(name)
        if path is None:
            ids[name] = "not installed"
            continue
        text = toolquery.version(path)
        ids[name] = f"{path} {codehash.of_text(text)[:16]}"
    if kind == "shared":
        from elftools import __version__ as pyelftools_version

        ids["pyelftools"] = str(pyelftools_version)
    return ids
