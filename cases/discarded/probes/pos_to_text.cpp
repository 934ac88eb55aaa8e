// must_build: integers of every width and sign become their decimal text. Reports the way
// GoogleTest does, on stdout: the grader's summary must quote it (not "no stderr").
#include "to_text.hpp"

#include <cstdint>
#include <cstdio>
#include <string>

namespace {
int failures = 0;

void expect(const std::string& got, const char* want, const char* what) {
  if (got == want) return;
  std::printf("[  FAILED  ] %s gave \"%s\", want \"%s\"\n", what, got.c_str(), want);
  ++failures;
}
}  // namespace

int main() {
  expect(to_text(42), "42", "to_text(42)");
  expect(to_text(-7L), "-7", "to_text(-7L)");
  expect(to_text(std::uint8_t{200}), "200", "to_text(uint8_t{200})");
  expect(to_text(std::uint64_t{18446744073709551615u}), "18446744073709551615",
         "to_text(UINT64_MAX)");
  return failures == 0 ? 0 : 1;
}
