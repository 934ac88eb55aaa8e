"""Prompts render from what the candidate may see, never from an oracle; the identity lock
pins prompt, oracles, grader and toolchains (unit level: no compiler runs here)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import SHIPPED

from cxxgate import lock, registry
from cxxgate.case import Case, load_case
from cxxgate.envelope import Envelopes
from cxxgate.prompt import PromptError, _secret_in, render


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

    # A gate's table of numbers (a size table) counts in order, with any separators.
    assert _secret_in([64, 512, 4096], "sizes: 64 / 512 / 4096.")
    assert not _secret_in([64, 512, 4096], "sizes: 64 / 4096 / 512.")


def test_a_renamed_golden_moves_the_oracle_pin_and_names_both_paths(tmp_path: Path) -> None:
    case = _case(tmp_path)
    envelopes = Envelopes(SHIPPED / "envelopes.yaml")
    gcc = envelopes.get("gcc")
    files = {g: [] for g in case.enabled_gates()}
    before = lock.pins(case, "prompt", files, [gcc])
    probe = case.dir / "probes/pos_describe.cpp"
    probe.rename(case.dir / "probes/pos_describe2.cpp")
    after = lock.pins(case, "prompt", files, [gcc])
    assert before.oracles != after.oracles
    assert (before.prompt, before.grader, before.toolchains) == (
        after.prompt,
        after.grader,
        after.toolchains,
    )
    pinned = lock.Lock({case.id: lock.entry(before)}, before.grader_files)
    (line,) = lock.moved(case.id, pinned, after)
    assert "oracles pin moved" in line
    assert "probes/pos_describe.cpp (removed)" in line
    assert "probes/pos_describe2.cpp (added)" in line
    # Another envelope flag vector is another toolchain pin.
    other = lock.pins(case, "prompt", files, [gcc.with_std("c++17")])
    assert other.toolchains != before.toolchains
