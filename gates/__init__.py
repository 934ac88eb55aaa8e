"""The built-in gates: one module per gate."""
