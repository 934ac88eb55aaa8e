#include <cstdio>

#include "isqrt.hpp"

int main() {
  const long long inputs[] = {0, 1, 15, 16, 1764, 1000000};
  for (long long n : inputs) std::printf("isqrt(%lld) = %lld\n", n, isqrt(n));
  return 0;
}
