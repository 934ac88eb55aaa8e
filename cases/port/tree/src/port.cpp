#include "port.hpp"

namespace net {

int parse_port(const char* text) {
  if (text == nullptr || *text == '\0') return -1;
  int value = 0;
  int digits = 0;
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9' || ++digits > 5) return -1;
    value = value * 10 + (*p - '0');
  }
  if (value < 1 || value > 65535) return -1;
  return value;
}

}  // namespace net
