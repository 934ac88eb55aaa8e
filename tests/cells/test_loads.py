"""What the loader is asked for a test's run (cxxgate/cells/loads.py): its environment as
ctest sets it, and every line `ld.so --list` prints for a library."""

from __future__ import annotations

import subprocess
from pathlib import Path

from cxxgate.cells import loads, testframeworks
from cxxgate.gates.tests import testunits


def test_the_loader_environment_is_ctests_environment_then_its_modifications() -> None:
    """Red-team round 20's `envmod_twin`: a reference that sets LD_LIBRARY_PATH with
    ENVIRONMENT_MODIFICATION loads from that folder too."""
    props: dict[str, object] = {
        "ENVIRONMENT": ["LD_LIBRARY_PATH=/src/build/a", "HOME=/x"],
        "ENVIRONMENT_MODIFICATION": [
            "LD_LIBRARY_PATH=path_list_prepend:/src/build/plugins",
            "LD_PRELOAD=set:/src/build/libhook.so",
            "LD_AUDIT=set:/x",
            "LD_AUDIT=unset:",
            "PATH=set:/bin",
        ],
    }
    assert loads.loader_env(props) == {
        "LD_LIBRARY_PATH": "/src/build/plugins:/src/build/a",
        "LD_PRELOAD": "/src/build/libhook.so",
    }
    only = {"ENVIRONMENT_MODIFICATION": "LD_LIBRARY_PATH=set:/src/build/plugins"}
    assert loads.loader_env(only) == {"LD_LIBRARY_PATH": "/src/build/plugins"}
    assert loads.loader_env({}) == {}


def test_a_needed_entry_with_a_slash_is_listed_under_its_file_name() -> None:
    """Red-team round 20's `slash_soname`: ld.so prints a DT_NEEDED path without `=>`."""
    text = (
        "\tlinux-vdso.so.1 (0x00007ffd)\n"
        "\tlibcalc.so => /src/build/libcalc.so (0x00007f01)\n"
        "\t/src/build/fix/libcalc_impl.so (0x00007f02)\n"
        "\tlibmissing.so => not found\n"
        "\t/lib64/ld-linux-x86-64.so.2 (0x00007f03)\n"
    )
    assert loads.listed(text) == {
        "libcalc.so": "/src/build/libcalc.so",
        "libcalc_impl.so": "/src/build/fix/libcalc_impl.so",
        "libmissing.so": "not found",
        "ld-linux-x86-64.so.2": "/lib64/ld-linux-x86-64.so.2",
    }


def _shared(at: Path, name: str, soname: str | None) -> None:
    at.parent.mkdir(parents=True, exist_ok=True)
    source = at.parent / f"{name}.cpp"
    source.write_text(f"int {name}() {{ return 1; }}\n")
    argv = ["g++", "-shared", "-fPIC", "-o", str(at), str(source)]
    subprocess.run(argv + ([f"-Wl,-soname,{soname}"] if soname else []), check=True)


def test_a_link_binds_the_shared_libraries_its_words_name_by_their_sonames(
    tmp_path: Path,
) -> None:
    """`binds`: a path word, a versioned library's link name, `-l` in the first `-L`
    folder that has it (an archive there hides a later folder's shared library), a
    library without a soname, a linker script; the word after `-o` is no input."""
    build, tree = tmp_path / "build", tmp_path / "tree"
    _shared(build / "libimpl.so.1.0", "impl", "libimpl.so.1")
    (build / "libimpl.so").symlink_to("libimpl.so.1.0")
    _shared(build / "plugins" / "libtwin.so", "twin", "libimpl.so.1")
    _shared(build / "lib" / "libhelp.so", "help", None)
    _shared(tree / "vendor" / "libven.so", "ven", "libven.so")
    (build / "hidden").mkdir()
    (build / "hidden" / "libtwin.a").write_bytes(b"!<arch>\n")
    (build / "libscript.so").write_text("INPUT(plugins/libtwin.so)\n")
    links = {
        "libcalc.so": ["g++", "-shared", "-o", "libcalc.so", "calc.o", "libimpl.so",
                       "-Llib", "-lhelp", "<tree>/vendor/libven.so", "libscript.so"],
        "prog": ["g++", "-o", "prog", "main.o", "-L<build>/hidden", "-L", "plugins", "-ltwin",
                 "-l", "impl", "-Wl,-rpath,<build>/plugins"],
    }  # fmt: skip
    assert loads.binds(links, build, tree) == {
        "<build>/libcalc.so": [
            ["<build>/libimpl.so.1.0", "libimpl.so.1"],
            ["<build>/lib/libhelp.so", "libhelp.so"],
            ["<tree>/vendor/libven.so", "libven.so"],
        ],
    }


def _graph(program: str, loads_: dict[str, str], binds: dict[str, list[list[str]]]) -> dict:
    """A graph whose test `t` loads `loads_`, as a program run from / does too but for
    a plugin folder its environment names."""
    neutral = {n: "not found" if "/plugins/" in p else p for n, p in loads_.items()}
    return {"runs": {"t": program}, "loads": {"t": loads_}, "binds": binds,
            "neutral": {"t": neutral}}  # fmt: skip


def test_a_test_loads_only_the_files_its_links_name() -> None:
    """`moved_loads` follows the links from the test's program: the library moved is
    the file its dependant names; a twin found first, a soname changed to a twin's, two
    files linked under one name, and a system library from elsewhere are named."""
    ref = _graph(
        "<build>/t",
        {"libcalc.so": "<build>/libcalc.so", "libimpl.so": "<build>/libimpl.so",
         "libplug.so": "<build>/plugins/libplug.so", "libc.so.6": "/lib/libc.so.6"},
        {"<build>/t": [["<build>/libcalc.so", "libcalc.so"]],
         "<build>/libcalc.so": [["<build>/libimpl.so", "libimpl.so"]]},
    )  # fmt: skip
    moved = _graph(
        "<build>/t",
        {**ref["loads"]["t"], "libimpl.so": "<build>/lib/libimpl.so"},
        {"<build>/t": [["<build>/libcalc.so", "libcalc.so"]],
         "<build>/libcalc.so": [["<build>/lib/libimpl.so", "libimpl.so"]]},
    )  # fmt: skip
    assert testunits.moved_loads(moved, ref) == []
    twin = _graph("<build>/t", {**ref["loads"]["t"], "libimpl.so": "<build>/plugins/libimpl.so"},
                  ref["binds"])  # fmt: skip
    twin["neutral"]["t"]["libimpl.so"] = "<build>/libimpl.so"  # only the test's run finds it
    assert testunits.moved_loads(twin, ref) == [
        "t loads libimpl.so from <build>/plugins/libimpl.so, its links name "
        "<build>/libimpl.so; the reference's from <build>/libimpl.so",
        "t loads libimpl.so from <build>/plugins/libimpl.so; run from / without its "
        "environment, its program loads <build>/libimpl.so",
    ]
    # The twin at the reference's place, the library linked from elsewhere.
    placed = _graph("<build>/t", ref["loads"]["t"], moved["binds"])
    assert len(testunits.moved_loads(placed, ref)) == 1
    renamed = _graph(
        "<build>/t",
        {**ref["loads"]["t"], "libfix.so": "<build>/libfix.so"},
        {"<build>/t": [["<build>/libcalc.so", "libcalc.so"]],
         "<build>/libcalc.so": [["<build>/libimpl.so", "libfix.so"]]},
    )  # fmt: skip
    del renamed["loads"]["t"]["libimpl.so"]
    assert testunits.moved_loads(renamed, ref) == [
        "t loads libfix.so from <build>/libfix.so, its links name <build>/libimpl.so; "
        "the reference's loads no libfix.so"
    ]
    both = _graph(
        "<build>/t",
        {**ref["loads"]["t"], "libimpl.so": "<build>/plugins/libimpl.so"},
        {"<build>/t": [["<build>/libcalc.so", "libcalc.so"],
                       ["<build>/plugins/libimpl.so", "libimpl.so"]],
         "<build>/libcalc.so": [["<build>/libimpl.so", "libimpl.so"]]},
    )  # fmt: skip
    assert testunits.moved_loads(both, ref)[0] == (
        "t loads libimpl.so from <build>/plugins/libimpl.so, its links name "
        "<build>/libimpl.so and <build>/plugins/libimpl.so; the reference's from "
        "<build>/libimpl.so"
    )
    libc = _graph("<build>/t", {**ref["loads"]["t"], "libc.so.6": "/opt/libc.so.6"},
                  ref["binds"])  # fmt: skip
    assert testunits.moved_loads(libc, ref) == [
        "t loads libc.so.6 from /opt/libc.so.6, the reference's from /lib/libc.so.6"
    ]


def test_a_test_loads_what_a_program_run_elsewhere_loads_and_the_only_version() -> None:
    """Round 21: the file a link names, found only from the tests' folder (a relative
    RUNPATH) or through /proc, or one of two versions the build holds, is named; a new
    library from the system's folders is not."""
    loads_ = {"libcalc.so": "<build>/libcalc.so", "libimpl.so": "<build>/plugins/libimpl.so"}
    binds = {"<build>/t": [["<build>/libcalc.so", "libcalc.so"]],
             "<build>/libcalc.so": [["<build>/plugins/libimpl.so", "libimpl.so"]]}  # fmt: skip
    ref = _graph("<build>/t", {**loads_, "libimpl.so": "<build>/libimpl.so"},
                 {**binds, "<build>/libcalc.so": [["<build>/libimpl.so", "libimpl.so"]]})
    relative = _graph("<build>/t", loads_, binds)
    relative["neutral"]["t"]["libimpl.so"] = "<build>/libimpl.so"
    assert testunits.moved_loads(relative, ref) == [
        "t loads libimpl.so from <build>/plugins/libimpl.so; run from / without its "
        "environment, its program loads <build>/libimpl.so"
    ]
    twins = _graph("<build>/t", ref["loads"]["t"], ref["binds"])
    twins["versions"] = {"libimpl.so": ["<build>/libimpl.so", "<build>/plugins/libimpl.so"]}
    assert testunits.moved_loads(twins, ref) == [
        "the tests' loader finds 2 different files named libimpl.so: "
        "<build>/libimpl.so, <build>/plugins/libimpl.so"
    ]
    system = _graph("<build>/t", {**ref["loads"]["t"], "libm.so.6": "/lib/x86_64/libm.so.6"},
                    ref["binds"])  # fmt: skip
    assert testunits.moved_loads(system, ref) == []
    # Round 22's honest `env_split`: the tests find a new library through LD_LIBRARY_PATH
    # only; run from /, the program finds none of that name, so no other file either.
    split = _graph("<build>/t", {**ref["loads"]["t"], "libblank.so": "<build>/libblank.so"},
                   {**ref["binds"], "<build>/libimpl.so": [["<build>/libblank.so", "libblank.so"]]})
    split["neutral"]["t"]["libblank.so"] = "not found"
    assert testunits.moved_loads(split, ref) == []
    proc = _graph("<build>/t", {**ref["loads"]["t"], "libfix.so": "/proc/1/fd/3"}, ref["binds"])
    assert testunits.moved_loads(proc, ref) == [
        "t loads libfix.so from /proc/1/fd/3, the reference's loads no libfix.so"
    ]


def test_a_listed_path_is_the_file_it_names_from_the_runs_folder() -> None:
    """Round 21's `proc_cwd` and `dslash`: /proc/self/cwd is the working folder, `//`
    the top; a relative entry is the working folder's."""
    assert loads.at("/proc/self/cwd/fix/libf.so", "/b/tests") == "/b/tests/fix/libf.so"
    assert loads.at("/proc/12/task/12/cwd/../libf.so", "/b/tests") == "/b/tests/../libf.so"
    assert loads.at("//b/stub/libf.so", "/b/tests") == "/b/stub/libf.so"
    assert loads.at("/proc/self/root/b/libf.so", "/x") == "/b/libf.so"
    assert loads.at("twin/libf.so", "/b/tests") == "/b/tests/twin/libf.so"
    assert loads.at("not found", "/b") == "not found"


def test_a_program_run_through_env_is_listed_with_the_wrappers_variables() -> None:
    """A reference test registered as `cmake -E env LD_LIBRARY_PATH=... prog` (or
    `env`) loads from that folder: its program is listed, with those variables."""
    cmake = ["/usr/bin/cmake", "-E", "env", "--unset=LD_PRELOAD",
             "LD_LIBRARY_PATH=/b/plugins", "--", "/b/tests/t", "--flag"]  # fmt: skip
    command, said = testframeworks.unwrapped(cmake)
    assert command == ["/b/tests/t", "--flag"]
    props: dict[str, object] = {"ENVIRONMENT": "LD_PRELOAD=/b/libhook.so"}
    assert loads.loader_env(props, said) == {"LD_LIBRARY_PATH": "/b/plugins"}
    command, said = testframeworks.unwrapped(["env", "-u", "X", "LD_AUDIT=/b/a.so", "/b/t"])
    assert (command, loads.loader_env({}, said)) == (["/b/t"], {"LD_AUDIT": "/b/a.so"})
    assert testframeworks.unwrapped(["/bin/sh", "-c", "/b/t"]) == (["/bin/sh", "-c", "/b/t"], [])
    assert testframeworks.unwrapped(["env", "-C", "/b", "/b/t"])[0] == ["-C", "/b", "/b/t"]


def test_versions_are_counted_where_the_tests_loader_searches(tmp_path: Path) -> None:
    """Round 22: a stripped copy for packaging in <build>/dist is on no search path (honest
    `dist_strip`); a twin in a searched folder or its hwcaps subfolder is a second
    version; a copy with the same bytes is the same one. The folders come from the
    program's RUNPATH ($ORIGIN), the test's LD_LIBRARY_PATH and where files were found."""
    build = tmp_path / "build"
    _shared(build / "lib" / "libimpl.so", "impl", "libimpl.so")
    _shared(build / "dist" / "libimpl.so", "other", "libimpl.so")
    (build / "plugins").mkdir()
    (build / "plugins" / "libimpl.so").write_bytes((build / "lib" / "libimpl.so").read_bytes())
    main = build / "tests" / "main.cpp"
    main.parent.mkdir()
    main.write_text("int main() { return 0; }\n")
    program = build / "tests" / "t"
    subprocess.run(["g++", "-o", str(program), str(main), "-Wl,-rpath,$ORIGIN/../lib",
                    "-Wl,--enable-new-dtags"], check=True)  # fmt: skip
    b = str(build)
    searched = loads.search([f"{b}/tests/t"], f"{b}/plugins", f"{b}/tests", b, build)
    assert searched == {f"{b}/tests", f"{b}/lib", f"{b}/plugins"}
    spelt = {f.replace(b, "<build>") for f in searched}
    assert loads.versions({"libimpl.so"}, spelt, build, tmp_path / "tree") == {
        "libimpl.so": ["<build>/lib/libimpl.so"]
    }
    hwcaps = build / "plugins" / "glibc-hwcaps" / "x86-64-v2"
    hwcaps.mkdir(parents=True)
    (hwcaps / "libimpl.so").write_bytes((build / "dist" / "libimpl.so").read_bytes())
    assert loads.versions({"libimpl.so"}, spelt, build, tmp_path / "tree") == {
        "libimpl.so": [
            "<build>/lib/libimpl.so", "<build>/plugins/glibc-hwcaps/x86-64-v2/libimpl.so"
        ]
    }  # fmt: skip
