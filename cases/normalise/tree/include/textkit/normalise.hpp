#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace textkit {

// Lower-cases ASCII letters, drops leading and trailing blanks, and collapses every run
// of blanks inside the text into one space.
std::string normalise(std::string_view text);

// Splits on blanks; empty fields are dropped.
std::vector<std::string> words(std::string_view text);

}  // namespace textkit
