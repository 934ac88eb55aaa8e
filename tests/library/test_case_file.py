"""Case files: schema errors name the file, the key path, and what was expected."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import SHIPPED, case_library, run_grade

from cxxgate.contract import registry
from cxxgate.contract.gate import Context
from cxxgate.gates.negcomp import GATE as NEGCOMP
from cxxgate.library.case import load_case
from cxxgate.toolchain.envelope import Envelopes
from cxxgate.util.yamlfile import InputError


@pytest.fixture
def case_dir(tmp_path: Path) -> Path:
    dest = tmp_path / "token_handle"
    shutil.copytree(SHIPPED / "token_handle", dest)
    return dest


def _edit(case_dir: Path, old: str, new: str) -> None:
    path = case_dir / "case.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _error(case_dir: Path) -> str:
    with pytest.raises(InputError) as err:
        case = load_case(case_dir, registry.gates())
        NEGCOMP.plan(Context(case, "k", Envelopes(SHIPPED / "envelopes.yaml"), "k"))
    return str(err.value)


def test_shipped_case_loads(case_dir: Path) -> None:
    case = load_case(case_dir, registry.gates())
    assert case.enabled_gates() == ["negcomp"]


def test_misspelt_key_is_an_error_not_a_disabled_gate(case_dir: Path) -> None:
    _edit(case_dir, "must_fail:", "must_fial:")
    msg = _error(case_dir)
    assert str(case_dir / "case.yaml") in msg
    assert "gates.negcomp.must_fial" in msg and "unknown key" in msg


def test_unknown_gate_name_is_an_error(case_dir: Path) -> None:
    _edit(case_dir, "  negcomp:", "  negcomps:")
    assert "gates.negcomps" in _error(case_dir)


def test_wrong_type_names_the_key_and_what_was_found(case_dir: Path) -> None:
    _edit(case_dir, "writable: [include/token_handle.hpp, src/**]", "writable: include")
    msg = _error(case_dir)
    assert re.search(r"writable: .*list", msg) and "'include'" in msg


def test_invalid_pin_regex_names_the_file_and_key(case_dir: Path) -> None:
    # A bad regex used to escape as re.error (a traceback that dropped every case).
    _edit(case_dir, '{regex: "use of deleted function .*operator="}', '{regex: "("}')
    msg = _error(case_dir)
    assert "case.yaml" in msg
    assert "gates.negcomp.must_fail[3].diagnostic.gcc" in msg
    assert "not a valid regular expression" in msg


def test_missing_unit_file_names_the_key(case_dir: Path) -> None:
    (case_dir / "probes/neg_copy.cpp").unlink()
    msg = _error(case_dir)
    assert "gates.negcomp.must_fail[0].unit" in msg and "does not exist" in msg


def test_must_fail_unit_without_marker(case_dir: Path) -> None:
    unit = case_dir / "probes/neg_copy.cpp"
    unit.write_text(unit.read_text().replace("cxxgate: reject", "reject me"))
    assert "marks exactly one line" in _error(case_dir)


def test_template_argument_missing(case_dir: Path) -> None:
    _edit(case_dir, 'from: "7"', 'fromm: "7"')
    msg = _error(case_dir)
    assert "must_fail[1].args" in msg and "'from' is undefined" in msg


def test_oracle_inside_tree_is_refused(case_dir: Path) -> None:
    shutil.copy(case_dir / "probes/pos_move.cpp", case_dir / "tree/pos_move.cpp")
    _edit(case_dir, "probes/pos_move.cpp", "tree/pos_move.cpp")
    assert "inside tree/" in _error(case_dir)


def test_expectation_for_a_gate_the_case_does_not_enable(case_dir: Path) -> None:
    _edit(case_dir, "negcomp: surface_regression}", "matrixx: surface_regression}")
    assert "expect.matrixx" in _error(case_dir)


def test_a_broken_case_file_does_not_stop_the_rest(tmp_path: Path) -> None:
    lib = case_library(tmp_path / "cases", "token_handle", "saturating")
    yaml = lib / "saturating/case.yaml"
    yaml.write_text(yaml.read_text().replace("must_build:", "must_biuld:"))
    grade = run_grade(tmp_path / "out", library=lib)
    assert grade.returncode != 0
    assert "saturating/case.yaml" in grade.output and "gates.negcomp.must_biuld" in grade.output
    assert grade.rows["token_handle/public_ctor"]["gates"]["negcomp"]["class"] == (
        "surface_regression"
    )


def test_a_broken_envelope_manifest_is_named(tmp_path: Path) -> None:
    lib = case_library(tmp_path / "cases", "saturating")
    manifest = lib / "envelopes.yaml"
    manifest.write_text(manifest.read_text().replace("toolchain: gcc", "toolchain: gcc12", 1))
    grade = run_grade(tmp_path / "out", library=lib)
    assert grade.returncode != 0
    assert "envelopes.gcc.toolchain: unknown toolchain 'gcc12'" in grade.output


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("include_dirs: [include]", "include_dirs: [../probes]", "include_dirs[0]"),
        (
            "public_headers: [include/token_handle.hpp]",
            "public_headers: [../probes/neg_copy.cpp]",
            "public_headers[0]",
        ),
        ("sources: [src/*.cpp]", "sources: ['../probes/*.cpp']", "sources[0]"),
        ("sources: [src/*.cpp]", "sources: [/etc/*.conf]", "sources[0]"),
        ("writable: [include/token_handle.hpp, src/**]", "writable: [src/**, ~/x]", "writable[1]"),
    ],
)
def test_tree_paths_stay_inside_the_tree(case_dir: Path, old: str, new: str, key: str) -> None:
    """Paths and globs that leave tree/ would hand oracles or host files to the compiler,
    and used to load and surface later as a red reference without the key."""
    _edit(case_dir, old, new)
    msg = _error(case_dir)
    assert str(case_dir / "case.yaml") in msg
    assert key in msg and "relative to the case's tree/" in msg


def test_a_symlink_in_the_base_tree_is_refused(case_dir: Path) -> None:
    (case_dir / "tree/include/host.hpp").symlink_to("/etc/hostname")
    msg = _error(case_dir)
    assert "tree/: include/host.hpp is a symlink" in msg


def test_an_expected_class_the_gate_cannot_return_is_named(case_dir: Path) -> None:
    _edit(case_dir, "negcomp: surface_regression}", "negcomp: surface_regresion}")
    msg = _error(case_dir)
    assert str(case_dir / "case.yaml") in msg
    assert "patches[1].expect.negcomp: 'surface_regresion' is not a class of gate 'negcomp'" in msg
    assert "'surface_regression'" in msg  # the allowed classes are listed


def test_an_expected_row_class_is_checked_too(case_dir: Path) -> None:
    _edit(case_dir, "class: path_violation}", "class: path_violaton}")
    assert "expect.class: 'path_violaton' is not a class" in _error(case_dir)


def test_a_list_of_expected_classes_means_one_of(case_dir: Path) -> None:
    _edit(
        case_dir,
        "negcomp: surface_regression}",
        "negcomp: [build_broken, surface_regression]}",
    )
    case = load_case(case_dir, registry.gates())
    assert case.spec.patches[1].expect.gate_classes() == {
        "negcomp": ["build_broken", "surface_regression"]
    }


def test_every_intake_class_may_be_expected() -> None:
    from typing import get_args

    from cxxgate.intake.tree import IntakeClass
    from cxxgate.results.result import INTAKE_CLASSES

    assert set(get_args(IntakeClass)) - {"applied", "harness_error"} <= INTAKE_CLASSES
