// Grader-owned test: text that is no port.
#include <cstdio>

#include "port.hpp"

int main() {
  const char* const cases[] = {"", "0", "65536", "8a", "-1", "123456"};
  int failed = 0;
  for (const char* text : cases) {
    const int got = net::parse_port(text);
    if (got != -1) {
      std::printf("parse_port(\"%s\") = %d, want -1\n", text, got);
      ++failed;
    }
  }
  return failed == 0 ? 0 : 1;
}
