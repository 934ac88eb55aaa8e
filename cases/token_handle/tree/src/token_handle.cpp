#include "token_handle.hpp"

#include <string>

// Out of line on purpose: units that call describe() only link with the library sources.
std::string TokenHandle::describe() const {
  return serial_ == 0 ? "token(empty)" : "token(" + std::to_string(serial_) + ")";
}
