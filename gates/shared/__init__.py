"""Helpers shared by several gates: the C++ source reader (cppsource), lanes, a library's
surface, a project's build, a patch's hunks and added code."""
