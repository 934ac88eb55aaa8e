"""What a check can come to: gate results, checks, findings and classes (result); faults of the
machine, not of the candidate (faults)."""
