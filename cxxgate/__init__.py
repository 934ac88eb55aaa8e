"""cxxgate: grade C++ patches written by coding models, one gate per failure mode."""
