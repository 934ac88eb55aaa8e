// must_build, pass-to-pass: the existing saturating_sub keeps working.
#include "saturating.hpp"

#include <cstdint>

int main() {
  if (saturating_sub(10u, 4u) != 6u) return 1;
  if (saturating_sub(4u, 10u) != 0u) return 2;  // clamps at 0, no wrap to 4294967290
  if (saturating_sub(std::uint8_t{0}, std::uint8_t{1}) != 0) return 3;
  return 0;
}
