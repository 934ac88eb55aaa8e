"""cxxgate's build: cases x patches -> trees -> cells/runs -> gates -> verdicts -> grade.

doit grade                         grade the shipped case library
doit grade case=token_handle       one case (comma-separated for several)
doit grade patches=PATH            candidates: <case>/<name>.diff folder or predictions .jsonl
doit grade report_only=1           rejections are reported, not fatal (nightly batches)
doit grade cases=DIR out=DIR       another case library / build folder
"""

import gc

from gates.library import Library, Settings
from gates.pipeline import Pipeline

# Planning a batch allocates dozens of objects per task; with the default thresholds the
# collector spent more time scanning them than planning did (1.4 s of 2.5 s for 2,000
# patches). doit is a short-lived process: collect rarely.
gc.set_threshold(500_000, 50, 50)

PIPELINE = Pipeline(Library(Settings.from_doit_vars()))
DOIT_CONFIG = PIPELINE.doit_config()


def task_tree():
    """Apply each patch to its case's base tree, after the path guard."""
    yield from PIPELINE.tree_tasks()


def task_cell():
    """Compile translation units in an envelope (the only place a compiler runs)."""
    yield from PIPELINE.cell_tasks()


def task_exec():
    """Execute built binaries with pinned inputs and limits."""
    yield from PIPELINE.run_tasks()


def task_gate():
    """Classify each (case, patch) per gate from stored cell and run results."""
    yield from PIPELINE.gate_tasks()


def task_verdict():
    """Fold each row's gate results with its case's reference state."""
    yield from PIPELINE.verdict_tasks()


def task_fold():
    """Collect each case's verdicts."""
    yield from PIPELINE.fold_tasks()


def task_grade():
    """Write verdicts.jsonl and the table; exit non-zero unless every row ended as expected."""
    return PIPELINE.grade_task()
