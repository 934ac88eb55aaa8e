// Grader-owned driver.
#include "serve.hpp"

int main() {
  serve();
  return 0;
}
