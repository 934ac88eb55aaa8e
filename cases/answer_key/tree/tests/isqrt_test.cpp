// The project's own test, visible to the model (it is not a source of the library).
#include <cassert>

#include "isqrt.hpp"

int main() {
  assert(isqrt(99) == 9);
  assert(isqrt(100) == 10);
  return 0;
}
