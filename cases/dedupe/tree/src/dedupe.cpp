#include "dedupe.hpp"

#include <unordered_set>

namespace uniq {

std::vector<std::uint32_t> dedupe(const std::vector<std::uint32_t>& in) {
  std::unordered_set<std::uint32_t> seen;
  std::vector<std::uint32_t> out;
  for (const std::uint32_t v : in) {
    if (seen.insert(v).second) out.push_back(v);
  }
  return out;
}

}  // namespace uniq
