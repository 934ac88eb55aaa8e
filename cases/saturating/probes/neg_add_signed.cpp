// must_fail, fail-to-pass: saturating_add refuses signed operands.
// The first call is unmarked on purpose. On the base tree saturating_add does not exist,
// so this unit fails there on the FIRST call (wrong line, twin broken) instead of passing
// vacuously with "not declared" on the marked line; only a tree that has an unsigned
// saturating_add and refuses int passes it.
#include "saturating.hpp"

int main() {
  if (saturating_add(1u, 2u) != 3u) return 1;
  (void)saturating_add(1, 2);  // cxxgate: reject
}
