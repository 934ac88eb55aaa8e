"""What the census keeps of one tree file: its witnesses (keyed, with what the scans
learnt of each), witness-macro definitions and misses. Data only, so the modules that
fill it in (witness.py, callees.py, executed.py) share it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Witness:
    kind: str  # test | check | static_assert | assert
    macro: str
    file: str
    line: int
    column: int
    test: str  # enclosing test ("Suite.Name", "case/section"), "fn:<function>", or ""
    fp: str
    text: str
    mark: int  # byte offset where the liveness marker goes (survive.py)
    name: str = ""  # a test's own name, with its enclosing test's ("case/section")
    exits: int = 0  # a test's ways out of its body: return, throw, goto, exit()...
    guard: str = ""  # the control flow around a check within its test: `if (false)`, a lambda
    live: bool | None = None  # after preprocessing; None: could not be told
    # Byte offsets of the witness's own text (a test: up to its body) and of the end of a
    # check's first argument (-1: none), where survive.py and executed.py put markers.
    start: int = 0
    end: int = 0
    close: int = -1
    expansion: str = ""  # fingerprint of what the preprocessor made of it ("": not told)
    expanded: str = ""  # that expansion, shortened, for the message
    callees: list[str] = field(default_factory=list)  # what its calls bind to (callees.py)
    data: list[str] = field(default_factory=list)  # the variables it reads (callees.py)
    contexts: list[str] = field(default_factory=list)  # its expansions in the units reading it
    ran: bool | None = None  # seen executing while the test program ran; None: not told


@dataclass
class Macro:
    name: str
    kind: str  # define | undef
    file: str
    line: int
    fp: str
    text: str


@dataclass
class Miss:
    name: str
    file: str
    line: int
    column: int
    why: str


@dataclass
class FileInventory:
    file: str
    witnesses: list[Witness] = field(default_factory=list)
    macros: list[Macro] = field(default_factory=list)
    misses: list[Miss] = field(default_factory=list)
