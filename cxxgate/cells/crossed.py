"""The listed tests again, on test programs linked as the reference links them (kind `crossed`:
a ctest cell that needs the candidate's build, the reference's ctest cell and its own).

The tests gate reads where each test program holds the library's code from (the map and
symbol rules of cxxgate/cells/relink.py), and a hostile build can always find another way
to put a fixed copy into the test programs that a reading does not reach: a hook only the
tests define as an absolute symbol, a second archive linked first, an inline copy whose
difference lies deeper than the digest looks. This cell does not read; it builds.

Each test program of the reference's build (a link naming a test unit's object) is linked
again in the candidate's build folder, read-only, with the reference's own link command
(cxxgate/cells/ctest.py keeps it spelt in graph.json): the same options, the same objects
and archives by path, so the candidate's test objects (compiled as the reference's are:
the gate compares their commands) and the candidate's library archives, and nothing else.
- The candidate's command is the reference's word for word and its program is what that
  command makes of the build (the candidate's own re-link said so): the program the suite
  ran is the reference's recipe over this build already. Nothing runs (`same`).
- Otherwise the link runs. The same bytes as the candidate's program: `same`. Other bytes
  (`relinked`): the new program is put in the suite's copy of the build in place of the
  candidate's, and every listed test whose command names it, or names no test program at
  all, runs again under ctest as in the candidate's own run, registered as the
  reference's run listed it (the candidate's registrations are compared with those, and
  no script of the project's decides here which tests run or how). A test that passed on the
  candidate's program and not on this one passed because of what the candidate's link
  added: `library_bypassed` (gates/tests/suite.py). A link that fails says why, and the
  gate refuses it too (an honest patch whose test programs need a library file the
  reference's build does not make is refused: README, threat model).
- A reference link the harness does not run (no compiler driver of the system: fmt's CUDA
  test, device-linked by nvcc) cannot be made here. When no listed test can reach what it
  makes (`excuse`), the program is `unused` and nothing rests on it; otherwise it is
  refused as a link that fails.

The reference's command names archives by path, so the archives of the tests' own (every
member the reference compiled from a test source: a vendored GoogleTest, a test `main`
library) are made again first, by the `ar` and `ranlib` parts of the reference's archive
command, from the build's objects (each test unit's object is what its compile makes:
cxxgate/cells/ctest.py `_again`). Another step of the build that rewrote one after its own
command (objcopy adding a symbol) leaves other bytes: the remade archive stands in its place
(`remade`), and every test program that links it is crossed.

An honest patch changes the library, not how the tests link it, so it costs no link here:
an archive is made again and found the same bytes, nothing more.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from pathlib import Path, PurePosixPath
from typing import Any

from cxxgate.cells import relink

# {"programs": program -> SAME | RELINKED | why its link failed, "archives": archive ->
# SAME | REMADE | why not, "tests": the tests run again}
JSON = "crossed.json"
SAME = "same"
RELINKED = "relinked"
REMADE = "remade"
# The reference's link of a program no listed test runs is one the harness cannot run
# (nvcc's device link of fmt's CUDA test): not linked, and nothing rests on it.
UNUSED = "unused"
NOT_RUN = "the reference's link command cannot be run here"
# A system archiver (ar, gcc-ar, llvm-ar, any prefix or version) or its index maker.
_ARCHIVER = re.compile(r"(?:[\w.]+-)*(?:ar|ranlib)(?:-[\d.]+)?")


def in_dirs(source: str, test_dirs: list[str]) -> bool:
    """Whether a spelt source path (`<tree>/...`) lies in one of the test folders."""
    if not source.startswith("<tree>/"):
        return False
    rel = PurePosixPath(source.removeprefix("<tree>/"))
    return any(d == "." or rel.is_relative_to(d) for d in test_dirs)


def members(graph: dict[str, Any], archive: str) -> set[str]:
    """The sources an archive command's objects were compiled from (an object no compile
    made: its own name)."""
    compiles = graph.get("compiles", {})
    words = graph.get("links", {}).get(archive, [])
    return {compiles.get(w, w) for w in words if w in compiles or w.endswith((".o", ".obj"))}


def test_archives(ref: dict[str, Any], test_dirs: list[str]) -> list[str]:
    """The archives the reference's test programs link whose members it compiled from
    test sources only: a vendored GoogleTest, a test `main` library. The library's own
    archives are the patch's to change; these are not, and the crossed link names them
    by path, so each is made again here (remake)."""
    links = ref.get("links", {})
    named = {w for p in ref.get("programs", {}) for w in links.get(p, [])}
    return sorted(
        a for a in named
        if a.endswith(".a") and a in links and members(ref, a)
        and all(in_dirs(s, test_dirs) for s in members(ref, a))
    )  # fmt: skip


def remake(
    archive: str, words: list[str], copy: Path, build_at: str, host: Path, seen: str,
    run: relink.Runner,
) -> str:
    """The archive made again by the `ar` and `ranlib` parts of the reference's own
    command (`words`, unspelt) over the build's copy, into the scratch folder: SAME when
    the build's archive has those bytes, REMADE when the new one now stands in its place
    (another step of the build rewrote it after its own command: an absolute symbol
    added by objcopy, an index that names a member for a symbol it does not define), or
    why it could not be made."""
    made = host / "archive"
    made.unlink(missing_ok=True)
    targets = {archive, posixpath.join(build_at, archive)}
    parts: list[list[str]] = [[]]
    for word in words:
        if word in ("&&", ";", "||"):
            parts.append([])
        else:
            parts[-1].append(word)
    ran = 0
    for part in parts:
        if not part or not _archiver(part[0]) or not targets & set(part):
            continue
        argv = [f"{seen}/archive" if w in targets else w for w in part]
        code, said = run(argv, "")
        if code != 0:
            return f"the reference's archive command fails on this build: {said.strip()[-300:]}"
        ran += 1
    if not ran:
        return "the reference's archive command runs no archiver of the system"
    return _placed(made, host, copy, archive, REMADE)


def _archiver(word: str) -> bool:
    if not word.startswith("/"):
        return False
    real = os.path.realpath(word)
    return real.startswith("/usr/") and _ARCHIVER.fullmatch(Path(real).name) is not None


def to_cross(mine: dict[str, object], ref: dict[str, object]) -> list[str]:
    """The reference's test programs whose candidate link is not the reference's recipe
    already: another command (spelt), none, or a re-link of its own that failed."""
    ref_commands: dict[str, str] = ref.get("programs", {})  # type: ignore[assignment]
    commands: dict[str, str] = mine.get("programs", {})  # type: ignore[assignment]
    linked: dict[str, dict[str, object]] = mine.get("linked", {})  # type: ignore[assignment]
    return sorted(
        program
        for program, command in ref_commands.items()
        if commands.get(program) != command or linked.get(program, {}).get("why", "?")
    )


def cross(
    program: str,
    command: str,
    copy: Path,
    build_at: str,
    host: Path,
    seen: str,
    run: relink.Runner,
) -> str:
    """Link `program` with the reference's command (unspelt) over the build's copy into
    the scratch folder (`host`, seen by the link as `seen`); SAME, RELINKED (the new
    program now stands in the copy in place of the build's), or why the link failed."""
    found = relink.link_argv(command, program, build_at)
    if isinstance(found, str):
        return f"{NOT_RUN}: {found}"
    argv, at, cd = found
    made = host / "program"
    made.unlink(missing_ok=True)
    argv = [*argv[:at], f"{seen}/program", *argv[at + 1 :]]
    code, said = run(argv, cd)
    if code != 0:
        return f"the reference's link of it fails on this build: {said.strip()[-300:]}"
    return _placed(made, host, copy, program, RELINKED)


def _placed(made: Path, host: Path, copy: Path, path: str, replaced: str) -> str:
    """SAME when the build's file at `path` has the bytes of the one the harness made,
    `replaced` once that one stands in its place, or why not."""
    new = relink.digest(made, host)
    if not new:
        return "the reference's command made nothing"
    if new == relink.digest(copy / path, copy):
        return SAME
    return _put(made, copy, path) or replaced


def _put(made: Path, copy: Path, path: str) -> str:
    """The harness's new file in the copy at `path`, written by the harness (root) only
    through folders of the copy: the candidate's build may have made a folder of that
    path a link out of the build, or the path itself a folder. "" or why not."""
    folder = copy
    for part in Path(path).parent.parts:
        folder = folder / part
        if folder.is_symlink() or not folder.is_dir():
            return f"the folder {folder.relative_to(copy)} is not a folder of the build"
    target = folder / Path(path).name
    if target.is_dir() and not target.is_symlink():
        return "the build made a folder where the reference's link makes the program"
    target.unlink(missing_ok=True)  # a link to the build cell's file: never written through
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755)
    with os.fdopen(fd, "wb") as f:
        f.write(made.read_bytes())
    return ""


def pick(
    listing: str, crossed: dict[str, str], known: list[str], named: list[str], build_at: str
) -> tuple[str, list[str]]:
    """The reference's listing (json, at this run's paths) cut to the tests that run
    again, and their names: a listed one (`named`, by folded name) whose command names a
    relinked program, or names none of the reference's test programs (`known`): what it
    runs is then not known; every listed one when a shared library was relinked to other
    bytes (a test's command names its program, not what the program loads: red-team
    round 15's hot patch in a shared library of the tests')."""
    relinked = {posixpath.join(build_at, p) for p, said in crossed.items() if said == RELINKED}
    programs = {posixpath.join(build_at, p) for p in known}
    folded = {n.casefold() for n in named}
    shared = any(_shared(p) for p in relinked)

    def again(test: dict[str, object]) -> bool:
        if str(test.get("name", "")).casefold() not in folded:
            return False
        words = test.get("command") or []
        paths = {posixpath.normpath(str(w)) for w in words} if isinstance(words, list) else set()
        return shared or bool(paths & relinked) or not paths & programs

    found = json.loads(listing)
    found["tests"] = [t for t in found.get("tests", []) if isinstance(t, dict) and again(t)]
    return json.dumps(found), sorted(str(t.get("name", "")) for t in found["tests"])


def excuse(
    found: dict[str, str],
    links: dict[str, list[str]],
    listing: str,
    known: list[str],
    named: list[str],
    build_at: str,
) -> dict[str, str]:
    """`found` with UNUSED for each program whose reference link the harness cannot run
    and that no listed test can reach: no listed test's command names it or anything whose
    link or archive command mentions its name (followed on), none names no known test
    program (what it runs is not known), and it is no shared library (any program may
    load one). Every link and archive named here is the reference's: the patch shapes
    none of it."""
    folded = {n.casefold() for n in named}
    tests = [
        {posixpath.normpath(str(w)) for w in t.get("command") or [] if isinstance(w, str)}
        for t in json.loads(listing).get("tests", [])
        if isinstance(t, dict) and str(t.get("name", "")).casefold() in folded
    ]
    programs = {posixpath.join(build_at, p) for p in known}
    blind = any(not words & programs for words in tests)

    def reached(program: str) -> set[str]:
        seen, todo = {program}, [program]
        while todo:
            name = posixpath.basename(todo.pop())
            for made, words in links.items():
                if made not in seen and any(name in w for w in words):
                    seen.add(made)
                    todo.append(made)
        return seen

    def unused(program: str) -> bool:
        made = {posixpath.join(build_at, p) for p in reached(program)}
        return not (blind or any(_shared(p) for p in made) or any(w & made for w in tests))

    return {
        p: UNUSED if said.startswith(NOT_RUN) and unused(p) else said
        for p, said in found.items()
    }


def _shared(path: str) -> bool:
    name = posixpath.basename(path)
    return name.endswith(".so") or ".so." in name


def write(
    path: Path, programs: dict[str, str], archives: dict[str, str], tests: list[str]
) -> None:
    record = {"programs": programs, "archives": archives, "tests": tests}
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def read(path: Path) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """(program -> what its link said, archive -> what its command said, the tests run
    again); nothing for a missing record."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}, {}, []
    return (dict(record.get("programs", {})), dict(record.get("archives", {})),
            list(record.get("tests", [])))  # fmt: skip
