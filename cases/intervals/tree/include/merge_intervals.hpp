#pragma once

#include <utility>
#include <vector>

// Merges overlapping and touching half-open intervals [lo, hi), each with lo < hi, given
// in any order. The result is sorted by lo; its intervals neither overlap nor touch.
std::vector<std::pair<int, int>> merge_intervals(std::vector<std::pair<int, int>> intervals);
