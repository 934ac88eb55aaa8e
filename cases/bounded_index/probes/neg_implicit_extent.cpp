// must_fail: copy-initialisation from a number needs a non-explicit constructor.
#include "bounded_index.hpp"

int main() {
  { Extent extent = 4; (void)extent; }  // cxxgate: reject
}
