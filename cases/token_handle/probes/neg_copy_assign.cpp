// must_fail: copy-assignment stays deleted.
// Deliberately does NOT include <utility>: std::move below reaches this unit only through
// token_handle.hpp. A patch that drops that include makes this unit fail on the std::move
// line instead of the marked one, which the gate must report as failing for the wrong
// reason rather than count as "still rejected". (This works because the header names
// std::string through <iosfwd> only: libstdc++'s <string> would bring std::move along.)
#include "token_handle.hpp"

int main() {
  auto source = TokenHandle::make(1);
  auto target = TokenHandle::make(2);
  target = std::move(source);  // moving in is allowed
  target = source;  // cxxgate: reject
}
