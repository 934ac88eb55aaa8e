// The project's ordinary test. Readable by the model, not writable (not in `writable`).
#include "saturating.hpp"

int main() {
  if (saturating_sub(5u, 3u) != 2u) return 1;
  if (saturating_sub(3u, 5u) != 0u) return 2;
  return 0;
}
