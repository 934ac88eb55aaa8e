#pragma once
#include <string>

// The display label of a case id: "case-<id>".
std::string label_for(int id);
