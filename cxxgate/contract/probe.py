"""Probe translation units rendered from Jinja2 templates under templates/."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jinja2

from cxxgate.store.codehash import TEMPLATES


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,  # a missing argument is an error, not ""
        keep_trailing_newline=True,
        autoescape=False,
    )


def exists(name: str) -> bool:
    return (TEMPLATES / name).is_file()


def render(name: str, **context: Any) -> str:
    return _render(name, json.dumps(context, sort_keys=True))


@cache
def _render(name: str, context: str) -> str:
    # Keyed by the JSON of the context: the same probe is asked for once per graded patch.
    return _environment().get_template(name).render(**json.loads(context))
