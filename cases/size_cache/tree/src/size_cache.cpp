#include "size_cache.hpp"

void SizeCache::store(std::size_t n) noexcept {
    held_ = n;
}

void SizeCache::touch() noexcept {
    ++hits_;
}
