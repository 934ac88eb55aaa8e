#include "size_cache.hpp"

void SizeCache::store(std::size_t n) noexcept {
    cached_ = n;
}

void SizeCache::touch() noexcept {
    ++hits_;
}
