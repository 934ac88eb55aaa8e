"""cxxgate against the naive loop on the same generated batch, in one run (issue 13).

The batch: N shipped cases (copied into a private library, identity lock re-pinned) plus
a generated header-only case whose every probe includes thousands of lines of templates
(bench/heavycase.py), and M candidate patches per case: the case's shipped patches in
turn, the k-th time round with a comment appended to an added line (other bytes, same
change; bench/benchlib.py `vary`).

cxxgate side, one build folder: cold `doit -n 2 grade` (seconds, tool calls from
compiler-calls.log, compile calls, distinct cell keys, invocations per cell step, compiles
per content key, harness overhead), a warm no-op, one patch edited; ccache hits/misses
from the compile steps' `cache` field (each compile once). Planning time for P predictions:
`doit list` on a fresh build folder (loads dodo.py: cases, rows, every gate's plan, the
identity lock; doit then makes every task; nothing runs). With `--big K`, the nightly
batch of K predictions (bench/nightly_bench.py) cold, warm, prompt edit, one patch edit.

Naive side: bench/naive_loop.py on the same library and batch (2 workers). It keeps no
state, so a re-run after no change or one edit costs its cold time again.

    python bench/side_by_side.py                       # every shipped case, M=2
    python bench/side_by_side.py --cases 4 --patches 3 --json /tmp/sbs.json
    python bench/side_by_side.py --only token_handle,inventory --big 1000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import heavycase
import naive_loop
import nightly_bench
import yaml
from benchlib import (
    PROJECT,
    doit,
    freeze,
    lines,
    predictions,
    tree_cases,
    vary,
    write_jsonl,
)

from cxxgate.toolchain.cellspec import ENTRY_UNIT

WORKERS = 2
# Cells whose results repeat the compile steps of the object cells they link
# (cxxgate/cells/cell.py).
LINKING = {"exe", "archive", "shared", "objects"}


def make_library(dest: Path, only: list[str] | None, n: int | None) -> list[str]:
    """Copy the chosen shipped cases and write the heavy case; return the case names."""
    shipped = [p.name for p in tree_cases(PROJECT / "cases")]
    chosen = [c for c in shipped if c in only] if only else shipped[: n or len(shipped)]
    dest.mkdir(parents=True)
    for name in ("envelopes.yaml", "identity.lock"):
        shutil.copy(PROJECT / "cases" / name, dest)
    for case in chosen:
        shutil.copytree(PROJECT / "cases" / case, dest / case)
    heavycase.write(dest / heavycase.NAME)
    return [*chosen, heavycase.NAME]


def make_batch(library: Path, cases: list[str], m: int, dest: Path) -> int:
    """M patches per case under dest/<case>/<name>.diff; return how many were written."""
    written = 0
    for case in cases:
        spec = yaml.safe_load((library / case / "case.yaml").read_text())
        files = [library / case / p["file"] for p in spec.get("patches", [])]
        if not files:
            continue
        (dest / case).mkdir(parents=True)
        got = 0
        for i in range(m * 20):
            if got == m:
                break
            path, k = files[i % len(files)], i // len(files)
            text = path.read_bytes().decode("latin-1")  # byte for byte, whatever the bytes
            varied = text if k == 0 else vary(text, k)
            if varied is None:
                continue
            (dest / case / f"{path.stem}_v{k}.diff").write_bytes(varied.encode("latin-1"))
            got += 1
        written += got
    return written


def _log(out: Path) -> list[tuple[str, str, str]]:
    """(key, phase, source) per line of compiler-calls.log."""
    log = out / "compiler-calls.log"
    rows = []
    for line in log.read_text().splitlines() if log.exists() else []:
        parts = line.split(" ", 3)
        if len(parts) == 4:
            rows.append((parts[1], parts[2], parts[3]))
    return rows


def _cell_results(out: Path) -> dict[str, dict[str, Any]]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("cells/*/*/result.json")}


def _content_key(step: dict[str, Any], cell: dict[str, Any], folder: Path) -> str | None:
    """What the compile read, by bytes (its -MD dependency file) and its argv with the tree
    and cell paths made neutral: equal keys are compiles a content cache would share.
    None when the step has no dependency file (library kinds)."""
    argv = step["argv"]
    if "-MF" not in argv:
        return None
    dep = folder / argv[argv.index("-MF") + 1]
    if not dep.exists():
        return None
    tree = cell["tree_root"]
    text = dep.read_text().replace("\\\n", " ")
    paths = text.split(":", 1)[1].split() if ":" in text else []
    h = hashlib.sha256()
    for a in argv:
        h.update(a.replace(tree, "T").replace(str(folder), "C").encode() + b"\0")
    for p in sorted(set(paths)):
        file = Path(p) if Path(p).is_absolute() else folder / p
        if str(file).startswith(tree) or file.is_relative_to(folder):
            name = str(file).replace(tree, "T").replace(str(folder), "C")
            body = file.read_bytes() if file.exists() else b"?"
            h.update(name.encode() + hashlib.sha256(body).digest())
        else:
            h.update(str(file).encode())  # a system header: the same file for every compile
    return h.hexdigest()


def cxxgate_cold(out: Path, seconds: float, tree_case: dict[str, str]) -> dict[str, Any]:
    log = _log(out)
    cells = _cell_results(out)
    cell_calls = [row for row in log if row[0] in cells]
    compiles = [row for row in cell_calls if row[1] == "compile"]
    contents: Counter[str] = Counter()
    no_depfile = 0
    busy = 0.0
    seconds_by_case: dict[str, float] = {}
    cached: Counter[str] = Counter()
    for key, cell in cells.items():
        if cell.get("reused_from"):
            continue  # copied from an earlier cell: its steps ran there
        folder = out / "cells" / key[:2] / key
        case = tree_case.get(Path(cell["tree_root"]).name, "?")
        for step in cell["steps"]:
            if step["phase"] == "compile":
                if cell.get("kind") in LINKING:
                    continue  # copies of the steps of the object cells it linked
                cached[step.get("cache") or "none"] += 1
            busy += step["seconds"]
            seconds_by_case[case] = seconds_by_case.get(case, 0.0) + step["seconds"]
            if step["phase"] == "compile":
                ck = _content_key(step, cell, folder)
                if ck is None:
                    no_depfile += 1
                    ck = f"{key}/{step['source']}"
                contents[ck] += 1
    run_seconds = 0.0
    for p in out.glob("runs/*/*/result.json"):
        run = json.loads(p.read_text())
        samples = run.get("samples") or []
        run_seconds += sum(s["wall_seconds"] for s in samples) if samples else run["wall_seconds"]
    by_case: Counter[str] = Counter()
    for key, _phase, _source in cell_calls:
        by_case[tree_case.get(Path(cells[key]["tree_root"]).name, "?")] += 1
    step_keys = set(cell_calls)
    return {
        "seconds": round(seconds, 3),
        "tool_calls": len(log),
        "cell_tool_calls": len(cell_calls),
        "scan_tool_calls": len(log) - len(cell_calls),
        "compiles": len(compiles),
        # The harness entry (cellspec.ENTRY_UNIT), compiled into every exe cell: work the
        # naive loop does not do (it links the unit's own main).
        "entry_compiles": sum(1 for row in compiles if row[2] == ENTRY_UNIT),
        "runs": lines(out / "runs.log"),
        "cell_keys": len(cells),
        "cells_reused_across_trees": sum(1 for c in cells.values() if c.get("reused_from")),
        "cell_keys_with_calls": len({row[0] for row in cell_calls}),
        "invocations_per_cell_step": round(len(cell_calls) / max(1, len(step_keys)), 3),
        "compile_contents": len(contents),
        "compiles_per_content": round(sum(contents.values()) / max(1, len(contents)), 3),
        "compiles_without_depfile": no_depfile,
        "tool_seconds": round(busy, 3),
        "run_seconds": round(run_seconds, 3),
        "overhead_share": round(1 - (busy + run_seconds) / (WORKERS * seconds), 3),
        "overhead_share_raw": round((seconds - busy - run_seconds) / seconds, 3),
        "ccache": (
            [cached["hit"] + cached["remote"], cached["miss"]]
            if cached.keys() - {"none"}
            else None
        ),
        "tool_calls_by_case": dict(sorted(by_case.items())),
        "tool_seconds_by_case": {k: round(v, 1) for k, v in sorted(seconds_by_case.items())},
    }


def step(out: Path, library: Path, grade: tuple[str, ...]) -> dict[str, Any]:
    calls, runs = lines(out / "compiler-calls.log"), lines(out / "runs.log")
    seconds, proc = doit(out, library, *grade)
    return {
        "seconds": round(seconds, 3),
        "tool_calls": lines(out / "compiler-calls.log") - calls,
        "runs": lines(out / "runs.log") - runs,
        "exit": proc.returncode,
        "tail": "" if proc.returncode == 0 else (proc.stdout + proc.stderr)[-2000:],
    }


def plan_time(library: Path, tmp: Path, count: int) -> dict[str, Any]:
    """`doit list` on a fresh build folder with COUNT predictions, and with one (the fixed
    cost: Python, doit, the cases and their reference rows)."""
    figures: dict[str, Any] = {"predictions": count}
    for n, name in ((1, "one_prediction_seconds"), (count, "seconds")):
        preds = tmp / f"plan{n}.jsonl"
        batch = predictions(library, n, distinct=True)
        write_jsonl(preds, batch)
        seconds, proc = doit(tmp / f"plan-out{n}", library, "list", f"patches={preds}")
        figures[name] = round(seconds, 3)
        figures["exit"] = max(figures.get("exit", 0), proc.returncode)
        figures["distinct_patches"] = len({p["model_patch"] for p in batch})
    return figures


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def table(result: dict[str, Any]) -> str:
    c, n = result["cxxgate"], result["naive"]
    cold, warm, edit = c["cold"], c["warm"], c["edit"]
    rows: list[tuple[str, Any, Any, str, str]] = [
        ("cold seconds", cold["seconds"], n["seconds"], ratio(n["seconds"], cold["seconds"]), ""),
        (
            "tool calls (compile, link, ar, ...)",
            cold["tool_calls"],
            n["tool_calls"],
            ratio(n["tool_calls"], cold["tool_calls"]),
            "",
        ),
        (
            "compile calls",
            cold["compiles"],
            n["compiles"],
            ratio(n["compiles"], cold["compiles"]),
            ">= 2x",
        ),
        (
            "compile calls, harness entry excluded",
            cold["compiles"] - cold["entry_compiles"],
            n["compiles"],
            ratio(n["compiles"], cold["compiles"] - cold["entry_compiles"]),
            "",
        ),
        ("binary runs", cold["runs"], n["runs"], ratio(n["runs"], cold["runs"]), ""),
        ("distinct cell keys", cold["cell_keys"], "-", "", ""),
        ("invocations per cell step key", cold["invocations_per_cell_step"], "-", "", "1.0"),
        ("compiles per content key", cold["compiles_per_content"], "-", "", "1.0"),
        (
            "tool + run seconds (summed)",
            round(cold["tool_seconds"] + cold["run_seconds"], 1),
            round(n["tool_seconds"] + n["run_seconds"], 1),
            "",
            "",
        ),
        ("harness overhead (share of 2 workers)", cold["overhead_share"], "-", "", "<= 0.10"),
        (
            "warm no-op seconds",
            warm["seconds"],
            n["seconds"],
            ratio(n["seconds"], warm["seconds"]),
            ">= 100x",
        ),
        (
            "warm no-op tool calls / runs",
            f"{warm['tool_calls']}/{warm['runs']}",
            f"{n['tool_calls']}/{n['runs']}",
            "",
            "0/0",
        ),
        (
            "one patch edited seconds",
            edit["seconds"],
            n["seconds"],
            ratio(n["seconds"], edit["seconds"]),
            "",
        ),
        (
            "one patch edited tool calls / runs",
            f"{edit['tool_calls']}/{edit['runs']}",
            f"{n['tool_calls']}/{n['runs']}",
            "",
            "",
        ),
        (
            "ccache hits/misses",
            "absent" if cold["ccache"] is None else "/".join(map(str, cold["ccache"])),
            "-",
            "",
            "",
        ),
    ]
    heavy = heavycase.NAME
    hc, hn = cold["tool_calls_by_case"].get(heavy, 0), n["tool_calls_by_case"].get(heavy, 0)
    rows.append((f"{heavy}: tool calls", hc, hn, ratio(hn, hc), ""))
    rest_c, rest_n = cold["cell_tool_calls"] - hc, n["tool_calls"] - hn
    rows.append(("other cases: tool calls", rest_c, rest_n, ratio(rest_n, rest_c), ""))
    widths = (40, 12, 12, 10, 9)
    head = ("", "cxxgate", "naive", "naive/cx", "target")
    out = [
        "  ".join(
            f"{h:<{w}}" if i == 0 else f"{h:>{w}}"
            for i, (h, w) in enumerate(zip(head, widths, strict=True))
        )
    ]
    for r in rows:
        out.append(
            "  ".join(
                f"{v!s:<{w}}" if i == 0 else f"{v!s:>{w}}"
                for i, (v, w) in enumerate(zip(r, widths, strict=True))
            )
        )
    return "\n".join(out)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=None, help="the first N shipped cases (all)")
    ap.add_argument("--only", default="", help="comma-separated shipped cases instead")
    ap.add_argument("--patches", type=int, default=2, help="M patches per case (2)")
    ap.add_argument("--plan", type=int, default=10_000, help="predictions to plan (10,000)")
    ap.add_argument("--big", type=int, default=0, help="also the nightly batch of K predictions")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here too")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cxxgate-sbs-") as tmpdir:
        tmp = Path(tmpdir)
        library, batch, out = tmp / "cases", tmp / "batch", tmp / "out"
        only = [c for c in args.only.split(",") if c] or None
        cases = make_library(library, only, args.cases)
        freeze(tmp / "freeze", library)  # the heavy case gets its pins (not timed)
        count = make_batch(library, cases, args.patches, batch)
        print(
            f"batch: {len(cases)} cases ({', '.join(cases)}), {count} patches; "
            f"{heavycase.NAME}: {heavycase.header_lines(library / heavycase.NAME)} header lines",
            flush=True,
        )
        grade = ("-n", str(WORKERS), "grade", f"patches={batch}", "report_only=1")
        cold = step(out, library, grade)
        lib = naive_loop.load(library, batch, tmp / "keys")
        tree_case = {key: row_id.split("/")[0] for row_id, key in lib.tree_keys.items()}
        result: dict[str, Any] = {"batch": {"cases": cases, "patches": count}}
        result["cxxgate"] = {
            "cold": {**cxxgate_cold(out, cold["seconds"], tree_case), "exit": cold["exit"]}
        }
        print(f"cxxgate cold: {cold['seconds']:.1f} s, exit {cold['exit']}", flush=True)
        if cold["exit"]:
            print(cold["tail"])
        result["cxxgate"]["warm"] = step(out, library, grade)
        edited = next(
            p for p in sorted(batch.rglob("*.diff")) if vary(p.read_bytes().decode("latin-1"), 99)
        )
        text = vary(edited.read_bytes().decode("latin-1"), 99)
        assert text is not None
        edited.write_bytes(text.encode("latin-1"))
        result["cxxgate"]["edit"] = {
            **step(out, library, grade),
            "patch": str(edited.relative_to(batch)),
        }
        result["cxxgate"]["plan"] = plan_time(library, tmp, args.plan)
        print(
            f"planning {args.plan} predictions: {result['cxxgate']['plan']['seconds']} s",
            flush=True,
        )
        if args.big:
            result["cxxgate"]["big"] = [
                dict(
                    zip(("step", "seconds", "freeze_seconds", "tool_calls", "runs"), r, strict=True)
                )
                for r in nightly_bench.measure(args.big, edit_patch=True)
            ]
        # The naive loop grades the batch as it stands after the edit: the same size.
        start = time.perf_counter()
        result["naive"] = naive_loop.naive(library, batch, WORKERS)
        print(f"naive loop: {time.perf_counter() - start:.1f} s", flush=True)
    text = table(result)
    print()
    print(text)
    if args.big:
        print(f"\nnightly batch of {args.big} predictions (bench/nightly_bench.py):")
        for r in result["cxxgate"]["big"]:
            print(
                f"  {r['step']:<24} {r['seconds']:>8.2f} s  {r['tool_calls']:>6} tool calls "
                f"{r['runs']:>6} runs"
            )
    plan = result["cxxgate"]["plan"]
    print(
        f"\nplanning {plan['predictions']} predictions ({plan['distinct_patches']} distinct "
        f"patches): `doit list` {plan['seconds']} s; with one prediction "
        f"{plan['one_prediction_seconds']} s (exit {plan['exit']})"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
