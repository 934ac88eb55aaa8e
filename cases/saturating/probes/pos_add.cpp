// must_build, fail-to-pass: saturating_add exists, adds, and clamps at the maximum.
#include "saturating.hpp"

#include <cstdint>
#include <limits>

int main() {
  if (saturating_add(2u, 3u) != 5u) return 1;
  constexpr auto umax = std::numeric_limits<unsigned>::max();
  if (saturating_add(umax, 1u) != umax) return 2;     // would wrap to 0
  if (saturating_add(umax - 1, 1u) != umax) return 3;  // exact fit is not clamped away
  if (saturating_add(std::uint8_t{200}, std::uint8_t{100}) != 255) return 4;  // would wrap to 44
  if (saturating_add(std::uint64_t{1} << 63, std::uint64_t{1} << 63) != std::numeric_limits<std::uint64_t>::max()) return 5;
  return 0;
}
