#pragma once
#include <cstdint>

// Checksum of the first n records of the synthetic feed (the hot path of the service).
std::uint64_t checksum(std::uint32_t n);
