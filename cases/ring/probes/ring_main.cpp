// Grader-owned driver: sequence numbers that cross 2^31 while filing, delivered out of order.
#include <cstdint>
#include <cstdio>

#include "ring.hpp"

int main() {
  Ring ring;
  const std::uint32_t start = 2147483645u;  // INT32_MAX - 2
  const int order[] = {0, 2, 1, 4, 3, 6, 5};
  for (int k : order) ring.put(start + static_cast<std::uint32_t>(k), 100 + k);
  std::printf("%d\n", ring.newest());
  return 0;
}
