#include "isqrt.hpp"

// Correct, and slow for large n: the task is to make it fast.
long long isqrt(long long n) {
  long long r = 0;
  while ((r + 1) * (r + 1) <= n) ++r;
  return r;
}
