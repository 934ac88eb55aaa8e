"""Which test framework a ctest test's program uses, and the framework report the harness
asks of it (Catch2, doctest), run after ctest's own run.

GoogleTest takes its report's place from the environment (`GTEST_OUTPUT`); Catch2 and
doctest have no such variable (Catch2 v3 honours Bazel's `XML_OUTPUT_FILE` under
`BAZEL_TEST`, one file per process, overwritten by the next; v2 and doctest nothing). So
the design is a second pass: for each ctest test the case names (fail-to-pass,
pass-to-pass) whose program is a Catch2 or doctest program, the harness runs the test's
own command as ctest lists it (`--show-only=json-v1`: command, `WORKING_DIRECTORY`,
`ENVIRONMENT`), in the same sandbox, caps and per-test timeout as the ctest run, with the
framework's XML reporter appended (`--reporter xml --out <path>`, doctest
`--reporters=xml --out=<path>`: both read the last occurrence, so a reporter the project's
command already names is overridden). The path is a fresh random name in a folder the
harness made for the run; only that file is kept (a regular file, capped), what the
program prints is never read. ctest's verdict and this report must both say passed; the
report is read by cxxgate/gates/tests/frameworkreports.py. The named tests run twice.

The framework is decided from the program itself, never from the project's text: the
mangled names its symbol table holds (`Catch::`, `doctest::`, `testing::`, pyelftools),
as the build linked it. A program with GoogleTest symbols keeps GoogleTest's own report
(cxxgate/ctest.py); one with none of them (a plain executable, a script, a launcher in
front of the program) has only its exit status, and the gate says so. A candidate's
program that lost its framework (stripped, relinked) where the reference's had one has
no report: the gate compares with the reference's run.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import stat
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Literal

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from cxxgate.util.elfread import ELF_ERRORS

Framework = Literal["gtest", "catch2", "doctest"]
FRAMEWORK_DIR = "frameworks"  # the reports kept, one per named test (<n>.xml)
FRAMEWORKS_JSON = "frameworks.json"  # ctest name -> Record
NAMED_UNIT = "named-tests"  # the tests the case names, one a line (a unit of the cell)
# A namespace in a mangled name (`N5Catch`, `N7doctest`, `N7testing`), not the tail of a
# longer length (`15Catch...`).
_SYMBOL = {
    "catch2": re.compile(r"_Z.*(?<!\d)5Catch"),
    "doctest": re.compile(r"_Z.*(?<!\d)7doctest"),
    "gtest": re.compile(r"_Z.*(?<!\d)7testing"),
}


@dataclass(frozen=True)
class Record:
    """The report pass of one ctest test."""

    framework: str  # catch2 | doctest | gtest | "" (no framework's symbols)
    program: str  # the program's file name
    report: str | None = None  # the kept report's file name under FRAMEWORK_DIR
    exit: int | None = None
    timed_out: bool = False


def open_regular(path: Path, inside: Path) -> BinaryIO | None:
    """`path` open for reading when it lies in folder `inside` once every link is followed
    and is a regular file; None otherwise. The build's programs and objects are read
    after the candidate's code ran (its CMake's custom commands, the suite's tests, which
    own the copy's folders): as a FIFO a path blocked the harness's open for ever, and a
    link out of the build had the harness (root) open a file or device of the host."""
    try:
        real = path.resolve()
        if not real.is_relative_to(inside.resolve()):
            return None
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, RuntimeError, ValueError):  # ValueError: a NUL in the name
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a folder opens too (a link word `.`)
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def read_regular(path: Path, inside: Path, cap: int = 64 << 20) -> bytes | None:
    """Up to `cap` bytes of `path` when open_regular opens it; None otherwise."""
    opened = open_regular(path, inside)
    if opened is None:
        return None
    with opened as f:
        return f.read(cap)


def framework_of(program: Path, inside: Path) -> Framework | None:
    """The framework whose mangled names the program's symbol tables hold (GoogleTest
    first: its own report, cxxgate/ctest.py), or None (not ELF, no framework, not a
    regular file in folder `inside`: see open_regular)."""
    found: set[str] = set()
    opened = open_regular(program, inside)
    if opened is None:
        return None
    try:
        with opened as f:
            for section in ELFFile(f).iter_sections():
                if not isinstance(section, SymbolTableSection):
                    continue
                for symbol in section.iter_symbols():
                    name = symbol.name
                    for kind, rx in _SYMBOL.items():
                        if kind not in found and name.startswith("_Z") and rx.match(name):
                            found.add(kind)
                if "gtest" in found:
                    break
    except ELF_ERRORS:
        return None
    order: tuple[Framework, ...] = ("gtest", "catch2", "doctest")
    for kind in order:
        if kind in found:
            return kind
    return None


def reporter_args(framework: Framework, out: str) -> list[str]:
    if framework == "catch2":
        return ["--reporter", "xml", "--out", out]
    return ["--reporters=xml", f"--out={out}"]


def properties(test: dict[str, object]) -> dict[str, object]:
    found: dict[str, object] = {}
    for prop in test.get("properties") or []:  # type: ignore[attr-defined]
        if isinstance(prop, dict) and "name" in prop:
            found[str(prop["name"])] = prop.get("value")
    return found


def environment(
    props: dict[str, object], base: dict[str, str], then: list[str] | None = None
) -> dict[str, str]:
    """A test's environment as ctest sets it over `base`: its `ENVIRONMENT`, then its
    `ENVIRONMENT_MODIFICATION` (`VAR=op:value`, in order), then `then` (more such)."""
    env = dict(base)
    env |= {k: v for k, _, v in (str(e).partition("=") for e in _listed(props, "ENVIRONMENT"))}
    for said in [*_listed(props, "ENVIRONMENT_MODIFICATION"), *(then or [])]:
        var, _, rest = str(said).partition("=")
        op, _, value = rest.partition(":")
        now = env.get(var)
        if op == "reset":
            env.pop(var, None)
            if var in base:
                env[var] = base[var]
        elif op == "unset":
            env.pop(var, None)
        elif op == "set":
            env[var] = value
        elif op in ("string_append", "string_prepend"):
            env[var] = (now or "") + value if op == "string_append" else value + (now or "")
        elif op in ("path_list_append", "cmake_list_append"):
            sep = ":" if op.startswith("path") else ";"
            env[var] = f"{now}{sep}{value}" if now else value
        elif op in ("path_list_prepend", "cmake_list_prepend"):
            sep = ":" if op.startswith("path") else ";"
            env[var] = f"{value}{sep}{now}" if now else value
    return env


def unwrapped(command: list[str]) -> tuple[list[str], list[str]]:
    """A test command that runs its program through `cmake -E env` or `env`: the
    program's own command, and what the wrapper sets, as ENVIRONMENT_MODIFICATION
    entries (`VAR=set:value`, `VAR=unset:`; `--modify` ones as given). Any other command
    is its own program's."""
    name = PurePosixPath(command[0]).name if command else ""
    if name == "cmake" and command[1:3] == ["-E", "env"]:
        rest = command[3:]
    elif name == "env":
        rest = command[1:]
    else:
        return command, []
    said: list[str] = []
    each = iter(rest)
    for word in each:
        if word == "--":
            break
        if word == "--modify":
            said.append(next(each, ""))
        elif word in ("-u", "--unset"):
            said.append(f"{next(each, '')}=unset:")
        elif word.startswith(("--unset=", "-u")):
            said.append(f"{word.removeprefix('--unset=').removeprefix('-u')}=unset:")
        elif "=" in word and not word.startswith("-"):
            var, _, value = word.partition("=")
            said.append(f"{var}=set:{value}")
        else:
            return [word, *each], said
    return list(each), said


def _listed(props: dict[str, object], name: str) -> list[object]:
    value = props.get(name) or []
    return list(value) if isinstance(value, list) else [value]


# (argv, working folder as the run sees it, extra environment, report path as the run
# sees it) -> (exit, timed out); the caller (cxxgate/ctest.py) runs it sandboxed.
Runner = Callable[[list[str], str, dict[str, str]], tuple[int | None, bool]]


def ctest_name(listed: str, names: Collection[str]) -> str:
    """The ctest name a listed test stands for among `names`: itself, else the one name
    equal to it but for case. Multi-SWE-bench lowercases every log line before it reads
    test names (Catch2's `RunTests` is listed as `runtests`); two names differing only in
    case match neither."""
    if listed in names:
        return listed
    folded = [name for name in names if name.casefold() == listed.casefold()]
    return folded[0] if len(folded) == 1 else listed


def report_pass(
    listing: str,
    named: list[str],
    host_path: Callable[[str], Path | None],
    report_at: Callable[[str], str],
    reports: Path,
    run: Runner,
    build: Path,
    base: dict[str, str],
) -> dict[str, Record]:
    """Run each named test's command with its framework's reporter. `host_path` maps a
    path as the run sees it to the harness's view (None: outside the build); `report_at`
    gives the path the run writes a report name to; `reports` is that folder on the
    harness's side; a program is read only inside folder `build` (open_regular); `base`
    is the environment the run starts from, which the test's own modifies (a
    `path_list_prepend` of PATH keeps the rest of PATH). Returns the records; the
    reports stay in `reports`, each under its random name (Record.report)."""
    try:
        tests = {str(t.get("name")): t for t in json.loads(listing).get("tests", [])}
    except (ValueError, AttributeError):
        return {}
    records: dict[str, Record] = {}
    kinds: dict[Path, Framework | None] = {}  # many discovered tests share one program
    for listed in named:
        name = ctest_name(listed, tests)
        test = tests.get(name)
        command = [str(w) for w in (test or {}).get("command") or []]
        if not command:
            continue
        # A program run through `cmake -E env` is its framework's; the reporter's words
        # go to it, last on the line.
        runs = (unwrapped(command)[0] or command)[0]
        host = host_path(runs)
        if host is not None and host not in kinds:
            kinds[host] = framework_of(host, build)
        kind = kinds[host] if host is not None else None
        program = PurePosixPath(runs).name
        if kind in (None, "gtest"):
            records[name] = Record(kind or "", program)
            continue
        props = properties(test or {})
        env = environment(props, base)
        cwd = str(props.get("WORKING_DIRECTORY") or PurePosixPath(command[0]).parent)
        file = f"{secrets.token_hex(12)}.xml"
        exit, timed_out = run([*command, *reporter_args(kind, report_at(file))], cwd, env)
        kept = file if (reports / file).exists() else None
        records[name] = Record(kind, program, kept, exit, timed_out)
    return records


def write_records(records: dict[str, Record], path: Path) -> None:
    data = {name: asdict(r) for name, r in sorted(records.items())}
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def read_records(path: Path) -> dict[str, Record]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): Record(**v) for k, v in data.items() if isinstance(v, dict)}
