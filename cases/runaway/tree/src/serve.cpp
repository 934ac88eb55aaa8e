#include "serve.hpp"

#include <cstdio>

void serve() { std::puts("ready"); }
