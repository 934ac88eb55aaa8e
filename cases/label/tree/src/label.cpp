#include "label.hpp"

std::string label_for(int id) {
  std::string out = "case-";
  out += std::to_string(id);
  return out;
}
