#pragma once
#include <vector>

namespace stats {
double mean(const std::vector<double>& v);
double median(std::vector<double> v);
double stddev(const std::vector<double>& v);
long round_half_even(double x);  // legacy, kept for old callers
}  // namespace stats
