#pragma once
#include <string>
#include <utility>

namespace inventory {

struct Item {
  Item(std::string name, int qty) : name(std::move(name)), qty(qty) {}
  const std::string& label() const { return name; }

  std::string name;
  int qty;
};

}  // namespace inventory
