// Hidden oracle: inputs only. The expected output is hidden/hidden.stdout, which no
// compile or run can read; the gate compares it.
#include <cstdio>

#include "isqrt.hpp"

int main() {
  const long long inputs[] = {2, 3, 8, 1763, 1765, 4294967295LL, 999999999999LL};
  for (long long n : inputs) std::printf("%lld %lld\n", n, isqrt(n));
  return 0;
}
