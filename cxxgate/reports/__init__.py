"""What a grade writes for people and CI: table and verdicts.jsonl (report), report.html,
report.md, the terminal summary, SARIF, JUnit, the SWE-bench report."""
