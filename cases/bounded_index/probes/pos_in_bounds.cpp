// must_build: every unsigned width works, and the upper bound is exclusive.
#include "bounded_index.hpp"

#include <cstddef>
#include <cstdint>

int main() {
  const Extent four{4};
  if (four.size() != 4) return 1;
  if (!in_bounds(std::uint8_t{0}, four)) return 2;
  if (!in_bounds(3u, four)) return 3;
  if (in_bounds(std::size_t{4}, four)) return 4;  // one past the end is out
  if (in_bounds(0u, Extent{0})) return 5;         // nothing is inside an empty extent
  return 0;
}
