// Checks in a plain function the test calls, as many projects write them.
#include <vector>

#include "check.hpp"
#include "stats.hpp"

static void check_two() {
  EXPECT_EQ(stats::median({1.0, 3.0}), 2.0);
  EXPECT_NEAR(stats::stddev({2.0, 2.0}), 0.0, 1e-12);
}

TEST(Plain, Two) { check_two(); }
