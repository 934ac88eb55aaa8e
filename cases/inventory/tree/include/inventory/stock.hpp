#pragma once
#include <cstddef>
#include <utility>
#include <vector>

#include "inventory/item.hpp"

namespace inventory {

class Stock {
public:
  void add(Item item) { items_.push_back(std::move(item)); }
  std::size_t count() const { return items_.size(); }
  int total() const {
    int sum = 0;
    for (const Item& item : items_) {
      sum += item.qty;
    }
    return sum;
  }

private:
  std::vector<Item> items_;
};

}  // namespace inventory
