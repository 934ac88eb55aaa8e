#pragma once
// Saturating arithmetic for unsigned integers: results clamp at the type's bounds
// instead of wrapping. Signed types are refused at compile time (their overflow is UB,
// and "saturate" would need two bounds).
#include <concepts>

template <std::unsigned_integral T>
constexpr T saturating_sub(T a, T b) noexcept {
  return a > b ? static_cast<T>(a - b) : T{0};
}
