// Grader-owned driver: prints two labels; the golden stdout lives in goldens/.
#include <iostream>

#include "label.hpp"

int main() {
  std::cout << label_for(7) << '\n' << label_for(1024) << '\n';
  return 0;
}
