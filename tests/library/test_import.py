"""`doit import`: SWE-bench and Multi-SWE-bench records -> repository cases, and
predictions matched to them. The repository is the shipped case's bundle
(cases/duration/repo.bundle, rebuilt by cases/duration/make_bundle.py)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import SHIPPED, run_doit
from jinja2 import StrictUndefined
from jinja2.sandbox import SandboxedEnvironment

from cxxgate.contract import registry
from cxxgate.library import prompt as cxxprompt
from cxxgate.library import swe_import
from cxxgate.library.case import load_case
from cxxgate.library.rows import batch_rows
from cxxgate.store.layout import Layout

DURATION = SHIPPED / "duration"
BUNDLE = DURATION / "repo.bundle"
BASE = "b8022ccf36276003eb167342b12ae6a68d3bfe10"
GOLD = (DURATION / "gold.diff").read_text()
TESTS = (DURATION / "test.diff").read_text()
F2P = ["Parse.Compound", "Format.RoundTrip"]
P2P = ["Parse.Single", "Parse.Rejects", "Parse.Overflow", "Parse.CompoundOrder", "Format.Basic"]
ISSUE = 'parse_seconds("1h30m") returns nullopt, though format_seconds(5400) wrote it.\n'


def swe_record(**changes: object) -> dict[str, object]:
    """SWE-bench's spelling: the two lists as JSON text, as in princeton-nlp/SWE-bench."""
    record: dict[str, object] = {
        "instance_id": "cxxgate__duration-1",
        "repo": "cxxgate/duration",
        "base_commit": BASE,
        "patch": GOLD,
        "test_patch": TESTS,
        "problem_statement": ISSUE,
        "hints_text": "",
        "FAIL_TO_PASS": json.dumps(F2P),
        "PASS_TO_PASS": json.dumps(P2P),
    }
    record.update(changes)
    return record


def mswe_record(**changes: object) -> dict[str, object]:
    """Multi-SWE-bench's spelling: no instance id, base.sha, fix_patch, tests keyed by name."""
    status = {"run": "NONE", "test": "FAIL", "fix": "PASS"}
    record: dict[str, object] = {
        "org": "cxxgate",
        "repo": "duration",
        "number": 2,
        "state": "closed",
        "title": "parse compound durations",
        "body": "Reads 1h30m.",
        "base": {"label": "cxxgate:main", "ref": "main", "sha": BASE},
        "resolved_issues": [{"number": 1, "title": "1h30m does not parse", "body": ISSUE}],
        "fix_patch": GOLD,
        "test_patch": TESTS,
        "f2p_tests": {"Parse.Compound": status},
        "s2p_tests": {},
        "n2p_tests": {"Format.RoundTrip": status},
        "p2p_tests": {t: {"run": "PASS", "test": "PASS", "fix": "PASS"} for t in P2P},
    }
    record.update(changes)
    return record


def write_jsonl(path: Path, lines: list[object]) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def render(template: str) -> str:
    """As cxxgate/library/prompt.py renders a case's prompt.md.j2."""
    env = SandboxedEnvironment(
        undefined=StrictUndefined, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True
    )
    return env.from_string(template).render({"id": "x"})


# ---- records, one field at a time (pure functions) ----------------------------------


def test_both_spellings_read_the_same_instance() -> None:
    swe = swe_import.parse_record(swe_record())
    mswe = swe_import.parse_record(mswe_record())
    assert swe.instance_id == "cxxgate__duration-1"
    assert mswe.instance_id == "cxxgate__duration-2"  # made from org, repo, number
    for inst in (swe, mswe):
        assert inst.base_commit == BASE
        assert inst.gold == GOLD and inst.test_patch == TESTS
        assert inst.fail_to_pass == F2P and inst.pass_to_pass == P2P
    assert swe.problem == ISSUE
    assert mswe.problem.startswith("1h30m does not parse\n\n" + ISSUE.strip())


@pytest.mark.parametrize(
    "lists",
    [
        {"FAIL_TO_PASS": json.dumps(F2P)},  # SWE-bench: JSON text
        {"FAIL_TO_PASS": F2P},  # derived sets: a list
    ],
)
def test_fail_to_pass_as_json_text_or_list(lists: dict[str, object]) -> None:
    assert swe_import.parse_record(swe_record(**lists)).fail_to_pass == F2P


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"test_patch": None}, "test_patch"),
        ({"patch": 7}, "patch"),
        ({"FAIL_TO_PASS": "[not json"}, "FAIL_TO_PASS"),
        ({"FAIL_TO_PASS": "[]"}, "FAIL_TO_PASS"),
        ({"PASS_TO_PASS": json.dumps(["Parse.Compound"])}, "PASS_TO_PASS"),
        ({"base_commit": "main"}, "base_commit"),
        ({"instance_id": None, "problem_statement": None}, "instance_id (or org, repo, number)"),
    ],
)
def test_a_bad_field_is_named(changes: dict[str, object], field: str) -> None:
    with pytest.raises(swe_import.RecordError) as err:
        swe_import.parse_record(swe_record(**changes))
    assert err.value.field == field


def test_statement_survives_jinja_escaping() -> None:
    statement = "a {{ b }} c {% raw %} d {% endraw %} e {# f #} {{{ g\n  indented {%- x -%}\n"
    rendered = render(swe_import.template_text(statement))
    assert statement.rstrip("\n") in rendered


def _withheld(statement: str, *base: str) -> tuple[str, list[int]]:
    """withhold_quotes with import's check of the duration record, `base` the base tree's
    lines."""
    check = swe_import._prompt_check(swe_import.parse_record(swe_record()))
    shown = cxxprompt.Visible("\n".join(swe_import._norm(x) for x in base))
    return swe_import.withhold_quotes(statement, lambda text: bool(check(text, shown)))


def test_a_line_quoting_the_hidden_tests_is_withheld() -> None:
    quoted = '    EXPECT_EQ(parse_seconds("2m5s"), 125);'  # a line of test.diff
    visible = '    EXPECT_EQ(parse_seconds("90s"), 90);'  # in the base tree too
    statement = f"It fails:\n{quoted}\nand works for\n{visible}\n"
    text, withheld = _withheld(statement, "TEST(Parse, Single) {", visible)
    assert withheld == [2]
    assert quoted not in text and visible in text and swe_import.WITHHELD in text


def test_a_quote_across_two_lines_is_withheld() -> None:
    statement = 'see EXPECT_EQ(parse_seconds("1d2h3m4s"),\n   93784); there\nok\n'
    text, withheld = _withheld(statement)
    assert withheld == [1, 2] and text.endswith("ok\n")


def test_predictions_find_cases_by_the_import_rule(tmp_path: Path) -> None:
    """An instance id with characters a folder cannot hold, and Multi-SWE-bench's patch
    file shape ({org, repo, number, fix_patch}), both land on the imported case."""
    cases = {"cxxgate_duration_pr-3": None, "cxxgate__duration-2": None}
    preds = write_jsonl(
        tmp_path / "preds.jsonl",
        [
            {
                "instance_id": "cxxgate/duration:pr-3",
                "model_name_or_path": "m",
                "model_patch": GOLD,
            },
            {"org": "cxxgate", "repo": "duration", "number": 2, "fix_patch": GOLD},
            {"instance_id": "nope", "model_name_or_path": "m", "model_patch": GOLD},
        ],
    )
    rows, orphans = batch_rows(preds, cases, Layout(tmp_path / "out"))  # type: ignore[arg-type]
    assert [(r.case, r.name) for r in rows] == [
        ("cxxgate_duration_pr-3", "m"),
        ("cxxgate__duration-2", "model"),
    ]
    assert [(o.case, o.klass) for o in orphans] == [("nope", "unknown_case")]
    assert swe_import.case_id("cxxgate/duration:pr-3") == "cxxgate_duration_pr-3"


# ---- `doit import` on the real repository -------------------------------------------


def test_import_keeps_going_past_bad_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both spellings import; each bad record is named by line, instance and field, the
    rest still import, and the command fails."""
    # A context line the base does not hold: git apply refuses it.
    broken_gold = GOLD.replace("\n     std::size_t i = 0;\n", "\n     std::size_t k = 0;\n", 1)
    assert broken_gold != GOLD
    instances = write_jsonl(
        tmp_path / "instances.jsonl",
        [
            swe_record(),
            swe_record(instance_id="cxxgate__duration-5", base_commit="1" * 40),
            mswe_record(),
            swe_record(instance_id="cxxgate__duration-6", patch=broken_gold),
            swe_record(instance_id="cxxgate__duration-7", test_patch=GOLD, patch=GOLD),
            "{not json",
            swe_record(instance_id="org/duration:pr-8", PASS_TO_PASS=P2P, FAIL_TO_PASS=F2P),
        ],
    )
    library = tmp_path / "cases"
    done = run_doit(
        tmp_path / "out",
        "import",
        f"instances={instances}",
        f"repo={BUNDLE}",
        library=library,
    )
    assert done.returncode != 0, done.output
    out = done.output
    assert f"{instances}:2: instance cxxgate__duration-5: not imported: base_commit: " in out
    assert "is not a commit of" in out
    assert f"{instances}:4: instance cxxgate__duration-6: not imported: patch: " in out
    assert "does not apply" in out
    assert f"{instances}:5: instance cxxgate__duration-7: not imported: patch: " in out
    assert "changes files the test patch owns" in out
    assert f"{instances}:6: instance ?: not imported: (line): not a JSON object" in out
    assert "imported 3, failed 4" in out
    assert sorted(p.name for p in library.iterdir()) == [
        "cxxgate__duration-1",
        "cxxgate__duration-2",
        "org_duration_pr-8",
    ]
    case = library / "cxxgate__duration-2"
    spec = yaml.safe_load((case / "case.yaml").read_text())
    assert spec["repo"] == {"path": str(BUNDLE), "commit": BASE}  # outside the library's folder
    assert spec["reference"] == "gold.diff"
    assert spec["gates"]["tests"] == {
        "test_patch": "test.diff",
        "fail_to_pass": F2P,
        "pass_to_pass": P2P,
    }
    assert (case / "gold.diff").read_text() == GOLD
    assert (case / "test.diff").read_text() == TESTS
    prompt = render((case / "prompt.md.j2").read_text())
    assert ISSUE.strip() in prompt and "EXPECT_EQ" not in prompt
    # Imported again: replaced whole; a folder import did not make is never replaced.
    (library / "cxxgate__duration-1" / "stale").write_text("")
    (library / "hand_made").mkdir()
    (library / "hand_made" / "case.yaml").write_text("summary: mine\n")
    again = write_jsonl(
        tmp_path / "again.jsonl", [swe_record(), swe_record(instance_id="hand_made")]
    )
    report = swe_import.import_instances(again, BUNDLE, library)
    assert report.imported == ["cxxgate__duration-1"] and report.failed == ["hand_made"]
    said = capsys.readouterr().out
    assert "cxxgate__duration-1: replaced" in said
    assert "hand_made exists and was not made by `doit import`; not replaced" in said
    assert not (library / "cxxgate__duration-1" / "stale").exists()
    assert (library / "hand_made" / "case.yaml").read_text() == "summary: mine\n"


def test_repo_path_is_relative_inside_the_eval_repository(tmp_path: Path) -> None:
    """A clone beside the case library: the case names it relative to its folder."""
    clone = tmp_path / "repos" / "duration"
    subprocess.run(["git", "clone", "-q", str(BUNDLE), str(clone)], check=True)
    instances = write_jsonl(tmp_path / "i.jsonl", [swe_record()])
    report = swe_import.import_instances(instances, clone, tmp_path / "cases")
    assert report.failed == [] and report.imported == ["cxxgate__duration-1"]
    spec = yaml.safe_load((tmp_path / "cases/cxxgate__duration-1/case.yaml").read_text())
    assert spec["repo"]["path"] == "../../repos/duration"


def _with_test_line(line: str) -> str:
    """The duration test patch with one more added line in its hunk."""
    out: str = TESTS.replace("@@ -35,3 +35,24 @@", "@@ -35,3 +35,25 @@")
    return out.replace("+\n+TEST(Parse, Compound) {", f"+\n+{line}\n+TEST(Parse, Compound) {{", 1)


def test_import_checks_the_prompt_the_grade_renders(tmp_path: Path) -> None:
    """What import checks is the prompt the grade renders (prompt.render), header and
    closing instruction included; a quote only the prompt's own text makes (a hidden
    comment's words all in the instruction; a hidden test naming the pull request the
    instance id carries) cannot be withheld: the record is refused, naming its field,
    where the case used to import with every line withheld and then fail to load."""
    ok = swe_record(instance_id="cxxgate__duration-1")
    tail = swe_record(
        instance_id="cxxgate__duration-7", test_patch=_with_test_line("// the base and the diff")
    )
    header = swe_record(
        instance_id="cxxgate__duration-123456",
        test_patch=_with_test_line("// https://example.invalid/pull/123456"),
        problem_statement=ISSUE + "It worked in 0.9.\n",
    )
    instances = write_jsonl(tmp_path / "i.jsonl", [ok, tail, header])
    library = tmp_path / "cases"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        report = swe_import.import_instances(instances, BUNDLE, library)
    said = out.getvalue()
    assert report.imported == ["cxxgate__duration-1"], said
    for line in (2, 3):
        assert f"{instances}:{line}: instance " in said
    assert "not imported: test_patch: the prompt's own text" in said
    assert "test.diff:10 ('// the base and the diff': its tokens" in said
    assert "test.diff:10 ('// https://example.invalid/pull/123456': its numbers" in said
    assert "withheld" not in said
    case = load_case(library / "cxxgate__duration-1", registry.gates(), tmp_path / "repos")
    rendered = cxxprompt.render(case)
    assert rendered is not None
    assert rendered.text == swe_import.rendered(ISSUE, "cxxgate__duration-1")


def test_withholding_takes_a_few_checks_per_quote() -> None:
    """A hidden line's numbers on three lines, paragraphs apart (the check skips blank
    lines), after many lines of prose: the three lines are withheld, in a few dozen
    checks (every window of every width took some 200 000 here)."""
    filler = [f"Prose about the parser, sentence {i}." for i in range(300)]
    gap = [""] * 100
    parts = ["It fails for 59 60 61,", "for 3599 3600 5400", "and for 86399 86400 93784."]
    statement = "\n".join([*filler, parts[0], *gap, parts[1], *gap, parts[2]]) + "\n"
    check = swe_import._prompt_check(swe_import.parse_record(swe_record()))
    calls = []

    def quotes(text: str) -> bool:
        calls.append(1)
        return bool(check(text, cxxprompt.Visible("")))

    text, withheld = swe_import.withhold_quotes(statement, quotes)
    assert withheld == [301, 402, 503]
    assert not quotes(text) and text.count(swe_import.WITHHELD) == 3
    assert len(calls) < 40


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"problem_statement": ISSUE + "bad \ud800 byte\n"}, "problem_statement"),
        ({"instance_id": "cxxgate__duration-\ud800"}, "instance_id"),
        # Part of import's own marker in the hidden tests: a withheld line quotes it.
        (
            {
                "test_patch": _with_test_line("withheld here: it quotes the hidden tests"),
                "problem_statement": 'It fails:\n    EXPECT_EQ(parse_seconds("2m5s"), 125);\n',
            },
            "problem_statement",
        ),
        # Every line quotes the hidden tests: no task is left to give.
        (
            {"problem_statement": '    EXPECT_EQ(parse_seconds("2m5s"), 125);\n'},
            "problem_statement",
        ),
    ],
)
def test_a_record_import_cannot_hold_is_named_not_a_traceback(
    tmp_path: Path, changes: dict[str, object], field: str
) -> None:
    instances = write_jsonl(tmp_path / "i.jsonl", [swe_record(**changes)])
    library = tmp_path / "cases"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        report = swe_import.import_instances(instances, BUNDLE, library)
    said = out.getvalue()
    assert report.imported == [] and len(report.failed) == 1, said
    assert f"{instances}:1: instance " in said and f": not imported: {field}: " in said
    assert said.encode()  # printable: no lone surrogate reached the terminal
    assert not library.exists() or list(library.iterdir()) == []


def test_import_reads_the_base_tree_in_the_grades_order(tmp_path: Path) -> None:
    """The oracle check's windows of three lines run across files, so import's view of
    the base tree lists files as the grade's does (git lists `a-b` before `a/b`)."""
    clone = tmp_path / "clone"
    (clone / "a").mkdir(parents=True)
    (clone / "a-b.txt").write_text("one\ntwo\n")
    (clone / "a" / "b.txt").write_text("three\n")
    (clone / "b.txt").write_text("four\n")
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "add", "-A"], check=True)
    who = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "-C", str(clone), *who, "commit", "-qm", "x"], check=True)
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("a-b.txt", "b.txt", "a"):
        subprocess.run(["cp", "-r", str(clone / name), str(tree)], check=True)

    class Case:  # what prompt._visible_text reads
        pass

    case = Case()
    case.tree = tree  # type: ignore[attr-defined]
    with swe_import.open_repository(clone) as git:
        seen = git.visible_text(git.commit("HEAD") or "")
    assert seen == cxxprompt._visible_text(case) == "three\none\ntwo\nfour"  # type: ignore[arg-type]


@pytest.mark.slow
def test_predictions_graded_on_an_imported_case(tmp_path: Path) -> None:
    """Import the shipped repository's instance under an id a folder cannot hold, with a
    problem statement that quotes a hidden test line, names a listed test and gives a
    hidden line's numbers in another order (fmt-1361's statement did), then grade
    SWE-style predictions: the prompt passes the oracle check (the grade loads and pins
    the case), the reference is green, and each prediction lands on its class."""
    library = tmp_path / "cases"
    library.mkdir()
    (library / "envelopes.yaml").write_text((SHIPPED / "envelopes.yaml").read_text())
    # Line 4 quotes no line, only a hidden line's numbers in another order: the grade's
    # own check (prompt.oracle_in) finds it, so import withholds it too.
    statement = (
        ISSUE + '    EXPECT_EQ(parse_seconds("2m5s"), 125);\nsee Parse.CompoundOrder too\n'
        "and 106751991167300 days and 15 hours make 9223372036854774000 seconds\n"
    )
    ident = "cxxgate/duration:pr-9"
    instances = write_jsonl(
        tmp_path / "i.jsonl", [swe_record(instance_id=ident, problem_statement=statement)]
    )
    out = tmp_path / "out"
    done = run_doit(out, "import", f"instances={instances}", f"repo={BUNDLE}", library=library)
    assert done.returncode == 0, done.output
    assert "problem statement line 2 withheld" in done.output
    assert "problem statement line 3 withheld" in done.output
    assert "problem statement line 4 withheld" in done.output

    def pred(model: str, patch: Path | str) -> dict[str, str]:
        text = patch.read_text() if isinstance(patch, Path) else patch
        return {"instance_id": ident, "model_name_or_path": model, "model_patch": text}

    preds = write_jsonl(
        tmp_path / "preds.jsonl",
        [
            pred("gold", GOLD),
            pred("hard_coded", DURATION / "patches/hard_coded.diff"),
            pred("no_build", DURATION / "patches/no_build.diff"),
            pred("edits_tests", DURATION / "patches/edit_tests.diff"),
        ],
    )
    grade = run_doit(out, "-n", "2", "grade", f"patches={preds}", "report_only=1", library=library)
    assert grade.returncode == 0, grade.output
    case = "cxxgate_duration_pr-9"
    classes = {name: row["class"] for name, row in grade.rows.items()}
    assert classes == {
        f"{case}/reference": "accept",
        f"{case}/base": "f2p_fail:Parse.Compound,Format.RoundTrip",
        f"{case}/gold": "accept",
        f"{case}/hard_coded": "f2p_fail:Parse.Compound,Format.RoundTrip",
        f"{case}/no_build": "build_fail",
        f"{case}/edits_tests": "path_violation",
    }
    assert grade.rows[f"{case}/gold"]["verdict"] == "accept"


def test_a_repository_without_cmake_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "py"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "setup.py").write_text("")
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), *ident, "commit", "-qm", "py"], check=True)
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    instances = write_jsonl(tmp_path / "i.jsonl", [swe_record(base_commit=head)])
    report = swe_import.import_instances(instances, repo, tmp_path / "cases")
    assert report.failed == ["cxxgate__duration-1"] and report.imported == []
    assert "not imported: base_commit: " in capsys.readouterr().out


def test_a_folder_inside_another_clone_is_not_taken_for_one(tmp_path: Path) -> None:
    """cases/duration/patches lies inside the project's own git checkout: git must not
    climb to it and import from the project's history."""
    instances = write_jsonl(tmp_path / "i.jsonl", [swe_record()])
    with pytest.raises(swe_import.ImportFailure, match="neither a git bundle file nor a git"):
        swe_import.import_instances(instances, DURATION / "patches", tmp_path / "cases")
    assert not (tmp_path / "cases").exists()


def test_shipped_bundle_and_patches_rebuild_byte_for_byte(tmp_path: Path) -> None:
    """make_bundle.py is the source of cases/duration's repository and patches: rebuilt,
    every file is the same bytes, and the base commit is the one case.yaml pins."""
    made = subprocess.run(
        [sys.executable, str(DURATION / "make_bundle.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert (
        made.stdout.strip()
        == BASE
        == yaml.safe_load((DURATION / "case.yaml").read_text())["repo"]["commit"]
    )
    rebuilt = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert rebuilt == sorted(
        p.relative_to(DURATION)
        for p in DURATION.rglob("*")
        if p.is_file() and p.name not in {"case.yaml", "prompt.md.j2", "make_bundle.py"}
    )
    for rel in rebuilt:
        assert (tmp_path / rel).read_bytes() == (DURATION / rel).read_bytes(), rel


def test_a_base_tree_the_clone_lacks_files_of_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A partial or pruned clone lists a file whose contents it lacks (a large data file
    left out): the record is refused naming the base commit and the path, where the
    import crashed reading the tree and the grade would stop in `git archive`."""
    repo = tmp_path / "partial"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "CMakeLists.txt").write_text("project(p CXX)\n")
    (repo / "data").mkdir()
    (repo / "data/big.json").write_text('{"big": true}\n')
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), *ident, "commit", "-qm", "base"], check=True)

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
        return done.stdout.strip()

    head, blob = git("rev-parse", "HEAD"), git("rev-parse", "HEAD:data/big.json")
    (repo / ".git/objects" / blob[:2] / blob[2:]).unlink()  # loose objects: one file each
    statement = "parse_seconds fails on '1h30m'.\n" + GOLD.splitlines()[-1][1:] + "\n"
    record = swe_record(base_commit=head, problem_statement=statement)
    instances = write_jsonl(tmp_path / "i.jsonl", [record])
    report = swe_import.import_instances(instances, repo, tmp_path / "cases")
    assert report.failed == ["cxxgate__duration-1"] and report.imported == []
    said = capsys.readouterr().out
    assert "not imported: base_commit: " in said
    assert "lacks the contents of 1 file(s)" in said and "(data/big.json)" in said
