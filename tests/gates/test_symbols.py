"""Gate `symbols`: exported-symbol golden over the shipped loader cases, graded by the real doit."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import SHIPPED, Grade, case_library, run_grade

from cxxgate.cells import libcell
from cxxgate.cells.cell import build as build_cell
from cxxgate.gates import symbols
from cxxgate.store.layout import Layout
from cxxgate.toolchain.cellspec import CellSpec
from cxxgate.toolchain.elf import dynamic_exports
from cxxgate.toolchain.envelope import Envelopes

CASE = "loader"
FROM_FILE = "_ZN6loader6Loader9from_fileERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
HAS_ABIDIFF = shutil.which("abidiff") is not None


@pytest.fixture(scope="module")
def graded(shipped: Grade) -> Grade:
    """The shared cold grade of the shipped library (tests/conftest.py)."""
    return shipped


def test_every_shipped_patch_lands_on_its_class(graded: Grade) -> None:
    assert graded.returncode == 0, graded.output
    expected = {
        "reference": "accept",
        "good_null_check": "accept",
        "inline_from_file": "abi_break",
        "export_helper": "surface_growth",
        "rename_from_path": "abi_break",
    }
    for patch, klass in expected.items():
        assert graded.gate(f"{CASE}/{patch}", "symbols")["class"] == klass, patch


def test_abi_break_lists_the_mangled_name_and_the_readable_one(graded: Grade) -> None:
    summary = graded.gate(f"{CASE}/inline_from_file", "symbols")["summary"]
    assert f"no longer exported: {FROM_FILE}" in summary
    assert "checks ok; loader::Loader::from_file(" in summary


def test_rename_is_shown_as_one_pair(graded: Grade) -> None:
    summary = graded.gate(f"{CASE}/rename_from_path", "symbols")["summary"]
    assert "loader::Loader::from_path(" in summary
    assert "-> loader::Loader::open_path(" in summary
    assert "renamed:" in summary
    assert "surface_growth" not in summary  # the addition belongs to the pair, not to growth


def test_surface_growth_names_the_new_export(graded: Grade) -> None:
    summary = graded.gate(f"{CASE}/export_helper", "symbols")["summary"]
    assert "new export: _ZN6loader9has_magicERKSt6vectorIhSaIhEE" in summary


def _edited_case(tmp_path: Path, case: str = CASE) -> tuple[Path, dict[str, object]]:
    library = case_library(tmp_path / "cases", case)
    return library, yaml.safe_load((library / case / "case.yaml").read_text())


def _write(library: Path, data: dict[str, object], case: str = CASE) -> None:
    (library / case / "case.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def test_allow_extra_turns_growth_into_a_note(tmp_path: Path) -> None:
    library, data = _edited_case(tmp_path)
    data["gates"]["symbols"]["allow_extra"] = True  # type: ignore[index]
    data["patches"] = [
        {"file": "patches/export_helper.diff", "expect": {"verdict": "accept"}},
    ]
    _write(library, data)
    graded = run_grade(tmp_path / "out", f"case={CASE}", library=library)
    assert graded.returncode == 0, graded.output
    result = graded.out / "results" / CASE / "export_helper" / "symbols.json"
    assert "note: new export _ZN6loader9has_magic" in result.read_text()


def test_golden_the_reference_misses_makes_the_case_broken(tmp_path: Path) -> None:
    library, _ = _edited_case(tmp_path)
    golden = library / CASE / "symbols" / "libloader.syms"
    golden.write_text(golden.read_text() + "_ZN6loader7retiredEv\n")
    graded = run_grade(tmp_path / "out", f"case={CASE}", library=library)
    assert graded.returncode != 0
    assert graded.gate(f"{CASE}/reference", "symbols")["class"] == "abi_break"
    assert graded.gate(f"{CASE}/good_null_check", "symbols")["class"] == "baseline_red"
    assert f"case {CASE} is broken for gate symbols" in graded.output


def test_version_script_that_disagrees_with_the_object_is_an_incident(tmp_path: Path) -> None:
    library, data = _edited_case(tmp_path)
    golden = library / CASE / "symbols" / "libloader.syms"
    names = [ln for ln in golden.read_text().splitlines() if ln and not ln.startswith("#")]
    golden.write_text(golden.read_text() + "_ZN6loader7retiredEv\n")
    script = "LOADER_1 {\n  global:\n" + "".join(f"    {n};\n" for n in names)
    script += "    _ZN6loader7retiredEv;\n  local:\n    *;\n};\n"
    (library / CASE / "symbols" / "loader.map").write_text(script)
    data["gates"]["symbols"]["version_script"] = "symbols/loader.map"  # type: ignore[index]
    _write(library, data)
    graded = run_grade(tmp_path / "out", f"case={CASE}", library=library)
    assert graded.returncode != 0
    ref = graded.gate(f"{CASE}/reference", "symbols")
    assert ref["class"] == "version_script_incident"
    assert "lists golden _ZN6loader7retiredEv" in ref["summary"]
    assert "symbols/loader.map" in ref["summary"]


@pytest.mark.skipif(not HAS_ABIDIFF, reason="abidiff (Debian abigail-tools) is not installed")
def test_abidiff_lane_sees_a_layout_change(graded: Grade) -> None:
    layout = graded.gate(f"{CASE}/header_length", "symbols")
    assert layout["class"] == "layout_change"
    assert "type size changed from 64 to 96" in layout["summary"]


def test_a_golden_derived_from_the_reference_build(tmp_path: Path) -> None:
    library, data = _edited_case(tmp_path)
    del data["gates"]["symbols"]["golden"]  # type: ignore[index, attr-defined]
    _write(library, data)
    graded = run_grade(tmp_path / "out", f"case={CASE}", library=library)
    assert graded.returncode == 0, graded.output
    assert graded.gate(f"{CASE}/inline_from_file", "symbols")["class"] == "abi_break"
    assert graded.gate(f"{CASE}/export_helper", "symbols")["class"] == "surface_growth"


def test_abidiff_lane_without_abidiff_is_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Built directly: no machine here lacks abidiff on demand, so the lookup is replaced."""
    monkeypatch.setattr(libcell, "tool_path", lambda name: None)
    envelopes = Envelopes(SHIPPED / "envelopes.yaml")
    layout = Layout(tmp_path)
    stamp = layout.tree_stamp("t" * 24)
    stamp.parent.mkdir(parents=True)
    stamp.write_text('{"applied": true}')
    spec = CellSpec(
        kind="abidiff",
        tree_key="t" * 24,
        units=(),
        tree_sources=(),
        include_dirs=(),
        envelope=envelopes.get("gcc"),
        compile_seconds=30,
        needs=("a" * 24, "b" * 24),
    )
    result = build_cell(spec, layout)
    assert result.status == "toolchain_missing"
    assert "abigail-tools" in result.detail

    check = symbols._abidiff_check(result)
    assert check.incomplete and not check.ok


def test_exports_read_like_nm_for_gnu_kinds(tmp_path: Path) -> None:
    """An IFUNC export and a unique (template static, inline function's static) export are
    listed with nm's letters: pyelftools names those ELF values STT_LOOS / STB_LOOS, and
    a reader keyed on the GNU names alone drops them from the golden comparison."""
    src = tmp_path / "a.cpp"
    src.write_text(
        "static int impl() { return 1; }\n"
        'extern "C" int (*resolve())() { return impl; }\n'
        'extern "C" int picked() __attribute__((ifunc("resolve")));\n'
        "template <class T> struct S { static int x; };\n"
        "template <class T> int S<T>::x = 0;\n"
        "int use() { return S<int>::x; }\n"
    )
    lib = tmp_path / "liba.so"
    subprocess.run(["g++", "-fPIC", "-shared", str(src), "-o", str(lib)], check=True)
    nm = subprocess.run(
        ["nm", "-D", "--defined-only", str(lib)], check=True, capture_output=True, text=True
    ).stdout
    want = {(name, letter) for _, letter, name in (line.split() for line in nm.splitlines())}
    got = {(e.name, e.kind) for e in dynamic_exports(lib)}
    assert ("picked", "i") in got and ("_ZN1SIiE1xE", "u") in got
    assert got == want
