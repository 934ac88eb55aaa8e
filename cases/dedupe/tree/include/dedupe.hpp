// Frozen interface: the signature below is what callers (and the grader) link against.
#pragma once

#include <cstdint>
#include <vector>

namespace uniq {

// The values of `in` without repeats, in the order of their first occurrence.
std::vector<std::uint32_t> dedupe(const std::vector<std::uint32_t>& in);

}  // namespace uniq
