// saturating_add over a table read from stdin, one "<bits> <a> <b>" line per sum, in the
// unsigned type of that width; prints each result. The expected output is the reference's.
#include "saturating.hpp"

#include <cstdint>
#include <iostream>

template <class T>
unsigned long long add(unsigned long long a, unsigned long long b) {
  return saturating_add(static_cast<T>(a), static_cast<T>(b));
}

int main() {
  unsigned bits = 0;
  unsigned long long a = 0;
  unsigned long long b = 0;
  while (std::cin >> bits >> a >> b) {
    unsigned long long sum = 0;
    switch (bits) {
      case 8: sum = add<std::uint8_t>(a, b); break;
      case 16: sum = add<std::uint16_t>(a, b); break;
      case 32: sum = add<std::uint32_t>(a, b); break;
      case 64: sum = add<std::uint64_t>(a, b); break;
      default: std::cout << "no unsigned type of " << bits << " bits\n"; return 1;
    }
    std::cout << 'u' << bits << ' ' << a << " + " << b << " = " << sum << '\n';
  }
  return 0;
}
