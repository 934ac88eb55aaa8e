"""`doit import instances=FILE.jsonl repo=PATH [cases=DIR] [options="-DX=ON ..."]
[data="DIR ..."]`: SWE-bench and Multi-SWE-bench records -> case folders, one per instance.

Each case is a repository case (cxxgate/intake/repo.py) built with CMake and graded by gate
`tests`: `repo: {path, commit}` names the repository given as `repo=` (a clone or a bundle
holding every base commit) and the record's base commit; the gold patch is the case's
`reference`, the hidden test patch and the FAIL_TO_PASS / PASS_TO_PASS lists go to
`gates.tests`, and the problem statement becomes `prompt.md.j2`. `options` are the
configure options (default -DBUILD_TESTING=ON; NO_MEMORY_CHECKER is added), `data` the
folders the build and its tests read besides the repository (`build.data`: test data a
project would download).

Field spellings (looked up, not guessed):
- SWE-bench (princeton-nlp/SWE-bench dataset card): `instance_id`, `repo`, `base_commit`,
  `patch`, `test_patch`, `problem_statement`, `FAIL_TO_PASS`, `PASS_TO_PASS`; the two lists
  are JSON text holding a list there, and plain lists in derived sets.
- Multi-SWE-bench (multi-swe-bench/multi-swe-bench, harness/pull_request.py and
  harness/dataset.py): `org`, `repo`, `number`, `base: {label, ref, sha}`,
  `resolved_issues: [{number, title, body}]`, `title`, `body`, `fix_patch`, `test_patch`,
  and the tests as dicts keyed by test name: `f2p_tests`, `s2p_tests` (skipped before),
  `n2p_tests` (did not run before), `p2p_tests`. No instance id: it is made as
  `<org>__<repo>-<number>`, the spelling their released files use.

One record that cannot be imported (a missing or mistyped field, a base commit the
repository lacks or that holds no top-level CMakeLists.txt, a patch that does not apply
to its base) is reported with its line, its instance and the field, and the others still
import; the command then fails.

`repo.path` is written relative to the case folder when the repository lies inside the
folder that holds the case library (the eval repository: move it whole and the path
still holds), absolute otherwise. The repository is referenced, never copied: one clone
serves every instance of a project, where a bundle per case would repeat its history.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from doit import get_var
from doit.exceptions import TaskFailed
from jinja2 import TemplateError

from cxxgate.library import prompt
from cxxgate.library.case import data_digest
from cxxgate.library.rows import case_folder
from cxxgate.util.yamlfile import InputError

CASE_FILES = ("case.yaml", "prompt.md.j2", "gold.diff", "test.diff")
HEADER = "# imported by `doit import`"  # a folder that starts otherwise is never replaced
WITHHELD = "[a line withheld here: it quotes the hidden tests or the reference fix]"
_HEX = re.compile(r"[0-9a-fA-F]{4,40}")
# ctest's own default per test when a project includes CTest (DART_TESTING_TIMEOUT), as
# the benchmark ran them: nlohmann/json's test-unicode checks 8.9 million strings, about
# 13 minutes unoptimised on a loaded 2-core machine.
IMPORTED_RUN_SECONDS = 1500


def case_id(instance_id: str) -> str:
    """The case folder of an instance: `django__django-11099` stays as it is; characters a
    folder or a doit task name cannot hold become '_' (`org/repo:pr-1` -> `org_repo_pr-1`).
    Predictions are matched to cases by the same rule (cxxgate/library/rows.py)."""
    return case_folder(instance_id)


class RecordError(ValueError):
    """A record that cannot be imported; the message names the field."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"{field}: {why}")
        self.field = field


@dataclass(frozen=True)
class Instance:
    instance_id: str
    base_commit: str
    gold: str
    test_patch: str
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    problem: str

    @property
    def case_id(self) -> str:
        return case_id(self.instance_id)


def _text(record: dict[str, Any], *names: str) -> tuple[str, str]:
    """(field name, value) of the first of `names` present; a string, not empty."""
    for name in names:
        if name in record and record[name] is not None:
            value = record[name]
            if not isinstance(value, str):
                raise RecordError(name, f"expected text, found a JSON {type(value).__name__}")
            if not value.strip():
                raise RecordError(name, "empty")
            return name, value
    raise RecordError(" or ".join(names), "missing")


def _tests(record: dict[str, Any], upper: str, keyed: tuple[str, ...]) -> list[str]:
    """A test list: SWE-bench's upper-case field (a list, or JSON text holding one), else
    Multi-SWE-bench's dicts keyed by test name, merged in order."""
    if upper in record and record[upper] is not None:
        value = record[upper]
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise RecordError(upper, f"text that is not a JSON list ({exc.msg})") from exc
        if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
            raise RecordError(upper, "expected a list of test names")
        return list(dict.fromkeys(value))
    found: list[str] = []
    present = False
    for name in keyed:
        value = record.get(name)
        if value is None:
            continue
        present = True
        if not isinstance(value, dict):
            raise RecordError(name, f"expected an object keyed by test name, found {value!r:.40}")
        found += [t for t in value if t not in found]
    if not present:
        raise RecordError(f"{upper} or {keyed[0]}", "missing")
    return found


def _problem(record: dict[str, Any]) -> str:
    if record.get("problem_statement") is not None:
        return _text(record, "problem_statement")[1]
    issues = record.get("resolved_issues")
    if issues:
        if not isinstance(issues, list) or not all(isinstance(i, dict) for i in issues):
            raise RecordError("resolved_issues", "expected a list of {number, title, body}")
        parts = [
            "\n\n".join(str(i.get(k) or "").strip() for k in ("title", "body")).strip()
            for i in issues
        ]
        if any(parts):
            return "\n\n".join(p for p in parts if p)
    # No issue text: the pull request's own title and body are all the record holds.
    parts = [str(record.get(k) or "").strip() for k in ("title", "body")]
    if not any(parts):
        raise RecordError("problem_statement or resolved_issues", "missing")
    return "\n\n".join(p for p in parts if p)


def _instance_id(record: dict[str, Any]) -> str:
    if record.get("instance_id") is not None:
        return _text(record, "instance_id")[1]
    org, repo, number = record.get("org"), record.get("repo"), record.get("number")
    if isinstance(org, str) and isinstance(repo, str) and isinstance(number, int | str):
        return f"{org}__{repo}-{number}"
    raise RecordError("instance_id (or org, repo, number)", "missing")


def _base_commit(record: dict[str, Any]) -> str:
    if record.get("base_commit") is not None:
        value = _text(record, "base_commit")[1]
        field = "base_commit"
    else:
        base = record.get("base")
        if not isinstance(base, dict) or not isinstance(base.get("sha"), str):
            raise RecordError("base_commit or base.sha", "missing")
        value, field = base["sha"], "base.sha"
    if not _HEX.fullmatch(value.strip()):
        raise RecordError(field, f"expected a commit id (hex), found {value!r:.60}")
    return value.strip().lower()


def parse_record(record: Any) -> Instance:
    """An Instance from one decoded JSON line, either dataset's spelling. Raises
    RecordError naming the field."""
    if not isinstance(record, dict):
        raise RecordError("(line)", f"expected a JSON object, found a {type(record).__name__}")
    for key, value in record.items():
        # JSON may spell a lone surrogate ("\ud800"); no file or message holds one.
        try:
            json.dumps(value, ensure_ascii=False).encode()
        except UnicodeEncodeError as exc:
            bad = f"\\u{ord(exc.object[exc.start]):04x}"
            raise RecordError(str(key), f"holds {bad}, a lone surrogate: not text") from exc
    ident = _instance_id(record)
    fail_to_pass = _tests(record, "FAIL_TO_PASS", ("f2p_tests", "s2p_tests", "n2p_tests"))
    if not fail_to_pass:
        raise RecordError("FAIL_TO_PASS", "empty: a case needs a test the fix turns green")
    pass_to_pass = _tests(record, "PASS_TO_PASS", ("p2p_tests",))
    both = sorted(set(fail_to_pass) & set(pass_to_pass))
    if both:
        raise RecordError("PASS_TO_PASS", f"lists fail-to-pass tests too: {both[:5]}")
    return Instance(
        instance_id=ident,
        base_commit=_base_commit(record),
        gold=_text(record, "patch", "fix_patch")[1],
        test_patch=_text(record, "test_patch")[1],
        fail_to_pass=fail_to_pass,
        pass_to_pass=pass_to_pass,
        problem=_problem(record),
    )


def gold_field(record: dict[str, Any]) -> str:
    return "patch" if record.get("patch") is not None else "fix_patch"


def problem_field(record: dict[str, Any]) -> str:
    if record.get("problem_statement") is not None:
        return "problem_statement"
    return "resolved_issues" if record.get("resolved_issues") else "title, body"


def base_field(record: dict[str, Any]) -> str:
    return "base_commit" if record.get("base_commit") is not None else "base.sha"


# ---- the repository -----------------------------------------------------------------


class Repository:
    """The base commits' repository, read with git: a clone (bare or not) used in place,
    or a bundle file cloned bare once into a scratch folder."""

    def __init__(self, source: Path, git_dir: Path, scratch: Path) -> None:
        self.source = source
        self.git_dir = git_dir
        self.scratch = scratch
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "HOME": str(scratch),
            "LC_ALL": "C",
        }

    def git(
        self, *args: str, stdin: bytes | None = None, index: Path | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        env = dict(self.env, GIT_DIR=str(self.git_dir))
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        return subprocess.run(
            ["git", *args], input=stdin, env=env, cwd=self.scratch, capture_output=True
        )

    def commit(self, sha: str) -> str | None:
        """The full id of a commit of this repository, or None."""
        done = self.git("rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}")
        return done.stdout.decode().strip() if done.returncode == 0 else None

    def apply_problem(self, base: str, patches: list[tuple[str, str]]) -> tuple[str, str] | None:
        """Apply the patches in order on `base` (an index of its own, no checkout), as
        intake does (strict, -p1); (field, git's words) of the first that does not apply."""
        index = self.scratch / "index"
        index.unlink(missing_ok=True)
        read = self.git("read-tree", base, index=index)
        if read.returncode != 0:
            return "(base)", read.stderr.decode(errors="replace").strip()
        for field, text in patches:
            done = self.git("apply", "--cached", "-p1", "-", stdin=text.encode(), index=index)
            if done.returncode != 0:
                said = done.stderr.decode(errors="replace").strip().splitlines()
                return field, "; ".join(said[:3]) or f"git apply exit {done.returncode}"
        return None

    def blobs(self, commit: str) -> list[tuple[str, str]]:
        """(object id, path) of every file of the commit's tree."""
        listing = self.git("ls-tree", "-r", "-z", commit)  # "<mode> <type> <id>\t<path>"
        found = []
        for entry in listing.stdout.decode(errors="replace").split("\0"):
            if entry:
                meta, path = entry.split("\t", 1)
                if meta.split()[1] == "blob":
                    found.append((meta.split()[2], path))
        return found

    def missing_files(self, commit: str) -> list[str]:
        """Paths of the commit's tree whose contents the repository lacks: a partial
        (`--filter=blob:limit`) or pruned clone lists a file it cannot give."""
        blobs = self.blobs(commit)
        ids = "".join(f"{b}\n" for b, _ in blobs).encode()
        said = self.git("cat-file", "--batch-check=%(objectname) %(objecttype)", stdin=ids)
        lines = said.stdout.decode().splitlines()
        absent = {line.split()[0] for line in lines if line.endswith(" missing")}
        return [path for blob, path in blobs if blob in absent]

    def visible_text(self, commit: str) -> str:
        """Every line of the base tree, whitespace-normalised, as prompt.py reads a tree:
        files in the order of its sorted(rglob) (by path components; git lists `a-b`
        before `a/b`), since its windows of three lines run across files."""
        blobs = [b for b, _ in sorted(self.blobs(commit), key=lambda e: e[1].split("/"))]
        batch = self.git("cat-file", "--batch", stdin="".join(b + "\n" for b in blobs).encode())
        out, data, pos = [], batch.stdout, 0
        while pos < len(data):
            header_end = data.index(b"\n", pos)
            header = data[pos:header_end].split()
            if len(header) < 3:  # "<id> missing": nothing follows it
                pos = header_end + 1
                continue
            size = int(header[2])
            body = data[header_end + 1 : header_end + 1 + size]
            pos = header_end + 2 + size
            out += [_norm(line) for line in body.decode(errors="replace").splitlines()]
        return "\n".join(out)


@contextmanager
def open_repository(path: Path) -> Iterator[Repository]:
    with tempfile.TemporaryDirectory(prefix="cxxgate-import-") as scratch_name:
        scratch = Path(scratch_name)
        if path.is_file():
            bare = scratch / "git"
            done = subprocess.run(
                ["git", "clone", "--bare", "--quiet", str(path), str(bare)],
                capture_output=True,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(scratch)},
            )
            if done.returncode != 0:
                said = done.stderr.decode(errors="replace").strip()
                raise ImportFailure(f"repo={path}: git cannot read it as a bundle: {said}")
            yield Repository(path, bare, scratch)
            return
        # The ceiling keeps git from taking a repository above `path` for it.
        env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(path.resolve().parent)}
        found = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--absolute-git-dir"],
            capture_output=True,
            env=env,
        )
        if not path.is_dir() or found.returncode != 0:
            raise ImportFailure(f"repo={path}: neither a git bundle file nor a git clone")
        yield Repository(path, Path(found.stdout.decode().strip()), scratch)


class ImportFailure(Exception):
    """The command itself cannot run (no such instances file, no repository)."""


# ---- the prompt -----------------------------------------------------------------------


def _norm(line: str) -> str:
    return " ".join(line.split())


def rendered(statement: str, case: str) -> str:
    """The prompt the grade renders from template_text(statement) for case `case`
    (tests/library/test_import.py holds the two equal)."""
    try:
        return prompt.environment().from_string(template_text(statement)).render({"id": case})
    except TemplateError as exc:
        raise RecordError("problem_statement", f"its prompt does not render: {exc}") from exc


def _prompt_check(inst: Instance) -> Callable[[str, prompt.Visible], str]:
    """Where a statement, in the whole prompt the grade renders from it (the `# Task`
    header and the closing instruction too), quotes an oracle (prompt.oracle_in over the
    case's gold.diff, test.diff and test names); '' when nowhere."""
    files = [("gold.diff", _with_newline(inst.gold)), ("test.diff", _with_newline(inst.test_patch))]
    gates = {"tests": {"fail_to_pass": inst.fail_to_pass, "pass_to_pass": inst.pass_to_pass}}

    def check(statement: str, shown: prompt.Visible) -> str:
        return prompt.oracle_in(rendered(statement, inst.case_id), files, gates, shown)

    return check


def withhold_quotes(statement: str, quotes: Callable[[str], bool]) -> tuple[str, list[int]]:
    """The statement with consecutive lines withheld, a quote at a time, until `quotes`
    finds nothing or no line is left to withhold (the caller checks again); and the
    1-based numbers of the (non-blank) lines withheld.

    Per quote: the shortest prefix of the statement that quotes, then the shortest run
    of lines ending there that quotes by itself, each by binary search (a line added to a
    text never takes a quote away): some 2 log2(lines) checks, where trying every window
    of every width took up to lines x width (quadratic in a long statement)."""
    lines = statement.split("\n")
    done: set[int] = set()

    def open_in(start: int, end: int) -> bool:
        return any(i not in done and lines[i].strip() for i in range(start, end))

    while open_in(0, len(lines)) and quotes("\n".join(lines)):
        low, high = 1, len(lines)  # lines[:high] quotes
        while low < high:
            mid = (low + high) // 2
            if quotes("\n".join(lines[:mid])):
                high = mid
            else:
                low = mid + 1
        end, start, top = high, 0, high - 1  # lines[start:end] quotes
        while start < top:
            mid = (start + top + 1) // 2
            if open_in(mid, end) and quotes("\n".join(lines[mid:end])):
                start = mid
            else:
                top = mid - 1
        if not open_in(start, end):
            break  # the quote is in lines already withheld, or in the prompt's own text
        for i in range(start, end):
            if lines[i].strip() and i not in done:
                lines[i] = WITHHELD
                done.add(i)
    return "\n".join(lines), sorted(i + 1 for i in done)


def template_text(statement: str) -> str:
    """prompt.md.j2 holding the statement as literal text: every '{' that could open a
    Jinja tag is written as an expression printing '{'."""
    escaped = re.sub(r"\{(?=[{%#])", '{{ "{" }}', statement.rstrip("\n"))
    return (
        "# Task: {{ id }}\n\n"
        f"{escaped}\n\n"
        "Fix the issue above in the repository at its base commit. Answer with a unified "
        "diff (`a/` and `b/` prefixes).\n"
    )


# ---- case folders ---------------------------------------------------------------------


def repo_reference(repo: Path, case_dir: Path, library: Path) -> str:
    repo, case_dir = repo.resolve(), case_dir.resolve()
    if repo.is_relative_to(library.resolve().parent):
        return os.path.relpath(repo, case_dir)
    return str(repo)


# Added unless the options name MEMORYCHECK_COMMAND: CTest would find the valgrind this
# machine has for the leak gate, and a project registers other tests when it has one
# (Catch2 leaves out its MultiReporter tests); the benchmarks' images had none, nor do
# their test lists.
NO_MEMORY_CHECKER = "-DMEMORYCHECK_COMMAND="


@dataclass(frozen=True)
class BuildChoice:
    """What `doit import` writes under `build:` for every instance."""

    options: tuple[str, ...] = ("-DBUILD_TESTING=ON",)
    data: tuple[str, ...] = ()

    def section(self) -> dict[str, Any]:
        options = list(self.options)
        if not any(o.startswith("-DMEMORYCHECK_COMMAND") for o in options):
            options.append(NO_MEMORY_CHECKER)
        found: dict[str, Any] = {"system": "cmake", "options": options}
        return found | ({"data": list(self.data)} if self.data else {})


def case_yaml(inst: Instance, where: str, repo_path: str, commit: str, build: BuildChoice) -> str:
    first = next((_norm(line) for line in inst.problem.splitlines() if line.strip()), "")
    data = {
        "summary": f"{inst.instance_id}: {first[:100]}" if first else inst.instance_id,
        "repo": {"path": repo_path, "commit": commit},
        "build": build.section(),
        "writable": ["**"],
        # The project builds with its own flags, never the envelope's -Werror: a fix may
        # add the diagnostic pragmas real projects carry (Catch2-1609's gold does).
        "allow_diagnostic_pragmas": True,
        "reference": "gold.diff",
        # Each test of a real suite gets ctest's own default (ctest --timeout); the build
        # and the whole run have build_seconds / test_seconds (cxxgate/library/case.py).
        "limits": {"run_seconds": IMPORTED_RUN_SECONDS},
        "gates": {
            "tests": {
                "test_patch": "test.diff",
                "fail_to_pass": inst.fail_to_pass,
                "pass_to_pass": inst.pass_to_pass,
            }
        },
    }
    body = yaml.safe_dump(data, sort_keys=False, width=100, allow_unicode=True)
    return f"{HEADER} from {where}, instance {inst.instance_id}\n{body}"


def write_case(folder: Path, files: dict[str, str]) -> str:
    """Write the case folder whole (a temporary folder, then a rename): 'new' or
    'replaced'. A folder that `doit import` did not make is never replaced."""
    existing = folder / "case.yaml"
    if folder.exists() and not (
        existing.is_file() and existing.read_text(errors="replace").startswith(HEADER)
    ):
        msg = f"{folder} exists and was not made by `doit import`; not replaced"
        raise RecordError("instance_id", msg)
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        for name, text in files.items():
            (work / name).write_text(text)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    state = "new"
    if folder.exists():
        old = folder.parent / f".{folder.name}.old"
        shutil.rmtree(old, ignore_errors=True)
        folder.rename(old)
        shutil.rmtree(old)
        state = "replaced"
    work.rename(folder)
    return state


@dataclass
class Report:
    imported: list[str]
    failed: list[str]


def import_instances(
    instances: Path, repo: Path, library: Path, build: BuildChoice | None = None
) -> Report:
    """Import every record of `instances` into `library`; print one line per record."""
    build = build if build is not None else BuildChoice()
    for folder in build.data:
        try:
            data_digest(Path(folder), f"data={folder}", [library.resolve()])
        except InputError as exc:
            raise ImportFailure(str(exc)) from exc
    try:
        raw = instances.read_bytes()
    except OSError as exc:
        raise ImportFailure(f"instances={instances}: cannot read: {exc.strerror}") from exc
    report = Report([], [])
    seen: dict[str, str] = {}
    with open_repository(repo) as git:
        for lineno, line in enumerate(raw.split(b"\n"), 1):
            if not line.strip():
                continue
            where = f"{instances}:{lineno}"
            ident = "?"
            try:
                try:
                    record = json.loads(line.decode("utf-8-sig" if lineno == 1 else "utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                    raise RecordError("(line)", f"not a JSON object: {exc}") from exc
                if isinstance(record, dict) and isinstance(record.get("instance_id"), str):
                    # Printable whatever it holds (a lone surrogate is refused, and said).
                    ident = record["instance_id"].encode(errors="backslashreplace").decode()
                inst = parse_record(record)
                ident = inst.instance_id
                state = _import_one(inst, record, where, git, library, build, seen)
                report.imported.append(inst.case_id)
                print(f"{where}: {ident}: {state} {library / inst.case_id}")
            except RecordError as exc:
                report.failed.append(ident)
                print(f"{where}: instance {ident}: not imported: {exc}")
    print(f"imported {len(report.imported)}, failed {len(report.failed)} (from {instances})")
    return report


def _import_one(
    inst: Instance,
    record: dict[str, Any],
    where: str,
    git: Repository,
    library: Path,
    build: BuildChoice,
    seen: dict[str, str],
) -> str:
    folder = library / inst.case_id
    if inst.case_id in seen:
        msg = f"case {inst.case_id!r} is already imported from {seen[inst.case_id]}"
        raise RecordError("instance_id", msg)
    commit = git.commit(inst.base_commit)
    if commit is None:
        msg = f"{inst.base_commit} is not a commit of {git.source}"
        raise RecordError(base_field(record), msg)
    missing = git.missing_files(commit)
    if missing:
        # The grade extracts the whole tree (git archive): it would stop on the first.
        msg = (
            f"{git.source} lacks the contents of {len(missing)} file(s) of {commit[:12]}'s "
            f"tree ({', '.join(missing[:3])}): a partial or pruned clone; import from a "
            "full clone"
        )
        raise RecordError(base_field(record), msg)
    if git.git("cat-file", "-e", f"{commit}:CMakeLists.txt").returncode != 0:
        # Cases build with CMake (gate tests); a Python or Makefile project cannot grade.
        msg = f"{commit[:12]} has no CMakeLists.txt at its top: not a CMake project"
        raise RecordError(base_field(record), msg)
    gold = gold_field(record)
    tests_touched = _paths(inst.test_patch)
    overlap = sorted(_paths(inst.gold) & tests_touched)
    if overlap:
        # The tests gate makes test files read-only: the reference itself would violate it.
        raise RecordError(gold, f"changes files the test patch owns: {overlap[:5]}")
    for patches in (
        [(gold, inst.gold)],
        [("test_patch", inst.test_patch)],
        [(gold, inst.gold), ("test_patch (after the gold patch)", inst.test_patch)],
    ):
        problem = git.apply_problem(commit, patches)
        if problem is not None:
            field, said = problem
            raise RecordError(field, f"does not apply to {commit[:12]}: {said}")
    # The grade's own check (prompt.oracle_in: quotes, numbers and tokens in any order,
    # blanks aside) on the prompt as the grade renders it: a case import writes is never
    # refused at grade for its prompt. The base tree is read only when something quotes
    # (a line the base shows anyway quotes no oracle).
    check = _prompt_check(inst)
    statement, withheld = inst.problem, list[int]()
    if check(statement, prompt.Visible("")):
        shown = prompt.Visible(git.visible_text(commit))
        fixed = check("", shown)
        if fixed:
            # The `# Task: <id>` header or the closing instruction quotes it, whatever the
            # statement says: the grade would refuse every prompt of this case.
            msg = f"the prompt's own text (header with the case id, instruction) quotes {fixed}"
            raise RecordError(_oracle_field(fixed, record), msg)
        statement, withheld = withhold_quotes(statement, lambda text: bool(check(text, shown)))
        left = check(statement, shown)
        if left:
            msg = f"still quotes {left} with lines {withheld} withheld"
            raise RecordError(problem_field(record), msg)
    kept = [line for line in statement.split("\n") if line.strip() and line != WITHHELD]
    if withheld and not kept:
        msg = f"every line ({len(withheld)}) quotes the hidden tests or the fix: no task is left"
        raise RecordError(problem_field(record), msg)
    for number in withheld:
        print(
            f"{where}: {inst.instance_id}: problem statement line {number} withheld: it "
            "quotes the test patch, the gold patch or a test name"
        )
    files = {
        "case.yaml": case_yaml(
            inst, where, repo_reference(git.source, folder, library), commit, build
        ),
        "prompt.md.j2": template_text(statement),
        "gold.diff": _with_newline(inst.gold),
        "test.diff": _with_newline(inst.test_patch),
    }
    state = write_case(folder, files)
    seen[inst.case_id] = where
    return state


def _oracle_field(hit: str, record: dict[str, Any]) -> str:
    """The record's field holding the oracle prompt.oracle_in named in `hit`."""
    if hit.startswith("gold.diff:"):
        return gold_field(record)
    if hit.startswith("test.diff:"):
        return "test_patch"
    if hit.startswith("case.yaml gates.tests.fail_to_pass"):
        return "FAIL_TO_PASS" if "FAIL_TO_PASS" in record else "f2p_tests"
    if hit.startswith("case.yaml gates.tests.pass_to_pass"):
        return "PASS_TO_PASS" if "PASS_TO_PASS" in record else "p2p_tests"
    return "instance_id"


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def _paths(diff: str) -> set[str]:
    """The paths a diff's `diff --git` / `---` / `+++` headers name (a/ b/ stripped)."""
    found = set()
    for line in diff.splitlines():
        if line.startswith(("--- a/", "+++ b/")):
            found.add(line[6:].split("\t")[0])
        elif line.startswith("diff --git a/"):
            found.update(p[2:] for p in line[11:].split(" ") if p[:2] in {"a/", "b/"})
    return found


def build_of(options: str, data: str) -> BuildChoice:
    """The `options=` and `data=` variables, each split as a shell would."""
    default = BuildChoice()
    return BuildChoice(
        tuple(shlex.split(options)) if options else default.options,
        tuple(str(Path(d).resolve()) for d in shlex.split(data)),
    )


def task(library: Path) -> dict[str, Any]:
    """The `import` task: its variables are read when dodo.py loads (doit's get_var)."""
    instances = get_var("instances", "") or ""
    repo = get_var("repo", "") or ""
    build = build_of(get_var("options", "") or "", get_var("data", "") or "")

    def action() -> TaskFailed | None:
        if not instances or not repo:
            return TaskFailed("usage: doit import instances=FILE.jsonl repo=PATH [cases=DIR]")
        try:
            report = import_instances(
                Path(instances).resolve(), Path(repo).resolve(), library, build
            )
        except ImportFailure as exc:
            return TaskFailed(str(exc))
        if report.failed:
            return TaskFailed(
                f"{len(report.failed)} record(s) not imported: {', '.join(report.failed)}"
            )
        return None

    return {
        "actions": [action],
        "uptodate": [False],
        "verbosity": 2,
        "doc": "SWE-bench / Multi-SWE-bench records (instances=FILE.jsonl repo=PATH) -> cases",
    }
