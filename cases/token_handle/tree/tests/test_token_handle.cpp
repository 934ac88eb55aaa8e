// The project's ordinary test. Readable by the model, not writable (not in `writable`).
#include "token_handle.hpp"

#include <string>
#include <utility>

int main() {
  auto a = TokenHandle::make(42);
  if (a.describe() != "token(42)") return 1;
  TokenHandle b = std::move(a);
  if (b.serial() != 42 || a.serial() != 0) return 2;
  if (a.describe() != "token(empty)") return 3;
  return 0;
}
