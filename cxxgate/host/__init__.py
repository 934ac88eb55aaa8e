"""This machine's execution primitives: one bounded child process (process) inside the bubblewrap
sandbox (sandbox)."""
