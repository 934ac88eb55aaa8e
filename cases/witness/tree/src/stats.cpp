#include "stats.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

static_assert(sizeof(double) == 8, "the statistics assume IEEE-754 binary64");

namespace stats {

double mean(const std::vector<double>& v) {
  assert(!v.empty());
  double sum = 0.0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

double median(std::vector<double> v) {
  assert(!v.empty());
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 != 0 ? v[mid] : (v[mid - 1] + v[mid]) / 2.0;
}

double stddev(const std::vector<double>& v) {
  const double m = mean(v);
  double acc = 0.0;
  for (double x : v) acc += (x - m) * (x - m);
  return std::sqrt(acc / static_cast<double>(v.size()));
}

long round_half_even(double x) { return std::lrint(x); }

}  // namespace stats
