"""Batches across processes and machines: shards merged (merge), a Dask cluster (dask_grade)."""
