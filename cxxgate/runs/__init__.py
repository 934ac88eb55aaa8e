"""What executes or reads a built tree: a candidate binary run (run), a content-keyed scan of a
tree by Python code (scan)."""
