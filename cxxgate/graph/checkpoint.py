"""doit's memory of finished tasks, saved while a grade runs, so a killed grade resumes.

doit 0.37 keeps what it records of each finished task in memory and writes its database
only when it exits: a nightly batch killed after hours (SIGKILL, a CI timeout, a lost
runner) would find none of its finished tasks up to date and compile them all again. doit
calls the reporter just after it records a task's success; the progress reporter calls
`save` from there every few seconds. It writes the rows doit's own `dump` would write
(one `insert or replace` per task, one transaction) and keeps the connection open, so
doit's dump at exit writes the rest. Another backend is left alone.

What is saved is only what doit recorded after a task's actions ended and its result files
were written (whole: cxxgate/util/atomic.py), so a resumed run trusts exactly what a normally
ended one would have.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from doit.dependency import SqliteDB
from doit.globals import Globals


def save(dep_manager: Any = None) -> bool:
    """Commit doit's pending records; False when there is nothing this can save to."""
    db = getattr(dep_manager or Globals.dep_manager, "backend", None)
    if not isinstance(db, SqliteDB) or not hasattr(db, "_dirty"):
        return False
    try:
        # The same statement as SqliteDB.dump, without closing the connection.
        for task_id in db._dirty:
            db._conn.execute(
                "insert or replace into doit values (?,?)",
                (task_id, db.codec.encode(db._cache[task_id])),
            )
        db._conn.commit()
    except sqlite3.Error:
        return False  # a full disk: the records stay pending, doit's dump tries again
    db._dirty = set()
    return True
