// The project's test: it links the sources directly and calls from_path, so it stays
// green when the exported from_file disappears from the shared object.
#include "loader/loader.hpp"

#include <cassert>
#include <cstdio>
#include <fstream>

int main() {
  const char* path = "loader_test.bin";
  {
    std::ofstream out(path, std::ios::binary);
    const unsigned char bytes[] = {0x4c, 0x44, 0x52, 0x31, 0x02, 0x00, 0x01, 0x00, 0xff};
    out.write(reinterpret_cast<const char*>(bytes), sizeof bytes);
  }
  const auto bytes = loader::Loader::from_path(path);
  std::remove(path);
  loader::Header header{};
  assert(loader::Loader::read_header(bytes, &header));
  assert(header.magic == 0x3152444cu && header.version == 2 && header.flags == 1);
  assert(loader::checksum(bytes) != 0);
  return 0;
}
