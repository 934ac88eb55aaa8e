"""The card's top level (gates/ and templates/ beside cxxgate/) installs as one `cxxgate`:
a wheel holds them as cxxgate/gates and cxxgate/templates, and an editable install finds
them in the checkout. Each install is made in a fresh venv (system site-packages for the
dependencies) and asked from outside the checkout for a gate and a rendered template."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import PROJECT

# Run by the venv's python in an empty folder: where cxxgate, a gate and a template come
# from, and a probe rendered from the gate's template folder.
CHECK = """\
import json, cxxgate
from cxxgate.contract import probe, registry
from cxxgate.gates import headers
from cxxgate.store import codehash
text = probe.render("headers/twice.cpp.j2", header="a.hpp", include="a.hpp")
print(json.dumps({
    "package": cxxgate.__file__,
    "gate": headers.__file__,
    "templates": str(codehash.TEMPLATES.resolve()),
    "rendered": text,
    "gates": sorted(registry.gates()),
}))
"""


def _source(tmp: Path) -> Path:
    """The distribution's files, copied with the checkout's links (cxxgate/gates ->
    ../gates), so the build writes nothing into the checkout."""
    src = tmp / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("cxxgate", "gates", "templates"):
        shutil.copytree(PROJECT / name, src / name, symlinks=True, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(PROJECT / name, src / name)
    assert (src / "cxxgate" / "gates").is_symlink()
    return src


def _venv(where: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", str(where)],
        check=True, timeout=300,
    )  # fmt: skip
    return where / "bin" / "python"


def _pip(python: Path, *args: str) -> None:
    subprocess.run(
        [str(python), "-m", "pip", "-q", "--disable-pip-version-check", *args],
        check=True, timeout=600,
    )  # fmt: skip


def _ask(python: Path, cwd: Path) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [str(python), "-c", CHECK], cwd=cwd, env=env,
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    answer: dict[str, object] = json.loads(out.stdout)
    return answer


def _expect_rendered(answer: dict[str, object]) -> None:
    assert '#include "a.hpp"' in str(answer["rendered"])
    assert answer["gates"] == sorted(
        ["negcomp", "tests", "consumer", "headers", "symbols", "sanitizer", "matrix",
         "budget", "census", "leak", "slope", "metamorphic", "coverage", "ledger"]
    )  # fmt: skip


@pytest.mark.slow
def test_a_wheel_holds_gates_and_templates_inside_cxxgate(tmp_path: Path) -> None:
    src = _source(tmp_path)
    python = _venv(tmp_path / "venv")
    _pip(python, "wheel", "--no-deps", "-w", str(tmp_path / "dist"), str(src))
    (wheel,) = (tmp_path / "dist").glob("cxxgate-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"cxxgate/gates/headers.py", "cxxgate/templates/headers/twice.cpp.j2"} <= names
    assert "cxxgate/reports/report_templates/report.html.j2" in names
    assert "cxxgate/toolchain/envelopes.yaml" in names
    _pip(python, "install", "--no-deps", str(wheel))
    (tmp_path / "elsewhere").mkdir()
    answer = _ask(python, tmp_path / "elsewhere")
    site = tmp_path / "venv" / "lib"
    for key in ("package", "gate", "templates"):
        assert Path(str(answer[key])).is_relative_to(site), (key, answer[key])
    _expect_rendered(answer)


@pytest.mark.slow
def test_an_editable_install_finds_the_top_level_gates_and_templates(tmp_path: Path) -> None:
    src = _source(tmp_path)
    python = _venv(tmp_path / "venv")
    _pip(python, "install", "--no-deps", "-e", str(src))
    (tmp_path / "elsewhere").mkdir()
    answer = _ask(python, tmp_path / "elsewhere")
    assert Path(str(answer["package"])).is_relative_to(src)
    assert Path(str(answer["gate"])).resolve() == (src / "gates" / "headers.py").resolve()
    assert Path(str(answer["templates"])) == (src / "templates").resolve()
    _expect_rendered(answer)
