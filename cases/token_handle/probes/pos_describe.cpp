// must_build: describe() is defined in src/, so this only links with `sources`.
#include "token_handle.hpp"

#include <string>

int main() {
  if (TokenHandle::make(5).describe() != "token(5)") return 1;
  return 0;
}
