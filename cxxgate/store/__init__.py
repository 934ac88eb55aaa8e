"""The build folder and what it remembers: where every output lives (layout), one grade at a time
(outdir), hashes of the harness's own code (codehash), past grades (history) and their pruning
(prune)."""
