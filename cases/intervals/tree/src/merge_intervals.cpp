#include "merge_intervals.hpp"

#include <algorithm>

std::vector<std::pair<int, int>> merge_intervals(std::vector<std::pair<int, int>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<std::pair<int, int>> merged;
  merged.reserve(intervals.size());
  for (const auto& iv : intervals) {
    if (!merged.empty() && iv.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, iv.second);
    } else {
      merged.push_back(iv);
    }
  }
  return merged;
}
