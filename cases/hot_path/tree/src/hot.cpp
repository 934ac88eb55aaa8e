#include "hot.hpp"

#include <vector>

namespace {

std::uint32_t record(std::uint32_t i) { return (i ^ (i << 7)) * 2654435761u; }

}  // namespace

std::uint64_t checksum(std::uint32_t n) {
  std::vector<std::uint32_t> records;
  records.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) records.push_back(record(i));
  std::uint64_t acc = 0;
  for (std::uint32_t r : records) acc = acc * 31 + r;
  return acc;
}
