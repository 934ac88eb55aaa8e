"""The case library's inputs: case files (case), prompts (prompt), rows (rows), settings
(settings), the identity lock (lock), SWE-bench import (swe_import)."""
