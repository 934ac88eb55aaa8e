"""Compiler diagnostics as data: GCC's JSON output, or clang's one-line text format."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from cxxgate.cell import CellResult, Step

_TEXT = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): "
    r"(?P<kind>fatal error|error|warning|note): (?P<msg>.*)$"
)


@dataclass(frozen=True)
class Diagnostic:
    kind: str  # "error", "fatal error", "warning", "note"
    file: str  # relative to the tree, or the unit's own name
    line: int
    column: int
    message: str

    @property
    def is_error(self) -> bool:
        return self.kind in {"error", "fatal error"}

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
            found.append(
                Diagnostic(
                    m["kind"],
                    _relative(m["file"], tree_root),
                    int(m["line"]),
                    int(m["col"]),
                    m["msg"],
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


def first_error(diags: list[Diagnostic]) -> Diagnostic | None:
    return next((d for d in diags if d.is_error), None)


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
