"""cxxgate's own eval repository: the shipped case library in cases/ (see README)."""
from cxxgate.tasks import *  # noqa: F403
