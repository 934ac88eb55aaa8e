"""Candidate batches: `patches=` a folder or a predictions .jsonl; bad entries get rows."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from conftest import SHIPPED, run_grade

GOOD = (SHIPPED / "token_handle/patches/good_valid_reset.diff").read_text()
WIDEN = (SHIPPED / "token_handle/patches/public_ctor.diff").read_text()


def test_predictions_jsonl(tmp_path: Path) -> None:
    preds = tmp_path / "preds.jsonl"
    lines = [
        {"instance_id": "token_handle", "model_name_or_path": "org/model-a", "model_patch": GOOD},
        {"instance_id": "token_handle", "model_name_or_path": "org/model-a", "model_patch": WIDEN},
        {"instance_id": "token_handle", "model_name_or_path": "model-b", "model_patch": ""},
        {"instance_id": "no_such_case", "model_name_or_path": "model-b", "model_patch": GOOD},
        {"instance_id": "token_handle", "model_name_or_path": "model-c",
         "model_patch": "I could not find the bug, sorry."},
    ]
    preds.write_text("\n".join(json.dumps(x) for x in lines) + "\n{not json\n")
    grade = run_grade(tmp_path / "out", f"patches={preds}", "case=token_handle")
    rows = grade.rows
    assert rows["token_handle/org_model-a"]["verdict"] == "accept"
    assert rows["token_handle/org_model-a"]["model"] == "org/model-a"
    widened = rows["token_handle/org_model-a~2"]
    assert widened["gates"]["negcomp"]["class"] == "surface_regression"
    assert widened["source"].endswith("preds.jsonl:2")
    assert rows["token_handle/model-b"]["class"] == "empty_patch"
    assert rows["no_such_case/model-b"]["class"] == "unknown_case"
    assert rows["token_handle/model-c"]["class"] == "malformed_patch"
    assert rows["?/line6"]["class"] == "malformed_input"
    assert "preds.jsonl:6" in rows["?/line6"]["detail"]
    # Shipped patches are not graded in a batch; the reference state always is.
    assert "token_handle/public_ctor" not in rows
    assert rows["token_handle/reference"]["verdict"] == "accept"
    assert grade.returncode != 0
    assert "token_handle/org_model-a~2: reject (surface_regression)" in grade.output

    # The same outcome as JUnit XML, one failing test case per problem row.
    suites = {s.get("name"): s for s in ET.parse(grade.out / "junit.xml").getroot()}
    tests = {t.get("name"): t for t in suites["token_handle"].iter("testcase")}
    assert tests["org_model-a"].find("failure") is None
    failure = tests["org_model-a~2"].find("failure")
    assert failure is not None and "surface_regression" in failure.get("message", "")
    assert "negcomp=surface_regression" in (tests["org_model-a~2"].findtext("system-out") or "")
    assert tests["reference"].find("failure") is None
    assert suites["no_such_case"].get("failures") == "1"

    # report_only: the rejection no longer fails the grade, the unreadable line still does.
    report = run_grade(tmp_path / "out", f"patches={preds}", "case=token_handle",
                       "report_only=1")
    assert report.returncode != 0
    assert report.rows == rows
    assert "?/line6: malformed_input" in report.output
    assert "org_model-a~2: reject" not in report.output


def test_hostile_predictions_file(tmp_path: Path) -> None:
    """Bytes a predictions file may hold: each bad line is its own malformed_input row,
    the rest grade; candidates named like the reserved rows keep their own rows."""

    def line(model: str, patch: str) -> bytes:
        entry = {"instance_id": "token_handle", "model_name_or_path": model, "model_patch": patch}
        return json.dumps(entry, ensure_ascii=False).encode()

    # U+2028 is legal inside a JSON string; str.splitlines() would cut the line there.
    separator = GOOD.replace("bool valid()", "/* \u2028 */ bool valid()")
    lines = [
        b"\xef\xbb\xbf" + line("bom", GOOD),  # an editor's byte order mark on line 1
        line("reference", WIDEN),  # must not replace the case's reference row
        line("base", GOOD),
        line("latin1", GOOD) + b" \xe9",  # not UTF-8: line 4 only
        b'{"instance_id": "token_handle", "model_name_or_path": "lone",'
        b' "model_patch": "\\ud800"}',  # a lone surrogate: no diff can hold it
        line("sep", separator) + b"\r",  # CRLF line ends
        b"[1, 2]",
    ]
    preds = tmp_path / "preds.jsonl"
    preds.write_bytes(b"\n".join(lines) + b"\n")
    grade = run_grade(tmp_path / "out", f"patches={preds}", "case=token_handle")
    rows = grade.rows
    assert rows["token_handle/bom"]["verdict"] == "accept"
    assert rows["token_handle/reference"]["role"] == "reference"
    assert rows["token_handle/reference"]["verdict"] == "accept"
    assert rows["token_handle/reference~2"]["model"] == "reference"
    assert rows["token_handle/reference~2"]["gates"]["negcomp"]["class"] == "surface_regression"
    assert rows["token_handle/base~2"]["verdict"] == "accept"
    assert rows["token_handle/sep"]["verdict"] == "accept"
    bad = {k: v for k, v in rows.items() if v["class"] == "malformed_input"}
    assert sorted(bad) == ["?/line4", "?/line5", "?/line7"]
    assert "not UTF-8" in str(bad["?/line4"]["detail"])
    assert "lone surrogate" in str(bad["?/line5"]["detail"])
    assert "found a JSON list" in str(bad["?/line7"]["detail"])
    assert grade.returncode != 0

    # A file of nothing but unreadable lines is an input error even when report-only.
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b"\xff\xfe\n{not json\n")
    report = run_grade(tmp_path / "out", f"patches={junk}", "case=token_handle", "report_only=1")
    assert report.returncode != 0
    assert "grade ok" not in report.output
    assert {k for k, v in report.rows.items() if v["class"] == "malformed_input"} == {
        "?/line1", "?/line2"
    }
    assert "Traceback" not in report.output


def test_folder_candidates_named_like_reserved_rows(tmp_path: Path) -> None:
    batch = tmp_path / "run"
    (batch / "token_handle").mkdir(parents=True)
    (batch / "token_handle/reference.diff").write_text(WIDEN)
    (batch / "token_handle/good.diff").write_text(GOOD)
    (batch / "token_handle/good.patch").write_text(GOOD)  # same row name from two files
    grade = run_grade(tmp_path / "out", f"patches={batch}", "case=token_handle")
    rows = grade.rows
    assert rows["token_handle/reference"]["role"] == "reference"
    assert rows["token_handle/reference~2"]["gates"]["negcomp"]["class"] == "surface_regression"
    assert rows["token_handle/good"]["verdict"] == "accept"
    assert rows["token_handle/good~2"]["verdict"] == "accept"


def test_patch_folder(tmp_path: Path) -> None:
    batch = tmp_path / "run"
    (batch / "token_handle").mkdir(parents=True)
    (batch / "token_handle/alpha.diff").write_text(GOOD)
    (batch / "saturating").mkdir()
    (batch / "saturating/alpha.diff").write_text(WIDEN)  # written for another case
    (batch / "ghost").mkdir()
    (batch / "ghost/alpha.diff").write_text(GOOD)
    grade = run_grade(tmp_path / "out", f"patches={batch}", "case=token_handle,saturating")
    rows = grade.rows
    assert rows["token_handle/alpha"]["verdict"] == "accept"
    assert rows["saturating/alpha"]["class"] == "patch_does_not_apply"
    assert rows["ghost/alpha"]["class"] == "unknown_case"
    assert grade.returncode != 0

    only_good = tmp_path / "good"
    (only_good / "token_handle").mkdir(parents=True)
    (only_good / "token_handle/alpha.diff").write_text(GOOD)
    ok = run_grade(tmp_path / "out", f"patches={only_good}", "case=token_handle")
    assert ok.returncode == 0, ok.output


def test_unknown_case_selection_is_named(tmp_path: Path) -> None:
    grade = run_grade(tmp_path / "out", "case=token_handel")
    assert grade.returncode != 0
    assert "case=token_handel: no such case" in grade.output
