"""Hashes of the harness's own source files, for cache keys and the eval identity.

doit does not hash actions or dodo.py, so code that shapes a result must enter the key
of the task that produces it.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
TEMPLATES = PACKAGE.parent / "templates"

# Bump to invalidate every cached result after a change outside the hashed files
# (e.g. a new system library that changes compiler output).
EPOCH = "1"


@cache
def of_modules(*names: str) -> str:
    h = hashlib.sha256(EPOCH.encode())
    for name in names:
        h.update(name.encode() + b"\0" + (PACKAGE / f"{name}.py").read_bytes())
    return h.hexdigest()[:16]


@cache
def of_templates() -> str:
    h = hashlib.sha256()
    for path in sorted(TEMPLATES.rglob("*")):
        if path.is_file():
            h.update(path.relative_to(TEMPLATES).as_posix().encode() + b"\0")
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def of_text(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()
