"""Plan pieces shared by the surface gates (consumer, headers, symbols): which library
name, which library sources. All of it feeds cell keys, so nothing here
can leave a stale classification behind."""

from __future__ import annotations

import re

from cxxgate.contract.gate import Context
from cxxgate.util.yamlfile import InputError


def library_name(ctx: Context, gate: str, name: str | None) -> str:
    """lib<name>.a / lib<name>.so: the gate's `library`, else the case id."""
    product = name or ctx.case.id
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*", product):
        msg = f"{ctx.case.file}: gates.{gate}.library: {product!r} is not a usable library name"
        raise InputError(msg)
    return product


def library_sources(ctx: Context, gate: str, globs: list[str] | None) -> tuple[str, ...]:
    """The library's sources (globs in the tree): the gate's `sources`, else the case's."""
    sources = tuple(globs if globs is not None else ctx.case.spec.sources)
    if not sources:
        msg = (
            f"{ctx.case.file}: gates.{gate}.sources: no library sources to build "
            "(give them here or as the case's `sources`)"
        )
        raise InputError(msg)
    return sources
