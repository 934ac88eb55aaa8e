// The project's ordinary test. Readable by the model, not writable (not in `writable`).
#include "bounded_index.hpp"

int main() {
  const Extent e{3};
  if (!in_bounds(2u, e)) return 1;
  if (in_bounds(3u, e)) return 2;
  return 0;
}
