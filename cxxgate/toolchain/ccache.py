"""ccache as the compiler launcher of every cacheable compile (cxxgate/toolchain/toolcall.py).

What makes a hit sound here, measured (tests/cells/test_ccache.py):

- **depend mode, never the preprocessor mode.** ccache's preprocessor mode keys a result
  by the `-E` output, which drops whitespace and comments inside a line: a tree whose
  only change is a tab that makes `-Wmisleading-indentation` fire (an error under
  -Werror) got the clean result of the tree without it. Depend mode keys by the bytes of
  the source and of every file the `-MD` dependency file names, as cxxgate/cells/reuse.py does;
  a compile without `-MD` gets one, so every compile is in depend mode.
- **the namespace is the listing of what the compile sees** (the tree's file and folder
  names, and those under the working folder's subfolders): keyed by the files it read,
  a result would otherwise come back for a tree that adds a header shadowing an include
  (measured: a tree whose new `src/x.hpp` holds `#error` got the other tree's object),
  as reuse.py's listing.
- **neutral paths.** Under bubblewrap the tree is shown at /src/project and the working
  folder at the path its `-ffile-prefix-map` gives it, so the same TU in two trees (or
  two build folders: shards) runs the same argv and hits. ccache gives back the stored
  stderr and dependency file: they name /src/project, which inside that sandbox can only
  be the current tree, and they are turned back into its real paths before anyone reads
  them. `base_dir` is not used: it makes the compiler print relative paths (classification
  and reuse read absolute ones) and still missed across trees. Without bubblewrap argv
  keeps the real paths: a different tree always misses, the same tree may hit.
- `compiler_check` is the toolchain's identity (resolved path and whole `--version`), the
  configuration file is the cache's own (nothing of the host's ~/.ccache or /etc leaks
  in), and the environment is the compiler's pinned one plus ccache's own variables.

- **no assembler reads.** A file read by the assembler (`.incbin`, `.include` in inline
  asm) is named by no dependency file, so two trees that agree on every named file and
  differ in such a file shared a result (measured). Every gcc object compile runs through
  cxxgate/toolchain/asmreads.py (as ccache's prefix command on a miss): it refuses such a compile,
  ccache never stores a failed one, and the wrapper's version is in compiler_check.

Hit or miss is read per compile from ccache's stats log (one file per call).
CXXGATE_CCACHE=0 turns the launcher off; CXXGATE_CCACHE_REMOTE (or `[tool.cxxgate]
ccache_remote`) names a remote storage shared by build folders: redis://host:port (the
compile's sandbox then shares the network), or a folder, file:/path (the sandbox shows
that folder writable, as it shows the build folder's own cache; the test suite shares one
between all its grades, tests/conftest.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal
from urllib.parse import unquote

from cxxgate.host import sandbox
from cxxgate.host.sandbox import NEUTRAL_TREE
from cxxgate.toolchain import asmreads
from cxxgate.toolchain.tools import tool_path

SWITCH = "CXXGATE_CCACHE"
REMOTE = "CXXGATE_CCACHE_REMOTE"
Outcome = Literal["hit", "remote", "miss", ""]
_HITS = frozenset({"direct_cache_hit", "preprocessed_cache_hit"})
_MAP = "-ffile-prefix-map="


def folder(root: Path) -> Path:
    """The cache of a build folder: inside it, so `rm -rf <out>` takes it too."""
    return root / "ccache"


def shown(root: Path) -> list[Path]:
    """The cache folders a compile through ccache is shown (the build folder's, made here
    with its configuration as the first compile makes them, and a `file:` storage): a
    tool given the compile's view (compile_view, cxxgate/toolchain/clangview.py) is shown
    them too, or a header could ask for `<out>/ccache/ccache.conf` and tell which it is in."""
    store = folder(root)
    (store / "stats").mkdir(parents=True, exist_ok=True)
    config = store / "ccache.conf"
    if not config.exists():
        config.write_text("")  # ours: no host configuration is read
    shared = file_storage(os.environ.get(REMOTE, ""))
    return [store] if shared is None else [store, shared]


def projects(root: Path) -> Path:
    """The results of CMake projects' own compiles, every tree's (cxxgate/cells/cmake.py)."""
    return folder(root) / "projects"


def file_storage(remote: str) -> Path | None:
    """The folder of a `file:` remote storage (ccache's own URL form, `file:/path` or
    `file:///path`, attributes after `|`), made if missing; None for any other storage
    and for a relative path."""
    url = remote.split("|", 1)[0]
    if not url.startswith("file:"):
        return None
    path = Path(unquote(url.removeprefix("file:").removeprefix("//")))
    if not path.is_absolute():
        return None  # refused when the settings are read (cxxgate/library/settings.py)
    path.mkdir(parents=True, exist_ok=True)
    return path


def enabled() -> bool:
    return os.environ.get(SWITCH, "") != "0" and binary() is not None


@cache
def binary() -> str | None:
    return tool_path("ccache")


def view() -> str:
    """How compiles see the tree: "neutral" (through ccache under bubblewrap, at
    /src/project) or "real" (at its own path). It enters every cell key
    (cxxgate/toolchain/cellspec.py): a sanitizer's location strings are not -ffile-prefix-map'ed,
    so an instrumented object names the tree as its compile saw it."""
    return "neutral" if enabled() and sandbox.available() else "real"


def cacheable(argv: list[str], compiler: str | None) -> bool:
    """A compile of one TU by the envelope's compiler itself (not -E, not a wrapper)."""
    return (
        compiler is not None
        and argv[0] == compiler
        and ("-c" in argv or "-fsyntax-only" in argv)
        and "-E" not in argv
    )


@dataclass
class Launch:
    """One compile through ccache (or a tool with a compile's view): what runs, what the
    sandbox shows, how to read back."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path  # as the compile sees it (neutral under bubblewrap)
    mounts: list[tuple[Path, str, bool]] = field(default_factory=list)
    write: list[Path] = field(default_factory=list)
    read: list[Path] = field(default_factory=list)  # shown read-only at their own paths
    share_net: bool = False
    stats: Path = Path()
    depfiles: list[Path] = field(default_factory=list)  # real paths
    back: list[tuple[str, str]] = field(default_factory=list)  # (neutral prefix, real)
    compile_failed: bool = False  # read by finish: the compiler ran under ccache and failed
    through_ccache: bool = True  # False: only the compile's view (compile_view)


def prepare(
    root: Path,
    argv: list[str],
    cwd: Path,
    tree: Path,
    identity: str,
    base_env: dict[str, str],
    *,
    sees_tree: bool,
    neutral: bool,
) -> Launch:
    """The launch of `argv` (run in `cwd`, seeing `tree` if `sees_tree`) through ccache.
    With `neutral`, the tree and `cwd` are mounted at neutral paths (see the module text);
    argv names the tree there even where it is not shown (a consumer's unused -I)."""

    store, *shared = shown(root)
    config = store / "ccache.conf"
    run = list(argv)
    if "-MD" not in run and "-MMD" not in run:
        out = run[run.index("-o") + 1] if "-o" in run[:-1] else None
        if out is not None:  # -fsyntax-only without -o: no object to name a .d after
            run[1:1] = ["-MD", "-MF", str(Path(out).with_suffix(".d"))]
    depfiles = [cwd / run[i + 1] for i, a in enumerate(run[:-1]) if a == "-MF"]
    launch = Launch(argv=run, env={}, cwd=cwd, depfiles=depfiles, write=[store, *shared])
    if neutral:
        _neutral_view(launch, cwd, tree, sees_tree=sees_tree)
    run = launch.argv
    stats = store / "stats" / f"{secrets.token_hex(8)}.log"
    launch.stats = stats
    remote = os.environ.get(REMOTE, "")
    launch.share_net = bool(remote) and not shared  # a file: storage is a folder shown
    launch.env = {
        **base_env,
        "HOME": str(store),  # ccache asks for one; the sandbox has no passwd entry
        "CCACHE_CONFIGPATH": str(config),
        "CCACHE_DIR": str(store),
        "CCACHE_TEMPDIR": str(store / "tmp"),
        # The wrapper is no part of argv: its version enters the identity instead.
        "CCACHE_COMPILERCHECK": f"string:{identity}:asm-reads-{asmreads.DIGEST}",
        "CCACHE_DEPEND": "1",
        "CCACHE_NAMESPACE": listing(tree if sees_tree else None, cwd),
        "CCACHE_STATSLOG": str(stats),
        **({"CCACHE_REMOTE_STORAGE": remote} if remote else {}),
    }
    launch.argv = [_ccache(), *run]
    return launch


def _neutral_view(launch: Launch, cwd: Path, tree: Path, *, sees_tree: bool) -> bool:
    """Show the tree and `cwd` at their neutral paths (the module text), argv to match;
    False (nothing changed) when no -ffile-prefix-map of argv places `cwd`."""
    seen_cwd = _mapped(cwd, launch.argv)
    if seen_cwd is None:
        return False
    swaps = [(str(cwd), seen_cwd), (str(tree), NEUTRAL_TREE)]
    launch.argv = [_swap(a, swaps) for a in launch.argv if not a.startswith(_MAP)]
    launch.cwd = Path(seen_cwd)
    launch.mounts = [(cwd, seen_cwd, True)]
    if sees_tree:
        launch.mounts.append((tree, NEUTRAL_TREE, False))
    launch.back = [(neutral_path, real) for real, neutral_path in swaps]
    return True


def compile_view(
    root: Path,
    argv: list[str],
    cwd: Path,
    tree: Path,
    base_env: dict[str, str],
    *,
    sees_tree: bool,
) -> Launch | None:
    """A tool that reads what a compile reads without going through ccache (a unit's `-E`
    for its diagnostic-control record, cxxgate/cells/preprocessed.py) sees the tree where
    that compile saw it: at the neutral path under bubblewrap with ccache on. Else a
    header could test which it is in (`__has_include("/src/project/...")`) and show the
    compile a pragma the record never holds (red team round 23). None when the compile
    sees the tree at its own path too. The cache folders the compile is shown are shown
    read-only."""
    if view() != "neutral":
        return None
    launch = Launch(
        argv=list(argv), env=dict(base_env), cwd=cwd, read=shown(root), through_ccache=False
    )
    return launch if _neutral_view(launch, cwd, tree, sees_tree=sees_tree) else None


def finish(launch: Launch) -> Outcome:
    """After the call: the dependency files turned back to real paths; hit or miss."""
    for depfile in launch.depfiles:
        if launch.back and depfile.is_file():
            depfile.write_text(_back_depfile(depfile.read_text(), launch.back))
    try:
        counters = [ln.strip() for ln in launch.stats.read_text().splitlines()]
    except OSError:
        counters = []
    launch.stats.unlink(missing_ok=True)
    launch.compile_failed = "compile_failed" in counters
    return outcome([c for c in counters if c and not c.startswith("#")])


def outcome(counters: list[str]) -> Outcome:
    """One compile's stats-log counters -> hit (local), remote (hit in remote storage),
    miss (the compiler ran: a miss, a failed compile, anything uncacheable)."""
    if "remote_storage_hit" in counters:
        return "remote"
    if _HITS.intersection(counters):
        return "hit"
    return "miss"


def back(text: str, launch: Launch) -> str:
    """The compiler's output with neutral paths turned back into real ones: GCC's JSON
    `file` fields, and plain lines (clang, notes) that start with a path or name one
    after "included from "."""
    for neutral_path, real in launch.back:
        # GCC's JSON: a location's file; the rest of the line stays byte for byte.
        quoted = json.dumps(real)[1:-1].replace("\\", "\\\\")
        json_file = rf'("file": "){re.escape(neutral_path)}(?=[/"])'
        text = re.sub(json_file, rf"\g<1>{quoted}", text)
        plain = rf"(^|included from ){re.escape(neutral_path)}/"
        text = re.sub(plain, rf"\g<1>{real.replace(chr(92), chr(92) * 2)}/", text, flags=re.M)
    return text


def listing(tree: Path | None, cwd: Path) -> str:
    """Names (files and folders) of the tree, and of the working folder's subfolders (a
    consumer's published include/): what an include could find there. The working
    folder's own files are the harness's units and products (tu0.o, a.out, result.json):
    only a unit's include reaches them and none names a product, while their presence
    changes with the build's history (a cell built again). Contents are ccache's to
    compare; names are not."""
    h = hashlib.sha256(_tree_listing(tree).encode() if tree else b"-")
    h.update(b"\0" + _names(cwd, nested_only=True).encode())
    return h.hexdigest()[:24]


@cache
def _tree_listing(tree: Path) -> str:
    return _names(tree)  # a tree never changes once made


def _names(root: Path, *, nested_only: bool = False) -> str:
    if not root.is_dir():
        return ""
    names = []
    for p in root.rglob("*"):
        rel = p.relative_to(root)
        if p.is_dir():
            names.append(rel.as_posix() + "/")
        elif not nested_only or len(rel.parts) > 1:
            names.append(rel.as_posix())
    return "\n".join(sorted(names))


def _mapped(path: Path, argv: list[str]) -> str | None:
    """Where the harness's -ffile-prefix-map puts `path` (the longest matching prefix,
    which is also GCC's last in toolcall's order); None when no map covers it."""
    best: tuple[int, str] | None = None
    for arg in argv:
        if arg.startswith(_MAP):
            old, _, new = arg[len(_MAP) :].partition("=")
            covers = Path(old) == path or path.is_relative_to(old)
            if covers and (best is None or len(old) > best[0]):
                best = (len(old), new + str(path)[len(old) :])
    return best[1] if best else None


def _swap(arg: str, swaps: list[tuple[str, str]]) -> str:
    for real, neutral_path in swaps:
        arg = arg.replace(real, neutral_path)
    return arg


def _ccache() -> str:
    found = binary()
    assert found is not None
    return found


def _prefix(path: str, swaps: list[tuple[str, str]]) -> str:
    for neutral_path, real in swaps:
        if path == neutral_path or path.startswith(neutral_path + "/"):
            return real + path[len(neutral_path) :]
    return path


def _back_depfile(text: str, swaps: list[tuple[str, str]]) -> str:
    # Paths are whitespace-separated words; only a word's start is a prefix.
    return re.sub(r"(?<!\S)(\S+)", lambda m: _prefix(m.group(1), swaps), text)
