"""Patch intake and the path guard, on real `git apply` in a scratch build folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from cxxgate.layout import Layout
from cxxgate.tree import guard, materialise

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
        (b"\xff\xfe binary junk", "malformed_patch", "UTF-8"),
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
