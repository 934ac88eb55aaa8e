#pragma once
// Index checking where a wrong index TYPE is a compile error, not a runtime surprise.
#include <concepts>
#include <cstddef>

// Only unsigned integers index: a signed -1 would otherwise convert to a huge size_t.
// bool satisfies std::unsigned_integral but is not an index, so it is excluded by name.
template <class T>
concept UnsignedIndex = std::unsigned_integral<T> && !std::same_as<T, bool>;

class Extent {
public:
  // explicit: a bare number is not an Extent (`Extent e = 4;` and passing 4 where an
  // Extent is expected must not compile).
  explicit constexpr Extent(std::size_t size) noexcept : size_(size) {}
  constexpr std::size_t size() const noexcept { return size_; }

private:
  std::size_t size_;
};

template <UnsignedIndex I>
constexpr bool in_bounds(I index, Extent extent) noexcept {
  return index < extent.size();
}
