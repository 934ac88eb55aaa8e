"""Gate `ledger`: assumptions checked on libclang's AST, the behaviour oracle after.

The shipped case `size_cache` is graded once by the shared `shipped` fixture; its rows
prove each class and trick. The AST rules' edge cases are unit tests on small trees parsed
by the real libclang (ledger_ast.facts) with g++'s include folders. One private grade of
three rows proves a warm re-run parses nothing, and that an edit of assumptions.yaml
re-classifies without parsing a tree.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, SHIPPED, Grade, compiler_calls, run_grade

from cxxgate.gates.ledger import ledger_ast, ledger_objects, ledger_rules
from cxxgate.gates.ledger.ledger import system_dirs
from cxxgate.util.yamlfile import InputError, load_model

CASE = "size_cache"
# row -> the ledger's class: every class and every rule, each trick its own patch.
REACHED = {
    "reference": "accept",
    "good_limit": "accept",
    "alias_mutex": "assumption_fail:forbidden_header+static_mutex+lock",
    "wrapper_header": "assumption_fail:forbidden_header+undeclared_header",
    "dropped_noexcept": "assumption_fail:qualifier_dropped",
    "dropped_const": "assumption_fail:qualifier_dropped",
    "scope_atomic": "assumption_fail:file_scope_atomic",
    "sleep_for": "assumption_fail:forbidden_header+undeclared_header+sleep",
    "spawn_thread": "assumption_fail:forbidden_header+thread_creation",
    "using_std": "assumption_fail:using_namespace_header",
    "new_static": "assumption_fail:static_storage",
    "invented_helper": "assumption_fail:new_symbol",
    "broken_syntax": "assumption_fail:unparsed",
    "ndebug_mutex": "assumption_fail:skipped_code",
    "off_by_one": "behavior_fail",
    # What the code binds to (the AST's resolved declarations, the objects' symbols).
    "atomic_mutex": "assumption_fail:lock",
    "gthread_create": "assumption_fail:thread_creation",
    "asm_nanosleep": "assumption_fail:sleep+inline_asm",
    "var_template": "assumption_fail:static_storage",
    "extern_lock": "assumption_fail:lock",
    "asm_label": "assumption_fail:sleep+inline_asm",
    "dlsym_sleep": "assumption_fail:indirect_binding",
    "syscall_sleep": "assumption_fail:indirect_binding",
    # Names not on any list (found by a review).
    "nanosleep_alias": "assumption_fail:sleep",
    "poll_alias": "assumption_fail:sleep",
    "clone_thread": "assumption_fail:thread_creation",
    "epoll_wait2": "assumption_fail:sleep+unlisted_binding",
    "timerfd_sleep": "assumption_fail:unlisted_binding",
    "system_spawn": "assumption_fail:thread_creation",
    "flockfile_lock": "assumption_fail:lock+unlisted_binding",
    "atomic_wait": "assumption_fail:indirect_binding+unlisted_binding+static_storage",
    "spinlock_flag": "assumption_fail:lock",
    "const_mutable": "assumption_fail:static_storage",
    "const_pointer": "assumption_fail:static_storage",
    "tu_macro_static": "assumption_fail:static_storage",
    "static_binding": "assumption_fail:static_storage",
    # Red team round 2: spin-waits by data flow, the guard mutex, rdtsc, state the tree
    # does not own, header-only state; two honest patches.
    "spin_goto": "assumption_fail:lock",
    "spin_helper": "assumption_fail:lock",
    "spin_assign": "assumption_fail:lock",
    "spin_recurse": "assumption_fail:lock",
    "spin_switch": "assumption_fail:lock",
    "guard_lock": "assumption_fail:lock",
    "rdtsc_delay": "assumption_fail:sleep",
    "errno_state": "assumption_fail:static_storage",
    "dso_state": "assumption_fail:unlisted_binding+static_storage",
    "header_uintptr": "assumption_fail:static_storage",
    "header_deep": "assumption_fail:static_storage",
    "cpp_deep": "assumption_fail:static_storage",
    "honest_atomic": "accept",
    "honest_stable_sort": "accept",
}
# row -> (rule, path, line) of the finding the trick must produce, read from the tree.
WHERE = {
    "alias_mutex": ("static_mutex", "src/size_cache.cpp", "Guard store_guard;"),
    "wrapper_header": ("forbidden_header", "include/sync_support.hpp", "#include <future>"),
    "dropped_noexcept": ("qualifier_dropped", "include/size_cache.hpp", "size() const {"),
    "dropped_const": ("qualifier_dropped", "include/size_cache.hpp", "hits() noexcept {"),
    "scope_atomic": ("file_scope_atomic", "src/size_cache.cpp", "std::atomic<std::size_t>"),
    "sleep_for": ("sleep", "src/size_cache.cpp", "sleep_for("),
    "spawn_thread": ("thread_creation", "src/size_cache.cpp", "std::thread counter"),
    "using_std": ("using_namespace_header", "include/size_cache.hpp", "using namespace std;"),
    "new_static": ("static_storage", "src/size_cache.cpp", "static std::size_t last"),
    "invented_helper": ("new_symbol", "src/size_cache.cpp", "bool ensure_ready("),
    "broken_syntax": ("unparsed", "src/size_cache.cpp", "held_ = n"),
    "ndebug_mutex": ("skipped_code", "src/size_cache.cpp", "#ifdef NDEBUG"),
    "atomic_mutex": ("lock", "include/size_cache.hpp", "std::mutex guard_;"),
    "gthread_create": ("thread_creation", "src/size_cache.cpp", "__gthread_create(&worker"),
    "asm_nanosleep": ("inline_asm", "src/size_cache.cpp", "asm volatile"),
    "var_template": ("static_storage", "src/size_cache.cpp", "T last{};"),
    "extern_lock": ("lock", "src/size_cache.cpp", "pthread_mutex_lock(guard_);"),
    "asm_label": ("inline_asm", "src/size_cache.cpp", '__asm__("nanosleep")'),
    "dlsym_sleep": ("indirect_binding", "src/size_cache.cpp", "dlsym(nullptr"),
    "syscall_sleep": ("indirect_binding", "src/size_cache.cpp", "syscall(35"),
    "spinlock_flag": ("lock", "src/size_cache.cpp", "while (busy_.test_and_set("),
    "const_mutable": ("static_storage", "src/size_cache.cpp", "const Slot slot{}"),
    "const_pointer": ("static_storage", "src/size_cache.cpp", "std::size_t* const previous"),
    "tu_macro_static": ("static_storage", "include/size_cache_slot.hpp", "previous_slot = 0"),
    "spin_goto": ("lock", "src/size_cache.cpp", "goto retry;"),
    "spin_helper": ("lock", "src/size_cache.cpp", "while (taken(busy_))"),
    "spin_assign": ("lock", "src/size_cache.cpp", "while (busy) {"),
    "spin_recurse": ("lock", "src/size_cache.cpp", "acquire(f);"),
    "spin_switch": ("lock", "src/size_cache.cpp", "for (;;) {"),
    "guard_lock": ("lock", "src/size_cache.cpp", "while (__cxa_guard_acquire("),
    "rdtsc_delay": ("sleep", "src/size_cache.cpp", "while (__builtin_ia32_rdtsc()"),
    "errno_state": ("static_storage", "src/size_cache.cpp", "int& last = *__errno_location()"),
    "dso_state": ("static_storage", "src/size_cache.cpp", "++const_cast"),
    "header_uintptr": ("static_storage", "include/size_cache.hpp", "static const std::uintptr_t"),
    "header_deep": ("static_storage", "include/size_cache.hpp", "static const size_cache_detail"),
}
# row -> (rule, symbol, the line of the tree function that binds it): found in the
# compiled objects (ledger_objects.py), where the AST names nothing of the facility.
BOUND = {
    "asm_nanosleep": ("sleep", "nanosleep", "void SizeCache::store("),
    "asm_label": ("sleep", "nanosleep", "void SizeCache::store("),
    "extern_lock": ("lock", "pthread_mutex_lock", "void SizeCache::store("),
    "atomic_mutex": ("lock", "pthread_mutex_lock", "void SizeCache::store("),
    # glibc's other names of listed functions (alias groups of the toolchain's libraries).
    "nanosleep_alias": ("sleep", "__nanosleep", "void SizeCache::store("),
    "poll_alias": ("sleep", "__poll", "void SizeCache::store("),
    "clone_thread": ("thread_creation", "__clone", "void SizeCache::store("),
    "epoll_wait2": ("sleep", "epoll_pwait", "void SizeCache::store("),
    "system_spawn": ("thread_creation", "system", "void SizeCache::store("),
    "flockfile_lock": ("lock", "flockfile", "void SizeCache::store("),
    # Neither a facility nor known benign: read() blocks on a timerfd.
    "timerfd_sleep": ("unlisted_binding", "read", "void SizeCache::store("),
    # The runtime's futex mutex on a word of the patch's (not a static local's _ZGV guard).
    "guard_lock": ("lock", "__cxa_guard_acquire", "void SizeCache::store("),
    # __dso_handle used other than handed to __cxa_atexit.
    "dso_state": ("unlisted_binding", "__dso_handle", "void SizeCache::store("),
}
# row -> (symbol, section) of new writable data in the candidate's objects: mutable state
# however the source spelt it (const with a mutable member, a macro per unit).
WRITABLE = {
    "const_mutable": ("slotE", ".bss"),
    "const_pointer": ("previousE", ".bss"),
    "tu_macro_static": ("previous_slotE", ".bss"),
    "atomic_wait": ("__waiter_pool_base", ".bss"),
    # A static local of a public header's inline function: only the oracle's own unit
    # instantiates it, so its objects are read too.
    "header_uintptr": ("_ZZNK9SizeCache4sizeEvE5reads", ".bss"),
}


def _result(grade: Grade, patch: str) -> dict[str, Any]:
    path = grade.out / "results" / CASE / patch / "ledger.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _line_of(tree: Path, rel: str, needle: str) -> int:
    lines = (tree / rel).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if needle in text)


@pytest.mark.parametrize("patch", sorted(REACHED))
def test_shipped_class(shipped: Grade, patch: str) -> None:
    row = shipped.rows[f"{CASE}/{patch}"]
    assert shipped.gate(f"{CASE}/{patch}", "ledger")["class"] == REACHED[patch], row
    assert not row.get("expect_problems"), row
    assert row["verdict"] == ("accept" if REACHED[patch] == "accept" else "reject")


@pytest.mark.parametrize("patch", sorted(WHERE))
def test_trick_finding_points_at_its_line(shipped: Grade, patch: str) -> None:
    rule, rel, needle = WHERE[patch]
    line = _line_of(shipped.tree(f"{CASE}/{patch}"), rel, needle)
    findings = _result(shipped, patch)["findings"]
    places = {(f["rule"], f["path"], f["line"]) for f in findings}
    assert (f"assumption_fail:{rule}", rel, line) in places, findings


@pytest.mark.parametrize("patch", sorted(BOUND))
def test_objects_name_what_the_code_binds(shipped: Grade, patch: str) -> None:
    """The undefined symbol in the candidate's object, at the tree function reaching it
    (through a weak inline function: lock_guard's constructor calls pthread_mutex_lock)."""
    rule, symbol, needle = BOUND[patch]
    line = _line_of(shipped.tree(f"{CASE}/{patch}"), "src/size_cache.cpp", needle)
    findings = _result(shipped, patch)["findings"]
    bound = [f for f in findings if f" binds {symbol}" in f["message"]]
    assert bound, findings
    assert {(f["rule"], f["path"], f["line"]) for f in bound} == {
        (f"assumption_fail:{rule}", "src/size_cache.cpp", line)
    }


@pytest.mark.parametrize("patch", sorted(WRITABLE))
def test_objects_writable_data_is_static_storage(shipped: Grade, patch: str) -> None:
    symbol, section = WRITABLE[patch]
    findings = _result(shipped, patch)["findings"]
    data = [f for f in findings if "writable data" in f["message"] and symbol in f["message"]]
    assert data and all(f["rule"] == "assumption_fail:static_storage" for f in data), findings
    assert f"({section}" in data[0]["message"]


def test_clean_rows_count_writable_data(shipped: Grade) -> None:
    """The objects' writable data is read on every row: the clean ones say how much (the
    oracle program's own objects included: the harness's data, the same on both trees)."""
    counts = []
    for patch in ("reference", "good_limit"):
        detail = _result(shipped, patch)["checks"][0]["detail"]
        assert " writable data symbols" in detail, detail
        counts.append(detail.rpartition(", ")[2])
    assert counts[0] == counts[1], counts


def test_reference_objects_bind_no_facility(shipped: Grade) -> None:
    """The evidence is read, not vacuous: the clean rows count the objects' symbols."""
    for patch in ("reference", "good_limit"):
        detail = _result(shipped, patch)["checks"][0]["detail"]
        assert "undefined symbols" in detail and "objects not compiled" not in detail, detail


def test_wrapper_header_names_the_chain(shipped: Grade) -> None:
    """The source never spells a forbidden header; the finding says how it was reached."""
    findings = _result(shipped, "wrapper_header")["findings"]
    mutex = next(f for f in findings if "<mutex>" in f["message"])
    assert "src/size_cache.cpp:2 -> include/sync_support.hpp:3" in mutex["message"]


def test_oracle_is_scored_only_on_a_clean_ledger(shipped: Grade) -> None:
    """A dirty ledger's result holds no behaviour check; a clean one holds the oracle's."""
    dirty = _result(shipped, "spawn_thread")["checks"]
    assert [c["class"] for c in dirty] == ["assumption_fail"] * len(dirty)
    clean = _result(shipped, "off_by_one")["checks"]
    assert [c["class"] for c in clean] == ["accept", "behavior_fail"]
    assert "stdout '5 1\\n10 3\\n'" in clean[1]["detail"]
    good = _result(shipped, "good_limit")
    assert good["status"] == "pass" and len(good["checks"]) == 2 and not good["findings"]


# ---- the AST rules on small trees ------------------------------------------------------

GXX_DIRS = list(system_dirs(shutil.which("g++") or "g++", "c++20"))


def _facts(root: Path, files: dict[str, str], sources: str = "src/*.cpp") -> dict[str, Any]:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    params = {
        "std": "c++20",
        "defines": [],
        "include_dirs": ["include"],
        "sources": [sources],
        "public_headers": [],
        "system_dirs": GXX_DIRS,
    }
    return ledger_ast.facts(root, params)


EMPTY = {"src/a.cpp": "int answer() { return 42; }\n"}
LEDGER = ledger_rules.Assumptions(
    forbidden_constructs=[
        "static_mutex",
        "file_scope_atomic",
        "sleep",
        "thread_creation",
        "using_namespace_header",
    ],
    no_new_static_storage=True,
)

# One translation unit with every heavy header, parsed once for the module.
TRICKS = """\
    #include <atomic>
    #include <mutex>
    #include <thread>
    #include <chrono>
    #include <future>
    #include <memory>
    #include <shared_mutex>
    #include "guard.hpp"

    using Guard = std::mutex;
    typedef Guard Lock;
    static Lock aliased;
    struct Holder { std::mutex m; int n = 0; };
    Holder wrapped;
    static auto& by_ref = *new std::recursive_mutex;
    std::unique_ptr<std::shared_mutex> owned;
    namespace { std::atomic_flag flag; }
    struct Counter { static std::atomic<int> count; };
    std::atomic<int> Counter::count{0};
    #define GLOBAL_LOCK static std::timed_mutex hidden;
    GLOBAL_LOCK  // expands here
    #if 0
    static std::mutex disabled;
    #endif
    #ifndef __clang__
    static std::mutex gcc_only;
    #endif
    // static std::mutex in_a_comment;
    const char* text = "static std::mutex in_a_string; sleep_for";
    const int limit = 3;
    constexpr int twice = 6;
    static const char* const names[] = {"a"};

    int work() {
        std::mutex local;                                  // no static storage
        static int calls = 0;
        thread_local int per_thread = 0;
        ++calls;
        ++per_thread;
        using std::this_thread::sleep_for;
        sleep_for(std::chrono::milliseconds(0));
        auto later = std::chrono::steady_clock::now();
        std::this_thread::sleep_until(later);
        using Worker = std::jthread;
        Worker w([] {});
        auto f = std::async([] { return 1; });
        std::thread idle;
        return f.get() + limit + twice;
    }
    #line 1 "/usr/include/c++/12/mutex"
    static std::mutex line_directive;
"""
API = """\
    struct Api {
        int get() const noexcept(sizeof(int) == 3) { return 0; }
        int put() noexcept(true) { return 1; }
        int off() noexcept(false) { return 2; }
    };
"""
GUARD_HPP = """\
    #pragma once
    namespace lib {
    using namespace std;
    void f() { using namespace std; }
    }
"""


@pytest.fixture(scope="module")
def tricks(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str, int]]:
    root = tmp_path_factory.mktemp("tricks")
    cand = _facts(root / "cand", {"src/a.cpp": TRICKS, "include/guard.hpp": GUARD_HPP})
    assert cand["errors"] == []
    ref = _facts(root / "ref", EMPTY)
    findings = ledger_rules.compare(LEDGER, ref, cand)
    return [(f.rule.partition(":")[2], f.path, f.line) for f in findings]


def _at(needle: str, text: str = TRICKS) -> int:
    lines = textwrap.dedent(text).splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


@pytest.mark.parametrize(
    ("rule", "needle"),
    [
        ("static_mutex", "static Lock aliased"),  # a typedef of an alias of std::mutex
        ("static_mutex", "Holder wrapped"),  # a struct holding a mutex
        ("static_mutex", "by_ref"),  # a static reference to a heap mutex
        ("static_mutex", "unique_ptr<std::shared_mutex>"),  # a template argument
        ("static_mutex", "line_directive"),  # under `#line` naming a system header
        ("static_mutex", "GLOBAL_LOCK  "),  # a macro's expansion, at the line it expands
        ("skipped_code", "#ifndef __clang__"),  # g++ compiles it, libclang cannot see it
        ("skipped_code", "#if 0"),  # what no build of this configuration reads
        ("file_scope_atomic", "atomic_flag flag"),
        ("file_scope_atomic", "Counter::count{0}"),  # a static data member
        ("static_storage", "const char* text"),  # a non-const pointer is mutable state
        ("static_storage", "static int calls"),  # a function-local static
        ("static_storage", "thread_local int"),  # thread storage, static by another name
        ("sleep", "    sleep_for("),  # through a using-declaration
        ("sleep", "sleep_until(later)"),
        ("thread_creation", "Worker w("),  # std::jthread through an alias
        ("thread_creation", "std::async"),
        # Naming the type is enough, even default-constructed: the ledger fails closed.
        ("thread_creation", "std::thread idle"),
    ],
)
def test_ast_rule_catches(tricks: list[tuple[str, str, int]], rule: str, needle: str) -> None:
    assert (rule, "src/a.cpp", _at(needle)) in tricks, tricks


@pytest.mark.parametrize(
    "needle",
    [
        "static std::mutex disabled",  # under #if 0: reported once, at the #if
        "in_a_comment",
        "const int limit",
        "constexpr int twice",
        "names[]",  # const pointers to const
        "std::mutex local",  # automatic storage
    ],
)
def test_ast_rules_ignore(tricks: list[tuple[str, str, int]], needle: str) -> None:
    assert _at(needle) not in {line for _, path, line in tricks if path == "src/a.cpp"}


def test_using_namespace_at_namespace_scope_of_a_header(
    tricks: list[tuple[str, str, int]],
) -> None:
    assert sorted(r for r in tricks if r[1] == "include/guard.hpp") == [
        ("using_namespace_header", "include/guard.hpp", 3)  # not the one in a function
    ]


def test_noexcept_is_read_from_the_declaration(tmp_path: Path) -> None:
    facts = _facts(tmp_path, {"src/a.cpp": API})
    keep = [
        ledger_rules.Keep(function=f"Api::{n}", qualifiers=["noexcept"])
        for n in ("get", "put", "off")
    ]
    found = {(f.line, f.message.split(" is ")[0]) for f in ledger_rules.keep_findings(keep, facts)}
    # noexcept(sizeof(int) == 3) is false; noexcept(true) holds; noexcept(false) does not.
    assert found == {(_at("int get()", API), "Api::get"), (_at("int off()", API), "Api::off")}
    const = ledger_rules.keep_findings(
        [ledger_rules.Keep(function="Api::get", qualifiers=["const"])], facts
    )
    assert const == []
    missing = ledger_rules.keep_findings(
        [ledger_rules.Keep(function="Api::gone", qualifiers=["const"])], facts
    )
    assert [f.message for f in missing] == ["no declaration of Api::gone found"]


def test_only_what_the_patch_added_counts(tmp_path: Path) -> None:
    """A static the reference already has is not new, even when lines move above it; a
    const the patch drops from an old static is."""
    ref = _facts(
        tmp_path / "ref",
        {
            "src/a.cpp": "static int hits = 0;\nint f() { static int n = 0; return ++n + hits; }\n"
            "static const int cap = 3;\nint g() { return cap; }\n"
        },
    )
    cand = _facts(
        tmp_path / "cand",
        {
            "src/a.cpp": "\n\n// moved\nstatic int hits = 0;\n"
            "int f() { static int n = 0; return ++n + hits; }\n"
            "static int cap = 3;\nint g() { return cap; }\n"
        },
    )
    found = [(f.rule, f.line) for f in ledger_rules.compare(LEDGER, ref, cand)]
    assert found == [("assumption_fail:static_storage", 6)]


def test_transitive_include_sets(tmp_path: Path) -> None:
    """A forbidden header the reference already reached is not new; one reached only
    through a new project header is, at the #include that left the tree. (<array> pulls
    <initializer_list> and <type_traits> in libstdc++ 12; light headers keep it cheap.)"""
    ledger = ledger_rules.Assumptions(
        headers=ledger_rules.Headers(forbidden=["initializer_list", "type_traits"])
    )
    ref = _facts(tmp_path / "ref", {"src/a.cpp": "#include <type_traits>\nint f() { return 1; }\n"})
    cand = _facts(
        tmp_path / "cand",
        {
            "src/a.cpp": '#include <type_traits>\n#include "deep.hpp"\nint f() { return 1; }\n',
            "include/deep.hpp": '#pragma once\n#include "deeper.hpp"\n',
            "include/deeper.hpp": "#pragma once\n#include <array>\n",
        },
    )
    found = ledger_rules.compare(ledger, ref, cand)
    assert [(f.rule, f.path, f.line) for f in found] == [
        ("assumption_fail:forbidden_header", "include/deeper.hpp", 2)
    ]
    assert "<initializer_list>" in found[0].message
    assert "src/a.cpp:2 -> include/deep.hpp:2 -> include/deeper.hpp:2" in found[0].message


def test_assumptions_errors_name_file_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "assumptions.yaml"
    bad.write_text(
        "forbidden_constructs: [static_mutx]\nkeep:\n  - {function: f, qualifers: [const]}\n"
    )
    with pytest.raises(InputError) as err:
        load_model(bad, ledger_rules.Assumptions)
    text = str(err.value)
    assert str(bad) in text
    assert "forbidden_constructs[0]" in text and "keep[0].qualifers" in text


# ---- incrementality ---------------------------------------------------------------------


def _scan_stamps(out: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in (out / "scans").rglob("result.json")}


def test_warm_rerun_parses_nothing(tmp_path: Path) -> None:
    lib = tmp_path / "cases"
    lib.mkdir()
    shutil.copy(SHIPPED / "envelopes.yaml", lib)
    case = lib / CASE
    shutil.copytree(SHIPPED / CASE, case)
    text = (case / "case.yaml").read_text()
    keep = ("good_limit", "dropped_noexcept")
    lines = [
        line
        for line in text.splitlines()
        if "{file: patches/" not in line or any(k in line for k in keep)
    ]
    (case / "case.yaml").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    cold = run_grade(out, "-n", "2", "-v", "2", library=lib)  # -v 2: every task named
    assert cold.returncode == 0, cold.output[-3000:]
    assert any(line.startswith(".  scan:") for line in cold.output.splitlines())
    stamps, calls = _scan_stamps(out), compiler_calls(out)
    # reference, two patches: three trees parsed, and the ledger read once.
    assert len(stamps) == 4
    warm = run_grade(out, "-v", "2", library=lib)
    assert warm.returncode == 0, warm.output[-3000:]
    assert _scan_stamps(out) == stamps
    assert compiler_calls(out) == calls
    assert not [line for line in warm.output.splitlines() if line.startswith(".  scan:")]
    # A ledger edit re-reads the ledger and re-classifies; no tree is parsed again.
    ledger = case / "assumptions.yaml"
    ledger.write_text(ledger.read_text().replace("no_new_static_storage: true", "") + "\n")
    edited = run_grade(out, "-v", "2", library=lib)
    assert edited.returncode == 0, edited.output[-3000:]
    changed = [p for p, t in _scan_stamps(out).items() if stamps.get(p) != t]
    assert len(changed) == 1
    assert json.loads(Path(changed[0]).read_text())["label"] == "ledger assumptions"
    assert compiler_calls(out) == calls


def test_a_bad_ledger_is_an_input_error_naming_both_files(tmp_path: Path) -> None:
    """Stopped when the case loads: no compile, no parse; the message names case.yaml's
    key, the ledger file and the ledger's key."""
    lib = tmp_path / "cases"
    lib.mkdir()
    shutil.copy(SHIPPED / "envelopes.yaml", lib)
    shutil.copytree(SHIPPED / CASE, lib / CASE)
    ledger = lib / CASE / "assumptions.yaml"
    ledger.write_text(ledger.read_text().replace("[static_mutex,", "[static_mutx,"))
    grade = run_grade(tmp_path / "out", library=lib)
    assert grade.returncode != 0
    assert f"{lib / CASE / 'case.yaml'}: gates.ledger.assumptions:" in grade.output
    assert f"{ledger}:" in grade.output and "forbidden_constructs[0]" in grade.output
    assert compiler_calls(grade.out) == 0


BINDS = """\
    #include <atomic>
    template <class T> constexpr T pi = T(3);
    template <class T> T memo{};
    struct Box { template <class T> static inline T member{}; };
    asm(".globl cxxgate_marker");
    int use() { return pi<int> + memo<int> + Box::member<int>; }
    void park(std::mutex& m) { std::lock_guard hold(m); }
    void spawn() { __gthread_t t{}; (void)t; }
    extern "C" int yield_now() noexcept __asm__("sched_yield");
    long raw() { return syscall(SYS_getpid); }
"""


def test_what_names_resolve_to(tmp_path: Path) -> None:
    """Facilities from the declarations names resolve to (<atomic> reaches std::mutex and
    gthr), variable templates as storage, asm in any form."""
    cand = _facts(tmp_path / "cand", {"src/a.cpp": BINDS})
    assert cand["errors"] == []
    ref = _facts(tmp_path / "ref", EMPTY)
    ledger = LEDGER.model_copy(
        update={"forbidden_constructs": [*LEDGER.forbidden_constructs, "lock"]}
    )
    found = {(f.rule.partition(":")[2], f.line) for f in ledger_rules.compare(ledger, ref, cand)}
    want = {
        ("static_storage", _at("T memo{}", BINDS)),
        ("static_storage", _at("static inline T member", BINDS)),
        ("inline_asm", _at("asm(", BINDS)),
        ("inline_asm", _at("__asm__(", BINDS)),
        ("lock", _at("std::lock_guard", BINDS)),
        ("thread_creation", _at("__gthread_t", BINDS)),
        ("indirect_binding", _at("syscall(", BINDS)),
    }
    assert want <= found, found
    assert _at("constexpr T pi", BINDS) not in {line for _, line in found}


def test_opaque_rules_follow_the_facility_rules() -> None:
    """asm and syscalls are findings whenever any facility is forbidden, not otherwise."""
    assert set(ledger_rules.active(LEDGER)) == {"sleep", "thread", "asm", "indirect", "unlisted"}
    bare = ledger_rules.Assumptions(forbidden_constructs=["using_namespace_header"])
    assert ledger_rules.active(bare) == {}


def test_alias_groups_come_from_the_toolchains_libraries() -> None:
    """glibc's own dynamic symbol table: __nanosleep is nanosleep, __clone is clone."""
    groups = ledger_objects.aliases(shutil.which("g++") or "g++")
    assert {"nanosleep", "__nanosleep"} <= groups["__nanosleep"]
    assert "clone" in groups["__clone"] and "poll" in groups["__poll"]
    assert ledger_rules.facility_of_symbol("__select", groups) == "sleep"
    assert ledger_rules.facility_of_symbol("__select") is None  # by name alone: missed


def test_unlisted_and_benign_bindings() -> None:
    """The list of harmless calls decides, not the list of facilities: an unknown name is
    a finding, a benign one or one the case allows is not."""
    cand = [
        {"symbol": s, "path": "src/a.cpp", "line": 3}
        for s in ("memcpy", "_Znwm", "_ZSt20__throw_length_errorPKc", "sigwaitinfo", "getpid")
    ]
    ledger = LEDGER.model_copy(update={"symbols": ledger_rules.Symbols(allowed_calls=["getp*"])})
    found = ledger_rules._bound(ledger, [], cand, {})
    assert [(f.rule, f.message.split(" binds ")[1].split(":")[0]) for f in found] == [
        ("assumption_fail:sleep", "sigwaitinfo")
    ]
    found = ledger_rules._bound(LEDGER, [], cand, {})
    assert ("assumption_fail:unlisted_binding") in {f.rule for f in found}


MUTABLE = """\
    #include <atomic>
    #include <cstddef>
    struct Slot { mutable int seen = 0; };
    struct Outer { Slot inner; };
    struct Ptr { int* p; };
    namespace {
    const Slot slot{};
    const Outer outer{};
    int* const heap = new int{0};
    int& alias = *new int{0};
    const Ptr boxed{nullptr};
    const int* const fixed = nullptr;
    const char* const words[] = {"a", "b"};
    }  // namespace
    struct Spin {
        std::atomic_flag busy_;
        std::atomic<int> turn_{0};
        std::atomic<int> count_{0};
        void lock() { while (busy_.test_and_set(std::memory_order_acquire)) {} }
        void wait_turn() { for (;;) { if (turn_.load() == 0) break; } }
        void cas_add() { int v = count_.load(); while (!count_.compare_exchange_weak(v, v + 1)) {} }
        void bump() { for (int i = 0; i < 3; ++i) count_.fetch_add(1); }
        int plain(int n) { int s = 0; while (n > 0) { s += n--; } return s; }
    };
"""


def test_const_with_mutable_reach_and_spin_waits(tmp_path: Path) -> None:
    cand = _facts(tmp_path / "cand", {"src/a.cpp": MUTABLE})
    assert cand["errors"] == []
    ref = _facts(tmp_path / "ref", EMPTY)
    ledger = LEDGER.model_copy(
        update={"forbidden_constructs": [*LEDGER.forbidden_constructs, "lock"]}
    )
    found = {(f.rule.partition(":")[2], f.line) for f in ledger_rules.compare(ledger, ref, cand)}
    for needle in (
        "const Slot slot",
        "const Outer outer",
        "int* const heap",
        "int& alias",
        "const Ptr boxed",
    ):
        assert ("static_storage", _at(needle, MUTABLE)) in found, (needle, found)
    for needle in ("while (busy_.test_and_set", "if (turn_.load()"):
        assert ("lock", _at(needle, MUTABLE)) in found, (needle, found)
    quiet = {line for _, line in found}
    for needle in (
        "const int* const fixed",
        "words[]",
        "compare_exchange_weak",
        "fetch_add(1)",
        "int plain",
    ):
        assert _at(needle, MUTABLE) not in quiet, (needle, found)


def test_a_header_is_read_in_every_unit(tmp_path: Path) -> None:
    """The same header text, const in one unit and mutable in the next (a macro): the
    unit that makes it mutable is seen, whichever unit is parsed first."""
    header = "#pragma once\nnamespace { SLOT int previous = 0; }\n"
    files = {
        "include/slot.hpp": header,
        "src/a_view.cpp": '#define SLOT const\n#include "slot.hpp"\n',
        "src/b_store.cpp": '#define SLOT\n#include "slot.hpp"\nint keep() { return previous++; }\n',
    }
    cand = _facts(tmp_path / "cand", files)
    ref = _facts(tmp_path / "ref", EMPTY)
    found = [(f.rule, f.path, f.line) for f in ledger_rules.compare(LEDGER, ref, cand)]
    assert ("assumption_fail:static_storage", "include/slot.hpp", 2) in found, found


FLOW = """\
    #include <atomic>
    #include <cerrno>
    #include <chrono>
    #include <unistd.h>
    struct Box { std::atomic<int> v{0}; std::atomic_flag f; bool seen = false; };
    extern const long ro_global;
    bool peek(Box& b) { return b.v.load() == 0; }
    bool ping(Box& b);
    bool pong(Box& b) { return b.v.load() != 0 && ping(b); }
    bool ping(Box& b) { if (b.v.load() == 0) return false; return pong(b); }
    void member(Box& b) { while (!b.seen) { b.seen = b.f.test_and_set(); } }
    void helper(Box& b) { do { } while (!peek(b)); }
    void lambda(Box& b) { auto ready = [&] { return b.v.load() == 1; }; while (!ready()) {} }
    void flag(Box& b) {
        bool done = false;
        while (!done) { if (b.v.exchange(1) == 0) done = true; }
    }
    void cas_reset(Box& b) { int e = 0; while (!b.v.compare_exchange_weak(e, 1)) { e = 0; } }
    void cas_fresh(Box& b) { for (;;) { int e = 0; if (b.v.compare_exchange_weak(e, 1)) break; } }
    void clock_wait() {
        auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
        while (std::chrono::steady_clock::now() < end) {}
    }
    void tas_count(Box& b) { for (int i = 0; i < 3; ++i) b.f.test_and_set(); }
    void errno_write() { errno = 0; }
    void global_write() { optind = 1; }
    void cast_write() { const_cast<long&>(ro_global) = 2; }
    // Allowed: a compare-exchange retry, a counted loop, reads of errno and atomics.
    int cas_ok(Box& b) {
        int v = b.v.load();
        while (!b.v.compare_exchange_weak(v, v + 1)) {}
        return v;
    }
    int counted(Box& b) {
        int s = 0;
        for (int i = 0; i < 3; ++i) s += b.v.fetch_add(1);
        return s;
    }
    int errno_read() { return errno == EINVAL ? b_value() : 0; }
"""


def test_data_flow_finds_spins_delays_and_foreign_writes(tmp_path: Path) -> None:
    """ledger_flow.py on one unit: spin-waits through members, helpers, lambdas, flags
    assigned under a tainted condition, mutual recursion and a reset compare-exchange;
    a clock-decided loop; test_and_set in any loop; writes to errno, a libc global and
    a const cast away. The retry loop, a counted loop and reads stay quiet."""
    text = FLOW.replace("b_value()", "1")
    cand = _facts(tmp_path / "cand", {"src/a.cpp": text})
    assert cand["errors"] == [], cand["errors"]
    ref = _facts(tmp_path / "ref", EMPTY)
    ledger = LEDGER.model_copy(
        update={"forbidden_constructs": [*LEDGER.forbidden_constructs, "lock"]}
    )
    found = {(f.rule.partition(":")[2], f.line) for f in ledger_rules.compare(ledger, ref, cand)}
    want = [
        ("lock", "void member"),
        ("lock", "void helper"),
        ("lock", "void lambda"),
        ("lock", "while (!done)"),
        ("lock", "bool pong"),
        ("lock", "bool ping(Box& b) {"),
        ("lock", "void cas_reset"),
        ("lock", "void cas_fresh"),
        ("sleep", "while (std::chrono::steady_clock::now() < end)"),
        ("lock", "void tas_count"),
        ("static_storage", "void errno_write"),
        ("static_storage", "void global_write"),
        ("static_storage", "void cast_write"),
    ]
    for rule, needle in want:
        assert (rule, _at(needle, text)) in found, (rule, needle, sorted(found))
    quiet = {line for _, line in found}
    for needle in (
        "while (!b.v.compare_exchange_weak(v, v + 1))",
        "for (int i = 0; i < 3; ++i) s +=",
        "int errno_read",
        "bool peek",
    ):
        assert _at(needle, text) not in quiet, (needle, sorted(found))


def test_const_statics_with_dynamic_initialisation_are_mutable(tmp_path: Path) -> None:
    """A const static holding what `new` returned (as an integer too), or nested past the
    depth the const check reads, is mutable state; a constant one is not."""
    text = """\
        #include <cstdint>
        struct L0 { int* p; };
        struct L1 { L0 x; }; struct L2 { L1 x; }; struct L3 { L2 x; }; struct L4 { L3 x; };
        struct L5 { L4 x; }; struct L6 { L5 x; }; struct L7 { L6 x; }; struct L8 { L7 x; };
        struct C0 { const int* p; };
        namespace {
        const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(new int(0));
        const L8 deep{};
        const C0 fine{nullptr};
        const std::uintptr_t zero = 0;
        }
        int use() { return static_cast<int>(address + zero) + (deep.x.x.x.x.x.x.x.x.p ? 1 : 0); }
    """
    cand = _facts(tmp_path / "cand", {"src/a.cpp": text})
    ref = _facts(tmp_path / "ref", EMPTY)
    found = {(f.rule, f.line) for f in ledger_rules.compare(LEDGER, ref, cand)}
    for needle in ("const std::uintptr_t address", "const L8 deep"):
        assert ("assumption_fail:static_storage", _at(needle, text)) in found, (needle, found)
    for needle in ("const C0 fine", "const std::uintptr_t zero"):
        assert ("assumption_fail:static_storage", _at(needle, text)) not in found, (needle, found)


def test_honest_standard_library_binds_nothing_unlisted(tmp_path: Path) -> None:
    """std::sort, stable_sort (std::nothrow's operator new), unordered_map, to_string,
    exceptions and std::cerr in an honest patch: no unlisted_binding, no writable data of
    the library's own (<iostream>'s init object), golden behaviour. The case's header list
    is opened for the private grade; everything else is the shipped case."""
    lib = tmp_path / "cases"
    lib.mkdir()
    shutil.copy(SHIPPED / "envelopes.yaml", lib)
    case = lib / CASE
    shutil.copytree(SHIPPED / CASE, case)
    for old in case.glob("patches/*.diff"):
        old.unlink()
    shutil.copy(FIXTURES / "ledger/honest_std.diff", case / "patches")
    text = (case / "case.yaml").read_text()
    head = text[: text.index("patches:")]
    row = "patches:\n  - {file: patches/honest_std.diff, expect: {verdict: accept}}\n"
    (case / "case.yaml").write_text(head + row)
    ledger = case / "assumptions.yaml"
    lines = [ln for ln in ledger.read_text().splitlines() if not ln.startswith("  allowed: [")]
    ledger.write_text("\n".join(lines) + "\n")
    grade = run_grade(tmp_path / "out", library=lib)
    result = json.loads((grade.out / "results" / CASE / "honest_std" / "ledger.json").read_text())
    assert result["class"] == "accept", result["findings"]
    assert grade.returncode == 0, grade.output[-3000:]
