#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

// The last four samples, filed by sequence number (producers may deliver out of order).
// Sequence numbers are 32-bit and wrap; `newer` is serial-number arithmetic (RFC 1982).
class Ring {
 public:
  void put(std::uint32_t seq, int value) {
    Slot& slot = slots_[seq % slots_.size()];
    if (!slot.used || newer(seq, slot.seq)) slot = Slot{seq, value, true};
  }

  // The value with the newest sequence number; 0 when empty.
  int newest() const {
    const Slot* best = nullptr;
    for (const Slot& s : slots_) {
      if (s.used && (best == nullptr || newer(s.seq, best->seq))) best = &s;
    }
    return best == nullptr ? 0 : best->value;
  }

 private:
  struct Slot {
    std::uint32_t seq = 0;
    int value = 0;
    bool used = false;
  };

  static bool newer(std::uint32_t a, std::uint32_t b) {
    return static_cast<std::int32_t>(a - b) > 0;
  }

  std::array<Slot, 4> slots_{};
};
