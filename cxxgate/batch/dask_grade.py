"""Grade a batch on a Dask cluster: one Dask task per shard (`doit grade shard=I/N`), each
worker running doit with a build folder and doit database of its own, then one
`doit merge` here. A shard's result travels back as its report files, so the workers need
the project, the case library and the batch at the same paths, not a shared build folder.

    python -m cxxgate.batch.dask_grade shards=4                        # a local cluster
    python -m cxxgate.batch.dask_grade shards=8 scheduler=tcp://10.0.0.5:8786

Other `name=value` arguments (cases=, patches=, report_only=, case=, out=) go to every
shard's grade; `out=` (default .grade/) gets the merged grade and `shards/I/` the shards'
reports. The exit status is the merged grade's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cxxgate.store.layout import Layout

REPORTS = ("verdicts.jsonl", "grade.json")  # what `doit merge` reads from a shard


def grade_shard(
    project: str, index: int, count: int, out: str, args: list[str]
) -> dict[str, str | int]:
    """On a worker: grade one shard into its own build folder; return its report files."""
    folder = Path(out) / f"shard-{index}-of-{count}"
    cmd = [sys.executable, "-m", "doit", "-f", f"{project}/dodo.py", "grade"]
    cmd += [*args, f"shard={index}/{count}", f"out={folder}"]
    env = {**os.environ, "PYTHONPATH": project}
    proc = subprocess.run(cmd, cwd=project, capture_output=True, text=True, check=False, env=env)
    layout = Layout(folder)
    result: dict[str, str | int] = {"exit": proc.returncode, "log": proc.stdout[-4000:]}
    for name in REPORTS:
        path = layout.root / name
        result[name] = path.read_text() if path.exists() else ""
    if not result["grade.json"]:  # the grade never reached its report: say why
        result["log"] = (proc.stdout + proc.stderr)[-4000:]
    return result


def main(argv: list[str]) -> int:
    from dask.distributed import Client, LocalCluster

    options = dict(a.split("=", 1) for a in argv if "=" in a)
    count = int(options.pop("shards", "2"))
    scheduler = options.pop("scheduler", "")
    project = Path(options.pop("project", Path.cwd())).resolve()
    out = Path(options.pop("out", project / ".grade")).resolve()
    args = [f"{k}={v}" for k, v in options.items()]
    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(n_workers=count, threads_per_worker=1, processes=True)
        client = Client(cluster)
    try:
        work = out / "shards"
        futures = [
            client.submit(grade_shard, str(project), i, count, str(work), args, pure=False)
            for i in range(1, count + 1)
        ]
        results = client.gather(futures)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    folders = []
    for index, result in enumerate(results, 1):
        folder = work / f"shard-{index}-of-{count}"
        folder.mkdir(parents=True, exist_ok=True)
        for name in REPORTS:
            (folder / name).write_text(str(result[name]))
        print(f"shard {index}/{count}: exit {result['exit']}")
        if not result["grade.json"]:
            print(result["log"])
            return 2
        folders.append(str(folder))
    cmd = [sys.executable, "-m", "doit", "-f", f"{project}/dodo.py", "merge"]
    cmd += [*args, f"from={','.join(folders)}", f"out={out}"]
    env = {**os.environ, "PYTHONPATH": str(project)}
    return subprocess.run(cmd, cwd=project, check=False, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
