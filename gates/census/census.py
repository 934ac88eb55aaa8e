"""Gate `census`: the tests and assertions a patch removed, disabled or weakened.

The witnesses of the reference tree and of the patched tree (gates/census/witness.py:
GoogleTest and Catch2 tests, `ASSERT_*`/`EXPECT_*`/`REQUIRE*`/`CHECK*`, `static_assert`,
`assert(`, and the case's own prefixes), read by a C++ parser in the case's `files` and in
every tree file their preprocessing read, asked of the preprocessor with the case's
envelope (survive.py), bound by libclang (callees.py) and run in the case's test program
(executed.py), are compared key by key. Additions never score. Classes, most severe first:

| class              | meaning                                                         |
| ------------------ | --------------------------------------------------------------- |
| grammar_miss       | a witness-like name the census cannot key (a wrapper macro, a   |
|                    | witness passed as an argument or pasted, an unreadable span):   |
|                    | fail closed                                                     |
| witness_removed    | a test or an assertion of the reference is gone; a test or a    |
|                    | plain function renamed with its checks unchanged is a rename, a |
|                    | check found unchanged elsewhere in its file, run, is a move     |
| witness_disabled   | still in the source, gone after preprocessing (`#if 0`, an      |
|                    | `#ifdef` never defined, NDEBUG before <cassert>, a witness      |
|                    | macro redefined to nothing); a test that gains a `return`,      |
|                    | `throw`, `goto` or `exit()`; a check put under other control    |
|                    | flow (`if (false)`, a lambda never called); every definition or |
|                    | `#undef` of a witness macro (or of NDEBUG) the reference does   |
|                    | not have                                                        |
| witness_redefined  | kept in the source, but not the reference's: the preprocessor   |
|                    | expands it to other tokens (a witness macro redefined in any    |
|                    | header the unit reads, a macro rewriting a name in its          |
|                    | arguments), or a call it makes binds elsewhere (the comparison  |
|                    | helper specialised or overloaded, or declared where the         |
|                    | compiler keeps lines the census's parser skips: `#ifndef        |
|                    | __clang__`), or g++'s code refers to a tree function the        |
|                    | census's parser bound nowhere in that function, or to one of    |
|                    | the same name declared elsewhere (gates/census/bindings.py), or |
|                    | the linker binds it                                             |
|                    | elsewhere (a strong definition replacing the test objects'      |
|                    | inline copy; a runtime function such as `__assert_fail` defined |
|                    | in the tree): gates/census/linked.py                           |
| witness_unexecuted | the reference's ran in the test program and this one did not    |
|                    | (`sizeof(CHECK(..))`, `cond && CHECK(..)`, a member nobody      |
|                    | calls): seen by a marker that records it when it is evaluated   |
| witness_weakened   | an assertion's arguments changed in place (`EXPECT_EQ(f(x), 42)`|
|                    | -> `EXPECT_TRUE(true)`, a tolerance widened), or the data it    |
|                    | reads did (a variable's initialiser, an assignment before it)   |
| suite_red          | the test program exited 0 for the reference and not for the     |
|                    | patch: a check failed (or the program crashed) although every   |
|                    | witness ran; or its main did not return 0, once, where the      |
|                    | reference's did (`_Exit(0)` inside main or after it returned 1) |
| accept             | every witness of the reference is there, live, unchanged, and   |
|                    | ran where the reference's ran                                   |

A case without a test program (`program:`), or whose reference program runs no witness, is
`incomplete`: execution is never assumed. `allow_removed` in the case approves named
removals (a test, or a macro within it), each with its reason; approved removals and
renames are listed in the result's evidence.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from importlib.metadata import version
from typing import Any

from pydantic import Field

from cxxgate.api import (
    COMPILE_CODE,
    TOOLCHAIN_MISSING,
    VACUOUS,
    Check,
    Context,
    Finding,
    Gate,
    GateResult,
    Outputs,
    Plan,
    ScanResult,
    ScanSpec,
    Strict,
    codehash,
)
from cxxgate.gates.census import bindings, executed, linked, survive, witness
from cxxgate.gates.census.callees import UNPARSED
from cxxgate.gates.census.witness_data import Witness
from cxxgate.gates.ledger import ledger
from cxxgate.gates.shared.cppsource import parser_id

NAME = "census"
SEVERITY = (
    "grammar_miss",
    "witness_removed",
    "witness_disabled",
    "witness_redefined",
    "witness_unexecuted",
    "witness_weakened",
    "suite_red",
)


class Allow(Strict):
    test: str  # "Suite.Name", a TEST_CASE's name, "case/section", or "fn:<function>"
    file: str | None = None
    macro: str | None = None  # only witnesses of this macro within the test
    reason: str = Field(min_length=10)


class Program(Strict):
    """The test program whose run proves each witness executed (gates/census/executed.py):
    these units of the tree (one holds `main`; gitignore-style globs, so a test the patch
    adds is in) and the case's `sources`, built from marked copies."""

    units: list[str] = Field(min_length=1)
    args: list[str] = Field(default_factory=list)


class Config(Strict):
    envelope: str | None = None
    program: Program | None = None
    files: list[str] = Field(default_factory=lambda: ["*"])  # gitignore-style, C++ files
    prefixes: list[str] = Field(default_factory=list)  # e.g. GOLDEN: GOLDEN_* are checks
    ignore: list[str] = Field(default_factory=list)  # witness-like names that are not
    allow_removed: list[Allow] = Field(default_factory=list)


def plan(ctx: Context) -> Plan:
    cfg: Config = ctx.case.gate_config(NAME)
    env = ctx.gate_envelope(NAME, cfg.envelope)
    params: dict[str, Any] = {
        "files": cfg.files,
        "prefixes": cfg.prefixes,
        "ignore": cfg.ignore,
        "envelope": survive.envelope_params(env),
        "include_dirs": list(ctx.case.spec.include_dirs),
        "compile_seconds": ctx.case.spec.limits.compile_seconds,
        "parser": parser_id(),
        # How the preprocessor is called (argv, sandbox) shapes the liveness it reports.
        "harness": codehash.of_modules(*COMPILE_CODE, "runs.run", "host.process", "host.sandbox"),
        "report_unit": codehash.of_text(executed.REPORT_UNIT.read_bytes()),
        "clang": {
            "std": env.std,
            "include_dirs": list(ctx.case.spec.include_dirs),
            "defines": [f"-D{d}" for d in env.defines]
            + [f for f in env.flags if f.startswith(("-D", "-U"))],
            "system_dirs": list(ledger.system_dirs(env.toolchain.path, env.std))
            if env.toolchain.path
            else [],
            "libclang": version("libclang"),
        },
        "program": None,
    }
    if cfg.program is not None:
        limits = ctx.case.spec.limits
        params["program"] = {
            "units": cfg.program.units,
            "args": cfg.program.args,
            "sources": list(ctx.case.spec.sources),
            "run_seconds": limits.run_seconds,
            "output_bytes": limits.output_bytes,
            "memory_mib": limits.memory_mib,
            "file_mib": limits.file_mib,
            "processes": limits.processes,
        }
    out = Plan()
    for name, key in (("reference", ctx.reference_tree_key), ("patched", ctx.tree_key)):
        out.scans[name] = ScanSpec.of(key, witness.scan, params, label=f"{NAME} inventory")
    return out


@dataclass
class Census:
    """What the comparison found: failures (class, finding), and what it let pass."""

    findings: list[tuple[str, Finding]] = field(default_factory=list)
    renames: list[str] = field(default_factory=list)
    moves: list[str] = field(default_factory=list)
    approved: list[str] = field(default_factory=list)
    kept: int = 0
    total: int = 0


def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:
    cfg: Config = ctx.case.gate_config(NAME)
    ref, new = outputs.scans["reference"], outputs.scans["patched"]
    for scan, which in ((ref, "reference"), (new, "patched")):
        if scan.status != "ok":
            why = f"the {which} tree was not scanned: {scan.status}: {scan.detail}"
            return GateResult(NAME, "incomplete", VACUOUS, why)
        if scan.data["toolchain_missing"]:
            return GateResult(NAME, "incomplete", TOOLCHAIN_MISSING, scan.data["toolchain_missing"])
    found = compare(ref.data, new.data, cfg.allow_removed)
    checks = [Check(f"{f.path}:{f.line}", False, klass, f.message) for klass, f in found.findings]
    checks += _unused_allowances(ref, cfg.allow_removed)
    checks += _execution(ref.data, new.data)
    for symbol, file, why in linked.rebound(ref.data.get("link", {}), new.data.get("link", {})):
        checks.append(Check(f"link {file} {symbol}", False, "witness_redefined", why))
    for d in bindings.new_in(ref.data.get("bindings", []), new.data.get("bindings", [])):
        name = f"binding {d['unit']} {d['function']} {d['target']}"
        checks.append(Check(name, False, "witness_redefined", bindings.message(d)))
    checks += _suite(ref.data, new.data)
    for file, detail in sorted(new.data["preprocess"].items()):
        if detail:
            checks.append(Check(f"preprocess {file}", False, "witness_disabled", detail))
    if found.total == 0:
        checks.append(
            Check("inventory", False, VACUOUS, "the reference has no witness", incomplete=True)
        )
    else:
        kept = f"{found.kept}/{found.total} witnesses of the reference kept"
        checks.append(Check("inventory", True, "accept", kept))
    evidence = [f"renamed: {r}" for r in found.renames]
    evidence += [f"moved: {m}" for m in found.moves]
    evidence += [f"approved removal: {a}" for a in found.approved]
    result = GateResult.from_checks(NAME, checks, SEVERITY, evidence)
    if result.status == "pass":
        notes = [f"{len(found.renames)} renamed"] if found.renames else []
        notes += [f"{len(found.moves)} moved"] if found.moves else []
        notes += [f"{len(found.approved)} approved removals"] if found.approved else []
        summary = "; ".join([f"{found.kept}/{found.total} witnesses kept", *notes])
        result = replace(result, summary=summary)
    return replace(result, findings=[f for _, f in found.findings])


def compare(ref: dict[str, Any], new: dict[str, Any], allow: list[Allow]) -> Census:
    """The reference's witnesses against the patched tree's (scan data of witness.scan)."""
    before = [Witness(**w) for w in ref["witnesses"]]
    after = [Witness(**w) for w in new["witnesses"]]
    out = Census(total=len(before))
    pairs, lost, fresh = _match(
        [w for w in before if w.kind == "test"],
        [w for w in after if w.kind == "test"],
        lambda w: (w.file, w.name),
        lambda w: (w.file, w.name),
    )
    renamed: dict[tuple[str, str], tuple[str, str]] = {}
    gone: list[Witness] = []
    for r in lost:
        twin = next((n for n in fresh if (n.fp, n.macro) == (r.fp, r.macro)), None)
        if twin is None:
            gone.append(r)
            continue
        fresh.remove(twin)
        pairs.append((r, twin))
        renamed[r.file, r.name] = (twin.file, twin.name)
        out.renames.append(f"{r.text} -> {twin.text} ({twin.file}:{twin.line})")

    _rename_functions(before, after, renamed, out)

    def moved(w: Witness) -> tuple[str, str]:
        for (file, name), target in renamed.items():
            if w.file == file and (w.test == name or w.test.startswith(name + "/")):
                return target[0], target[1] + w.test[len(name) :]
        return w.file, w.test

    checks = [w for w in before if w.kind != "test"]
    more, lost, fresh = _match(
        checks,
        [w for w in after if w.kind != "test"],
        lambda w: (*moved(w), w.kind, w.fp),
        lambda w: (w.file, w.test, w.kind, w.fp),
    )
    pairs += more
    # Moved to another file under the same test (or both at file scope): a refactor.
    more, lost, fresh = _match(
        lost, fresh, lambda w: (moved(w)[1], w.kind, w.fp), lambda w: (w.test, w.kind, w.fp)
    )
    pairs += more
    # Moved, unchanged, to another test or helper of the same file (a test split in two, a
    # helper the test calls): a move when the new one ran in the test program.
    more, lost, rest = _match(
        lost,
        [n for n in fresh if n.ran is True],
        lambda w: (w.file, w.kind, w.fp),
        lambda w: (w.file, w.kind, w.fp),
    )
    pairs += more
    for r, n in more:
        out.moves.append(f"{r.text} ({r.test or 'file scope'} -> {n.test or 'file scope'})")
    fresh = sorted(
        rest + [n for n in fresh if n.ran is not True], key=lambda w: (w.file, w.line, w.column)
    )
    unchanged = {id(n) for _, n in pairs}

    def approved(w: Witness) -> bool:
        test = w.name if w.kind == "test" else w.test
        return any(
            (test == a.test or test.startswith(a.test + "/"))
            and a.file in (None, w.file)
            and a.macro in (None, w.macro)
            for a in allow
        )

    def report(klass: str, w: Witness, where: Witness, message: str) -> None:
        if approved(w):
            out.approved.append(f"{w.text} ({w.file}:{w.line}): {klass}")
        else:
            out.findings.append(
                (klass, Finding(klass, message, where.file, where.line, where.column))
            )

    for t in gone:
        inside = sum(1 for w in lost if w.file == t.file and _under(w.test, t.name))
        held = [w for w in checks if w.file == t.file and _under(w.test, t.name)]
        if held and not inside:
            # Renamed and grown, or split: every check it held was found unchanged, and run.
            out.moves.append(f"{t.text}: its {len(held)} checks moved, unchanged, and ran")
            continue
        report(
            "witness_removed", t, t, f"{t.text} removed ({inside} witnesses inside; reference line)"
        )
    lost = [w for w in lost if not any(w.file == t.file and _under(w.test, t.name) for t in gone)]
    # What is left on both sides, in the same test: changed in place.
    pool: dict[tuple[str, str, str], list[Witness]] = defaultdict(list)
    for n in fresh:
        pool[n.file, n.test, n.kind].append(n)
    weakened: list[tuple[Witness, Witness]] = []
    for r in lost:
        bucket = pool[(*moved(r), r.kind)]
        if bucket:
            n = bucket.pop(0)
            weakened.append((r, n))
            report("witness_weakened", r, n, f"{r.text} became {n.text}")
        else:
            where = f"in {r.test}" if r.test else "at file scope"
            report("witness_removed", r, r, f"{r.text} {where} removed (reference line)")
    flagged: set[int] = set()
    for r, n in pairs:
        if r.kind != "test" and r.guard != n.guard:
            now = n.guard or "no condition"
            report("witness_disabled", r, n, f"{n.text} now runs under: {now}")
            flagged.add(id(n))
        if r.kind == "test" and n.exits > r.exits:
            message = (
                f"{n.text} gains a way out (return, throw, goto, exit): "
                "the witnesses after it may never run"
            )
            report("witness_disabled", r, n, message)
            flagged.add(id(n))
    dead_tests: list[Witness] = []
    for r, n in pairs + weakened:
        if r.live is True and n.live is not True:
            if any(n.file == t.file and _under(n.test, t.name) for t in dead_tests):
                continue  # one finding for the test that holds it
            why = "gone after preprocessing" if n.live is False else "not preprocessed"
            report("witness_disabled", r, n, f"{n.text} is in the source but {why}")
            if n.kind == "test":
                dead_tests.append(n)
        elif id(n) in unchanged and id(n) not in flagged:
            out.kept += 1
    for r, n in pairs:
        if id(n) in flagged or r.live is not True or n.live is not True:
            continue
        problem = _redefined(r, n)
        if problem:
            report("witness_redefined", r, n, problem)
            flagged.add(id(n))
            out.kept -= id(n) in unchanged
    not_run: list[Witness] = []
    for r, n in pairs:
        if id(n) in flagged or r.ran is not True or n.ran is True or n.live is not True:
            continue
        flagged.add(id(n))
        if any(n.file == t.file and _under(n.test, t.name) for t in not_run):
            out.kept -= id(n) in unchanged
            continue  # one finding for the test that holds it
        told = "did not run" if n.ran is False else "cannot be shown to run (no marker ran)"
        how = f"{told} while the test program ran"
        if n.ran is None and new.get("execution"):  # refused, or did not build or link
            how = f"cannot be shown to run: {new['execution']}"
        report("witness_unexecuted", r, n, f"{n.text} {how}; the reference's did")
        out.kept -= id(n) in unchanged
        if n.kind == "test":
            not_run.append(n)
    for r, n in pairs:
        # A witness the preprocessor removed reads nothing: said once, as disabled.
        if id(n) in flagged or r.kind == "test" or n.live is not True or r.data == n.data:
            continue
        if UNPARSED in r.data or UNPARSED in n.data:
            continue  # said by the binding comparison (callees are not told either)
        changed = ", ".join(sorted(set(r.data) - set(n.data))) or "nothing"
        report(
            "witness_weakened",
            r,
            n,
            f"{n.text} reads other data than the reference's ({changed} changed: a variable it "
            "reads has another declaration, initialiser or assignment in its function)",
        )
        flagged.add(id(n))
        out.kept -= id(n) in unchanged
    for m in _new_macros(ref["macros"], new["macros"]):
        what = f"#undef {m['name']}" if m["kind"] == "undef" else f"#define {m['name']}{m['text']}"
        message = f"{what} redefines a witness macro the reference defines otherwise or not at all"
        if m["name"] in witness.CONTROL:
            message = f"{what}: turns assert() off for what follows"
        out.findings.append(
            ("witness_disabled", Finding("witness_disabled", message, m["file"], m["line"]))
        )
    for file, message in _rewritten(ref.get("regions", {}), new.get("regions", {})):
        out.findings.append(("witness_redefined", Finding("witness_redefined", message, file, 1)))
    for u in _unseen(ref.get("unseen", []), new.get("unseen", [])):
        message = (
            f"{u['text']!r} {u['why']} in {u['unit']} (the census parses as clang, the "
            "build compiles with g++): what the witnesses bind to there is not known"
        )
        finding = Finding("witness_redefined", message, u["file"], u["line"])
        out.findings.append(("witness_redefined", finding))
    for miss in new["misses"]:
        message = f"{miss['name']}: {miss['why']}; the census cannot key it"
        out.findings.append(
            (
                "grammar_miss",
                Finding("grammar_miss", message, miss["file"], miss["line"], miss["column"]),
            )
        )
    return out


def _redefined(r: Witness, n: Witness) -> str:
    """Why a witness kept in the source is not the reference's after all: the preprocessor
    makes something else of it (a macro redefined in a header, one that rewrites a name in
    its arguments), or its calls bind elsewhere (a specialised or overloaded helper)."""
    renamed_test = r.kind == "test" and r.name != n.name  # its expansion holds its name
    if not renamed_test and r.expansion != n.expansion:
        return f"{n.text} expands to {n.expanded or '(not told)'}; the reference's to {r.expanded}"
    unseen = sorted(set(n.contexts) - set(r.contexts))
    if not renamed_test and unseen:
        return (
            f"{n.text} expands, in a unit that includes it, to code no unit of the reference "
            "made of it (a macro defined above the #include)"
        )
    if r.callees != n.callees:
        gone = sorted(set(r.callees) - set(n.callees)) or r.callees
        now = sorted(set(n.callees) - set(r.callees)) or n.callees
        now_text, gone_text = ", ".join(now) or "nothing", ", ".join(gone)
        return f"{n.text} calls {now_text} where the reference's calls {gone_text}"
    return ""


def _rewritten(
    before: dict[str, dict[str, dict[str, str]]], after: dict[str, dict[str, dict[str, str]]]
) -> list[tuple[str, str]]:
    """Tree files the patch left alone whose code reads, in some unit, as it read in no
    unit of the reference: a macro defined before them (`#define report(...) true` above
    the framework's header) rewrites them. Across units, not unit by unit: a test moved to
    a new file must not take the macro with it unseen."""
    seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    for files in before.values():
        for file, was in files.items():
            seen[file, was["sha"]].add(was["fp"])
    out = []
    for unit, files in sorted(after.items()):
        for file, now in sorted(files.items()):
            known = seen.get((file, now["sha"]))
            if known and now["fp"] not in known:
                message = (
                    f"{file} is unchanged but preprocesses to other code in {unit} than in "
                    "any unit of the reference: a macro defined before it rewrites it"
                )
                out.append((file, message))
    return out


def _unseen(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Lines the compile keeps and the census's parse skips (witness.unseen) that the
    reference does not have, matched by file and text (a line that only moved is not new),
    one per file and text."""
    old = {(u["file"], u["text"], u.get("why", "")) for u in before}
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for u in after:
        out.setdefault((u["file"], u["text"], u.get("why", "")), u)
    return [u for key, u in out.items() if key not in old]


def _rename_functions(
    before: list[Witness],
    after: list[Witness],
    renamed: dict[tuple[str, str], tuple[str, str]],
    out: Census,
) -> None:
    """A plain function (`fn:check_two`) gone from a file, whose checks are all found,
    unchanged, in a function the reference does not have: a rename, like a test's."""

    def groups(ws: list[Witness]) -> dict[tuple[str, str], list[tuple[str, str]]]:
        got: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
        for w in ws:
            if w.kind != "test" and w.test.startswith("fn:"):
                got[w.file, w.test].append((w.kind, w.fp))
        return got

    old, new = groups(before), groups(after)
    fresh = {k: sorted(v) for k, v in new.items() if k not in old}
    for key, checks in sorted(old.items()):
        if key in new or key in renamed:
            continue
        twin = next((k for k, v in fresh.items() if v == sorted(checks)), None)
        if twin is None:
            continue
        del fresh[twin]
        renamed[key] = twin
        out.renames.append(f"{key[1][3:]} -> {twin[1][3:]} ({twin[0]})")


def _under(test: str, name: str) -> bool:
    return test == name or test.startswith(name + "/")


def _match(
    before: list[Witness], after: list[Witness], key_before: Any, key_after: Any
) -> tuple[list[tuple[Witness, Witness]], list[Witness], list[Witness]]:
    """Pairs with equal keys (a multiset match, in source order), and the rest of each side."""
    pool: dict[Any, list[Witness]] = defaultdict(list)
    for w in after:
        pool[key_after(w)].append(w)
    pairs, lost = [], []
    for w in before:
        bucket = pool.get(key_before(w))
        if bucket:
            pairs.append((w, bucket.pop(0)))
        else:
            lost.append(w)
    rest = [w for bucket in pool.values() for w in bucket]
    rest.sort(key=lambda w: (w.file, w.line, w.column))
    return pairs, lost, rest


def _new_macros(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def key(m: dict[str, Any]) -> tuple[str, str, str, str]:
        return (m["file"], m["name"], m["kind"], m["fp"])

    pool: dict[tuple[str, str, str, str], int] = defaultdict(int)
    for m in before:
        pool[key(m)] += 1
    out = []
    for m in after:
        if pool[key(m)]:
            pool[key(m)] -= 1
        else:
            out.append(m)
    return out


def _execution(ref: dict[str, Any], new: dict[str, Any]) -> list[Check]:
    """Whether execution was proven at all: without a test program, or when the
    reference's did not run, no witness can be shown to run (never a silent pass)."""
    ran = [w for w in ref["witnesses"] if w.get("ran") is True]
    detail = ref.get("execution", "")
    if not ran:
        why = detail or "no witness of the reference ran"
        return [Check("execution", False, VACUOUS, f"reference: {why}", incomplete=True)]
    return []


def _suite(ref: dict[str, Any], new: dict[str, Any]) -> list[Check]:
    """The census program is the tests, built and run: where the reference's exited 0 and
    the patched one did not, a check failed (or the program crashed) after every witness
    ran. The census proves the witnesses ran; that they held is said here too, so a case
    whose only gate is the census does not accept a patch its own tests reject. Where the
    reference's main returned 0, the patched one's must too, once (executed.py): an exit 0
    from inside main, after it returned 1, or from a second run of it is no pass."""
    exit = new.get("exit", "not run")
    if ref.get("exit", "not run") != "" or exit == "not run":
        return []
    if exit:
        why = f"patched: {exit}; the reference's exited 0"
    elif ref.get("main") == "returned 0" and new.get("main") != "returned 0":
        why = (
            f"patched: the test program exited 0, but its main {new.get('main')}; the "
            "reference's main returned 0"
        )
    else:
        return []
    return [Check("test program", False, "suite_red", why)]


def _unused_allowances(ref: ScanResult, allow: list[Allow]) -> list[Check]:
    """An allowance that names no witness of the reference approves nothing: a typo,
    said on every row (the reference's too, so the case is red until it is fixed)."""
    tests = {w["name"] for w in ref.data["witnesses"] if w["kind"] == "test"}
    tests |= {w["test"] for w in ref.data["witnesses"]}
    checks = []
    for i, a in enumerate(allow):
        if a.test not in tests:
            detail = f"allow_removed[{i}]: no test {a.test!r} in the reference's witnesses"
            checks.append(Check(f"allow_removed[{i}]", False, "grammar_miss", detail))
    return checks


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify)
