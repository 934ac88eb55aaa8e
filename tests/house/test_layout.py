"""The engine's packages are layered (LAYERS), and the engine (cxxgate/) never imports a
gate; gates (cxxgate/gates/, or any
installed package) are found through the `cxxgate.gates` entry points; an eval repository
needs only a two-line dodo.py and [tool.cxxgate]."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import PROJECT, SHIPPED, Grade, project_copy, run_doit, run_grade

ENGINE = PROJECT / "cxxgate"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PROJECT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Every cxxgate module and the cxxgate modules it imports, anywhere in its body
    (function-level and TYPE_CHECKING imports are arrows too)."""
    # gates/ is linked into the package (cxxgate/gates): followed like the import follows it.
    files = [Path(top, n) for top, _, names in os.walk(ENGINE, followlinks=True) for n in names]
    modules = {_module_name(p): p for p in files if p.suffix == ".py"}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    target = full if full in modules else node.module
                    if target in modules and target != name:
                        graph[name].add(target)
            elif isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names if a.name in modules)
    return graph


def test_the_engine_never_imports_a_gate() -> None:
    graph = _imports()
    engine = [m for m in graph if not m.startswith("cxxgate.gates")]
    offenders = {m: sorted(t for t in graph[m] if t.startswith("cxxgate.gates")) for m in engine}
    assert {m: t for m, t in offenders.items() if t} == {}


# The engine's packages, lowest layer first: a module imports from its own package or a
# package earlier in this list, never a later one. Gates come last: nothing imports them.
LAYERS = (
    "util",
    "store",
    "results",
    "host",
    "intake",
    "toolchain",
    "runs",
    "cells",
    "library",
    "contract",
    "api",
    "verdicts",
    "reports",
    "batch",
    "graph",
    "gates",
)


def _layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) < 3:  # cxxgate itself, or a package's __init__
        return -1 if len(parts) == 1 else LAYERS.index(parts[1])
    assert parts[1] in LAYERS, f"{module}: its package is not in LAYERS"
    return LAYERS.index(parts[1])


def test_every_engine_module_lives_in_a_layer() -> None:
    loose = [m for m in _imports() if m.count(".") == 1 and m.split(".")[1] not in LAYERS]
    assert loose == []


def test_no_import_from_a_higher_layer() -> None:
    graph = _imports()
    upward = {
        f"{m} -> {t}": (LAYERS[_layer(m)], LAYERS[_layer(t)])
        for m, targets in graph.items()
        for t in targets
        if _layer(t) > _layer(m)
    }
    assert upward == {}


def test_gates_import_the_engine_only_through_the_api() -> None:
    """A gate module (one exporting GATE) imports cxxgate.api and its own helpers; the
    helpers may use the engine directly."""
    from cxxgate.contract import registry

    graph = _imports()
    modules = {name: gate.classify.__module__ for name, gate in registry.gates().items()}
    gates = [modules[name] for name in registry.BUILTIN]
    engine = {
        g: sorted(t for t in graph[g] if not t.startswith(("cxxgate.gates", "cxxgate.api")))
        for g in gates
    }
    assert {g: t for g, t in engine.items() if t} == {}


def test_no_import_cycles() -> None:
    graph = _imports()
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            assert visit(module) is None


def test_builtin_gates_come_first_in_precedence_order() -> None:
    from cxxgate.contract import registry

    gates = registry.gates()
    # The order the `order=` integers gave before BUILTIN replaced them.
    assert list(gates) == [
        "negcomp", "tests", "consumer", "headers", "symbols", "sanitizer", "matrix", "budget",
        "census", "leak", "slope", "metamorphic", "coverage", "ledger",
    ]
    assert all(g.plan.__module__.startswith("cxxgate.gates.") for g in gates.values())
    assert tuple(gates) == registry.BUILTIN


def test_builtin_gates_are_not_entry_points() -> None:
    """Entry points are for third-party gates; a built-in gate is found by its name alone."""
    text = (PROJECT / "pyproject.toml").read_text()
    assert '[project.entry-points."cxxgate.gates"]' not in text
    assert ":GATE" not in text


# ---- an eval repository of its own -------------------------------------------------------

HEADER = """\
#pragma once
struct Meters {
  explicit Meters(double v) : value(v) {}
  double value;
};
"""
MUST_FAIL = """\
#include "meters.hpp"
int main() {
  { Meters m = 3.0; (void)m; }  // cxxgate: reject
}
"""
MUST_BUILD = """\
#include "meters.hpp"
int main() { return Meters(2.0).value == 2.0 ? 0 : 1; }
"""
IMPLICIT = """\
--- a/include/meters.hpp
+++ b/include/meters.hpp
@@ -1,5 +1,5 @@
 #pragma once
 struct Meters {
-  explicit Meters(double v) : value(v) {}
+  Meters(double v) : value(v) {}
   double value;
 };
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _doit(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """doit as an eval repository runs it: from its own folder, cxxgate importable (the
    checkout's, as if installed), no file of cxxgate's in the repository."""
    return subprocess.run(
        [sys.executable, "-m", "doit", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )


@pytest.mark.slow
def test_an_eval_repository_with_two_line_dodo(tmp_path: Path) -> None:
    repo = tmp_path / "evals"
    (repo / "toolchains").mkdir(parents=True)
    (repo / "toolchains/envelopes.yaml").write_text(
        "toolchains:\n  cxx: {command: g++, family: gcc}\n"
        "envelopes:\n  strict: {toolchain: cxx, std: c++17, flags: [-Wall, -Werror]}\n"
    )
    _write(
        repo,
        {
            "dodo.py": "from cxxgate.graph.tasks import *  # noqa: F403\n",
            "pyproject.toml": """\
                [tool.cxxgate]
                cases = "mycases"
                out = "build"
                envelopes = "toolchains/envelopes.yaml"
            """,
            "mycases/meters/tree/include/meters.hpp": HEADER,
            "mycases/meters/probes/neg_implicit.cpp": MUST_FAIL,
            "mycases/meters/probes/pos_explicit.cpp": MUST_BUILD,
            "mycases/meters/patches/implicit.diff": IMPLICIT,
            "mycases/meters/case.yaml": """\
                summary: Meters is never made from a bare double by copy-initialisation
                envelope: strict
                writable: [include/**]
                include_dirs: [include]
                gates:
                  negcomp:
                    must_build: [probes/pos_explicit.cpp]
                    must_fail: [{unit: probes/neg_implicit.cpp}]
                patches:
                  # A list is "one of".
                  - {file: patches/implicit.diff,
                     expect: {verdict: reject, negcomp: [surface_regression, build_broken]}}
            """,
        },
    )
    graded = _doit(repo, "grade")
    assert graded.returncode == 0, graded.stdout + graded.stderr
    rows = Grade(graded.returncode, "", repo / "build").rows
    assert rows["meters/reference"]["verdict"] == "accept"
    assert rows["meters/implicit"]["gates"]["negcomp"]["class"] == "surface_regression"  # type: ignore[index]
    assert rows["meters/implicit"]["expect_problems"] == []

    # A doit variable wins over [tool.cxxgate].
    elsewhere = _doit(repo, "grade", f"out={tmp_path / 'other'}")
    assert elsewhere.returncode == 0, elsewhere.stdout + elsewhere.stderr
    assert (tmp_path / "other/verdicts.jsonl").is_file()

    # A typo in [tool.cxxgate] is named, with its file, before anything is planned.
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("out =", "ouy ="))
    typo = _doit(repo, "grade")
    assert typo.returncode != 0
    assert f"{pyproject}: [tool.cxxgate]" in typo.stderr and "tool.cxxgate.ouy" in typo.stderr


# ---- a gate from another package --------------------------------------------------------

def _readme_gate() -> str:
    """The example gate of the README's "Writing a gate": what a gate author copies."""
    text = (PROJECT / "README.md").read_text()
    section = text[text.index("## Writing a gate") :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("\n```", start)] + "\n"


PLUGIN = _readme_gate()


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    """A third-party gate package, pip-installed into a folder of its own (the grade puts
    it on PYTHONPATH), so grades running beside this test never see it."""
    src = tmp_path / "plugin"
    _write(
        src,
        {
            "cxxgate_compiles_gate.py": PLUGIN,
            "pyproject.toml": """\
                [build-system]
                requires = ["setuptools>=68"]
                build-backend = "setuptools.build_meta"

                [project]
                name = "cxxgate-compiles-gate"
                version = "0.0.1"

                [project.entry-points."cxxgate.gates"]
                compiles = "cxxgate_compiles_gate:GATE"

                [tool.setuptools]
                py-modules = ["cxxgate_compiles_gate"]
            """,
        },
    )
    site = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(site), str(src)], check=True, timeout=300
    )
    yield site


@pytest.mark.slow
def test_a_gate_from_another_package_is_picked_up(tmp_path: Path, plugin: Path) -> None:
    lib = tmp_path / "cases"
    lib.mkdir()
    (lib / "envelopes.yaml").write_text((SHIPPED / "envelopes.yaml").read_text())
    _write(
        lib / "meters",
        {
            "tree/include/meters.hpp": HEADER,
            "probes/pos_explicit.cpp": MUST_BUILD,
            "patches/drop_value.diff": """\
                --- a/include/meters.hpp
                +++ b/include/meters.hpp
                @@ -1,5 +1,5 @@
                 #pragma once
                 struct Meters {
                -  explicit Meters(double v) : value(v) {}
                -  double value;
                +  explicit Meters(double v) : amount(v) {}
                +  double amount;
                 };
            """,
            "case.yaml": """\
                summary: a case that only a plugin gate checks
                writable: [include/**]
                include_dirs: [include]
                gates:
                  compiles: {units: [probes/pos_explicit.cpp]}
                patches:
                  - {file: patches/drop_value.diff,
                     expect: {verdict: reject, compiles: does_not_compile}}
            """,
        },
    )
    graded = run_doit(tmp_path / "out", "grade", library=lib, PYTHONPATH=f"{PROJECT}:{plugin}")
    assert graded.returncode == 0, graded.output
    assert graded.gate("meters/reference", "compiles")["class"] == "accept"
    assert graded.rows["meters/drop_value"]["class"] == "does_not_compile"


@pytest.mark.slow
def test_a_template_change_re_keys_only_the_gates_that_render_it(tmp_path: Path) -> None:
    """A gate's key holds its own templates (templates/<gate>/), not every template: an edit
    to the headers gate's probe leaves saturating's negcomp and matrix results standing."""
    project = project_copy(tmp_path)
    out = tmp_path / "out"
    assert run_grade(out, "case=saturating", project=project).returncode == 0
    template = project / "cxxgate/templates/headers/twice.cpp.j2"
    template.write_text(template.read_text() + "// an edit no saturating gate renders\n")
    again = run_grade(out, "-v", "2", "case=saturating", project=project)  # names tasks
    assert again.returncode == 0, again.output
    assert "-- negcomp:saturating/reference" in again.output
    assert ".  negcomp:saturating/" not in again.output
    assert ".  matrix:saturating/" not in again.output
