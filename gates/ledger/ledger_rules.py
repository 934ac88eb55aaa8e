"""The assumption ledger: `assumptions.yaml` (a case's file beside its tree) and the rules
that compare a patched tree's facts (ledger_ast.py) with its reference's.

Every rule but `qualifier_dropped` and `unparsed` reports only what the patch *added*: a
construct the reference already has is the case's own design, not the patch's assumption.
Rules (the `<rule>` of `assumption_fail:<rule>`):

| rule                   | a finding per                                                   |
| ---------------------- | --------------------------------------------------------------- |
| unparsed               | libclang error in the tree: the ledger cannot read it (closed)  |
| skipped_code           | new lines the preprocessor skips with the case's flags (`#if 0`, |
|                        | `#ifdef NDEBUG`, `#ifndef __clang__`): unread code that another |
|                        | configuration or compiler may compile (closed)                  |
| forbidden_header       | forbidden header newly included, or reached through any include |
| undeclared_header      | new direct system include not in `headers.allowed`              |
| new_symbol             | new function or variable with external linkage, not allowed     |
| static_mutex           | new variable of static storage holding a mutex (canonical type: |
|                        | aliases seen through; a wrapping struct or unique_ptr counts)   |
| file_scope_atomic      | new variable of static storage holding an atomic                |
| sleep                  | new use of a sleeping function (FACILITY_NAMES), or a new       |
|                        | undefined symbol of one in the tree's objects (nanosleep, ...)   |
| thread_creation        | new use of a thread type or function (std::thread, std::async,  |
|                        | __gthread_create, pthread_create), or a new undefined symbol    |
| lock                   | new use of a lock (std::mutex member, lock_guard, pthread_mutex_ |
|                        | lock declared by hand), or a new undefined symbol of one        |
| inline_asm             | new asm statement, file-scope asm or asm label: binds what the  |
|                        | ledger cannot name (implied by any facility rule)               |
| indirect_binding       | new use of syscall / dlsym / dlopen: a facility by number or    |
|                        | string (implied by any facility rule)                           |
| unlisted_binding       | a new undefined symbol of the tree's objects that is no listed  |
|                        | facility (by any of its libc alias names) and not known benign  |
|                        | (BENIGN_SYMBOLS, symbols.allowed_calls): `epoll_pwait`,         |
|                        | `system`, `read` may block or spawn (implied by any facility    |
|                        | rule)                                                           |
| using_namespace_header | new `using namespace` at namespace scope in a header            |
| qualifier_dropped      | a declaration of a named function without a qualifier it keeps  |
| static_storage         | new non-const variable of static or thread storage duration (a  |
|                        | `mutable` member, a pointer/reference to non-const data, or a   |
|                        | dynamic initialiser makes a const one mutable), new writable    |
|                        | data in the oracle's objects (.data/.bss/.tdata/.tbss, whatever |
|                        | the source spelt), or a new write to state the tree does not    |
|                        | own (errno, a libc global, a static whose const is cast away)   |

A spin-wait is a lock and a delay loop a sleep (ledger_flow.py): a back-edge (a loop, a
`goto` to an earlier label, recursion) whose continuation depends on a value read from an
atomic, or from a clock, through locals, members and the tree's own functions; an
`atomic_flag` test-and-set inside any back-edge is a lock. The one shape allowed is a
compare-exchange retry loop whose `expected` only the exchange writes. A new write to
state the tree does not own (errno, a libc global, a static whose const is cast away) is
`static_storage`.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from typing import Any, Literal

from pydantic import Field

from cxxgate.results.result import Finding
from cxxgate.util.yamlfile import Strict

Construct = Literal[
    "static_mutex",
    "file_scope_atomic",
    "sleep",
    "thread_creation",
    "lock",
    "inline_asm",
    "indirect_binding",
    "using_namespace_header",
]
Qualifier = Literal["const", "noexcept"]
RULES = (
    "unparsed",
    "skipped_code",
    "forbidden_header",
    "undeclared_header",
    "new_symbol",
    "static_mutex",
    "file_scope_atomic",
    "sleep",
    "thread_creation",
    "lock",
    "inline_asm",
    "indirect_binding",
    "unlisted_binding",
    "using_namespace_header",
    "qualifier_dropped",
    "static_storage",
)


class Headers(Strict):
    forbidden: list[str] = Field(default_factory=list)  # as spelt in #include <...>
    # New direct system includes a patch may add; None: any that is not forbidden.
    allowed: list[str] | None = None


class Symbols(Strict):
    # Qualified names (globs: `Cache::detail_*`) of new external functions and variables
    # a patch may add; None: no check.
    allowed_new: list[str] | None = None
    # Undefined symbols (globs on the mangled name) the tree's objects may newly bind
    # beyond BENIGN_SYMBOLS, e.g. `printf` for a library that prints.
    allowed_calls: list[str] = Field(default_factory=list)


class Keep(Strict):
    function: str  # qualified name, e.g. SizeCache::size (every declaration of it)
    qualifiers: list[Qualifier] = Field(min_length=1)


class Assumptions(Strict):
    """assumptions.yaml."""

    headers: Headers = Headers()
    symbols: Symbols = Symbols()
    forbidden_constructs: list[Construct] = Field(default_factory=list)
    keep: list[Keep] = Field(default_factory=list)
    no_new_static_storage: bool = False


# ---- facilities: what the code binds to ------------------------------------------------
# A facility is decided from what a use resolves to, never from how the patch spells it:
# the qualified name of the canonical declaration a reference resolves to (an entry or a
# member of it: `std::thread` covers `std::thread::thread`), else the system header that
# declared it; and, in the tree's compiled objects, the undefined symbols (globs on the
# mangled name) the linker must bind. `asm` is found on the AST only.
FACILITY_RULE = {
    "sleep": "sleep",
    "thread": "thread_creation",
    "lock": "lock",
    "indirect": "indirect_binding",
    "asm": "inline_asm",
    "unlisted": "unlisted_binding",
}
# Facilities that hide what code binds to: reported whenever the ledger forbids any
# facility at all, since through them any of the others is reached unseen.
OPAQUE = ("asm", "indirect", "unlisted")
_FACILITY_RULES = ("sleep", "thread_creation", "lock", "static_mutex")
# C calls that sleep or block with a timeout: a name in the code and a symbol in an object.
_SLEEP = (
    "sleep",
    "usleep",
    "nanosleep",
    "clock_nanosleep",
    "thrd_sleep",
    "pause",
    "select",
    "pselect",
    "poll",
    "ppoll",
    "epoll_wait",
    "sigsuspend",
    "sigtimedwait",
    "sigwaitinfo",
    "sigwait",
    "epoll_pwait",
    "epoll_pwait2",
)
# Starting or waiting for another process: a name in the code and a symbol in an object
# alike (fnmatch patterns: posix_spawn and posix_spawnp).
_SPAWN = (
    "clone",
    "clone3",
    "fork",
    "vfork",
    "posix_spawn*",
    "_Fork",
    "system",
    "popen",
    "execl",
    "execlp",
    "execle",
    "execv",
    "execvp",
    "execvpe",
    "execve",
    "fexecve",
    "wait",
    "waitpid",
    "waitid",
    "wait3",
    "wait4",
)
FACILITY_NAMES: dict[str, tuple[str, ...]] = {
    "sleep": (
        "std::this_thread::sleep_for",
        "std::this_thread::sleep_until",
        "std::this_thread::__sleep_for",
        *_SLEEP,
        # Busy-waits on the time stamp counter and the spin-wait hint: no call is left.
        "__builtin_ia32_pause",
        "_mm_pause",
        "__builtin_ia32_rdtsc",
        "__builtin_ia32_rdtscp",
        "__builtin_readcyclecounter",
        "__rdtsc",
        "__rdtscp",
        "_rdtsc",
        "__builtin_ia32_tpause",
        "__builtin_ia32_umwait",
        "__builtin_ia32_monitorx",
        "__builtin_ia32_mwaitx",
        "_tpause",
        "_umwait",
    ),
    "thread": (
        "std::thread",
        "std::jthread",
        "std::async",
        "std::packaged_task",
        "pthread_create",
        "pthread_join",
        "pthread_detach",
        "thrd_create",
        "thrd_join",
        "thrd_t",
        "pthread_t",
        "__gthread_t",
        "__gthread_create",
        "__gthread_join",
        "__gthread_detach",
        *_SPAWN,
    ),
    "lock": (
        "std::mutex",
        "std::recursive_mutex",
        "std::timed_mutex",
        "std::recursive_timed_mutex",
        "std::shared_mutex",
        "std::shared_timed_mutex",
        "std::lock_guard",
        "std::unique_lock",
        "std::scoped_lock",
        "std::shared_lock",
        "std::condition_variable",
        "std::condition_variable_any",
        "std::_V2::condition_variable_any",
        "std::counting_semaphore",
        "std::binary_semaphore",
        "std::latch",
        "std::barrier",
        "std::once_flag",
        "std::call_once",
        "pthread_mutex_*",
        "pthread_rwlock_*",
        "pthread_spin_*",
        "pthread_cond_*",
        "pthread_barrier_*",
        "pthread_once",
        "pthread_mutex_t",
        "pthread_rwlock_t",
        "pthread_spinlock_t",
        "mtx_*",
        "cnd_*",
        "sem_*",
        "__gthread_mutex_*",
        "__gthread_recursive_mutex_*",
        "__gthread_cond_*",
        "__gthread_once",
        "flockfile",
        "ftrylockfile",
        "funlockfile",
        # The static-local guard is a futex mutex; the compiler's own calls are not in the
        # AST, so a name in the tree's code is one the patch wrote.
        "__cxa_guard_*",
    ),
    "indirect": ("syscall", "dlsym", "dlvsym", "dlopen", "dlmopen", "__libc_dlsym"),
}
# Headers every declaration of which is a facility (a name above decides first).
FACILITY_HEADERS: dict[str, tuple[str, ...]] = {
    "sleep": ("bits/this_thread_sleep.h",),
    "thread": ("bits/std_thread.h", "thread", "future", "pthread.h", "threads.h", "spawn.h"),
    "lock": (
        "bits/std_mutex.h",
        "bits/unique_lock.h",
        "mutex",
        "shared_mutex",
        "condition_variable",
        "semaphore",
        "bits/semaphore_base.h",
        "latch",
        "barrier",
        "bits/gthr-default.h",
        "bits/gthr-posix.h",
        "semaphore.h",
    ),
    "indirect": ("dlfcn.h",),
}
FACILITY_SYMBOLS: dict[str, tuple[str, ...]] = {
    "sleep": (
        *_SLEEP,
        "_ZNSt11this_thread11__sleep_for*",
    ),
    "thread": (
        "pthread_create",
        "pthread_join",
        "pthread_detach",
        "thrd_create",
        "thrd_join",
        "__gthread_create",
        *_SPAWN,
        "_ZNSt6thread*",
        "_ZNSt6jthread*",
        "_ZNSt13__future_base*",
        "_ZSt5async*",
    ),
    "lock": (
        "pthread_mutex_*",
        "pthread_rwlock_*",
        "pthread_spin_*",
        "pthread_cond_*",
        "pthread_barrier_*",
        "pthread_once",
        "mtx_*",
        "cnd_*",
        "sem_*",
        "__gthread_mutex*",
        "_ZNSt5mutex*",
        "_ZNSt15recursive_mutex*",
        "_ZNSt11timed_mutex*",
        "_ZNSt12shared_mutex*",
        "_ZNSt18condition_variable*",
        "_ZNSt3_V218condition_variable*",
        "_ZNSt22condition_variable_any*",
        "_ZSt9call_once*",
        "_ZSt11__once_call",
        "_ZSt15__once_callable",
        "__once_proxy",
        "flockfile",
        "ftrylockfile",
        "funlockfile",
        # A futex mutex when called on a word of the patch's; the compiler's calls on a
        # static local's `_ZGV` guard are left out by ledger_objects.py.
        "__cxa_guard_*",
    ),
    "indirect": ("syscall", "dlsym", "dlvsym", "dlopen", "dlmopen", "__libc_dlsym"),
}


def facility_of_name(name: str, header: str | None) -> str | None:
    """The facility a declaration is: by its qualified name, else by its system header
    (`header` None: declared in the tree, known by name only)."""
    for what, entries in FACILITY_NAMES.items():
        for entry in entries:
            if fnmatch.fnmatchcase(name, entry) or name.startswith(entry + "::"):
                return what
    if header is not None:
        for what, headers in FACILITY_HEADERS.items():
            if header in headers:
                return what
    return None


# What a tree's objects may newly bind without naming a facility: memory, strings and
# maths, the C++ runtime's allocation (std::nothrow's too), exceptions and static-
# initialisation support, and libstdc++'s out-of-line string and container code. Nothing
# here blocks, spawns or locks a caller. Not here: `__cxa_guard_*` (a futex mutex: a lock,
# ledger_objects.py leaves out only the compiler's calls on a static local's `_ZGV` guard)
# and `__dso_handle` (a global the tree does not own: left out only where it is handed to
# `__cxa_atexit`). Anything else an object newly leaves undefined is `unlisted_binding`:
# the ledger does not know what it does, so a case that means to allow it lists it
# (symbols.allowed_calls).
BENIGN_SYMBOLS: tuple[str, ...] = (
    "mem[cs]py",
    "memmove",
    "memset",
    "memcmp",
    "memchr",
    "str[nl]en",
    "strcmp",
    "strncmp",
    "strchr",
    "strrchr",
    "strstr",
    "malloc",
    "calloc",
    "realloc",
    "free",
    "aligned_alloc",
    "posix_memalign",
    "abort",
    "__assert_fail",
    "__stack_chk_fail",
    "__errno_location",
    "_GLOBAL_OFFSET_TABLE_",
    "__cxa_atexit",
    "__cxa_allocate_exception",
    "__cxa_free_exception",
    "__cxa_throw",
    "__cxa_rethrow",
    "__cxa_begin_catch",
    "__cxa_end_catch",
    "__cxa_call_unexpected",
    "__cxa_pure_virtual",
    "__cxa_deleted_virtual",
    "__cxa_bad_cast",
    "__cxa_bad_typeid",
    "__cxa_throw_bad_array_new_length",
    "__gxx_personality_v0",
    "_Unwind_Resume",
    "_ZSt9terminatev",
    "_ZSt7nothrow",  # std::nothrow: operator new(n, nothrow) (get_temporary_buffer)
    "_ZNSaIcE*",  # std::allocator<char> (an extern template in libstdc++)
    # Output streams (std::cout, std::cerr and their inserters; <iostream>'s init object).
    # Input streams are not here: reading std::cin may block.
    "_ZSt4cout",
    "_ZSt4cerr",
    "_ZSt4clog",
    "_ZNSt8ios_base4Init*",
    "_ZStlsISt11char_traitsIcEERSt13basic_ostreamIcT_E*",
    "_ZNSo*",
    "_ZNKSo*",
    "_ZSt16__ostream_insert*",
    "_ZNKSt5ctypeIcE13_M_widen_initEv",
    "_ZSt*__throw_*",
    "_Znwm*",
    "_Znam*",
    "_ZdlPv*",
    "_ZdaPv*",
    "_ZTI*",
    "_ZTS*",
    "_ZTV*",
    "_ZNSt7__cxx1112basic_string*",
    "_ZNKSt7__cxx1112basic_string*",
    "_ZNSt8__detail15_List_node_base*",
    "_ZSt18_Rb_tree_*",
    "_ZSt28_Rb_tree_rebalance_for_erase*",
    "_ZSt29_Rb_tree_insert_and_rebalance*",
    "_ZNKSt8__detail20_Prime_rehash_policy*",
    "_ZNSt9exception*",
    "_ZNKSt9exception*",
    "_ZNSt9bad_alloc*",
    "_ZNSt11logic_error*",
    "_ZNSt13runtime_error*",
    "_ZNSt12out_of_range*",
    "_ZNSt12length_error*",
    "_ZNSt16invalid_argument*",
    *(
        f"{f}{suffix}"
        for f in (
            "sqrt",
            "cbrt",
            "pow",
            "exp",
            "exp2",
            "log",
            "log2",
            "log10",
            "floor",
            "ceil",
            "round",
            "trunc",
            "fmod",
            "fabs",
            "sin",
            "cos",
            "tan",
            "atan2",
            "hypot",
            "ldexp",
            "frexp",
        )
        for suffix in ("", "f", "l")
    ),
)


def facility_of_symbol(symbol: str, aliases: dict[str, frozenset[str]] | None = None) -> str | None:
    """The facility an undefined symbol binds, by its name or any name the toolchain's
    libraries export at the same address (`__nanosleep` is nanosleep); `unlisted` for a
    name that is no facility and not benign."""
    names = {symbol} | set((aliases or {}).get(symbol, ()))
    for what, globs in FACILITY_SYMBOLS.items():
        if any(fnmatch.fnmatchcase(n, g) for n in sorted(names) for g in globs):
            return what
    return None


def is_benign(symbol: str, allowed: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(symbol, g) for g in (*BENIGN_SYMBOLS, *allowed))


def active(ledger: Assumptions) -> dict[str, str]:
    """Facility -> rule, for the facilities this ledger forbids (the opaque ones whenever
    it forbids any facility, or by name)."""
    forbidden = set(ledger.forbidden_constructs)
    out: dict[str, str] = {f: r for f, r in FACILITY_RULE.items() if r in forbidden}
    if forbidden & set(_FACILITY_RULES):
        out |= {f: FACILITY_RULE[f] for f in OPAQUE}
    return out


def _find(rule: str, message: str, item: dict[str, Any]) -> Finding:
    return Finding(f"assumption_fail:{rule}", message, item["path"], item["line"])


Pair = tuple[list[dict[str, Any]], list[dict[str, Any]]]  # (reference's, candidate's)


def compare(
    ledger: Assumptions,
    ref: dict[str, Any],
    cand: dict[str, Any],
    symbols: Pair | None = None,
    writable: Pair | None = None,
    aliases: dict[str, frozenset[str]] | None = None,
) -> list[Finding]:
    """Findings of the patched tree `cand` against its reference `ref` (scan data), of the
    undefined symbols of the candidate's objects against the reference's (`symbols`,
    ledger_objects.py; `aliases`: the libraries' alias groups), and of their writable
    data (`writable`)."""
    out: list[Finding] = []
    out += [_find("unparsed", f"libclang: {e['message']}", e) for e in cand["errors"]]
    out += _skipped(ref, cand)
    out += _headers(ledger.headers, ref, cand)
    out += _symbols(ledger.symbols, ref, cand)
    out += _statics(ledger, ref, cand)
    if ledger.no_new_static_storage:
        out += _state_writes(ref, cand)
    out += _uses(ledger, ref, cand)
    out += keep_findings(ledger.keep, cand)
    if symbols is not None:
        out += _bound(ledger, *symbols, aliases or {})
    if writable is not None and ledger.no_new_static_storage:
        # A static already found holding a mutex or an atomic is that finding, not two.
        named = {
            (f.path, f.line)
            for f in out
            if f.rule in ("assumption_fail:static_mutex", "assumption_fail:file_scope_atomic")
        }
        out += [f for f in _writable(*writable) if (f.path, f.line) not in named]
    seen: set[tuple[str, str, int, str]] = set()
    unique = []
    for f in out:
        key = (f.rule, f.path, f.line, f.message)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    order = {r: i for i, r in enumerate(RULES)}
    return sorted(unique, key=lambda f: (order[f.rule.partition(":")[2]], f.path, f.line))


def _skipped(ref: dict[str, Any], cand: dict[str, Any]) -> list[Finding]:
    """Skipped blocks the reference does not have, matched by their text (so a block that
    only moved is not new)."""
    old = Counter(r["text"] for r in ref["skipped"])
    out = []
    for r in cand["skipped"]:
        if old[r["text"]] > 0:
            old[r["text"]] -= 1
            continue
        msg = (
            f"lines {r['line']}-{r['end']} are compiled out with the case's flags: code the "
            "ledger cannot read, which another configuration may compile"
        )
        out.append(_find("skipped_code", msg, r))
    return out


def _headers(h: Headers, ref: dict[str, Any], cand: dict[str, Any]) -> list[Finding]:
    out: list[Finding] = []
    ref_direct = {d["header"] for d in ref["direct_includes"]}
    ref_reached = set(ref["reached_headers"])
    for d in cand["direct_includes"]:
        name = d["header"]
        if name in ref_direct:
            continue
        if name in h.forbidden:
            out.append(_find("forbidden_header", f"#include <{name}>: a forbidden header", d))
        elif h.allowed is not None and name not in h.allowed:
            msg = f"#include <{name}>: not among the allowed headers {h.allowed}"
            out.append(_find("undeclared_header", msg, d))
    direct_new = {d["header"] for d in cand["direct_includes"]} - ref_direct
    for name in h.forbidden:
        entry = cand["reached_headers"].get(name)
        if entry is None or name in ref_reached or name in direct_new:
            continue
        via = " -> ".join(entry["via"])
        msg = f"<{name}> (forbidden) is reached through {via}"
        out.append(_find("forbidden_header", msg, entry))
    return out


def _symbols(s: Symbols, ref: dict[str, Any], cand: dict[str, Any]) -> list[Finding]:
    if s.allowed_new is None:
        return []
    old = {e["key"] for e in ref["exported"]}
    out = []
    for e in cand["exported"]:
        if e["key"] in old or any(fnmatch.fnmatchcase(e["name"], p) for p in s.allowed_new):
            continue
        msg = f"new exported symbol {e['name']!r} (not in symbols.allowed_new)"
        out.append(_find("new_symbol", msg, e))
    return out


def _statics(ledger: Assumptions, ref: dict[str, Any], cand: dict[str, Any]) -> list[Finding]:
    forbidden = set(ledger.forbidden_constructs)
    old = {s["key"]: s for s in ref["statics"]}
    out = []
    for s in cand["statics"]:
        was = old.get(s["key"])
        what = f"{s['scope']} variable {s['name']!r} of type {s['type']!r}"
        if "static_mutex" in forbidden and s["mutex"] and not (was and was["mutex"]):
            out.append(_find("static_mutex", f"{what} holds a {s['mutex']}", s))
        elif "file_scope_atomic" in forbidden and s["atomic"] and not (was and was["atomic"]):
            out.append(_find("file_scope_atomic", f"{what} holds a {s['atomic']}", s))
        elif ledger.no_new_static_storage and not s["const"] and not (was and not was["const"]):
            out.append(_find("static_storage", f"new non-const {what}", s))
    return out


def _state_writes(ref: dict[str, Any], cand: dict[str, Any]) -> list[Finding]:
    """Writes to state the tree does not own (ledger_flow.py: errno, a libc global, a
    static whose const is cast away): more per file and kind than the reference has."""
    old = Counter((w["path"], w["name"]) for w in ref.get("writes", []))
    out = []
    for w in sorted(cand.get("writes", []), key=lambda w: (w["path"], w["line"], w["name"])):
        if old[w["path"], w["name"]] > 0:
            old[w["path"], w["name"]] -= 1
            continue
        out.append(_find("static_storage", w["name"], w))
    return out


def _uses(ledger: Assumptions, ref: dict[str, Any], cand: dict[str, Any]) -> list[Finding]:
    """Facilities (sleeps, threads, locks, asm, syscalls): more uses of a name in a file
    than the reference has (one finding per line beyond the reference's count)."""
    out: list[Finding] = []
    for construct, rule in active(ledger).items():
        lines = {(u["path"], u["line"], u["name"]) for u in cand["uses"] if u["what"] == construct}
        ref_lines = {
            (u["path"], u["line"], u["name"]) for u in ref["uses"] if u["what"] == construct
        }
        old = Counter((p, n) for p, _, n in ref_lines)
        for path, line, name in sorted(lines):
            if old[path, name] > 0:
                old[path, name] -= 1
                continue
            item = {"path": path, "line": line}
            out.append(_find(rule, f"uses {name}", item))
    if "using_namespace_header" in ledger.forbidden_constructs:
        old_usings = Counter((u["path"], u["namespace"]) for u in ref["usings"])
        for u in cand["usings"]:
            if old_usings[u["path"], u["namespace"]] > 0:
                old_usings[u["path"], u["namespace"]] -= 1
                continue
            msg = f"using namespace {u['namespace']} in a header"
            out.append(_find("using_namespace_header", msg, u))
    return out


def _bound(
    ledger: Assumptions,
    ref: list[dict[str, Any]],
    cand: list[dict[str, Any]],
    aliases: dict[str, frozenset[str]],
) -> list[Finding]:
    """Undefined symbols of the candidate's objects the reference's objects do not have:
    what the code calls however it was written (a hand declaration, an asm label, an
    inline header function emitted at -O0). A listed facility by any of its alias names
    is that facility; any other name not known benign is `unlisted_binding` (the list of
    facilities is never complete, the list of harmless calls can be)."""
    rules = active(ledger)
    old = {s["symbol"] for s in ref}
    out = []
    for s in cand:
        name = s["symbol"]
        if name in old:
            continue
        what = facility_of_symbol(name, aliases)
        if what is None and not is_benign(name, ledger.symbols.allowed_calls):
            what = "unlisted"
        if what is None or what not in rules:
            continue
        same = sorted(aliases.get(name, frozenset()) - {name})
        also = f" (also exported as {', '.join(same)})" if same else ""
        if what == "unlisted":
            msg = (
                f"the object of {s['path']} binds {name}{also}: not a call the ledger knows "
                "to be harmless (ledger_rules.BENIGN_SYMBOLS, symbols.allowed_calls)"
            )
        else:
            msg = f"the object of {s['path']} binds {name}{also}: {what}"
        out.append(_find(rules[what], msg, s))
    return out


def _writable(ref: list[dict[str, Any]], cand: list[dict[str, Any]]) -> list[Finding]:
    """Writable data of the candidate's objects the reference's objects do not have: new
    mutable state, whatever the source spelt (const with a `mutable` member, a const
    pointer to a heap object, a macro that drops `const` in one unit)."""
    old = {s["symbol"] for s in ref}
    out = []
    for s in cand:
        if s["symbol"] in old:
            continue
        msg = f"the object of {s['path']} holds new writable data {s['symbol']} ({s['section']})"
        out.append(_find("static_storage", msg, s))
    return out


def keep_findings(keep: list[Keep], facts: dict[str, Any]) -> list[Finding]:
    """Every declaration of each named function keeps its qualifiers. Absolute, not
    relative: the reference is held to it too, so a ledger naming a function the
    reference lacks turns the case red rather than passing everything."""
    out = []
    for k in keep:
        decls = [f for f in facts["functions"] if f["name"] == k.function]
        if not decls:
            item = {"path": facts["parsed"][0] if facts["parsed"] else "", "line": 0}
            out.append(_find("qualifier_dropped", f"no declaration of {k.function} found", item))
            continue
        for d in decls:
            if "const" in k.qualifiers and not d["const"]:
                out.append(_find("qualifier_dropped", f"{k.function} is not const", d))
            if "noexcept" in k.qualifiers and d["noexcept"] not in ("noexcept", "noexcept(true)"):
                msg = f"{k.function} is not noexcept (its exception specification: {d['noexcept']})"
                out.append(_find("qualifier_dropped", msg, d))
    return out
