"""Probe translation units rendered from Jinja2 templates: a built-in gate's under the
engine's templates/ (`render("negcomp/call_with.cpp.j2", ...)`), any gate's from a folder
of its own (`render_from(folder, name, ...)`, the folder its `Gate.templates` names)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from cxxgate.store.codehash import TEMPLATES


@cache
def _environment(folder: Path = TEMPLATES) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        undefined=jinja2.StrictUndefined,  # a missing argument is an error, not ""
        keep_trailing_newline=True,
        autoescape=False,
    )


def exists(name: str) -> bool:
    return (TEMPLATES / name).is_file()


def render(name: str, **context: Any) -> str:
    return _render(TEMPLATES, name, json.dumps(context, sort_keys=True))


def render_from(folder: Path, name: str, **context: Any) -> str:
    """`name` rendered from the templates under `folder` (an out-of-tree gate's own)."""
    return _render(folder, name, json.dumps(context, sort_keys=True))


@cache
def _render(folder: Path, name: str, context: str) -> str:
    # Keyed by the JSON of the context: the same probe is asked for once per graded patch.
    return _environment(folder).get_template(name).render(**json.loads(context))
