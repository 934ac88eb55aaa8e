#pragma once
#include <cstddef>

// Remembers the last size stored and how often it was read. Readers never block:
// size() and hits() are const and noexcept, and the cache owns no lock.
class SizeCache {
public:
    void store(std::size_t n) noexcept;
    void touch() noexcept;
    std::size_t size() const noexcept { return held_; }
    std::size_t hits() const noexcept { return hits_; }

private:
    std::size_t held_ = 0;
    std::size_t hits_ = 0;
};
