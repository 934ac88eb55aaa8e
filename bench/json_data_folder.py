"""A data folder for grading nlohmann/json 3.9 to 3.10 without network (by hand, never in
CI): those versions `git clone --branch vX json_test_data` while they build. This writes
each tag's tree of a json_test_data clone to DIR/json_test_data-<version>/ and a stand-in
`DIR/git` that copies the tree the clone asks for. Then:

    python bench/json_data_folder.py --clone CLONE --out DIR
    doit import instances=json.jsonl repo=JSON_CLONE data=DIR \\
        options="-DBUILD_TESTING=ON -DGIT_EXECUTABLE=DIR/git \\
                 -DCMAKE_CXX_FLAGS=-DDOCTEST_CONFIG_NO_POSIX_SIGNALS"

Files whose blobs the clone lacks (a partial snapshot) are left out and listed.
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

STAND_IN = """\
#!/bin/sh
# Stands in for `git clone --branch vX <json_test_data url>` in nlohmann/json's
# download_test_data target: copies this folder's tree of that tag.
here=$(dirname "$0")
ver=
while [ $# -gt 0 ]; do
  case "$1" in --branch) ver="$2"; shift 2;; *) shift;; esac
done
src="$here/json_test_data-${ver#v}"
[ -d "$src" ] || { echo "git stand-in: no tree for $ver in $here" >&2; exit 1; }
exec cp -r "$src" json_test_data
"""


def git(clone: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(clone), *args], capture_output=True, check=False)


def write_tag(clone: Path, tag: str, dest: Path) -> list[str]:
    """The tag's files under dest; the paths whose blobs are missing."""
    listing = git(clone, "ls-tree", "-r", "-z", tag)
    if listing.returncode != 0:
        raise SystemExit(f"{clone}: no tag {tag}: {listing.stderr.decode().strip()}")
    missing = []
    for entry in listing.stdout.split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.decode().partition("\t")
        blob = meta.split()[2]
        data = git(clone, "cat-file", "blob", blob)
        if data.returncode != 0:
            missing.append(path)
            continue
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.stdout)
    return missing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clone", type=Path, required=True, help="a json_test_data clone")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tags", nargs="+", default=["v1.0.0", "v2.0.0", "v3.0.0"])
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for tag in args.tags:
        missing = write_tag(args.clone, tag, args.out / f"json_test_data-{tag.lstrip('v')}")
        print(f"{tag}: {len(missing)} file(s) missing from the clone: {', '.join(missing)}")
    stand_in = args.out / "git"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    # The tests run as an unprivileged uid: everything readable by others.
    subprocess.run(["chmod", "-R", "a+rX", str(args.out)], check=True)
    print(f"data folder: {args.out} (options: -DGIT_EXECUTABLE={stand_in.resolve()})")


if __name__ == "__main__":
    main()
