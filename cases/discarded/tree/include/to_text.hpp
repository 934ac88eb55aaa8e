#pragma once
// Decimal text for integers. Floating point is refused at compile time: which digits a
// double should print is the caller's decision, and a silent default hides that.
#include <concepts>
#include <string>

template <std::integral T>
[[nodiscard]] std::string to_text(T value) {
  return std::to_string(value);
}
