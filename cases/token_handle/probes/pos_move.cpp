// must_build: moving transfers the serial and empties the source, both by construction
// and by assignment. Includes <utility> itself rather than relying on the header.
#include "token_handle.hpp"

#include <utility>

int main() {
  auto a = TokenHandle::make(7);
  TokenHandle b(std::move(a));
  if (b.serial() != 7) return 1;
  if (a.serial() != 0) return 2;  // moved-from must be empty, not a second owner

  auto c = TokenHandle::make(9);
  c = std::move(b);
  if (c.serial() != 7) return 3;
  if (b.serial() != 0) return 4;
  return 0;
}
