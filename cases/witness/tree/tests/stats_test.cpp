#include <cassert>
#include <vector>

#include "check.hpp"
#include "stats.hpp"

using stats::mean;
using stats::median;
using stats::stddev;

static const std::vector<double> four{1.0, 2.0, 3.0, 4.0};

TEST(Stats, Mean) {
  EXPECT_EQ(mean(four), 2.5);
  EXPECT_EQ(mean({5.0}), 5.0);
}

TEST(Stats, Median) {
  EXPECT_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(median(four), 2.5);
}

TEST(Stats, Spread) {
  EXPECT_NEAR(stddev(four), 1.118034, 1e-6);
  assert(stddev({7.0, 7.0}) == 0.0);
}

TEST(Stats, LegacyRounding) {
  ASSERT_EQ(stats::round_half_even(2.5), 2);
  EXPECT_EQ(stats::round_half_even(3.5), 4);
}
