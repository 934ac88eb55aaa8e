#pragma once
#include <vector>

// The sum of the readings; 0 for none.
long total(const std::vector<int>& readings);
