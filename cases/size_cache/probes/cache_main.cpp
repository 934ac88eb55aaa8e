#include <cstdio>

#include "size_cache.hpp"

int main() {
    SizeCache cache;
    cache.store(4);
    cache.touch();
    std::printf("%zu %zu\n", cache.size(), cache.hits());
    cache.store(9);
    cache.touch();
    cache.touch();
    std::printf("%zu %zu\n", cache.size(), cache.hits());
    return 0;
}
