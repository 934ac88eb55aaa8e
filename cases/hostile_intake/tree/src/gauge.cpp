#include "gauge.hpp"

namespace gauge {

int clamp(int value, int lo, int hi) {
  if (value < lo) return lo;
  if (value > hi) return hi;
  return value;
}

}  // namespace gauge
