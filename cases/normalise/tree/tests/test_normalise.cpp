// The project's quick test: it compiles the library sources straight into this one
// translation unit, so it never sees what the public header alone promises.
#include "../src/normalise.cpp"
#include "../src/words.cpp"

#include <cassert>
#include <string>

int main() {
  const std::string input = "  Hello \t World\n";
  assert(textkit::normalise(input) == "hello world");
  assert(textkit::words(input).size() == 2);
  assert(textkit::normalise(std::string("   ")).empty());
  return 0;
}
