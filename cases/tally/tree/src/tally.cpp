#include "tally.hpp"

long total(const std::vector<int>& readings) {
  long sum = 0;
  for (int r : readings) sum += r;
  return sum;
}
