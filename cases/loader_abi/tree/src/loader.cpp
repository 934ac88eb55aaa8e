#include "loader/loader.hpp"

#include <fstream>
#include <iterator>
#include <stdexcept>

namespace loader {

namespace {

std::uint32_t little_endian(const std::vector<unsigned char>& bytes, std::size_t at, int width) {
  std::uint32_t value = 0;
  for (int i = width - 1; i >= 0; --i) {
    value = (value << 8) | bytes[at + static_cast<std::size_t>(i)];
  }
  return value;
}

}  // namespace

std::vector<unsigned char> Loader::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot open " + path);
  }
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(in),
                                    std::istreambuf_iterator<char>());
}

std::vector<unsigned char> Loader::from_path(const std::string& path) {
  return from_file(path);
}

bool Loader::read_header(const std::vector<unsigned char>& bytes, Header* out) {
  if (bytes.size() < 8) {
    return false;
  }
  out->magic = little_endian(bytes, 0, 4);
  out->version = static_cast<std::uint16_t>(little_endian(bytes, 4, 2));
  out->flags = static_cast<std::uint16_t>(little_endian(bytes, 6, 2));
  return true;
}

std::uint32_t checksum(const std::vector<unsigned char>& bytes) {
  std::uint32_t hash = 2166136261u;
  for (unsigned char byte : bytes) {
    hash = (hash ^ byte) * 16777619u;
  }
  return hash;
}

}  // namespace loader
