"""Pinned toolchains and every tool call: envelopes (envelope, envelopes.yaml), cells as data
(cellspec), compiler/linker calls (toolcall), `--version` and other calls outside a cell
(toolquery), auxiliary tools (tools), ccache, the assembler's reads (asmreads), a project's
flags (projectflags), readers of what tools wrote (diagnostics, elf)."""
