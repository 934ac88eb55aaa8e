// must_fail: an Extent always has a size someone chose; there is no default. Sizing a
// vector default-constructs its elements, so the error is reported inside the standard
// library's headers, not on the marked line: the reference run's first error is the place
// to compare a candidate's with (gates/negcomp.py).
#include "bounded_index.hpp"

#include <vector>

int main() {
  (void)std::vector<Extent>(3);  // cxxgate: reject
}
