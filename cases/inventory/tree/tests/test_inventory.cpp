// The project's driver: it pulls in the standard headers it likes first, then the headers
// under test. Whatever a header forgets to include, this driver has already included.
#include <cassert>
#include <string>
#include <vector>

#include "inventory/item.hpp"
#include "inventory/stock.hpp"

int main() {
  inventory::Stock stock;
  stock.add(inventory::Item{"bolt", 3});
  stock.add(inventory::Item{"nut", 4});
  assert(stock.count() == 2);
  assert(stock.total() == 7);
  assert(inventory::Item("washer", 1).label() == "washer");
  return 0;
}
