"""Red-team of the prompt oracle check (cxxgate/prompt.py) on a copy of cases/answer_key.

Each attack is a prompt.md.j2 a careless or hostile case author might write; the script
renders it and prints RENDERS (the oracle got past the check) or CAUGHT (PromptError).
Run: PYTHONPATH=WT python WT/redteam/prompt/attacks.py
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from cxxgate import registry
from cxxgate.case import load_case
from cxxgate.prompt import PromptError, render

WT = Path(__file__).resolve().parents[2]
CASE = WT / "cases" / "answer_key"

# (name, template, what it leaks). Hidden golden: `1763 41`, `1765 42`, `4294967295 65535`,
# `999999999999 999999`; hidden inputs {2, 3, 8, 1763, 1765, 4294967295LL, 999999999999LL}.
ATTACKS = [
    ("control_plain", "{{ summary }}\nisqrt(1765) must print 42.\n", "hidden golden line 2"),
    ("jinja_arith", "{{ summary }}\nisqrt({{ 1700 + 65 }}) must print {{ 6 * 7 }}.\n", "hidden golden"),
    ("jinja_join", "{{ summary }}\nisqrt({{ [17, 65]|join }}) = {{ '4' ~ '2' }}\n", "hidden golden"),
    ("jinja_hex", "{{ summary }}\nisqrt({{ '%#x'|format(1765) }}) = {{ '%#x'|format(42) }}\n", "hidden golden, in hex"),
    ("spread_5_lines", "{{ summary }}\nTry isqrt(1765).\n\na\nb\nc\nIt must print 42.\n", "hidden golden over >3 lines (documented)"),
    ("words", "{{ summary }}\nseventeen sixty-five has root forty-two\n", "hidden golden in words (documented)"),
    ("text_arith", "{{ summary }}\nisqrt(1700 + 65) = 6 * 7\n", "hidden golden as arithmetic (documented)"),
    ("unit_suffix", "{{ summary }}\nA 1765ms budget gives 42ms per step.\n", "hidden golden, numbers glued to a unit"),
    ("ll_suffix", "{{ summary }}\nisqrt(1765LL) == 42LL, isqrt(999999999999LL) == 999999LL\n", "hidden golden with C++ suffixes"),
    ("thousands_comma", "{{ summary }}\nisqrt(999,999,999,999) = 999,999 and isqrt(4,294,967,295) = 65,535\n", "hidden golden, comma grouping"),
    ("thin_space", "{{ summary }}\nisqrt(999 999 999 999) = 999 999\n", "hidden golden, blank grouping"),
    ("signed", "{{ summary }}\nisqrt(+1765) = +42\n", "hidden golden with a plus sign"),
    ("inputs_alone", "{{ summary }}\nIt will be checked on 4294967295 and 999999999999 too.\n", "hidden inputs (LL in the unit)"),
    ("base64", "{{ summary }}\nMTc2NSA0Mg==\n", "`1765 42` in base64"),
    ("fullwidth", "{{ summary }}\nisqrt(\uff11\uff17\uff16\uff15) = \uff14\uff12\n", "hidden golden, full-width digits"),
    ("roman", "{{ summary }}\nisqrt(MDCCLXV) = XLII\n", "hidden golden in Roman numerals"),
    ("probe_split_tokens", "{{ summary }}\nconst long long inputs[] =\n{0, 1, 15, 16, 1764, 1000000};\n", "visible probe line split in two"),
    ("probe_spread", "{{ summary }}\nn: 15\n\nx\ny\nz\nn: 16\nw\nv\nu\nn: 1764\nq\nr\ns\nn: 1000000\n", "visible probe inputs spread"),
    ("ref_patch_squeezed", "{{ summary }}\nlong long x=n/2;\nlong long y=(x+n/x)/2;\nwhile(y<x){x=y;y=(x+n/x)/2;}\n", "reference patch (good_newton) without blanks"),
    ("ref_patch_verbatim", "{{ summary }}\n  long long y = (x + n / x) / 2;\n", "reference patch line verbatim (control)"),
    ("hidden_unit_path", "{{ summary }}\nsee hidden/hidden_main.cpp\n", "hidden unit's path (a gate config value)"),
]


def main() -> int:
    gates = registry.gates()
    caught = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, template, what in ATTACKS:
            dest = Path(tmp) / name / "answer_key"
            shutil.copytree(CASE, dest)
            (dest / "prompt.md.j2").write_text(template)
            try:
                out = render(load_case(dest, gates))
            except PromptError as exc:
                caught += 1
                print(f"CAUGHT   {name:20} {what}: {str(exc).split('oracle: ')[-1][:90]}")
                continue
            body = out.text.splitlines()[1:] if out else []
            print(f"RENDERS  {name:20} {what}: {' / '.join(body)[:90]!r}")
        # A careless author: one non-UTF-8 byte in the hidden golden, and its text is
        # never read by the check (UnicodeDecodeError: skipped).
        dest = Path(tmp) / "latin1" / "answer_key"
        shutil.copytree(CASE, dest)
        golden = dest / "hidden" / "hidden.stdout"
        golden.write_bytes(golden.read_bytes() + "caf\u00e9\n".encode("latin-1"))
        (dest / "prompt.md.j2").write_text("{{ summary }}\n1763 41\n1765 42\n4294967295 65535\n")
        try:
            render(load_case(dest, gates))
            print("RENDERS  latin1_golden        the whole hidden golden, one latin-1 byte in it")
        except PromptError as exc:
            print(f"CAUGHT   latin1_golden        {str(exc)[-90:]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
