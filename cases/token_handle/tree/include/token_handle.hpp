#pragma once
// A move-only handle to a token serial. The contract lives as much in what must NOT compile
// as in what must: no copies, no handle conjured from a bare integer (use make()).
#include <cstdint>
#include <iosfwd>   // names std::string for describe(); <string> stays out of this header
#include <utility>  // std::exchange (and, for includers, std::move)

class TokenHandle {
public:
  static TokenHandle make(std::uint64_t serial) noexcept { return TokenHandle(serial); }

  TokenHandle(const TokenHandle&) = delete;
  TokenHandle& operator=(TokenHandle const&) = delete;

  // Moving transfers the serial; the source is left empty (serial 0), never a second owner.
  TokenHandle(TokenHandle&& donor) noexcept : serial_(std::exchange(donor.serial_, 0)) {}
  TokenHandle& operator=(TokenHandle&& donor) noexcept {
    serial_ = std::exchange(donor.serial_, 0);
    return *this;
  }

  std::uint64_t serial() const noexcept { return serial_; }
  std::string describe() const;  // defined in src/token_handle.cpp

private:
  explicit TokenHandle(std::uint64_t serial) noexcept : serial_(serial) {}
  std::uint64_t serial_;
};
