"""Compiler diagnostics as data: GCC's JSON output, or clang's one-line text format."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from cxxgate.toolchain.cellspec import CellResult, Step

_TEXT = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): "
    r"(?P<kind>fatal error|error|warning|note): (?P<msg>.*)$"
)
# clang ends a flagged diagnostic with its flags: `[-Wc++11-narrowing]`,
# `[-Werror,-Wunused-result]`.
_CLANG_FLAG = re.compile(r" \[(-W[^\]]*)\]$")


def _clang_option(flags: str) -> str:
    """clang's `-Werror,-Wunused-result` in GCC's spelling, `-Werror=unused-result`."""
    parts = flags.split(",")
    if parts[0] == "-Werror" and len(parts) > 1:
        return "-Werror=" + parts[1].removeprefix("-W")
    return parts[0]


@dataclass(frozen=True)
class Diagnostic:
    kind: str  # "error", "fatal error", "warning", "note"
    file: str  # relative to the tree, or the unit's own name
    line: int
    column: int
    message: str
    # The warning flag behind it, as the compiler names it: GCC's JSON "option"
    # ("-Wnarrowing", "-Werror=unused-result"), clang's trailing "[-Werror,-Wunused-result]".
    option: str = ""

    @property
    def is_error(self) -> bool:
        return self.kind in {"error", "fatal error"}

    @property
    def promoted(self) -> bool:
        """A warning that -Werror (or -Werror=X) turned into an error. GCC names a real
        error that has a flag of its own (narrowing) without the -Werror prefix."""
        return self.is_error and self.option.startswith("-Werror")

    @property
    def is_hard_error(self) -> bool:
        """An error the language makes, not one the envelope's flags made of a warning."""
        return self.is_error and not self.promoted

    def brief(self) -> str:
        return f"{self.file}:{self.line}: {self.kind}: {self.message}"


def parse(step: Step, tree_root: str) -> list[Diagnostic]:
    """All diagnostics of one compiler step, in the order the compiler gave them."""
    found: list[Diagnostic] = []
    for raw in step.output.splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            try:
                items = json.loads(line)
            except json.JSONDecodeError:
                items = None
            if isinstance(items, list):
                for item in items:
                    found.extend(_from_json(item, tree_root))
                continue
        m = _TEXT.match(line)
        if m:
            flag = _CLANG_FLAG.search(m["msg"])
            found.append(
                Diagnostic(
                    m["kind"],
                    _relative(m["file"], tree_root),
                    int(m["line"]),
                    int(m["col"]),
                    m["msg"],
                    _clang_option(flag[1]) if flag else "",
                )
            )
    return found


def _from_json(item: dict[str, object], tree_root: str) -> list[Diagnostic]:
    locations = item.get("locations") or []
    caret: dict[str, object] = {}
    if isinstance(locations, list) and locations:
        caret = locations[0].get("caret", {})
    out = [
        Diagnostic(
            kind=str(item.get("kind", "error")),
            file=_relative(str(caret.get("file", "")), tree_root),
            line=int(str(caret.get("line", 0))),
            column=int(str(caret.get("column", 0))),
            message=str(item.get("message", "")),
            option=str(item.get("option", "") or ""),
        )
    ]
    children = item.get("children") or []
    if isinstance(children, list):
        for child in children:
            out.extend(_from_json(child, tree_root))
    return out


def _relative(file: str, tree_root: str) -> str:
    path = Path(file)
    if path.is_absolute() and path.is_relative_to(tree_root):
        return path.relative_to(tree_root).as_posix()
    return file.removeprefix("./")


def in_tree(diag: Diagnostic, units: tuple[str, ...]) -> bool:
    """Whether a diagnostic lies in a file of the patched tree: a relative path inside it
    (`parse` made tree paths relative), not one of the harness units compiled beside it
    under `units` names, nor a system header (absolute) or the compiler's own
    `<command-line>`."""
    path = Path(diag.file)
    return (
        bool(diag.file)
        and not diag.file.startswith("<")  # <command-line>, <built-in>
        and not path.is_absolute()
        and ".." not in path.parts
        and diag.file not in units
        and diag.line > 0
    )


def first_error(diags: list[Diagnostic], *, hard: bool = False) -> Diagnostic | None:
    """The first error; with `hard`, the first that is not a promoted warning."""
    return next((d for d in diags if (d.is_hard_error if hard else d.is_error)), None)


def errors_with_notes(diags: list[Diagnostic]) -> list[list[Diagnostic]]:
    """Group each error with the notes that follow it (GCC's JSON lists them as siblings)."""
    groups: list[list[Diagnostic]] = []
    for d in diags:
        if d.is_error:
            groups.append([d])
        elif d.kind == "note" and groups:
            groups[-1].append(d)
    return groups


def of_cell(cell: CellResult) -> list[Diagnostic]:
    return [d for step in cell.compile_steps() for d in parse(step, cell.tree_root)]


def telling_line(step: Step) -> str:
    """The linker line that names the symbol; its last line is only `ld returned 1`."""
    lines = [ln.strip() for ln in step.output.splitlines() if ln.strip()]
    telling = [ln for ln in lines if "undefined reference" in ln or "multiple definition" in ln]
    return (telling or lines or ["no output"])[0][:200]


def why_failed(cell: CellResult) -> str:
    """One line on why a cell produced nothing: its first compiler error, the linker's
    line naming the symbol, or the cell's own detail. Stable between runs."""
    if cell.status == "timeout":
        return "the compiler ran past its time limit"
    first = first_error(of_cell(cell))
    if first is not None:
        return first.brief()
    failed = next((s for s in cell.steps if s.exit != 0), None)
    if failed is not None:
        return f"{cell.status}: {telling_line(failed)}"
    return f"{cell.status}: {(cell.detail.strip().splitlines() or ['no detail'])[-1][:200]}"
