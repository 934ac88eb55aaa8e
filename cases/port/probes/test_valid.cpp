// Grader-owned test: ports that parse.
#include <cstdio>

#include "port.hpp"

int main() {
  struct Case { const char* text; int want; };
  const Case cases[] = {{"80", 80}, {"1", 1}, {"8080", 8080}, {"65535", 65535}};
  int failed = 0;
  for (const Case& c : cases) {
    const int got = net::parse_port(c.text);
    if (got != c.want) {
      std::printf("parse_port(\"%s\") = %d, want %d\n", c.text, got, c.want);
      ++failed;
    }
  }
  return failed == 0 ? 0 : 1;
}
