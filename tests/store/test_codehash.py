"""Project cells are keyed by the code that can shape them (cxxgate/store/codehash.py
`of_closure`): a build by the modules its `import` statements reach from cells/cmake.py,
a suite run by those from cells/ctest.py."""

from __future__ import annotations

from cxxgate.store.codehash import PACKAGE, closure_files


def _closure(name: str) -> set[str]:
    return {p.relative_to(PACKAGE).as_posix() for p in closure_files(name)}


def test_a_build_is_keyed_by_its_code_and_not_by_the_suites() -> None:
    build, suite = _closure("cells.cmake"), _closure("cells.ctest")
    # What a build runs and copies: its tree, test folders, the sandbox, the compile cache.
    assert {"cells/cmake.py", "cells/testfolders.py", "cells/testhelpers.py"} <= build
    assert {"toolchain/toolcall.py", "toolchain/ccache.py", "host/sandbox.py"} <= build
    assert {"intake/tree.py", "toolchain/cellspec.py"} <= build
    # How a suite is run and read moves no build's key (minutes each on a real project).
    assert not build & {"cells/ctest.py", "cells/loads.py", "cells/verified.py", "runs/run.py"}
    assert {"cells/ctest.py", "cells/crossed.py", "cells/loads.py", "cells/verified.py"} <= suite
    assert {"cells/testframeworks.py", "runs/run.py", "host/sandbox.py"} <= suite
    # Gates decide from the cells' results; their code is keyed where they classify.
    assert not any(p.startswith("gates/") for p in build | suite)
