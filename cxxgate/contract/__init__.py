"""The gate contract: Gate, Context, Plan and Outputs (gate), the runtime program model (program),
probe rendering (probe), the known gates (registry)."""
