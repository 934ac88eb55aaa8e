"""The build folder's memory of past grades: `history.sqlite3`.

Each grade records its time, identity (the pins of every case it graded), counts, exit
status and seed, and each row's verdict, class, gate classes and the evidence it points
to. `doit compare` lists what flipped since the previous grade of the same identity;
`doit prune keep=N` deletes what no grade of the last N refers to (cxxgate/store/prune.py).

Rows are compared only within one identity: a row whose case pins moved (a prompt
re-frozen, a gate edited) is a different experiment, and comparing across identities
has to be asked for (`across=1`), and then names the pins that differ.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from doit.exceptions import TaskFailed

from cxxgate.store import codehash

SCHEMA = """
create table if not exists grades (
    id integer primary key autoincrement,
    time real not null,
    identity text not null,   -- digest over (case, case identity digest) of the cases graded
    pins text not null,       -- {case: {prompt, oracles, grader, toolchains}}
    counts text not null,     -- {verdict or class: rows}
    exit integer not null,
    seed text not null
);
create table if not exists rows (
    grade integer not null references grades(id),
    row text not null,        -- case/patch
    sha text not null,        -- the patch's bytes
    verdict text not null,
    class text not null,
    gates text not null,      -- {gate: class}
    primary key (grade, row)
);
create table if not exists evidence (
    grade integer not null references grades(id),
    path text not null,       -- relative to the build folder: trees/, cells/, runs/, scans/
    primary key (grade, path)
);
"""


@dataclass(frozen=True)
class Grade:
    id: int
    time: float
    identity: str
    pins: dict[str, Any]
    counts: dict[str, int]
    exit: int
    seed: str


@dataclass(frozen=True)
class Flip:
    row: str
    before: str  # "reject (surface_regression)"
    after: str


@contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    with closing(sqlite3.connect(path, timeout=30)) as db:
        db.executescript(SCHEMA)
        with db:
            yield db


def record(path: Path, rows: list[dict[str, Any]], exit_status: int, seed: str = "") -> int:
    """Store one grade (verdicts.jsonl's rows); return its id."""
    pins = pins_of(rows)
    counts: dict[str, int] = {}
    for row in rows:
        word = row["verdict"] if row["class"] == "accept" else row["class"]
        counts[word] = counts.get(word, 0) + 1
    with connect(path) as db:
        cursor = db.execute(
            "insert into grades (time, identity, pins, counts, exit, seed) values (?,?,?,?,?,?)",
            (
                time.time(),
                identity_of(pins),
                json.dumps(pins, sort_keys=True),
                json.dumps(counts, sort_keys=True),
                exit_status,
                seed,
            ),
        )
        grade = cursor.lastrowid
        assert grade is not None
        db.executemany(
            "insert or replace into rows values (?,?,?,?,?,?)",
            [(grade, *_row(r)) for r in rows],
        )
        db.executemany(
            "insert or ignore into evidence values (?,?)",
            [(grade, e) for r in rows for e in r.get("evidence", [])],
        )
    return grade


def pins_of(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each graded case's pins, from the identity its rows carry."""
    pins = {}
    for row in rows:
        identity = row.get("identity")
        if isinstance(identity, dict):
            pins[row["case"]] = {k: identity[k] for k in ("prompt", "oracles", "grader")} | {
                "toolchains": {e: t["sha"] for e, t in identity["toolchains"].items()}
            }
    return pins


def _row(r: dict[str, Any]) -> tuple[str, str, str, str, str]:
    gates = json.dumps({g: v["class"] for g, v in r["gates"].items()}, sort_keys=True)
    return f"{r['case']}/{r['patch']}", r.get("sha", ""), r["verdict"], r["class"], gates


def identity_of(pins: dict[str, Any]) -> str:
    return codehash.of_text(json.dumps(pins, sort_keys=True))[:16]


def grades(path: Path) -> list[Grade]:
    """Every recorded grade, oldest first."""
    if not path.exists():
        return []
    with connect(path) as db:
        found = db.execute("select * from grades order by id").fetchall()
    return [Grade(g[0], g[1], g[2], json.loads(g[3]), json.loads(g[4]), g[5], g[6]) for g in found]


def previous(path: Path, latest: Grade) -> Grade | None:
    """The last grade before `latest` with the same identity."""
    same = [g for g in grades(path) if g.id < latest.id and g.identity == latest.identity]
    return same[-1] if same else None


def flips(path: Path, before: Grade, after: Grade) -> list[Flip]:
    """Rows graded in both whose verdict, class or a gate's class moved."""
    with connect(path) as db:
        old = {r[0]: r[1:] for r in db.execute(_ROWS, (before.id,))}
        new = {r[0]: r[1:] for r in db.execute(_ROWS, (after.id,))}
    return _compare(old, new)


def since_previous(path: Path, rows: list[dict[str, Any]]) -> tuple[Grade | None, list[Flip]]:
    """The last recorded grade of these rows' identity, and what flipped since: asked
    before the grade is recorded, so report.md can list the flips."""
    identity = identity_of(pins_of(rows))
    same = [g for g in grades(path) if g.identity == identity]
    if not same:
        return None, []
    with connect(path) as db:
        old = {r[0]: r[1:] for r in db.execute(_ROWS, (same[-1].id,))}
    return same[-1], _compare(old, {r[0]: r[1:] for r in map(_row, rows)})


def _compare(old: dict[str, Any], new: dict[str, Any]) -> list[Flip]:
    """A row is its case and patch name: a nightly candidate keeps its name while its bytes
    change, and the flip then says `(patch changed)`."""
    found = []
    for row in sorted(old.keys() & new.keys()):
        (sha0, v0, c0, g0), (sha1, v1, c1, g1) = old[row], new[row]
        if (v0, c0, g0) != (v1, c1, g1):
            now = _word(v1, c1, g1, g0) + (" (patch changed)" if sha0 != sha1 else "")
            found.append(Flip(row, _word(v0, c0, g0, g1), now))
    return found


_ROWS = "select row, sha, verdict, class, gates from rows where grade = ?"


def _word(verdict: str, klass: str, gates: str, other: str) -> str:
    mine, theirs = json.loads(gates), json.loads(other)
    moved = [f"{g}={c}" for g, c in sorted(mine.items()) if theirs.get(g) != c]
    return f"{verdict} ({klass})" + (f" [{', '.join(moved)}]" if moved else "")


def summary(grade_id: int, before: Grade | None, moved: list[Flip]) -> list[str]:
    """What a grade prints about history: its number and what flipped."""
    if before is None:
        return [f"history: grade #{grade_id}, the first of its identity"]
    lines = [f"history: grade #{grade_id}; {len(moved)} row(s) flipped since #{before.id}"]
    return lines + [f"  {f.row}: {f.before} -> {f.after}" for f in moved]


def compare(path: Path, across: bool) -> TaskFailed | None:
    """`doit compare`: the latest grade against the previous one of its identity."""
    every = grades(path)
    if not every:
        return TaskFailed(f"{path}: no grade recorded yet: run `doit grade` first")
    latest = every[-1]
    before = previous(path, latest)
    if before is None:
        if len(every) < 2:
            print(f"grade #{latest.id} is the only one recorded: nothing to compare")
            return None
        other = every[-2]
        differ = pins_differ(other, latest)
        if not across:
            return TaskFailed(
                f"grade #{latest.id} and the grade before it (#{other.id}) have different "
                "identities; rows are not compared across identities unless asked "
                "(`doit compare across=1`). Pins that differ:\n  " + "\n  ".join(differ)
            )
        print(f"comparing across identities (#{other.id} -> #{latest.id}); pins that differ:")
        for line in differ:
            print(f"  {line}")
        before = other
    moved = flips(path, before, latest)
    print(f"grade #{before.id} -> #{latest.id}: {len(moved)} row(s) flipped")
    for flip in moved:
        print(f"  {flip.row}: {flip.before} -> {flip.after}")
    return None


def pins_differ(before: Grade, after: Grade) -> list[str]:
    """Which case pins differ between two grades, one line each."""
    lines = []
    for case in sorted(before.pins.keys() | after.pins.keys()):
        a, b = before.pins.get(case), after.pins.get(case)
        if a is None or b is None:
            lines.append(f"{case}: graded in only one of the two")
            continue
        moved = [pin for pin in ("prompt", "oracles", "grader", "toolchains") if a[pin] != b[pin]]
        if moved:
            lines.append(f"{case}: {', '.join(moved)} differ")
    return lines


@dataclass(frozen=True)
class Kept:
    grades: list[Grade]
    evidence: set[str]  # paths relative to the build folder
    rows: set[str]  # case/patch
    shas: set[str]  # patch bytes


def kept(path: Path, keep: int) -> Kept:
    """The last `keep` grades and everything they refer to."""
    last = grades(path)[-keep:] if keep > 0 else []
    evidence: set[str] = set()
    rows: set[str] = set()
    shas: set[str] = set()
    with connect(path) as db:
        for g in last:
            evidence.update(p for (p,) in db.execute(_EVIDENCE, (g.id,)))
            for row, sha in db.execute("select row, sha from rows where grade = ?", (g.id,)):
                rows.add(row)
                shas.add(sha)
    return Kept(last, evidence, rows, shas)


_EVIDENCE = "select path from evidence where grade = ?"


def forget_before(path: Path, first_kept: int) -> None:
    with connect(path) as db:
        for table, column in (("evidence", "grade"), ("rows", "grade"), ("grades", "id")):
            db.execute(f"delete from {table} where {column} < ?", (first_kept,))
