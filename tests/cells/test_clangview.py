"""libclang parses a tree in the view its compile had (cxxgate/toolchain/clangview.py):
under bubblewrap with ccache, the tree at /src/project and nothing of the host beyond the
sandbox's system folders; without it, the host, with `__FILE__` mapped as the compile maps
it. Real libclang on a tree laid out as a build folder's."""

from __future__ import annotations

import shutil
from pathlib import Path

import clang.cindex as ci
import pytest

from cxxgate.gates.ledger.ledger import system_dirs
from cxxgate.toolchain import ccache, clangview

PROBES = """\
#include <vector>
#include "h.hpp"
#if __has_include("/src/project/include/h.hpp")
int sees_neutral_tree;
#endif
#if __has_include("{real}/include/h.hpp")
int sees_real_tree;
#endif
#if __has_include("/etc/passwd")
int sees_host_etc;
#endif
#if __has_include("{out}/ccache/ccache.conf")
int sees_compile_cache;
#endif
#if __has_include("/proc/self/root/usr/include/stdio.h")
int sees_proc;
#endif
#if __has_include("/dev/null")
int sees_dev_null;
#endif
#if __has_include("/dev/loop0") || __has_include("/dev/stdin")
int sees_host_dev;
#endif
static_assert(sizeof(__FILE__) == sizeof("/src/project/tests/t.cpp"));
"""


def _parse(tree: Path) -> tuple[set[str], list[str]]:
    """The variables the parse declared in the tree, and its errors."""
    with clangview.parse_view(tree) as (root, flags):
        args = ["-std=c++20", "-nostdinc", "-nostdinc++", f"-I{root}/include", *flags]
        for folder in system_dirs(str(shutil.which("g++")), "c++20"):
            args += ["-isystem", folder]
        tu = ci.Index.create().parse(str(root / "tests" / "t.cpp"), args=args)
    found = {c.spelling for c in tu.cursor.get_children() if c.kind == ci.CursorKind.VAR_DECL}
    errors = [d.spelling for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    return found, errors


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    tree = out / "trees" / "k"
    (tree / "include").mkdir(parents=True)
    (tree / "tests").mkdir()
    (tree / "include" / "h.hpp").write_text("#pragma once\ninline int h() { return 1; }\n")
    text = PROBES.replace("{real}", str(tree)).replace("{out}", str(out))
    (tree / "tests" / "t.cpp").write_text(text)
    return tree


def test_the_parse_sees_what_a_sandboxed_compile_sees(tree: Path) -> None:
    """As g++ in a compile's sandbox answers the same probes (red team round 24: the
    host's /proc/self/root and /dev were shown to libclang)."""
    if ccache.view() != "neutral":
        pytest.skip("no bubblewrap or no ccache here: compiles see the host")
    found, errors = _parse(tree)
    assert errors == []
    # The compile cache is created for the view, as a compile through ccache creates it.
    assert found == {"sees_neutral_tree", "sees_compile_cache", "sees_dev_null"}


def test_without_the_sandbox_the_parse_sees_the_host(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ccache.SWITCH, "0")
    found, errors = _parse(tree)
    assert errors == []  # __FILE__ is /src/project's, as compile_argv maps it
    assert {"sees_real_tree", "sees_host_etc", "sees_proc", "sees_dev_null"} <= found
