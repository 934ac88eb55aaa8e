// must_fail, pass-to-pass: the existing API refuses signed operands.
#include "saturating.hpp"

int main() {
  (void)saturating_sub(1, 2);  // cxxgate: reject
}
