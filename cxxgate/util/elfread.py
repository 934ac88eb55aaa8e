"""What reading an ELF file the harness did not make may raise.

The build's commands and a candidate's code make the objects and programs the gates
read: pyelftools raises ELFError for what it recognises as malformed, and ValueError,
struct.error, OverflowError, IndexError, KeyError, UnicodeDecodeError or MemoryError
for headers that point outside the file or hold values it does not expect (a section
name table offset with its top bit set), and zlib.error for a section flagged compressed
that is not. Each reader treats any of these as "not an ELF file it can read", never as
a fault of the harness.
"""

from __future__ import annotations

import struct
import zlib

from elftools.common.exceptions import ELFError

ELF_ERRORS = (
    ELFError, OSError, ValueError, struct.error, OverflowError, IndexError, KeyError,
    UnicodeDecodeError, MemoryError, zlib.error,
)  # fmt: skip
