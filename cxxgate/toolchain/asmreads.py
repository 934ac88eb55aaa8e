"""What the assembler reads: every object compile of a gcc envelope runs through a small
wrapper that asks GNU as for its own dependency file (`-Wa,--MD,<file>`) and refuses the
compile when the assembler read a file the compiler's `-MD` dependency file does not name.

Why refuse rather than record: inline assembly's `.incbin` and `.include` read files after
preprocessing, so no `-MD` list names them. cxxgate/cells/reuse.py matches trees by the files a
compile's dependency file names, and ccache (cxxgate/toolchain/ccache.py, depend mode) keys a result
the same way: a tree whose `src/blob.dat` differs was served the other tree's object
(measured). ccache cannot be told about those reads: on a hit the assembler does not run,
so its dependency file is not written, and a hit would carry no evidence. A compile that
fails is never stored by ccache, and the refusal depends only on the assembler's input,
which the keys do cover; so the cell's status is the same with ccache on or off, with
reuse on or off. The path such a directive names is also not the same with ccache on
(the tree is shown at /src/project) and off (its own path): refused, the difference never
reaches a verdict.

The wrapper is POSIX sh (it runs inside the compile's sandbox, and as ccache's
`prefix_command`, so ccache never sees the flag it adds). A read counts when the file
still exists after the compile (gcc's own temporary assembler input is gone by then) and
the `-MD` list does not name it in the same spelling (the `.file` name gcc writes for a
unit in the working folder is one it names). clang's integrated assembler has no such
dependency file: its object compiles are not covered (README, "Security").
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

SCRIPT = r"""#!/bin/sh
# cxxgate (cxxgate/toolchain/asmreads.py): refuse an object whose assembler read a file that the
# compiler's -MD dependency file does not name (.incbin/.include in inline assembly).
set -f
# A compiler gone since the grade was planned says so as a driver would, so the harness
# takes it as the machine's fault (cxxgate/results/faults.py), not the candidate's.
run() {
  "$@" && return 0
  s=$?
  case $s in 126|127) [ -x "$1" ] || command -v "$1" >/dev/null 2>&1 ||
    echo "cxxgate-asm-reads: fatal error: cannot execute '$1':" \
      "execvp: No such file or directory" >&2;;
  esac
  return $s
}
mf= prev=
for a; do [ "$prev" = -MF ] && mf=$a; prev=$a; done
[ -n "$mf" ] || { run "$@"; exit; }
asd="$mf.as"
rm -f "$asd" "$asd.mf"
run "$@" "-Wa,--MD,$asd" || { s=$?; rm -f "$asd"; exit $s; }
[ -f "$asd" ] || exit 0
words() { sed -e 's/\\$//' -e '1s/^[^ ]*: *//' "$1" | tr ' \t' '\n\n' | sed '/^$/d'; }
words "$mf" > "$asd.mf"
bad=
for f in $(words "$asd"); do
  [ -e "$f" ] || continue
  grep -qxF -- "$f" "$asd.mf" && continue
  bad="$bad $f"
done
rm -f "$asd" "$asd.mf"
[ -z "$bad" ] && exit 0
echo "cxxgate: error: the assembler read$bad, which no dependency file names" \
  "(.incbin or .include in inline assembly): such an object is refused," \
  "since no cache key could see what it read" >&2
exit 1
"""
DIGEST = hashlib.sha256(SCRIPT.encode()).hexdigest()[:16]


def wrapper(root: Path) -> Path:
    """The wrapper script under the build folder, written once (its name holds its digest)."""
    path = root / "bin" / f"cxxgate-asm-reads-{DIGEST}"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        # Executable before it has its name: another thread may run it the moment it has.
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(SCRIPT)
        tmp.chmod(0o755)
        os.replace(tmp, path)
    return path


def applies(argv: list[str], family: str) -> bool:
    """An object compile (-c, with a -MF dependency file) by a gcc-family compiler."""
    return family == "gcc" and "-c" in argv and "-MF" in argv and "-E" not in argv
