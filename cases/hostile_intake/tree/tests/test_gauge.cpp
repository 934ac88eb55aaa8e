#include "gauge.hpp"

// Read-only: a patch may not weaken the test that watches clamp().
int main() {
  if (gauge::clamp(5, 0, 3) != 3) return 1;
  if (gauge::clamp(-1, 0, 3) != 0) return 2;
  if (gauge::clamp(2, 0, 3) != 2) return 3;
  return 0;
}
