"""What the loader is asked for a test's run (cxxgate/cells/loads.py): its environment as
ctest sets it, and every line `ld.so --list` prints for a library."""

from __future__ import annotations

from cxxgate.cells import loads


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
