// Relation driver for merge_intervals (gate `metamorphic`). Grader-owned: it lives beside
// the tree, where no patch reaches it, and is linked with the candidate's sources.
//
// stdin picks the stage:
//   golden\n<n>\n<lo hi>...      the snapshot stage: merge one input, report each interval
//   relations <seed> <trials>\n  the relation stage: every relation on `trials` inputs
//
// Verdict lines go through the harness's report channel (cxxgate_report_line), never to
// stdout: `out <lo> <hi>` per merged interval, `fail <relation> <trial> <counterexample>`,
// `held <relation> <checked>`, and `done <stage line>` once the stage finished (the first
// line of stdin as the driver read it: the harness checks that it ran the stage it gave).
//
// Relations run one after another, each over every trial, in the order below, and each
// compares the candidate with itself on sorted inputs except the one it is about: a patch
// that breaks one relation is named by that relation, whatever the seed.
//   permutation  merging a shuffled input gives what merging it sorted gives
//   dominated    adding an interval inside another one changes nothing
//   scaling      merging the input scaled by k > 0 gives the merged input scaled by k
//   cover        the result covers exactly the input's points, sorted, apart, not touching
#include "merge_intervals.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

extern "C" int cxxgate_report_open(void);
extern "C" void cxxgate_report_line(const char* text, unsigned long size);

namespace {

using Iv = std::pair<int, int>;
using List = std::vector<Iv>;

void report(const char* text) { cxxgate_report_line(text, std::strlen(text)); }

// splitmix64: the same stream from the same seed on every machine and library version
// (std::mt19937 is portable too, but its distributions are not).
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
};

// Bottom-up merge sort: inputs run to a few thousand intervals (<algorithm> would double
// this unit's compile time).
List sorted(List v) {
  List buf(v.size());
  for (std::size_t width = 1; width < v.size(); width *= 2) {
    for (std::size_t lo = 0; lo < v.size(); lo += 2 * width) {
      const std::size_t mid = lo + width < v.size() ? lo + width : v.size();
      const std::size_t hi = lo + 2 * width < v.size() ? lo + 2 * width : v.size();
      std::size_t a = lo, b = mid, out = lo;
      while (a < mid && b < hi) buf[out++] = v[b] < v[a] ? v[b++] : v[a++];
      while (a < mid) buf[out++] = v[a++];
      while (b < hi) buf[out++] = v[b++];
    }
    v.swap(buf);
  }
  return v;
}

// Trial t's input is the same for every relation; each relation draws its own choices.
Rng stream(std::uint64_t seed, int trial, int relation) {
  Rng r{seed ^ (0xD1B54A32D192ED03ULL * static_cast<std::uint64_t>(trial + 1))};
  for (int i = 0; i <= relation; ++i) r.next();
  return Rng{r.next()};
}

constexpr int kLow = -30;

// Trial t's size, from (seed, t) alone, across scales: a quarter of the trials each hold
// 0..3 intervals, tens, hundreds, or a few thousand. A patch that handles only small
// inputs (sorts when there are at most a dozen) meets large ones in every run.
int size_of(Rng& r) {
  switch (r.below(4)) {
    case 0: return r.below(4);
    case 1: return 4 + r.below(96);
    case 2: return 100 + r.below(900);
    default: return 1000 + r.below(3001);
  }
}

// The domain grows with the size, so large inputs keep gaps (not one merged run).
List input_of(std::uint64_t seed, int trial) {
  Rng r = stream(seed, trial, -1);
  const int n = size_of(r);
  const int span = n < 15 ? 60 : 4 * n;
  List in;
  for (int i = 0; i < n; ++i) {
    const int lo = kLow + r.below(span - 1);
    const int end = lo + 1 + r.below(12);
    const int hi = end < kLow + span ? end : kLow + span;
    in.push_back({lo, hi});
  }
  return in;
}

void shuffle(List& v, Rng& r) {
  for (int i = static_cast<int>(v.size()) - 1; i > 0; --i) std::swap(v[i], v[r.below(i + 1)]);
}

// "[lo,hi) [lo,hi)", cut short so one report line stays one line.
void show(const List& v, char* buf, std::size_t size) {
  std::size_t n = 0;
  buf[0] = '\0';
  for (const auto& [lo, hi] : v) {
    if (n + 48 >= size) {
      std::snprintf(buf + n, size - n, " ... (%zu in all)", v.size());
      return;
    }
    n += static_cast<std::size_t>(std::snprintf(buf + n, size - n, "%s[%d,%d)", n ? " " : "", lo, hi));
  }
  if (v.empty()) std::snprintf(buf, size, "(empty)");
}

// Why the merged list is not exactly the input's cover, or nullptr. Points are painted
// over the input's own range: linear in the range and the intervals' lengths.
const char* cover_problem(const List& in, const List& out) {
  int low = 0, high = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (i == 0 || in[i].first < low) low = in[i].first;
    if (i == 0 || in[i].second > high) high = in[i].second;
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].first >= out[i].second) return "an empty or reversed interval";
    if (in.empty() || out[i].first < low || out[i].second > high) return "an interval beyond the input";
    if (i > 0 && out[i].first <= out[i - 1].second) return "not sorted, overlapping or touching";
  }
  std::vector<signed char> covered(static_cast<std::size_t>(high - low), 0);
  for (const auto& [lo, hi] : in) {
    for (int x = lo; x < hi; ++x) covered[static_cast<std::size_t>(x - low)] = 1;
  }
  for (const auto& [lo, hi] : out) {
    for (int x = lo; x < hi; ++x) covered[static_cast<std::size_t>(x - low)] |= 2;
  }
  for (const signed char c : covered) {
    if (c == 1 || c == 2) return "covers other points than the input";
  }
  return nullptr;
}

struct Failure {
  char text[1536];
};

// Each relation: true when it held on this input; on false, `f` says how it broke.
bool permutation(const List& in, Rng& r, Failure& f) {
  List shuffled = in;
  shuffle(shuffled, r);
  const List got = merge_intervals(shuffled);
  const List want = merge_intervals(sorted(in));
  if (got == want) return true;
  char a[400], b[400], c[400];
  show(shuffled, a, sizeof a), show(got, b, sizeof b), show(want, c, sizeof c);
  std::snprintf(f.text, sizeof f.text, "input %s; merged %s; merged sorted first %s", a, b, c);
  return false;
}

bool dominated(const List& in, Rng& r, Failure& f) {
  if (in.empty()) return true;
  const Iv host = in[static_cast<std::size_t>(r.below(static_cast<int>(in.size())))];
  const int lo = host.first + r.below(host.second - host.first);
  const int hi = lo + 1 + r.below(host.second - lo);
  List more = in;
  more.push_back({lo, hi});
  const List got = merge_intervals(sorted(more));
  const List want = merge_intervals(sorted(in));
  if (got == want) return true;
  char a[400], b[400], c[400];
  show(sorted(in), a, sizeof a), show(want, b, sizeof b), show(got, c, sizeof c);
  std::snprintf(f.text, sizeof f.text, "input %s merged %s; adding [%d,%d) inside [%d,%d) merged %s",
                a, b, lo, hi, host.first, host.second, c);
  return false;
}

bool scaling(const List& in, Rng& r, Failure& f) {
  const int k = 2 + r.below(4);
  List scaled = sorted(in);
  for (auto& [lo, hi] : scaled) lo *= k, hi *= k;
  const List got = merge_intervals(scaled);
  List want = merge_intervals(sorted(in));
  for (auto& [lo, hi] : want) lo *= k, hi *= k;
  if (got == want) return true;
  char a[400], b[400], c[400];
  show(sorted(in), a, sizeof a), show(got, b, sizeof b), show(want, c, sizeof c);
  std::snprintf(f.text, sizeof f.text, "input %s scaled by %d merged %s; merged then scaled %s",
                a, k, b, c);
  return false;
}

bool cover(const List& in, Rng&, Failure& f) {
  const List got = merge_intervals(sorted(in));
  const char* why = cover_problem(in, got);
  if (why == nullptr) return true;
  char a[400], b[400];
  show(sorted(in), a, sizeof a), show(got, b, sizeof b);
  std::snprintf(f.text, sizeof f.text, "input %s merged %s: %s", a, b, why);
  return false;
}

struct Relation {
  const char* name;
  bool (*check)(const List&, Rng&, Failure&);
};

constexpr Relation kRelations[] = {
    {"permutation", permutation},
    {"dominated", dominated},
    {"scaling", scaling},
    {"cover", cover},
};

// "done <the first line of stdin>": the stage this run finished, as the driver read it.
char stage[128];

void report_done() {
  char line[160];
  std::snprintf(line, sizeof line, "done %s", stage);
  report(line);
}

int relations(std::uint64_t seed, int trials) {
  char line[2048];
  for (int k = 0; k < static_cast<int>(std::size(kRelations)); ++k) {
    const Relation& rel = kRelations[k];
    int checked = 0;
    for (int t = 0; t < trials; ++t) {
      const List in = input_of(seed, t);
      Rng r = stream(seed, t, k);
      Failure f{};
      if (!rel.check(in, r, f)) {
        std::snprintf(line, sizeof line, "fail %s %d %s", rel.name, t, f.text);
        report(line);
        return 1;
      }
      checked += in.empty() && rel.check == dominated ? 0 : 1;
    }
    std::snprintf(line, sizeof line, "held %s %d", rel.name, checked);
    report(line);
  }
  report_done();
  return 0;
}

int golden(char* text) {
  char* p = text;
  const long n = std::strtol(p, &p, 10);
  if (n < 0 || n > 1000) return 2;
  List in;
  for (long i = 0; i < n; ++i) {
    const int lo = static_cast<int>(std::strtol(p, &p, 10));
    const int hi = static_cast<int>(std::strtol(p, &p, 10));
    in.push_back({lo, hi});
  }
  char line[64];
  for (const auto& [lo, hi] : merge_intervals(in)) {
    std::snprintf(line, sizeof line, "out %d %d", lo, hi);
    report(line);
  }
  report_done();
  return 0;
}

}  // namespace

int main() {
  if (!cxxgate_report_open()) {
    std::fprintf(stderr, "driver: no report channel (CXXGATE_REPORT_FDS); run it under cxxgate\n");
    return 3;
  }
  static char text[1 << 16];
  const std::size_t size = std::fread(text, 1, sizeof text - 1, stdin);
  text[size] = '\0';
  const std::size_t first = std::strcspn(text, "\n");
  std::snprintf(stage, sizeof stage, "%.*s", static_cast<int>(first), text);
  char* rest = nullptr;
  if (std::strncmp(text, "golden", 6) == 0) return golden(text + 6);
  if (std::strncmp(text, "relations", 9) == 0) {
    const std::uint64_t seed = std::strtoull(text + 9, &rest, 10);
    const long trials = std::strtol(rest, nullptr, 10);
    if (trials < 1 || trials > 100000) return 2;
    return relations(seed, static_cast<int>(trials));
  }
  std::fprintf(stderr, "driver: stdin names no stage (golden or relations)\n");
  return 2;
}
