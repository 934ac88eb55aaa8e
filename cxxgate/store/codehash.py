"""Hashes of the harness's own source files, for cache keys and the eval identity.

doit does not hash actions or dodo.py, so code that shapes a result must enter the key
of the task that produces it.
"""

from __future__ import annotations

import ast
import hashlib
import os
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

PACKAGE = Path(__file__).resolve().parent.parent  # the engine's modules
TEMPLATES = PACKAGE / "templates"
BUILTIN_GATES = "cxxgate.gates"

# Bump to invalidate every cached result after a change outside the hashed files
# (e.g. a new system library that changes compiler output).
EPOCH = "1"


@cache
def of_modules(*names: str) -> str:
    """The named engine modules (dotted below `cxxgate`, e.g. `runs.run`)."""
    h = hashlib.sha256(EPOCH.encode())
    for name in names:
        path = PACKAGE.joinpath(*name.split(".")).with_suffix(".py")
        h.update(name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


@cache
def of_closure(*names: str) -> str:
    """The named engine modules and every engine module they import, transitively (read
    from their `import` statements, those inside functions too): a cell whose code is
    one module's closure is keyed by exactly the code that can shape it, and a change
    anywhere else (a gate's classification, the ctest run for a build) keeps its key."""
    h = hashlib.sha256(EPOCH.encode())
    for path in closure_files(*names):
        h.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def closure_files(*names: str) -> list[Path]:
    """The files of_closure hashes, sorted."""
    seen: set[Path] = set()
    todo = [_module_path(f"cxxgate.{n}") for n in names]
    while todo:
        path = todo.pop()
        if path is None or path in seen:
            continue
        seen.add(path)
        todo += [_module_path(m) for m in _imports(path)]
    return sorted(seen)


def _imports(path: Path) -> list[str]:
    """The dotted names a module's `import` statements name below `cxxgate` (`from
    cxxgate.cells import ctest` names `cxxgate.cells` and `cxxgate.cells.ctest`)."""
    found: list[str] = []
    package = "cxxgate." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            found += [base, *(f"{base}.{a.name}" for a in node.names)]
    return [n for n in found if n == "cxxgate" or n.startswith("cxxgate.")]


def _module_path(dotted: str) -> Path | None:
    """An engine module's file (a package's `__init__.py`); None for a name that is no
    module (a function imported from one)."""
    where = PACKAGE.joinpath(*dotted.split(".")[1:])
    for path in (where.with_suffix(".py"), where / "__init__.py"):
        if path.is_file():
            return path
    return None


@cache
def of_module_and_siblings(name: str) -> str:
    """A module's file and those of the modules of its own package it refers to (by
    `import` or by a name imported from them), e.g. a gate and the helper it shares."""
    h = hashlib.sha256(EPOCH.encode())
    for path in module_and_sibling_files(name):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def module_and_sibling_files(name: str) -> list[Path]:
    """The files of_module_and_siblings hashes, sorted: the module and, transitively, the
    helpers it refers to (a gate's helper that reads the reports through another helper
    is as much the gate's code as the one it names)."""
    package = name.rpartition(".")[0]
    folder = _file_of(sys.modules[name]).parent  # a top-level gate module's siblings
    seen = {name}
    todo = [name]
    while todo:
        module = sys.modules[todo.pop()]
        for value in vars(module).values():
            if isinstance(value, ModuleType):
                other = value.__name__
            else:
                other = getattr(value, "__module__", "")
            if (
                isinstance(other, str)
                and other not in seen
                and _beside(other, package)
                and other in sys.modules
                and (
                    package
                    or Path(getattr(sys.modules[other], "__file__", "") or "/").parent == folder
                )
            ):
                seen.add(other)
                todo.append(other)
    return sorted(_file_of(sys.modules[m]) for m in seen)


def _beside(other: str, package: str) -> bool:
    """A built-in gate's helpers are in its own folder or in gates/shared/ (anywhere under
    cxxgate.gates); another package's are the modules of the gate's own package."""
    if package.startswith(BUILTIN_GATES):
        return other.startswith(BUILTIN_GATES + ".")
    return other.rpartition(".")[0] == package


def _file_of(module: ModuleType) -> Path:
    if module.__file__ is None:
        msg = f"module {module.__name__!r} has no source file to hash"
        raise ValueError(msg)
    return Path(module.__file__)


@cache
def of_templates(folder: Path = TEMPLATES) -> str:
    """The templates under `folder` (a gate's own: templates/<gate>/); none: a constant."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            h.update(path.relative_to(folder).as_posix().encode() + b"\0")
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


@cache
def of_package() -> str:
    """Every file of the engine (modules, gates, templates): the grader a shard ran."""
    h = hashlib.sha256(EPOCH.encode())
    for path in package_files():
        h.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def package_files() -> list[Path]:
    """Every file under the package, sorted, through the links a checkout has (its gates/
    and templates/ live at the top of the repository, linked in as cxxgate/gates and
    cxxgate/templates; a wheel holds them as plain folders)."""
    found = [
        Path(top, name)
        for top, _dirs, names in os.walk(PACKAGE, followlinks=True)
        if "__pycache__" not in Path(top).parts
        for name in names
    ]
    return sorted(found)


def of_text(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def of_reports() -> str:
    """The code and template that render report.md, report.html and findings.sarif."""
    code = of_modules(
        "reports.report_md", "reports.report_html", "reports.sarif", "verdicts.evidence"
    )
    h = hashlib.sha256(code.encode())
    for path in sorted((PACKAGE / "reports" / "report_templates").rglob("*")):
        if path.is_file():
            h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]
