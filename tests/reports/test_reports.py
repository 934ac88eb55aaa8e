"""The reports written beside verdicts.jsonl on every grade: report.md, report.html and
findings.sarif, read from the shared grade of the shipped library.

Each format is pinned by a golden file in tests/fixtures/reports/, compared after
normalising what varies between runs and machines (the build folder and checkout paths,
measured times and sizes, sanitizer pids and addresses). To regenerate the goldens after
an intended change, run

    CXXGATE_REGEN_GOLDENS=1 pytest tests/reports/test_reports.py

and review the diff of tests/fixtures/reports/ before committing it.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
from conftest import FIXTURES, PROJECT, Grade

from cxxgate.reports.report_html import render as render_html
from cxxgate.reports.report_md import render as render_md
from cxxgate.store.history import Flip
from cxxgate.toolchain.diagnostics import Diagnostic, in_tree
from cxxgate.verdicts.evidence import Evidence

GOLDENS = FIXTURES / "reports"
SCHEMA = FIXTURES / "sarif-schema-2.1.0.json"
REGEN = os.environ.get("CXXGATE_REGEN_GOLDENS") == "1"

# What differs between two grades of the same library: where it ran, and what was measured
# (the budget gate's samples, and the lesser classes it names beside its worst under load).
_VARYING = [
    (re.compile(r"\b(trees|cells|runs|scans)/([0-9a-f]{2}/)?[0-9a-f]{24}"), r"\1/<key>"),
    (re.compile(r"^sample \d+ .*$", re.M), "sample ..."),
    (re.compile(r" \(also: [^)]*\)"), " (also: ...)"),
    (re.compile(r"==\d+=="), "==PID=="),  # sanitizer reports
    (re.compile(r"\b0x[0-9a-f]{6,}\b"), "0xADDR"),
    (re.compile(r"\bT\d+\b(?= \(tid)"), "T0"),
    (re.compile(r"\d+(\.\d+)?(?= ?(s|ms|KiB|MiB|x)\b)"), "N"),  # times, sizes, ratios
    (re.compile(r"(?<=[=:] )\d+\.\d+|(?<==)\d+\.\d+"), "N"),
    # Which of the slope gate's native lanes (native, first, small, shapes) hits its wall
    # limit first depends on the machine's load: the slope gate's evidence is kept to its
    # class (its text is pinned by tests/test_slope*.py, not here).
    (re.compile(r'(<pre class="row-detail">)slope: [^<]*(</pre>)'), r"\1slope: ...\2"),
    (re.compile(r'(data-gate="slope">\s*<h3>[^<]*</h3>).*?(</section>)', re.S), r"\1...\2"),
    # Salted or uninitialised output; before <n>, since a sha may be all digits.
    (re.compile(r"stdout=[0-9a-f]{12}\b"), "stdout=<sha>"),
    (re.compile(r"\b\d{8,}\b"), "<n>"),  # a salted patch's checksums, the batch seed
    # A sanitizer names a tree file as its compile saw it: at the tree's own path, or at
    # the neutral one where ccache's launch shows it there (cxxgate/toolchain/ccache.py).
    (re.compile(r"<out>/trees/<key>/"), "/src/project/"),
]


def normalise(text: str, grade: Grade) -> str:
    text = text.replace(str(grade.out), "<out>").replace(str(PROJECT), "<project>")
    for pattern, repl in _VARYING:
        text = pattern.sub(repl, text)
    return text


def check_golden(name: str, text: str) -> None:
    golden = GOLDENS / name
    if REGEN:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert golden.exists(), f"no golden {golden}: run with CXXGATE_REGEN_GOLDENS=1"
    # A failure prints only the lines that moved, so a CI log's tail shows them.
    moved = list(
        difflib.unified_diff(
            golden.read_text().splitlines(), text.splitlines(), "golden", "now", n=1, lineterm=""
        )
    )
    if moved:
        pytest.fail(f"{name} moved from its golden:\n" + "\n".join(moved[:80]), pytrace=False)


def test_markdown_summary_golden(shipped: Grade) -> None:
    text = (shipped.out / "report.md").read_text()
    assert "| class | rows |" in text
    assert "<script>" not in text and "![pwned](" not in text
    assert "## Flipped" not in text  # no history given to this grade
    check_golden("report.md", normalise(text, shipped))


def test_sarif_is_valid_and_golden(shipped: Grade) -> None:
    log = json.loads((shipped.out / "findings.sarif").read_text())
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft4Validator(schema).validate(log)
    results = log["runs"][0]["results"]
    where = {
        (r["properties"]["case"], r["properties"]["patch"], r["ruleId"]): r["locations"][0][
            "physicalLocation"
        ]
        for r in results
    }
    # negcomp: a must-build unit broken by the patch's own source file.
    loc = where["token_handle", "broken_build", "negcomp/build_broken"]
    assert loc["artifactLocation"] == {"uri": "src/token_handle.cpp", "uriBaseId": "SRCROOT"}
    assert loc["region"]["startLine"] == 6
    # headers: the header that lost its include, at the line of the missing declaration.
    loc = where["inventory", "tidy_includes", "headers/missing_declaration"]
    assert loc["artifactLocation"]["uri"].startswith("include/inventory/")
    assert loc["region"]["startLine"] > 0
    assert all(
        not r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].startswith("/")
        for r in results
    )
    check_golden("findings.sarif", normalise((shipped.out / "findings.sarif").read_text(), shipped))


def test_html_report_golden(shipped: Grade) -> None:
    text = (shipped.out / "report.html").read_text()
    # One script, ours; nothing that loads from elsewhere, whatever a candidate printed.
    assert text.count("<script") == 1
    assert not re.search(r"<(img|link|iframe|object|embed|base)\b", text)
    check_golden("report.html", normalise(text, shipped))


def dump_dom(page: Path, fragment: str, profile: Path) -> str:
    """The page's DOM after its script ran, as headless chromium sees it."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not installed (.ci/run installs it)")
    proc = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={profile}",
            "--dump-dom",
            f"{page.as_uri()}#{fragment}",
        ],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_html_report_filters_by_gate_and_class_in_chromium(shipped: Grade, tmp_path: Path) -> None:
    dom = dump_dom(shipped.out / "report.html", "gate=headers&class=missing_declaration", tmp_path)
    shown = re.findall(r'<tbody class="row[^"]*" data-row="([^"]+)"[^>]*>', dom)
    visible = [
        row
        for row, tag in zip(shown, re.findall(r"<tbody[^>]*>", dom), strict=True)
        if " hidden" not in tag
    ]
    expected = [
        row
        for row, data in shipped.rows.items()
        if data["gates"].get("headers", {}).get("class") == "missing_declaration"  # type: ignore[attr-defined]
    ]
    assert expected and sorted(visible) == sorted(expected)
    assert f'<span id="shown">{len(expected)} shown</span>' in dom


def test_html_report_renders_rows_and_opens_evidence_in_chromium(
    shipped: Grade, tmp_path: Path
) -> None:
    dom = dump_dom(shipped.out / "report.html", "open=token_handle/broken_build", tmp_path)
    rows = re.findall(r'<tbody class="row[^"]*" data-row="([^"]+)"', dom)
    assert sorted(rows) == sorted(shipped.rows)
    # The script ran: it counted the rows, and opened the one named in the fragment.
    assert f'<span id="shown">{len(rows)} shown</span>' in dom
    bodies = {
        re.search(r'data-row="([^"]+)"', chunk)[1]: chunk.split("</tbody>")[0]  # type: ignore[index]
        for chunk in dom.split("<tbody")[1:]
    }
    opened = [row for row, body in bodies.items() if '<tr class="evidence">' in body]
    assert opened == ["token_handle/broken_build"]
    block = bodies["token_handle/broken_build"]
    assert "no declaration matches" in block
    assert '<ul class="findings"><li><code>src/token_handle.cpp:6:' in block
    assert dom.count('<tr class="evidence" hidden') == len(rows) - 1
    # A candidate's markup in a diagnostic stays text: the page keeps its title and table.
    assert "<title>cxxgate grade</title>" in dom
    hostile = bodies["token_handle/markup_diagnostic"]
    assert "&lt;script&gt;document.title = 'pwned'&lt;/script&gt;" in hostile


HOSTILE = "<script>alert(1)</script> | ![x](http://evil/) `tick` [link](http://x)"


def _hostile_rows() -> list[dict[str, object]]:
    return [
        {
            "case": "c",
            "patch": "p<b>",
            "role": "candidate",
            "verdict": "reject",
            "class": "build_broken",
            "detail": HOSTILE,
            "gates": {"negcomp": {"status": "fail", "class": "build_broken", "summary": HOSTILE}},
        }
    ]


def test_markdown_escapes_candidate_text_and_lists_flips(tmp_path: Path) -> None:
    rows = _hostile_rows()
    flips = [Flip("c/p<b>", "accept (accept)", "reject (build_broken)")]
    text = render_md(rows, ["negcomp"], [("c/p<b>", HOSTILE)], Evidence(tmp_path), flips)
    assert "## Flipped" in text
    assert "| c/p&lt;b&gt; | accept (accept) | reject (build\\_broken) |" in text
    for line in text.splitlines():
        if line.startswith("|"):
            assert len(re.findall(r"(?<!\\)\|", line)) == line.count(" | ") + 2, line
    assert "<script>" not in text and "![x](" not in text and "[link](" not in text
    assert "&lt;script&gt;" in text
    no_flips = render_md(rows, ["negcomp"], [], Evidence(tmp_path))
    assert "## Flipped" not in no_flips


def test_html_escapes_candidate_text(tmp_path: Path) -> None:
    text = render_html(_hostile_rows(), ["negcomp"], [], Evidence(tmp_path))
    assert "<script>alert(1)</script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert 'data-row="c/p&lt;b&gt;"' in text


@pytest.mark.parametrize(
    ("file", "line", "expected"),
    [
        ("include/token_handle.hpp", 12, True),
        ("src/token_handle.cpp", 6, True),
        ("main.cpp", 6, False),  # the probe unit: an oracle, not in the tree
        ("cxxgate_entry.cpp", 3, False),
        ("/usr/include/c++/12/bits/char_traits.h", 431, False),
        ("<command-line>", 1, False),
        ("../probes/neg_copy.cpp", 6, False),
        ("src/token_handle.cpp", 0, False),
    ],
)
def test_findings_lie_in_tree_files_only(file: str, line: int, expected: bool) -> None:
    diag = Diagnostic("error", file, line, 1, "boom")
    assert in_tree(diag, ("main.cpp", "cxxgate_entry.cpp")) is expected
