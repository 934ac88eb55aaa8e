"""cxxgate's own eval repository: the shipped case library in cases/ (see README)."""
from cxxgate.graph.tasks import *  # noqa: F403
