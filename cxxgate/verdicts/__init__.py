"""From gate results to a row's verdict: the fold (verdict), harness faults as data (guard), what
the reports read besides verdicts (evidence)."""
