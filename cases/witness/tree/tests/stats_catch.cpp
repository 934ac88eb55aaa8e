#include <vector>

#include "check.hpp"
#include "stats.hpp"

TEST_CASE("median of an even count", "[median]") {
  std::vector<double> v{4.0, 1.0, 3.0, 2.0};
  REQUIRE(stats::median(v) == 2.5);
  SECTION("one more value") {
    v.push_back(10.0);
    CHECK(stats::median(v) == 3.0);
  }
}
