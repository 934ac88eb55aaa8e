// A stranger's program: it includes the public header and nothing of the tree.
#include <textkit/normalise.hpp>

#include <iostream>
#include <string>

int main() {
  const std::string input = "  Build AS a\tStranger \n";
  const std::string line = textkit::normalise(input);
  std::cout << line << '\n' << textkit::words(line).size() << '\n';
  return line == "build as a stranger" ? 0 : 2;
}
