"""Prompts render from what the candidate may see, never from an oracle; the identity lock
pins prompt, oracles, grader and toolchains (unit level: no compiler runs here)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import SHIPPED

from cxxgate.contract import registry
from cxxgate.graph.library import Library
from cxxgate.library import identity
from cxxgate.library.case import Case, load_case
from cxxgate.library.prompt import PromptError, _secret_in, render
from cxxgate.library.settings import Settings
from cxxgate.toolchain.envelope import Envelopes


def _case(tmp_path: Path, name: str = "token_handle", template: str | None = None) -> Case:
    dest = tmp_path / name
    shutil.copytree(SHIPPED / name, dest)
    if template is not None:
        (dest / "prompt.md.j2").write_text(template)
    return load_case(dest, registry.gates())


def test_shipped_prompt_renders_the_contract_and_no_oracle(tmp_path: Path) -> None:
    rendered = render(_case(tmp_path))
    assert rendered is not None
    assert "include/token_handle.hpp" in rendered.text
    assert "TokenHandle(const TokenHandle&) = delete;" in rendered.text  # the frozen header
    assert "probes/" not in rendered.text


@pytest.mark.parametrize(
    ("template", "named"),
    [
        # A probe's line typed into the template.
        ("Make sure `probe_value.serial() == 0` ...\n{{ summary }}", ""),
        # Including an oracle file: the template has no loader that reaches files.
        ('{% include "probes/neg_copy.cpp" %}', "may not include other files"),
        ('{% import "patches/public_ctor.diff" as x %}', "may not include other files"),
    ],
)
def test_a_prompt_that_would_carry_an_oracle_does_not_render(
    tmp_path: Path, template: str, named: str
) -> None:
    case = _case(tmp_path, template=template)
    probe_line = "if (c.serial() != 7) return 3;"  # probes/pos_move.cpp, not in the tree
    if not named:
        (case.dir / "prompt.md.j2").write_text(f"Hint: {probe_line}\n")
        named = "probes/pos_move.cpp:"
    with pytest.raises(PromptError, match=r"prompt\.md\.j2") as err:
        render(case)
    assert named in str(err.value)


def test_the_reference_patch_the_seed_and_a_size_table_are_oracles(tmp_path: Path) -> None:
    case = _case(tmp_path, "saturating")
    added = next(
        line[1:].strip()
        for line in (case.dir / "patches/reference.diff").read_text().splitlines()
        if line.startswith("+") and "b > max - a" in line
    )
    (case.dir / "prompt.md.j2").write_text(f"{{{{ summary }}}}\nLike this: {added}\n")
    with pytest.raises(PromptError, match=r"patches/reference\.diff:\d+"):
        render(case)

    (case.dir / "prompt.md.j2").write_text("Use seed 90210417 for your tests.\n")
    assert render(case) is not None
    with pytest.raises(PromptError, match="the batch seed 90210417"):
        render(case, seed="90210417")

    # A gate's table of numbers (a size table) counts in order, with any separators, and
    # as a multiset in any order when its numbers hold six digits or more.
    assert _secret_in([64, 512, 4096], "sizes: 64 / 512 / 4096.")
    assert _secret_in([64, 512, 4096], "sizes: 64 / 4096 / 512.")
    assert not _secret_in([2, 3, 4], "pick 4, then 3 and 2")  # any prose holds these


def test_a_short_golden_line_is_found_by_its_numbers_in_any_order(tmp_path: Path) -> None:
    """`1765 42` (hidden/hidden.stdout:5, 7 characters) quoted as prose, reversed and
    spelt in hex: the render fails naming the hidden golden."""
    case = _case(tmp_path, "answer_key")
    for text in (
        "Hint: 1765 42\n",
        "Hint: isqrt gives 42 for 1765.\n",
        "Hint: the answer is 42,\nwhich holds for\n0x6E5 as well.\n",
    ):
        (case.dir / "prompt.md.j2").write_text("{{ summary }}\n" + text)
        with pytest.raises(PromptError, match=r"hidden/hidden\.stdout:5 .*its numbers"):
            render(case)
    # Numbers spread over more lines, or a golden line that any prose holds (`8 2`), are
    # not a quote; the visible test's numbers (the tree) are not secret.
    for text in (
        "42 is\nthe answer\nto a question\nof 1765\n",
        "Use 8 threads, 2 passes.\n",
        "isqrt(99) == 9\n",
    ):
        (case.dir / "prompt.md.j2").write_text("{{ summary }}\n" + text)
        assert render(case) is not None, text


def test_a_probe_line_re_spaced_and_shuffled_is_found_by_its_tokens(tmp_path: Path) -> None:
    case = _case(tmp_path)
    # probes/pos_describe.cpp: `if (TokenHandle::make(5).describe() != "token(5)") return 1;`
    shuffled = "return 1 if token ( 5 ) != TokenHandle :: make ( 5 ) . describe ( )"
    (case.dir / "prompt.md.j2").write_text("{{ summary }}\n" + shuffled + "\n")
    with pytest.raises(PromptError, match=r"probes/pos_describe\.cpp:7 .*its tokens"):
        render(case)


def test_a_size_table_reversed_with_the_batch_seed_fails_the_render(tmp_path: Path) -> None:
    case = _case(tmp_path, "dedupe")
    (case.dir / "prompt.md.j2").write_text(
        "{{ summary }}\nWe time it at n = 4096, 2048, 1024, 512 and 256, seed 90210417.\n"
    )
    with pytest.raises(PromptError, match=r"case\.yaml gates\.slope\.sizes .*any order"):
        render(case, seed="90210417")
    (case.dir / "prompt.md.j2").write_text("{{ summary }}\nRun with seed 90210417.\n")
    with pytest.raises(PromptError, match="the batch seed 90210417"):
        render(case, seed="90210417")


def test_a_library_renders_its_prompts_against_the_batch_seed(tmp_path: Path) -> None:
    lib = tmp_path / "cases"
    lib.mkdir()
    shutil.copy(SHIPPED / "envelopes.yaml", lib)
    shutil.copytree(SHIPPED / "saturating", lib / "saturating")
    (lib / "saturating" / "prompt.md.j2").write_text("{{ summary }}\nSeed 90210417.\n")
    settings = Settings(
        library=lib,
        out=tmp_path / "out",
        envelopes=lib / "envelopes.yaml",
        only=frozenset(),
        batch=None,
        report_only=False,
        given_seed=90210417,
    )
    loaded = Library(settings)
    assert "saturating" not in loaded.cases
    assert any("prompt.md.j2" in e and "the batch seed 90210417" in e for e in loaded.errors)


@pytest.mark.parametrize("name", ["token_handle", "saturating", "duration"])
def test_every_shipped_prompt_still_renders(tmp_path: Path, name: str) -> None:
    rendered = render(_case(tmp_path, name), seed="90210417")
    assert rendered is not None and rendered.text.strip()


def test_a_renamed_golden_moves_the_oracle_pin_and_names_both_paths(tmp_path: Path) -> None:
    case = _case(tmp_path)
    envelopes = Envelopes(SHIPPED / "envelopes.yaml")
    gcc = envelopes.get("gcc")
    files: dict[str, list[Path]] = {g: [] for g in case.enabled_gates()}
    before = identity.pins(case, "prompt", files, [gcc])
    probe = case.dir / "probes/pos_describe.cpp"
    probe.rename(case.dir / "probes/pos_describe2.cpp")
    after = identity.pins(case, "prompt", files, [gcc])
    assert before.oracles != after.oracles
    assert (before.prompt, before.grader, before.toolchains) == (
        after.prompt,
        after.grader,
        after.toolchains,
    )
    pinned = identity.Lock({case.id: identity.entry(before)}, before.grader_files)
    (line,) = identity.moved(case.id, pinned, after)
    assert "oracles pin moved" in line
    assert "probes/pos_describe.cpp (removed)" in line
    assert "probes/pos_describe2.cpp (added)" in line
    # Another envelope flag vector is another toolchain pin.
    other = identity.pins(case, "prompt", files, [gcc.with_std("c++17")])
    assert other.toolchains != before.toolchains


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("A 1765ms budget gives 42ms per step.\n", r"hidden/hidden\.stdout:5"),  # units
        ("isqrt(1765LL) == 42LL\n", r"hidden/hidden\.stdout:5"),  # C++ suffixes
        ("It is checked on 4294967295 too.\n", r"hidden/hidden\.stdout:6"),  # an input alone
        ("isqrt(4,294,967,295) = 65,535\n", r"hidden/hidden\.stdout:6"),  # comma groups
        ("isqrt(999 999 999 999) = 999 999\n", r"hidden/hidden\.stdout:7"),  # blank groups
        ("MTc2NSA0Mg==\n", r"hidden/hidden\.stdout:5"),  # `1765 42` in base64
        ("31373635203432\n", r"hidden/hidden\.stdout:5"),  # `1765 42` in hex
        ("long long y=(x+n/x)/2;\n", r"good_newton\.diff:\d+ .*blanks aside"),  # squeezed
    ],
)
def test_an_oracle_re_spelt_is_still_found(tmp_path: Path, text: str, where: str) -> None:
    case = _case(tmp_path, "answer_key", "{{ summary }}\n" + text)
    with pytest.raises(PromptError, match=where):
        render(case)


def test_an_oracle_file_with_a_byte_that_is_not_utf8_is_still_read(tmp_path: Path) -> None:
    """One Latin-1 byte in the hidden golden must not hide its other lines."""
    case = _case(tmp_path, "answer_key", "{{ summary }}\n1763 41\n")
    golden = case.dir / "hidden" / "hidden.stdout"
    golden.write_bytes(golden.read_bytes() + "caf\u00e9\n".encode("latin-1"))
    with pytest.raises(PromptError, match=r"hidden/hidden\.stdout:4"):
        render(case)
