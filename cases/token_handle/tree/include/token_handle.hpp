#pragma once
// A move-only handle to a token id. The contract lives as much in what must NOT compile
// as in what must: no copies, no handle conjured from a bare integer (use make()).
#include <cstdint>
#include <iosfwd>   // names std::string for describe(); <string> stays out of this header
#include <utility>  // std::exchange (and, for includers, std::move)

class TokenHandle {
public:
  static TokenHandle make(std::uint64_t id) noexcept { return TokenHandle(id); }

  TokenHandle(const TokenHandle&) = delete;
  TokenHandle& operator=(const TokenHandle&) = delete;

  // Moving transfers the id; the source is left empty (id 0), never a second owner.
  TokenHandle(TokenHandle&& other) noexcept : id_(std::exchange(other.id_, 0)) {}
  TokenHandle& operator=(TokenHandle&& other) noexcept {
    id_ = std::exchange(other.id_, 0);
    return *this;
  }

  std::uint64_t id() const noexcept { return id_; }
  std::string describe() const;  // defined in src/token_handle.cpp

private:
  explicit TokenHandle(std::uint64_t id) noexcept : id_(id) {}
  std::uint64_t id_;
};
