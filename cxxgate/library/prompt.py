"""A case's prompt: `prompt.md.j2` beside case.yaml, rendered with what the candidate may
see (summary, language standard, writable set, public headers and their frozen text, the
assumption ledger) for the generation side (`doit prompts`).

A rendered prompt must never carry an oracle. The template gets no loader that reaches
other files (`include`, `import` and `extends` fail), and the rendered text is checked
against every oracle the case holds: each line of a file outside the tree (probes,
goldens, hidden tests, patches: the reference patch is the answer), and every value of
the gates' configuration in case.yaml (size tables, seeds, inline arguments), plus the
build folder's seed. A hit fails the render, naming the oracle and its line.

A line is found verbatim (16 characters or more, blanks normalised), and also as
multisets, whatever its length and order: its numbers (`1765 42` of a hidden golden is
found in "42 for 1765"), and its tokens (a probe's line re-spaced or shuffled), within
any three consecutive lines of the prompt; numbers by value whatever suffix is glued to
them or however their digits are grouped, a long number on its own, a line with its blanks
removed, and base64 and hex runs decoded. A table of numbers in case.yaml is found in
order or as a multiset anywhere in the prompt (a size table reversed). What the base tree
shows on one line is not a secret.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import BaseLoader, StrictUndefined, TemplateError, TemplateNotFound
from jinja2.sandbox import SandboxedEnvironment

from cxxgate.library.case import Case

TEMPLATE = "prompt.md.j2"
# Files of the case folder a prompt may quote: the case file (its summary), the prompt
# itself and the assumption ledger (a contract the candidate must know).
NOT_ORACLES = frozenset({"case.yaml", TEMPLATE, "assumptions.yaml"})
# A line shorter than this (`}`, `return 0;`) says nothing about an oracle.
MIN_LINE = 16
# A number needs this many digits before it alone counts as a secret (seeds); shorter
# numbers count in runs of three or more, in order (a size table).
MIN_DIGITS = 6
# An oracle line's numbers are a secret when they hold this many digits together (`1765
# 42`; not `8 2`, which any prose may hold) besides 0, 1 and -1.
MIN_LINE_DIGITS = 4
# An oracle line's tokens are a secret when it has this many words, this many of them
# distinct, and their letters this many characters (`total += value * *unit;` shares its
# words with any prose about the task; a probe's condition does not).
MIN_WORDS, MIN_DISTINCT, MIN_WORD_CHARS = 5, 4, 16
DIFF_HEADERS = ("diff --git ", "index ", "--- ", "+++ ", "@@ ", "new file", "deleted file")
WINDOW = 3  # prompt lines a line's numbers may be spread over (its tokens: one line)
# A number, its sign, and any suffix glued to it (`1765LL`, `1765ms`, `42u`): the value
# is the digits'.
_NUMBER = re.compile(
    r"(?<![\w.])(-?(?:0[xX][0-9a-fA-F']+|0[bB][01']+|\d[\d']*(?:\.\d+)?(?:[eE][+-]?\d+)?))"
    r"[A-Za-z_]*(?![\w.]*\w)"
)
# Digits grouped by thousands with a comma, a blank or a thin space (`999,999`, `999 999`).
_GROUPED = re.compile(r"(?<![\d,.])\d{1,3}(?:[,\u00a0\u2009\u202f ]\d{3})+(?![\d])")
# Encoded runs a prompt may carry an oracle's text in: base64, hex.
_BASE64 = re.compile(r"[A-Za-z0-9+/]{8,}={0,2}")
_HEX = re.compile(r"\b(?:[0-9a-fA-F]{2}){6,}\b")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TRIVIAL_NUMBERS = frozenset({"0", "1", "-1"})


class PromptError(Exception):
    """A prompt that cannot be rendered, or would leak an oracle: names the file."""


class _NoFiles(BaseLoader):
    def get_source(self, environment: Any, template: str) -> Any:
        raise TemplateNotFound(f"{template} (a prompt may not include other files)")


@dataclass(frozen=True)
class Rendered:
    case: str
    text: str


def template_of(case: Case) -> Path | None:
    path = case.dir / TEMPLATE
    return path if path.is_file() else None


def context(case: Case) -> dict[str, Any]:
    """What the template sees: only what the candidate is meant to see."""
    spec = case.spec
    headers = {h: (case.tree / h).read_text(errors="replace") for h in spec.public_headers}
    ledger = case.dir / "assumptions.yaml"
    return {
        "id": case.id,
        "summary": spec.summary,
        "std": spec.std or "c++20",
        "writable": list(spec.writable),
        "public_headers": list(spec.public_headers),
        "headers": headers,
        "sources": list(spec.sources),
        "assumptions": ledger.read_text() if ledger.is_file() else "",
    }


def environment() -> SandboxedEnvironment:
    """How a prompt template renders, here and at import (cxxgate/library/swe_import.py):
    sandboxed, strict about names, no other files."""
    return SandboxedEnvironment(
        loader=_NoFiles(),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(case: Case, seed: str = "") -> Rendered | None:
    """The case's rendered prompt, or None when it has none. Raises PromptError."""
    path = template_of(case)
    if path is None:
        return None
    try:
        text = environment().from_string(path.read_text()).render(context(case))
    except (TemplateError, UnicodeDecodeError) as exc:
        raise PromptError(f"{path}: cannot render: {exc}") from exc
    leak = find_oracle(case, text, seed)
    if leak:
        raise PromptError(f"{path}: the rendered prompt would carry an oracle: {leak}")
    return Rendered(case.id, text)


def _views(text: str) -> str:
    """`text` and what it spells in other forms: digits grouped by thousands joined,
    base64 and hex runs decoded (when they decode to text)."""
    out = [text]
    grouped = _GROUPED.sub(lambda m: re.sub(r"\D", "", m.group()), text)
    if grouped != text:
        out.append(grouped)
    for pattern, decode in ((_BASE64, _b64), (_HEX, bytes.fromhex)):
        for m in pattern.finditer(text):
            try:
                raw = decode(m.group())
            except ValueError:
                continue
            decoded = raw.decode("utf-8", errors="replace")
            if decoded and sum(ch.isprintable() or ch in "\n\t" for ch in decoded) >= (
                0.9 * len(decoded)
            ):
                out.append(decoded)
    # Views apart by more lines than a window spans: no window joins two of them.
    return ("\n" + "~\n" * WINDOW).join(out)


def _b64(run: str) -> bytes:
    try:
        return base64.b64decode(run + "=" * (-len(run) % 4), validate=True)
    except binascii.Error as exc:
        raise ValueError(str(exc)) from exc


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def find_oracle(case: Case, text: str, seed: str = "") -> str:
    """Where `text` quotes an oracle of `case`, or ''."""
    files = []
    for path in sorted(p for p in case.dir.rglob("*") if p.is_file()):
        rel = path.relative_to(case.dir).as_posix()
        if not (rel.startswith("tree/") or rel in NOT_ORACLES):
            # Every byte counts: a non-UTF-8 byte must not hide the rest of the file.
            files.append((rel, path.read_text(errors="replace")))
    gates = case.spec.model_dump(mode="json")["gates"]
    return oracle_in(text, files, gates, Visible(_visible_text(case)), seed)


class Visible:
    """What the candidate sees anyway (the base tree, one normalised line per line), in
    the forms the oracle check compares with; made once for many checks."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tight = _squeezed(text)
        self.windows = _Windows(text, WINDOW)
        self.numbers = Counter(_numbers(text))


def oracle_in(
    text: str, files: list[tuple[str, str]], gates: Any, visible: Visible, seed: str = ""
) -> str:
    """Where `text` quotes one of the oracle `files` (path, text) or a value of the gates'
    configuration, one the base tree does not show; or ''. `doit import` runs the same
    check on a problem statement (cxxgate/library/swe_import.py)."""
    text = _views(text)
    flat = _norm(text)
    tight = _squeezed(text)
    prompt = {"numbers": _Windows(text, WINDOW), "tokens": _Windows(text, 1)}
    for rel, body in files:
        for number, line in enumerate(body.splitlines(), 1):
            norm = _norm(line[1:] if rel.endswith(".diff") and line[:1] in "+- " else line)
            if len(norm) >= MIN_LINE and norm in flat and norm not in visible.text:
                return f"{rel}:{number} ({norm[:60]!r})"
            squeezed = _squeezed(norm)  # the same line, blanks removed or added
            if len(squeezed) >= MIN_LINE and squeezed in tight and squeezed not in visible.tight:
                return f"{rel}:{number} ({norm[:60]!r}, blanks aside)"
            if rel.endswith(".diff") and line.startswith(DIFF_HEADERS):
                continue  # paths and hashes, not code
            for what, secret in _secrets(norm):
                if prompt[what].holds(secret) and not visible.windows.holds(secret):
                    return f"{rel}:{number} ({norm[:60]!r}: its {what}, in any order)"
    for key, value in _leaves(gates, "gates"):
        hit = _secret_in(value, text, visible.numbers)
        if hit:
            return f"case.yaml {key} ({hit})"
    if seed and re.search(rf"(?<!\d){re.escape(seed)}(?!\d)", text):
        return f"the batch seed {seed}"
    return ""


def _norm(line: str) -> str:
    return " ".join(line.split())


def _numbers(text: str) -> list[str]:
    """The numbers of `text` by value (`0x6E4` and `1'764` are `1764`)."""
    out = []
    for match in _NUMBER.finditer(text):
        value = number_value(match.group(1))
        if value is not None:
            out.append("num:" + value)
    return out


def number_value(spelt: str) -> str | None:
    """A number's value as one string (`0x6E4`, `1'764` and `1764.0` are `1764`). The
    engine's own: the leak gate's parser (gates/shared/cppsource.py) is a gate's."""
    raw = spelt.replace("'", "").lower()
    sign, raw = ("-", raw[1:]) if raw.startswith("-") else ("", raw)
    try:
        if raw.startswith(("0x", "0b")):
            return sign + str(int(raw[2:], 16 if raw[1] == "x" else 2))
        value = float(raw)
    except ValueError:
        return None
    if value.is_integer() and abs(value) < 2**63:
        return sign + str(int(value))
    return sign + repr(value)


def _tokens(text: str) -> list[str]:
    return _numbers(text) + ["w:" + w for w in _WORD.findall(text)]


def _secrets(line: str) -> list[tuple[str, Counter[str]]]:
    """What one oracle line gives away besides its text: its numbers (when they hold
    MIN_LINE_DIGITS digits or one holds MIN_DIGITS), its tokens (when it has MIN_WORDS
    words)."""
    out: list[tuple[str, Counter[str]]] = []
    numbers = [n for n in _numbers(line) if n[4:] not in _TRIVIAL_NUMBERS]
    digits = [sum(ch.isdigit() for ch in n) for n in numbers]
    if (len(numbers) >= 2 and sum(digits) >= MIN_LINE_DIGITS) or max(digits, default=0) >= (
        MIN_DIGITS
    ):
        out.append(("numbers", Counter(numbers)))
    # A long number is a secret on its own too (a hidden input quoted without its answer).
    out += [
        ("numbers", Counter([n])) for n, d in zip(numbers, digits, strict=True) if d >= MIN_DIGITS
    ]
    words = _WORD.findall(line)
    enough = len(words) >= MIN_WORDS and len(set(words)) >= MIN_DISTINCT
    if enough and sum(map(len, words)) >= MIN_WORD_CHARS:
        out.append(("tokens", Counter(_tokens(line))))
    return out


class _Windows:
    """The token multisets of every run of up to `width` consecutive lines of a text."""

    def __init__(self, text: str, width: int) -> None:
        lines = [Counter(_tokens(line)) for line in text.splitlines() if line.strip()]
        self.windows = []
        for start in range(len(lines)):
            total: Counter[str] = Counter()
            for line in lines[start : start + width]:
                total += line
                self.windows.append(total.copy())
        self.every = set().union(*self.windows) if self.windows else set()

    def holds(self, secret: Counter[str]) -> bool:
        if not secret.keys() <= self.every:
            return False
        return any(secret <= window for window in self.windows)


def _visible_text(case: Case) -> str:
    """What the candidate sees anyway: the base tree, one normalised line per line."""
    lines = []
    for path in sorted(case.tree.rglob("*")):
        if path.is_file():
            lines += [_norm(line) for line in path.read_text(errors="replace").splitlines()]
    return "\n".join(lines)


def _leaves(value: Any, key: str) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, f"{key}.{k}")]
    if isinstance(value, list) and value and all(isinstance(v, int | float) for v in value):
        return [(key, value)]  # a table of numbers is one secret, in order
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, f"{key}[{i}]")]
    return [(key, value)]


def _secret_in(value: Any, text: str, visible: Counter[str] | None = None) -> str:
    if isinstance(value, list) and len(value) >= 3:
        numbers = r"\D+".join(re.escape(str(v)) for v in value)
        if re.search(rf"(?<!\d){numbers}(?!\d)", text):
            return "a table of its numbers"
        table = Counter(_numbers(" ".join(str(v) for v in value)))
        digits = sum(ch.isdigit() for n in table.elements() for ch in n)
        shown = visible if visible is not None else Counter()
        if digits >= MIN_DIGITS and table <= Counter(_numbers(text)) and not table <= shown:
            return "a table of its numbers, in any order"
        return ""
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, int) and len(str(abs(value))) >= MIN_DIGITS:
        return str(value) if re.search(rf"(?<!\d){value}(?!\d)", text) else ""
    if isinstance(value, str) and len(_norm(value)) >= MIN_LINE and _norm(value) in _norm(text):
        return repr(value[:60])
    return ""
