#pragma once
#include <cstdint>
#include <string>
#include <vector>

// The library is built with hidden visibility; LOADER_API marks what it exports.
#if defined(LOADER_BUILDING)
#define LOADER_API __attribute__((visibility("default")))
#else
#define LOADER_API
#endif

namespace loader {

struct Header {
  std::uint32_t magic;
  std::uint16_t version;
  std::uint16_t flags;
};

class LOADER_API Loader {
public:
  // Reads a whole file; throws std::runtime_error when it cannot be opened.
  static std::vector<unsigned char> from_file(const std::string& path);
  // The same, for a path the caller has not checked yet.
  static std::vector<unsigned char> from_path(const std::string& path);
  // Decodes the 8-byte little-endian header; false when there are fewer bytes.
  static bool read_header(const std::vector<unsigned char>& bytes, Header* out);
};

// A 32-bit FNV-1a hash of the bytes.
LOADER_API std::uint32_t checksum(const std::vector<unsigned char>& bytes);

}  // namespace loader
