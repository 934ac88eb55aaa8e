// Grader-owned driver: `hot_main N ROUNDS` folds ROUNDS checksums of N records.
// The workload (N, ROUNDS) is pinned in case.yaml, outside anything a patch can touch.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "hot.hpp"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const auto n = static_cast<std::uint32_t>(std::strtoul(argv[1], nullptr, 10));
  const int rounds = std::atoi(argv[2]);
  std::uint64_t acc = 0;
  for (int r = 0; r < rounds; ++r) acc ^= checksum(n + static_cast<std::uint32_t>(r)) + static_cast<std::uint64_t>(r);
  std::printf("%llu\n", static_cast<unsigned long long>(acc));
  return 0;
}
