"""cxxgate's build as doit tasks: cases x patches -> trees -> cells/runs -> gates -> verdicts
-> grade. An eval repository's dodo.py is two lines:

    from cxxgate.graph.tasks import *  # noqa: F403
    # DOIT_CONFIG and the task_* functions below; settings from [tool.cxxgate]

doit grade                         grade the case library
doit grade case=token_handle       one case (comma-separated for several)
doit grade patches=PATH            candidates: <case>/<name>.diff folder or predictions .jsonl
doit grade report_only=1           rejections are reported, not fatal (nightly batches)
doit grade cases=DIR out=DIR       another case library / build folder
doit prompts                       render each case's prompt into out/prompts/
doit freeze [allow_bump=1]         re-pin identity.lock (under CI=true only with allow_bump=1)
doit compare [across=1]            rows that flipped since the previous grade of this identity
doit prune [keep=N]                delete what no grade of the last N refers to
doit grade shard=I/N out=DIR       grade the I-th of N slices of the cases (by case)
doit merge from=DIR,DIR out=DIR    fold shard folders into one grade (verdicts, table, history)
doit grade seed=N                  the batch's seed (default: the build folder's, <out>/seed)
doit rotate_seed                   a new seed for the build folder (between nightly batches)
doit import instances=F repo=R     SWE-bench / Multi-SWE-bench records -> case folders
"""

import gc
from pathlib import Path
from typing import Any

from cxxgate.contract.registry import RegistryError
from cxxgate.graph.library import Library
from cxxgate.graph.pipeline import Pipeline
from cxxgate.library import swe_import
from cxxgate.library.settings import Settings, SettingsError
from cxxgate.util.yamlfile import InputError

__all__ = [
    "DOIT_CONFIG",
    "task_cell",
    "task_compare",
    "task_exec",
    "task_fold",
    "task_freeze",
    "task_gate",
    "task_grade",
    "task_import",
    "task_merge",
    "task_prompts",
    "task_prune",
    "task_rotate_seed",
    "task_scan",
    "task_tree",
    "task_verdict",
]

# Planning a batch allocates dozens of objects per task; with the default thresholds the
# collector spent more time scanning them than planning did (1.4 s of 2.5 s for 2,000
# patches). doit is a short-lived process: collect rarely.
gc.set_threshold(500_000, 50, 50)

try:
    PIPELINE = Pipeline(Library(Settings.load(Path.cwd())))
except (SettingsError, RegistryError, InputError) as exc:
    raise SystemExit(f"cxxgate: {exc}") from None
DOIT_CONFIG = PIPELINE.doit_config()


def task_tree() -> Any:
    """Apply each patch to its case's base tree, after the path guard."""
    yield from PIPELINE.tree_tasks()


def task_cell() -> Any:
    """Compile translation units in an envelope (the only place a compiler runs)."""
    yield from PIPELINE.cell_tasks()


def task_exec() -> Any:
    """Execute built binaries with pinned inputs and limits."""
    yield from PIPELINE.run_tasks()


def task_scan() -> Any:
    """Read trees' sources in Python (parses, inventories), content-keyed like cells."""
    yield from PIPELINE.scan_tasks()


def task_gate() -> Any:
    """Classify each (case, patch) per gate from stored cell and run results."""
    yield from PIPELINE.gate_tasks()


def task_verdict() -> Any:
    """Fold each row's gate results with its case's reference state."""
    yield from PIPELINE.verdict_tasks()


def task_fold() -> Any:
    """Collect each case's verdicts."""
    yield from PIPELINE.fold_tasks()


def task_grade() -> Any:
    """Write verdicts.jsonl and the table; exit non-zero unless every row ended as expected."""
    return PIPELINE.grade_task()


def task_prompts() -> Any:
    """Render every case's prompt into out/prompts/ for the generation side."""
    return PIPELINE.prompts_task()


def task_freeze() -> Any:
    """Pin every case's identity (prompt, oracles, grader, toolchains) in identity.lock."""
    return PIPELINE.freeze_task()


def task_compare() -> Any:
    """List the rows that flipped since the previous grade of the same identity."""
    return PIPELINE.compare_task()


def task_prune() -> Any:
    """Delete cells, runs and trees that no recent grade refers to (keep=N)."""
    return PIPELINE.prune_task()


def task_merge() -> Any:
    """Fold shard build folders (from=DIR,DIR,...) into one grade in out=."""
    return PIPELINE.merge_task()


def task_rotate_seed() -> Any:
    """Write a new batch seed to <out>/seed (seed=N: that one), for the next grade."""
    return PIPELINE.rotate_seed_task()


def task_import() -> Any:
    """Turn SWE-bench / Multi-SWE-bench records (instances=FILE.jsonl repo=PATH) into cases."""
    return swe_import.task(PIPELINE.lib.settings.library)
