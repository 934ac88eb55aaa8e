// must_fail: a signed index is rejected by the concept. The call sits directly in main:
// inside another template, or in a requires-expression, a constraint failure is only a
// substitution failure and the unit would compile.
#include "bounded_index.hpp"

int main() {
  const Extent extent{4};
  (void)in_bounds(-1, extent);  // cxxgate: reject
  (void)extent;
}
