// must_fail: a TokenHandle cannot be copied (pinned: the copy constructor is deleted).
#include "token_handle.hpp"

int main() {
  auto original = TokenHandle::make(1);
  { TokenHandle copy(original); (void)copy; }  // cxxgate: reject
  (void)original;
}
