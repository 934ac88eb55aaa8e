#pragma once

namespace gauge {

// A reading held to [lo, hi].
int clamp(int value, int lo, int hi);

}  // namespace gauge
