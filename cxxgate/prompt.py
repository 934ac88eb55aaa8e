"""A case's prompt: `prompt.md.j2` beside case.yaml, rendered with what the candidate may
see (summary, language standard, writable set, public headers and their frozen text, the
assumption ledger) for the generation side (`doit prompts`).

A rendered prompt must never carry an oracle. The template gets no loader that reaches
other files (`include`, `import` and `extends` fail), and the rendered text is checked
against every oracle the case holds: each significant line of a file outside the tree
(probes, goldens, hidden tests, patches: the reference patch is the answer), and every
value of the gates' configuration in case.yaml (size tables, seeds, inline arguments),
plus the build folder's seed. A hit fails the render, naming the oracle and its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import BaseLoader, StrictUndefined, TemplateError, TemplateNotFound
from jinja2.sandbox import SandboxedEnvironment

from cxxgate.case import Case

TEMPLATE = "prompt.md.j2"
# Files of the case folder a prompt may quote: the case file (its summary), the prompt
# itself and the assumption ledger (a contract the candidate must know).
NOT_ORACLES = frozenset({"case.yaml", TEMPLATE, "assumptions.yaml"})
# A line shorter than this (`}`, `return 0;`) says nothing about an oracle.
MIN_LINE = 16
# A number needs this many digits before it alone counts as a secret (seeds); shorter
# numbers count in runs of three or more, in order (a size table).
MIN_DIGITS = 6


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


def render(case: Case, seed: str = "") -> Rendered | None:
    """The case's rendered prompt, or None when it has none. Raises PromptError."""
    path = template_of(case)
    if path is None:
        return None
    env = SandboxedEnvironment(
        loader=_NoFiles(),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    try:
        text = env.from_string(path.read_text()).render(context(case))
    except (TemplateError, UnicodeDecodeError) as exc:
        raise PromptError(f"{path}: cannot render: {exc}") from exc
    leak = find_oracle(case, text, seed)
    if leak:
        raise PromptError(f"{path}: the rendered prompt would carry an oracle: {leak}")
    return Rendered(case.id, text)


def find_oracle(case: Case, text: str, seed: str = "") -> str:
    """Where `text` quotes an oracle of `case`, or ''."""
    visible = _visible_text(case)
    flat = _norm(text)
    for path in sorted(p for p in case.dir.rglob("*") if p.is_file()):
        rel = path.relative_to(case.dir).as_posix()
        if rel.startswith("tree/") or rel in NOT_ORACLES:
            continue
        try:
            lines = path.read_text().splitlines()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(lines, 1):
            norm = _norm(line[1:] if rel.endswith(".diff") and line[:1] in "+- " else line)
            if len(norm) >= MIN_LINE and norm in flat and norm not in visible:
                return f"{rel}:{number} ({norm[:60]!r})"
    for key, value in _leaves(case.spec.model_dump(mode="json")["gates"], "gates"):
        hit = _secret_in(value, text)
        if hit:
            return f"case.yaml {key} ({hit})"
    if seed and re.search(rf"(?<!\d){re.escape(seed)}(?!\d)", text):
        return f"the batch seed {seed}"
    return ""


def _norm(line: str) -> str:
    return " ".join(line.split())


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


def _secret_in(value: Any, text: str) -> str:
    if isinstance(value, list) and len(value) >= 3:
        numbers = r"\D+".join(re.escape(str(v)) for v in value)
        return "a table of its numbers" if re.search(rf"(?<!\d){numbers}(?!\d)", text) else ""
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, int) and len(str(abs(value))) >= MIN_DIGITS:
        return str(value) if re.search(rf"(?<!\d){value}(?!\d)", text) else ""
    if isinstance(value, str) and len(_norm(value)) >= MIN_LINE and _norm(value) in _norm(text):
        return repr(value[:60])
    return ""
