"""Patch intake and the path guard, on real `git apply` in a scratch build folder."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import case_library, run_grade

from cxxgate.cells import libcell
from cxxgate.intake import patchtext
from cxxgate.intake.tree import copy_tree, guard, materialise
from cxxgate.store.layout import Layout
from cxxgate.util.lines import physical_lines

WRITABLE = ["include/lib.hpp", "src/**"]
HEADER_EDIT = b"""\
diff --git a/include/lib.hpp b/include/lib.hpp
--- a/include/lib.hpp
+++ b/include/lib.hpp
@@ -1,2 +1,2 @@
 #pragma once
-int answer();
+long answer();
"""


@pytest.fixture
def base(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    (tree / "include").mkdir(parents=True)
    (tree / "src").mkdir()
    (tree / "tests").mkdir()
    (tree / "include/lib.hpp").write_text("#pragma once\nint answer();\n")
    (tree / "src/lib.cpp").write_text('#include "lib.hpp"\nint answer() { return 42; }\n')
    (tree / "tests/t.cpp").write_text("int main() {}\n")
    return tree


def _apply(base: Path, tmp_path: Path, text: bytes) -> tuple[str, str, Path]:
    patch = tmp_path / "p.diff"
    patch.write_bytes(text)
    layout = Layout(tmp_path / "out")
    stamp = materialise(base, patch, WRITABLE, "k1", layout)
    return stamp.status, stamp.detail, layout.tree("k1")


def test_clean_patch_applies_and_lists_changed_paths(base: Path, tmp_path: Path) -> None:
    status, _, tree = _apply(base, tmp_path, HEADER_EDIT)
    assert status == "applied"
    assert (tree / "include/lib.hpp").read_text() == "#pragma once\nlong answer();\n"
    assert (base / "include/lib.hpp").read_text().endswith("int answer();\n")  # base untouched


@pytest.mark.parametrize(
    ("text", "klass", "says"),
    [
        (b"Sure! Here is the fix: make answer() return long.\n", "malformed_patch", "not a"),
        (b"\xff\xfe binary junk", "malformed_patch", "not a diff"),
        (HEADER_EDIT.replace(b"a/include/lib.hpp", b"/etc/lib.hpp"), "malformed_patch", "absolute"),
        (
            HEADER_EDIT.replace(b"b/include/lib.hpp", b"b/../probes/lib.hpp"),
            "malformed_patch",
            "'..'",
        ),
        (
            b"diff --git a/src/x.bin b/src/x.bin\nnew file mode 100644\nGIT binary patch\n"
            b"literal 3\nKcmZ>Y0ssI200IC2\n\n",
            "malformed_patch",
            "binary",
        ),
        (
            b"diff --git a/src/l b/src/l\nnew file mode 120000\n--- /dev/null\n+++ b/src/l\n"
            b"@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n",
            "malformed_patch",
            "symlink",
        ),
        (HEADER_EDIT.replace(b"include/lib.hpp", b"tests/t.cpp"), "path_violation", "tests/t.cpp"),
        (
            HEADER_EDIT.replace(b"-int answer();", b"-int question();"),
            "patch_does_not_apply",
            "patch does not apply",
        ),
    ],
    ids=[
        "prose",
        "not-utf8",
        "absolute",
        "dotdot",
        "binary",
        "symlink",
        "outside-writable",
        "stale-context",
    ],
)
def test_bad_patches_are_classified_before_any_gate(
    base: Path, tmp_path: Path, text: bytes, klass: str, says: str
) -> None:
    status, detail, tree = _apply(base, tmp_path, text)
    assert (status, says in detail) == (klass, True), detail
    assert not tree.exists()


def test_context_must_match_exactly_no_fuzz(base: Path, tmp_path: Path) -> None:
    # One wrong context line in an otherwise correct hunk: GNU patch would fuzz it in.
    fuzzy = HEADER_EDIT.replace(b" #pragma once", b" #pragma  once")
    status, _, _ = _apply(base, tmp_path, fuzzy)
    assert status == "patch_does_not_apply"


def test_new_file_under_writable_glob_is_allowed(base: Path, tmp_path: Path) -> None:
    text = b"--- /dev/null\n+++ b/src/extra/new.cpp\n@@ -0,0 +1 @@\n+int extra() { return 1; }\n"
    status, _, tree = _apply(base, tmp_path, text)
    assert status == "applied"
    assert (tree / "src/extra/new.cpp").exists()


def test_empty_patch_is_the_base_tree() -> None:
    stamp = guard(b"\n", WRITABLE)
    assert stamp.applied and stamp.changed == []


# ---- what git apply really does: renames, copies, prefixes -------------------------------
# Each diff below applies with `git apply -p1` to the fixture tree; the `diff --git` line
# names writable files while the rename/copy lines (which git follows) do not.

RENAME_TEST_AWAY = b"""\
diff --git a/src/lib.cpp b/src/moved.cpp
similarity index 100%
rename from tests/t.cpp
rename to src/moved.cpp
"""
COPY_INTO_TESTS = b"""\
diff --git a/src/lib.cpp b/src/copy.cpp
similarity index 100%
copy from src/lib.cpp
copy to tests/extra.cpp
"""
RENAME_INTO_TESTS = b"""\
diff --git a/src/lib.cpp b/src/impl.cpp
similarity index 100%
rename from src/lib.cpp
rename to tests/lib.cpp
"""
RENAME_OVER_TEST = b"""\
diff --git a/src/lib.cpp b/src/next.cpp
similarity index 50%
rename from tests/t.cpp
rename to tests/t.cpp
@@ -1 +1 @@
-int main() {}
+int main() { return 0; }
"""


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (RENAME_TEST_AWAY, "tests/t.cpp"),
        (COPY_INTO_TESTS, "tests/extra.cpp"),
        (RENAME_INTO_TESTS, "tests/lib.cpp"),
        (RENAME_OVER_TEST, "tests/t.cpp"),
    ],
    ids=["rename-test-away", "copy-into-tests", "rename-into-tests", "rename-over-test"],
)
def test_rename_and_copy_lines_are_guarded_as_git_reads_them(
    base: Path, tmp_path: Path, text: bytes, named: str
) -> None:
    status, detail, tree = _apply(base, tmp_path, text)
    assert (status, named in detail) == ("path_violation", True), detail
    assert not tree.exists()


def test_unprefixed_traditional_header_is_malformed(base: Path, tmp_path: Path) -> None:
    # git apply -p1 strips `src/` and edits tests/t.cpp, which is read-only.
    text = b"""\
--- src/tests/t.cpp
+++ src/tests/t.cpp
@@ -1 +1 @@
-int main() {}
+int main() { return 0; }
"""
    status, detail, tree = _apply(base, tmp_path, text)
    assert (status, "prefix" in detail) == ("malformed_patch", True), detail
    assert not tree.exists()


def test_unprefixed_git_header_is_malformed(base: Path, tmp_path: Path) -> None:
    text = HEADER_EDIT.replace(b"a/include/lib.hpp", b"include/lib.hpp").replace(
        b"b/include/lib.hpp", b"include/lib.hpp"
    )
    status, detail, _ = _apply(base, tmp_path, text)
    assert (status, "prefix" in detail) == ("malformed_patch", True), detail


def test_a_removed_line_that_reads_like_a_header_is_hunk_content(
    base: Path, tmp_path: Path
) -> None:
    # `-- x;` replaced by `++ x;` reads `--- x;` / `+++ x;` in the diff: inside a hunk
    # that is content, not a header with unprefixed paths.
    (base / "src/lib.cpp").write_text("int f(int x) {\n-- x;\nreturn x; }\n")
    text = b"""\
diff --git a/src/lib.cpp b/src/lib.cpp
--- a/src/lib.cpp
+++ b/src/lib.cpp
@@ -1,3 +1,3 @@
 int f(int x) {
--- x;
+++ x;
 return x; }
"""
    status, detail, tree = _apply(base, tmp_path, text)
    assert status == "applied", detail
    assert (tree / "src/lib.cpp").read_text() == "int f(int x) {\n++ x;\nreturn x; }\n"


# ---- symlinks and modes, read numerically ---------------------------------------------------


def _symlink_diff(mode: bytes, path: bytes = b"src/host.hpp") -> bytes:
    return (
        b"diff --git a/"
        + path
        + b" b/"
        + path
        + b"\nnew file mode "
        + mode
        + b"\n--- /dev/null\n+++ b/"
        + path
        + b"\n@@ -0,0 +1 @@\n+/etc/hostname\n\\ No newline at end of file\n"
    )


HEADER_TO_SYMLINK = b"""\
diff --git a/include/lib.hpp b/include/lib.hpp
deleted file mode 100644
--- a/include/lib.hpp
+++ /dev/null
@@ -1,2 +0,0 @@
-#pragma once
-int answer();
""" + _symlink_diff(b"0120000", b"include/lib.hpp")


@pytest.mark.parametrize(
    "text",
    [
        _symlink_diff(b"0120000"),
        _symlink_diff(b"120755"),
        _symlink_diff(b"160000"),
        HEADER_TO_SYMLINK,
        # The mode on the index line is the file's old mode; git checks it, we refuse it.
        HEADER_EDIT.replace(b"--- a/", b"index 1111111..2222222 120000\n--- a/"),
        HEADER_EDIT.replace(b"--- a/", b"old mode 100644\nnew mode 0120000\n--- a/"),
    ],
    ids=["0120000", "120755", "gitlink", "header-to-symlink", "index-line", "mode-change"],
)
def test_link_modes_are_refused_however_spelt(base: Path, tmp_path: Path, text: bytes) -> None:
    status, detail, tree = _apply(base, tmp_path, text)
    assert status == "malformed_patch", detail
    assert "mode" in detail
    assert not tree.exists()
    assert not (base / "src/host.hpp").exists()


def test_a_link_in_the_applied_tree_is_refused_even_past_the_header_check(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The header scan is the first layer; the tree walk after applying is the second and
    # must hold on its own, for a spelling a future git reads that the scan does not.
    monkeypatch.setattr("cxxgate.intake.tree.header_problem", lambda text: "")
    monkeypatch.setattr("cxxgate.intake.tree.mode_problem", lambda mode: "")
    status, detail, tree = _apply(base, tmp_path, HEADER_TO_SYMLINK)
    assert (status, "include/lib.hpp (symlink)" in detail) == ("malformed_patch", True), detail
    assert not tree.exists()


def test_mode_only_change_applies_with_nothing_changed(base: Path, tmp_path: Path) -> None:
    text = b"diff --git a/src/lib.cpp b/src/lib.cpp\nold mode 100644\nnew mode 100755\n"
    patch = tmp_path / "p.diff"
    patch.write_bytes(text)
    stamp = materialise(base, patch, WRITABLE, "k1", Layout(tmp_path / "out"))
    # The verdict fold turns an applied stamp with no changed path into empty_patch.
    assert (stamp.status, stamp.changed) == ("applied", [])
    assert "src/lib.cpp" in stamp.detail


def test_mode_change_of_a_read_only_file_is_a_path_violation(base: Path, tmp_path: Path) -> None:
    text = b"diff --git a/tests/t.cpp b/tests/t.cpp\nold mode 100644\nnew mode 100755\n"
    status, detail, _ = _apply(base, tmp_path, text)
    assert (status, "tests/t.cpp" in detail) == ("path_violation", True), detail


def test_changed_lists_content_changes_from_the_applied_tree(base: Path, tmp_path: Path) -> None:
    text = (
        HEADER_EDIT
        + b"""\
diff --git a/src/lib.cpp b/src/renamed.cpp
similarity index 100%
rename from src/lib.cpp
rename to src/renamed.cpp
"""
    )
    patch = tmp_path / "p.diff"
    patch.write_bytes(text)
    stamp = materialise(base, patch, WRITABLE, "k1", Layout(tmp_path / "out"))
    assert stamp.status == "applied", stamp.detail
    assert stamp.changed == ["include/lib.hpp", "src/lib.cpp", "src/renamed.cpp"]


def test_a_base_tree_holding_a_link_is_never_copied(base: Path, tmp_path: Path) -> None:
    (base / "src/host.hpp").symlink_to("/etc/hostname")
    with pytest.raises(ValueError, match=r"src/host\.hpp: a symlink"):
        copy_tree(base, tmp_path / "copy")
    assert not (tmp_path / "copy").exists()


def test_consumer_folder_never_publishes_a_link(base: Path, tmp_path: Path) -> None:
    host = tmp_path / "host.txt"
    host.write_text("host secret\n")
    (base / "include/linked.hpp").symlink_to(host)
    os.symlink(tmp_path, base / "include/outside")
    assert libcell._regular_file(base, base / "include/lib.hpp")
    assert not libcell._regular_file(base, base / "include/linked.hpp")
    assert not libcell._regular_file(base, base / "include/outside/host.txt")


# ---- line endings and bytes -----------------------------------------------------------------


def test_crlf_transport_is_normalised_and_said(base: Path, tmp_path: Path) -> None:
    patch = tmp_path / "p.diff"
    patch.write_bytes(HEADER_EDIT.replace(b"\n", b"\r\n"))
    layout = Layout(tmp_path / "out")
    stamp = materialise(base, patch, WRITABLE, "k1", layout)
    assert (stamp.status, stamp.changed) == ("applied", ["include/lib.hpp"]), stamp.detail
    assert "CRLF" in stamp.detail
    assert (layout.tree("k1") / "include/lib.hpp").read_bytes() == b"#pragma once\nlong answer();\n"


def test_mixed_line_endings_go_to_git_as_they_are() -> None:
    mixed = HEADER_EDIT.replace(b"+long answer();\n", b"+long answer();\r\n")
    assert patchtext.normalise(mixed) == (mixed, "")


def test_latin1_comment_byte_is_handed_to_git(base: Path, tmp_path: Path) -> None:
    text = b"""\
diff --git a/src/lib.cpp b/src/lib.cpp
--- a/src/lib.cpp
+++ b/src/lib.cpp
@@ -1,2 +1,3 @@
 #include "lib.hpp"
+// caf\xe9: the answer
 int answer() { return 42; }
"""
    status, detail, tree = _apply(base, tmp_path, text)
    assert status == "applied", detail
    assert b"caf\xe9:" in (tree / "src/lib.cpp").read_bytes()


# ---- diagnostic-control directives ----------------------------------------------------------


def _header_adding(lines: bytes) -> bytes:
    added = b"".join(b"+" + line + b"\n" for line in lines.split(b"\n"))
    count = len(lines.split(b"\n"))
    return (
        b"diff --git a/include/lib.hpp b/include/lib.hpp\n--- a/include/lib.hpp\n"
        b"+++ b/include/lib.hpp\n@@ -1,2 +1,"
        + str(2 + count).encode()
        + b" @@\n #pragma once\n"
        + added
        + b" int answer();\n"
    )


@pytest.mark.parametrize(
    "lines",
    [
        b'#pragma GCC diagnostic ignored "-Wunused-parameter"',
        b'#pragma clang diagnostic ignored "-Wunused"',
        b"#pragma GCC system_header",
        b"#pragma system_header",
        b'_Pragma("GCC diagnostic ignored \\"-Wall\\"")',
        b"__pragma(warning(disable : 4100))",
        b"#pragma warning(disable : 4100)",
        b'%:pragma GCC diagnostic ignored "-Wall"',
        b'#   pragma   GCC diagnostic ignored "-Wall"',
        b'#pragma GCC \\\n  diagnostic ignored "-Wall"',
        b"/* hush */ # /* hush */ pragma GCC diagnostic push",
        b'# 1 "lib.hpp" 3',
        b"#define QUIET(x) _ ## Pragma(x)",
    ],
    ids=[
        "gcc-diagnostic",
        "clang-diagnostic",
        "gcc-system-header",
        "system-header",
        "_Pragma",
        "__pragma",
        "pragma-warning",
        "digraph",
        "spaces",
        "continued",
        "behind-comments",
        "linemarker",
        "pasted",
    ],
)
def test_added_diagnostic_control_is_its_own_class(
    base: Path, tmp_path: Path, lines: bytes
) -> None:
    status, detail, tree = _apply(base, tmp_path, _header_adding(lines))
    assert status == "diagnostic_control", detail
    assert "include/lib.hpp:2:" in detail
    assert not tree.exists()


def test_directives_in_comments_and_strings_do_not_count(base: Path, tmp_path: Path) -> None:
    lines = (
        b'// #pragma GCC diagnostic ignored "-Wall"\n'
        b'inline const char* hint = "#pragma GCC system_header _Pragma(";\n'
        b"inline constexpr int big = 1'000; // _Pragma(\n"
        b"/* _Pragma( */ inline int quiet() { return 0; }"
    )
    status, detail, _ = _apply(base, tmp_path, _header_adding(lines))
    assert status == "applied", detail


def test_a_directive_the_base_already_had_is_not_added(base: Path, tmp_path: Path) -> None:
    (base / "include/lib.hpp").write_text(
        '#pragma once\n#pragma GCC diagnostic ignored "-Wshadow"\nint answer();\n'
    )
    text = b"""\
diff --git a/include/lib.hpp b/include/lib.hpp
--- a/include/lib.hpp
+++ b/include/lib.hpp
@@ -1,3 +1,3 @@
 #pragma once
 #pragma GCC diagnostic ignored "-Wshadow"
-int answer();
+long answer();
"""
    status, detail, _ = _apply(base, tmp_path, text)
    assert status == "applied", detail


def test_a_case_may_allow_diagnostic_pragmas(base: Path, tmp_path: Path) -> None:
    patch = tmp_path / "p.diff"
    patch.write_bytes(_header_adding(b"#pragma GCC system_header"))
    stamp = materialise(
        base, patch, WRITABLE, "k1", Layout(tmp_path / "out"), allow_diagnostic_pragmas=True
    )
    assert (stamp.status, stamp.changed) == ("applied", ["include/lib.hpp"]), stamp.detail


@pytest.mark.slow
def test_case_policy_reaches_intake_through_the_grade(tmp_path: Path) -> None:
    # hostile_intake with the policy on: its gcc-diagnostic patch is judged by its gate.
    library = case_library(tmp_path / "cases", "hostile_intake")
    case = library / "hostile_intake"
    yaml = case / "case.yaml"
    head = yaml.read_text().split("patches:\n")[0]
    yaml.write_text(
        "allow_diagnostic_pragmas: true\n" + head + "patches:\n"
        "  - {file: patches/pragma_gcc_diagnostic.diff, expect: {verdict: accept}}\n"
    )
    grade = run_grade(tmp_path / "out", library=library)
    assert grade.returncode == 0, grade.output
    row = grade.rows["hostile_intake/pragma_gcc_diagnostic"]
    assert (row["verdict"], row["gates"]["headers"]["status"]) == ("accept", "pass")


def test_a_renamed_file_keeps_its_directives_without_adding_any(base: Path, tmp_path: Path) -> None:
    (base / "src/quiet.hpp").write_text("#pragma GCC diagnostic push\n#pragma GCC diagnostic pop\n")
    text = b"""\
diff --git a/src/quiet.hpp b/src/hush.hpp
similarity index 100%
rename from src/quiet.hpp
rename to src/hush.hpp
"""
    status, detail, _ = _apply(base, tmp_path, text)
    assert status == "applied", detail


@pytest.mark.parametrize(
    "line",
    [b"new file mode 120000 trailing", b"new file mode +100644", b"deleted file mode 0160000"],
    ids=["trailing-words", "signed", "gitlink-delete"],
)
def test_modes_are_read_as_git_reads_them(line: bytes) -> None:
    # git parses a mode with strtoul(..., 8) and ignores what follows a blank.
    problem = patchtext.header_problem(b"diff --git a/src/x b/src/x\n" + line + b"\n")
    assert problem.startswith("line 2:"), problem


def test_intake_inside_a_git_checkout_lists_every_path(base: Path, tmp_path: Path) -> None:
    # The default build folder (.grade/) lies inside the project's checkout. git run in a
    # folder of a repository lists only the paths under that folder, so the listing must
    # never find one: the pre-apply guard names both paths of the rename.
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    patch = tmp_path / "p.diff"
    patch.write_bytes(RENAME_TEST_AWAY)
    stamp = materialise(base, patch, WRITABLE, "k1", Layout(project / ".grade"))
    assert stamp.status == "path_violation", stamp.detail
    assert sorted(stamp.changed) == ["src/moved.cpp", "tests/t.cpp"]


# ---- diagnostic control from each compile cell's preprocessed output (preprocessed.py) -

_GCC = "toolchains:\n  gcc: {command: g++, family: gcc}\nenvelopes:\n  w: {toolchain: gcc, std: c++20, flags: [-Wall, -Wextra, -Werror]}\n"  # noqa: E501


def _cell(tmp_path: Path, tree: Path, key: str, probe: str = "") -> object:
    """A real syntax cell (cxxgate/cells/cell.py, g++ through toolcall) on `tree` materialised
    as tree `key`: the library sources, and a harness probe unit if given."""
    import json

    from cxxgate.cells import cell
    from cxxgate.toolchain.cellspec import CellSpec, Unit
    from cxxgate.toolchain.envelope import Envelopes

    manifest = tmp_path / "envelopes.yaml"
    manifest.write_text(_GCC)
    layout = Layout(tmp_path / "out")
    copy_tree(tree, layout.tree(key))
    layout.tree_stamp(key).write_text(json.dumps({"applied": True}))
    spec = CellSpec(
        kind="syntax",
        tree_key=key,
        units=(Unit("main.cpp", probe),) if probe else (),
        tree_sources=("src/*.cpp",),
        include_dirs=("include",),
        envelope=Envelopes(manifest).get("w"),
        compile_seconds=60,
    )
    return cell.build(spec, layout)


def _controls(
    tmp_path: Path, base: Path, source: str, header: str = "", probe: str = "", **files: str
) -> list[str]:
    """preprocessed.added for the same cell on the base tree and on a tree whose
    src/lib.cpp (include/lib.hpp, other files) the patch rewrote."""
    from cxxgate.cells import preprocessed

    tmp_path.mkdir(parents=True, exist_ok=True)
    tree = tmp_path / "patched"
    copy_tree(base, tree)
    (tree / "src/lib.cpp").write_text(source)
    if header:
        (tree / "include/lib.hpp").write_text(header)
    for name, text in files.items():
        (tree / name.replace("__", "/").replace("_dot_", ".")).write_text(text)
    before = _cell(tmp_path, base, "b" * 24, probe)
    after = _cell(tmp_path, tree, "t" * 24, probe)
    return preprocessed.added(preprocessed.records([after]), [preprocessed.records([before])])


UNUSED = "int twice(int value, int unused) { return value * 2; }\n"


@pytest.mark.parametrize(
    ("name", "code", "shows"),
    [
        # _Pragma assembled through macro arguments: no source text spells it.
        (
            "macro_args",
            '#define G(a, b) a##b\n#define C(f, x) f(x)\nC(G(_Pra, gma), "GCC diagnostic ignored '
            '\\"-Wunused-parameter\\"")\n',
            "#pragma GCC diagnostic ignored",
        ),
        ("optimize_pragma", '#pragma GCC optimize("O0")\n', "#pragma GCC optimize"),
        ("optimize_attribute", '[[gnu::optimize("O0")]] int f3() { return 0; }\n', "optimize"),
        # A typed line marker: system-header flag, or a rename to another file.
        ("marker_flag_3", '# 1 "src/lib.cpp" 3\n', "relabels"),
        ("line_rename", '#line 1 "elsewhere.cpp"\n', "relabels"),
    ],
)
def test_diagnostic_control_is_read_from_the_preprocessed_output(
    base: Path, tmp_path: Path, name: str, code: str, shows: str
) -> None:
    found = _controls(tmp_path, base, '#include "lib.hpp"\n' + code + UNUSED)
    assert found and shows in " ".join(found), (name, found)
    assert all(f.startswith("src/lib.cpp:") for f in found), found


def test_system_macros_in_a_patched_file_are_not_control(base: Path, tmp_path: Path) -> None:
    """g++ -E wraps every expansion of a system header's macro in `# N "file" 3 4` ...
    `# N "file"`: that is the compiler's shape, not a relabelling (an honest `assert` or
    `UINT16_MAX` was `diagnostic_control` before)."""
    code = (
        "#include <cassert>\n#include <cerrno>\n#include <cstdint>\n#include <cstdio>\n"
        "#include <cstdlib>\n"
        "int check(unsigned v) {\n  assert(v != 0);\n  if (v > UINT16_MAX) return EXIT_FAILURE;\n"
        "  if (errno == ERANGE || v == unsigned(EOF)) return 2;\n"
        "  return stdout == NULL ? 3 : 0;\n}\n"
    )
    found = _controls(tmp_path, base, '#include "lib.hpp"\n' + code)
    assert found == [], found


QUIET = (
    "#define G(a, b) a##b\n#define C(f, x) f(x)\n"
    'C(G(_Pra, gma), "GCC diagnostic ignored \\"-Wunused-parameter\\"")\n'
)


def test_control_in_an_unchanged_spelling_of_a_tree_file_is_seen(
    base: Path, tmp_path: Path
) -> None:
    """Marker names are normalised (`include/./quiet.def`) and every tree file counts, not
    only changed ones: a header that re-enters itself as "./lib.hpp", a .def file."""
    found = _controls(
        tmp_path,
        base,
        '#include "lib.hpp"\n' + UNUSED,
        header='#pragma once\n#include "./quiet.def"\nint answer();\n',
        include__quiet_dot_def=QUIET,
    )
    assert any(f.startswith("include/quiet.def:") and "ignored" in f for f in found), found
    reentry = (
        "#ifndef ONCE\n#define ONCE\n#include \"./lib.hpp\"\n#elif !defined(TWICE)\n"
        f"#define TWICE\n{QUIET}int answer();\n#endif\n"
    )
    found = _controls(tmp_path / "r", base, '#include "lib.hpp"\n' + UNUSED, header=reentry)
    assert any(f.startswith("include/lib.hpp:") and "ignored" in f for f in found), found


def test_a_directive_only_a_probe_unit_gets_is_seen(base: Path, tmp_path: Path) -> None:
    """`#if __INCLUDE_LEVEL__ && !defined(LIB)`: the library source defines LIB, so only the
    harness probe's unit gets the pragma; the probe cell's own -E shows it."""
    header = f"#pragma once\n#if __INCLUDE_LEVEL__ && !defined(LIB)\n{QUIET}#endif\nint answer();\n"
    source = '#define LIB 1\n#include "lib.hpp"\nint answer() { return 42; }\n'
    assert _controls(tmp_path, base, source, header=header) == []  # the sources alone
    found = _controls(tmp_path / "p", base, source, header=header, probe='#include "lib.hpp"\n')
    assert any(f.startswith("include/lib.hpp:") and "ignored" in f for f in found), found


def test_a_removed_pop_is_control(base: Path, tmp_path: Path) -> None:
    """push/ignored kept, the pop dropped: the ignore now runs to the end of the unit."""
    (base / "src/lib.cpp").write_text(
        '#include "lib.hpp"\n#pragma GCC diagnostic push\n'
        '#pragma GCC diagnostic ignored "-Wunused-parameter"\n'
        "int answer() { return 42; }\n#pragma GCC diagnostic pop\n"
    )
    source = (base / "src/lib.cpp").read_text().replace("#pragma GCC diagnostic pop\n", "")
    found = _controls(tmp_path, base, source + UNUSED)
    assert any("pop" in f and "gone" in f for f in found), found


def test_a_typed_line_marker_is_found_in_the_text() -> None:
    """A forged include entry looks like a real one in -E output; the directive itself is
    text (no macro makes a directive), in every spelling."""
    from cxxgate.intake import pragmas

    for marker in ('# 1 "/usr/include/c++/12/utility" 1 3', '%: 7 "x.hpp"', "#line 4", "# \\\n 2"):
        source = f"int a;\n{marker}\nint b;\n".encode()
        assert pragmas.directives(source), marker


def test_system_header_via_operator_in_a_header(base: Path, tmp_path: Path) -> None:
    """`_Pragma("GCC system_header")` in a header: -E drops the pragma, and marks the
    header's following lines with the system-header flag, which is what is counted."""
    header = '#pragma once\n#define S _Pragma("GCC system_header")\nS\n' + "inline " + UNUSED
    found = _controls(tmp_path, base, '#include "lib.hpp"\n', header=header)
    assert found and all(f.startswith("include/lib.hpp:") for f in found), found
    assert "relabels" in found[0] and " 3" in found[0]


def test_benign_code_and_unchanged_directives_add_no_control(base: Path, tmp_path: Path) -> None:
    """An attribute like [[maybe_unused]], a system include, and a directive that a header
    of the base tree already held (moved to another changed file) are not control."""
    (base / "include/lib.hpp").write_text(
        "#pragma once\n#pragma GCC diagnostic push\nint answer();\n#pragma GCC diagnostic pop\n"
    )
    source = (
        '#include <utility>\n#include "lib.hpp"\n'
        "int twice([[maybe_unused]] int value) { return std::move(value); }\n"
        "#pragma GCC diagnostic push\n#pragma GCC diagnostic pop\n"
    )
    assert _controls(tmp_path, base, source, header="#pragma once\nint answer();\n") == []


# ---- literals, header names and wraps (the second intake review) ----------------------

FAKE_ENTRY = '# 1 "/usr/include/stdio.h" 1 3'


def test_a_marker_inside_a_raw_string_is_text_in_the_preprocessed_output(
    base: Path, tmp_path: Path
) -> None:
    """-E copies a raw string's text verbatim: a line in it that reads as an include entry
    moved the scan to /usr/include/stdio.h, and the typed pragma after it (no real marker
    in between) went unseen; `__has_include(<R"x(>)` hid it from the text scan as well."""
    header = (
        '#pragma once\n#if __has_include(<R"x(>)\n#endif\nint answer();\n'
        f'inline const char* note = R"(\n{FAKE_ENTRY}\n)";\n'
        '#pragma GCC diagnostic ignored "-Wunused-parameter"\n'
        f"inline {UNUSED}// )x\"\n"
    )
    found = _controls(tmp_path, base, '#include "lib.hpp"\n', header=header)
    assert any(f.startswith("include/lib.hpp:8: #pragma GCC diagnostic ign") for f in found), found
    from cxxgate.intake import pragmas

    texts = [d.text for d in pragmas.directives(header.encode())]
    assert any(t.startswith("#pragma GCC diagnostic ignored") for t in texts), texts


def test_raw_strings_are_emptied_line_for_line() -> None:
    """Only raw strings span lines in -E output; a digit separator or an ordinary string
    holding `R"(` opens none, and an unterminated one is reported, not trusted."""
    from cxxgate.cells.preprocessed import blank_raw_strings

    text = f"int a = 1'000; const char* s = \"R\\\"(\";\nauto r = u8R\"d(\n{FAKE_ENTRY}\n)d\";\n"
    blanked, open_end = blank_raw_strings(text)
    assert blanked.count("\n") == text.count("\n") and not open_end
    assert FAKE_ENTRY not in blanked and "1'000" in blanked and '"R\\"("' in blanked
    assert blank_raw_strings('x = R"(\n# 1 "a" 1\n')[1]


@pytest.mark.parametrize(
    ("name", "code"),
    [
        # g++ closes a system macro's `# N "f" 3 4` wrap with `# N+k "f"` when the
        # invocation spans lines or the expansion ends one.
        ("assert", 'void f(int lo, int hi) {\n  assert(lo <= hi &&\n         "ordered");\n}\n'),
        ("errno", "bool g(int r) {\n  return errno\n             == EDOM ||\n    r == 0;\n}\n"),
        ("offsetof", "struct R { int v; long s; };\nunsigned long o = offsetof(R,\n  s);\n"),
        # ... or enters an include right after the expansion.
        ("errno_include", 'int e[] = { errno\n#include "two.def"\n};\n'),
        # Pragma and marker text inside a raw string is text.
        ("raw", f'const char* p = R"(\n#pragma GCC diagnostic push\n{FAKE_ENTRY}\n)";\n'),
    ],
)
def test_honest_code_around_system_macros_and_raw_strings_is_not_control(
    base: Path, tmp_path: Path, name: str, code: str
) -> None:
    head = "#include <cassert>\n#include <cerrno>\n#include <cstddef>\n"
    found = _controls(tmp_path, base, head + code, src__two_dot_def=", 2\n")
    assert found == [], (name, found)


def test_header_names_and_raw_strings_in_the_source_text() -> None:
    """A header name is one token (`<R"x(>`, `</*>` open nothing); pragma text inside a raw
    string is not a directive, but a typed line marker is found even there (a mode without
    raw strings, C++03 with `#define R`, reads it as a directive)."""
    from cxxgate.intake import pragmas

    pragma = '#pragma GCC diagnostic ignored "-Wunused-parameter"\n'
    for opener in ('#include <R"x(>\n', '#if __has_include( /**/ </*>)\n#endif\n'):
        found = pragmas.directives(f"{opener}{pragma}// */ )x\"\n".encode())
        assert [d.line for d in found] == [opener.count("\n") + 1], (opener, found)
    honest = f'const char* p = R"(\n#pragma GCC diagnostic push\n{pragma})";\n'
    assert pragmas.directives(honest.encode()) == []
    legacy = f'#define R\nconst char* s = R"y(";\n{FAKE_ENTRY}\n// )y"\n'
    assert [d.line for d in pragmas.directives(legacy.encode())] == [3]
    # `$` is a letter of a name to g++: `$R"(x"` is a name and a string, no raw string
    # (red team round 26 hid `#line` and `#pragma` lines after one, and after `a$R"(`).
    for name in ("$R", "a$R", "$u8R"):
        dollar = f'#define {name}\nconst char* t = {name}"(x";\n{pragma}#line 40\n// )"\n'
        assert [d.line for d in pragmas.directives(dollar.encode())] == [3, 4], name



def test_a_lone_cr_ends_a_line_as_it_does_for_the_compilers() -> None:
    """g++ and clang end a line at a lone CR: a `#line` or `#pragma` after one is a
    directive, numbered as the compilers number it (red team round 27 hid them from a
    reading that split at `\\n` only). A form feed ends no line."""
    from cxxgate.intake import pragmas

    text = b'int a;\r#pragma GCC diagnostic ignored "-Wall"\rint b;\r\n#line 40\n\f#line 50\n'
    found = [(d.line, d.text) for d in pragmas.directives(text)]
    assert found == [(2, '#pragma GCC diagnostic ignored ""'), (4, "#line 40"), (5, "#line 50")]
    assert physical_lines("a\rb\r\nc\n\fd\x85e\n") == ["a", "b", "c", "\fd\x85e"]

REGION = (
    '#include "lib.hpp"\n#pragma GCC diagnostic push\n'
    '#pragma GCC diagnostic ignored "-Wunused-parameter"\n'
    "int answer() { return 42; }\n#pragma GCC diagnostic pop\n"
)


def test_code_added_inside_a_region_the_base_silences_is_control(
    base: Path, tmp_path: Path
) -> None:
    """The base's push/ignored/pop is allowed by count; a new line inside it gets the
    ignore without any new control line, and is seen by its text."""
    (base / "src/lib.cpp").write_text(REGION)
    assert _controls(tmp_path / "same", base, REGION) == []
    inside = REGION.replace("int answer()", UNUSED + "int answer()")
    found = _controls(tmp_path / "in", base, inside)
    assert found == [f"src/lib.cpp:4: under an ignored diagnostic: {UNUSED.strip()}"], found
    assert _controls(tmp_path / "out", base, REGION + "int other() { return 1; }\n") == []


def test_a_new_unit_must_close_the_ignore_it_opens(base: Path, tmp_path: Path) -> None:
    """A unit with no counterpart on the reference side may repeat the base's push and
    ignored (allowed by the most any unit showed) but not leave the ignore in force."""
    (base / "src/lib.cpp").write_text(REGION)
    unbalanced = REGION.replace("#pragma GCC diagnostic pop\n", "")
    found = _controls(tmp_path / "new", base, REGION, src__extra_dot_cpp=unbalanced)
    assert any("in force at the unit's end" in f for f in found), found
    assert _controls(tmp_path / "closed", base, REGION, src__extra_dot_cpp=REGION) == []
