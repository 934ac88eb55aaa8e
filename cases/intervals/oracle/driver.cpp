// Relation driver for merge_intervals (gate `metamorphic`). Grader-owned: it lives beside
// the tree, where no patch reaches it, and is linked with the candidate's sources.
//
// stdin picks the stage:
//   golden\n<n>\n<lo hi>...      the snapshot stage: merge one input, report each interval
//   relations <seed> <trials>\n  the relation stage: every relation on `trials` inputs
//
// Verdict lines go through the harness's report channel (cxxgate_report_line), never to
// stdout: `out <lo> <hi>` per merged interval, `fail <relation> <trial> <counterexample>`,
// `held <relation> <trials>`, and `done <stage>` once the stage finished: the stage as the
// driver parsed it (`relations <seed> <trials>` printed from the numbers it ran with, not
// the raw line), so a tree that bends the parse (its own strtoull) is caught when the
// harness compares it with what it sent.
//
// Relations run one after another, each over every trial, in the order below, and each
// compares the candidate with itself on sorted inputs except the one it is about: a patch
// that breaks one relation is named by that relation, whatever the seed.
//   permutation  merging a shuffled input gives what merging it sorted gives
//   dominated    adding an interval inside another one changes nothing
//   scaling      merging the input scaled by k > 0 gives the merged input scaled by k (or
//                shifted by d, when the coordinates leave no room in int to scale)
//   cover        the result covers exactly the input's points, sorted, apart, not touching
// Besides, every call's result, in every relation, is checked against the driver's own
// exact cover (cover_of): a result that agrees with the candidate's other results but not
// with the input (a cache keyed on a permutation, a call-count switch) is reported as
// `cover` once the other relations held. Each relation also calls the candidate on an
// unrelated input between its two calls, in an order drawn from the trial's stream.
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

// Bottom-up merge sort: inputs run to some 24000 intervals (<algorithm> would double
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
constexpr std::int64_t kIntMin = -2147483647LL - 1;
constexpr std::int64_t kIntMax = 2147483647LL;

// Trial t's size, from (seed, t) alone, across scales: of sixteen trials, four each hold
// 0..3 intervals, tens or hundreds, three a few thousand, and one 4097 to 24581 (in one
// of three octaves). A patch that handles only small inputs, or only inputs below some
// size, meets the others in every run.
int size_of(Rng& r) {
  const int bucket = r.below(16);
  if (bucket < 4) return r.below(4);
  if (bucket < 8) return 4 + r.below(96);
  if (bucket < 12) return 100 + r.below(900);
  if (bucket < 15) return 1000 + r.below(3001);
  // One of three octaves: 4097..6144, 8194..12290, 16388..24581.
  const int base = 4097 << r.below(3);
  return base + r.below(base / 2);
}

// Coordinates across scales too: a third of the trials stay near zero (what the snapshots
// look like), a third lie around an offset up to +/-2^26, a third anywhere in int, up to
// its ends. The domain grows with the size, so large inputs keep gaps (not one merged
// run). Every width stays below 2^30: `hi - lo` never overflows in the relations.
List input_of(std::uint64_t seed, int trial) {
  Rng r = stream(seed, trial, -1);
  const int n = size_of(r);
  const int scale = r.below(3);
  List in;
  if (scale == 0) {
    const int span = n < 15 ? 60 : 4 * n;
    for (int i = 0; i < n; ++i) {
      const int lo = kLow + r.below(span - 1);
      const int end = lo + 1 + r.below(12);
      const int hi = end < kLow + span ? end : kLow + span;
      in.push_back({lo, hi});
    }
    return in;
  }
  // [low, low + span): span and widths in int64, clipped to int at the end.
  std::int64_t span = 0, low = 0;
  if (scale == 1) {
    span = static_cast<std::int64_t>(n < 15 ? 60 : 4 * n) << r.below(8);
    low = static_cast<std::int64_t>(r.next() % (1ULL << 27)) - (1LL << 26);
  } else {
    span = kIntMax - kIntMin + 1;
    low = kIntMin;
  }
  const std::int64_t gap = span / (n > 0 ? n : 1);  // the mean distance between two starts
  const std::int64_t widest = gap * 2 < (1LL << 30) ? (gap * 2 > 1 ? gap * 2 : 1) : (1LL << 30);
  for (int i = 0; i < n; ++i) {
    std::int64_t lo = low + static_cast<std::int64_t>(r.next() % static_cast<std::uint64_t>(span));
    std::int64_t hi = lo + 1 + static_cast<std::int64_t>(r.next() % static_cast<std::uint64_t>(widest));
    if (r.below(64) == 0) lo = kIntMin;  // the ends of int, now and then
    if (r.below(64) == 0) hi = kIntMax;
    if (lo > kIntMax - 1) lo = kIntMax - 1;
    if (hi > kIntMax) hi = kIntMax;
    if (hi - lo > (1LL << 30)) {
      if (r.below(2)) hi = lo + (1LL << 30);
      else lo = hi - (1LL << 30);
    }
    in.push_back({static_cast<int>(lo), static_cast<int>(hi)});
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

// The input's exact cover, from the driver's own sort and a sweep in int64 (no point is
// painted: coordinates span all of int).
List cover_of(const List& in) {
  List out;
  std::int64_t lo = 0, hi = 0;
  bool open = false;
  for (const auto& [a, b] : sorted(in)) {
    if (a >= b) continue;  // the generator makes none; an empty interval covers nothing
    if (open && a <= hi) {
      if (b > hi) hi = b;
      continue;
    }
    if (open) out.push_back({static_cast<int>(lo), static_cast<int>(hi)});
    lo = a, hi = b, open = true;
  }
  if (open) out.push_back({static_cast<int>(lo), static_cast<int>(hi)});
  return out;
}

// Why the merged list is not exactly the input's cover, or nullptr.
const char* cover_problem(const List& in, const List& out) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].first >= out[i].second) return "an empty or reversed interval";
    if (i > 0 && out[i].first <= out[i - 1].second) return "not sorted, overlapping or touching";
  }
  if (out != cover_of(in)) return "covers other points than the input";
  return nullptr;
}

struct Failure {
  char text[1536];
};

// The first result, in any relation, that is not its input's exact cover: reported as
// `cover` after the relations that compare the candidate with itself held.
Failure oracle_failure{};
int oracle_trial = -1;
int current_trial = 0;

List merged(const List& in) {
  List got = merge_intervals(in);
  if (oracle_trial < 0) {
    if (const char* why = cover_problem(in, got)) {
      char a[400], b[400];
      show(in, a, sizeof a), show(got, b, sizeof b);
      std::snprintf(oracle_failure.text, sizeof oracle_failure.text, "input %s merged %s: %s", a, b, why);
      oracle_trial = current_trial;
    }
  }
  return got;
}

// A call on an input of another trial's shape: no two calls the relations compare are
// back to back.
void unrelated(Rng& r) {
  List other;
  const int n = r.below(40);
  for (int i = 0; i < n; ++i) {
    const int lo = r.below(1 << 20) - (1 << 19);
    other.push_back({lo, lo + 1 + r.below(64)});
  }
  merged(other);
}

// Each relation: true when it held on this input; on false, `f` says how it broke.
bool permutation(const List& in, Rng& r, Failure& f) {
  List shuffled = in;
  shuffle(shuffled, r);
  const bool sorted_first = r.below(2) == 0;
  List want = sorted_first ? merged(sorted(in)) : List{};
  unrelated(r);
  const List got = merged(shuffled);
  unrelated(r);
  if (!sorted_first) want = merged(sorted(in));
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
  const List got = merged(sorted(more));
  unrelated(r);
  const List want = merged(sorted(in));
  if (got == want) return true;
  char a[400], b[400], c[400];
  show(sorted(in), a, sizeof a), show(want, b, sizeof b), show(got, c, sizeof c);
  std::snprintf(f.text, sizeof f.text, "input %s merged %s; adding [%d,%d) inside [%d,%d) merged %s",
                a, b, lo, hi, host.first, host.second, c);
  return false;
}

// Scaled by k in 2..5 where the coordinates leave room in int; else shifted by d where
// they leave room; else (both ends of int in use) compared with itself unchanged.
bool scaling(const List& in, Rng& r, Failure& f) {
  std::int64_t least = 0, most = 0, widest = 1;
  for (const auto& [lo, hi] : in) {
    least = lo < least ? lo : least, most = hi > most ? hi : most;
    const std::int64_t a = lo < 0 ? -std::int64_t{lo} : lo, b = hi < 0 ? -std::int64_t{hi} : hi;
    widest = a > widest ? a : widest, widest = b > widest ? b : widest;
  }
  const std::int64_t room = kIntMax / widest;
  const int k = room >= 2 ? 2 + r.below(static_cast<int>(room - 1 < 4 ? room - 1 : 4)) : 1;
  const std::int64_t down = least - kIntMin, up = kIntMax - most;
  std::int64_t d = 0;
  if (k == 1 && down + up > 0) {
    d = static_cast<std::int64_t>(r.next() % static_cast<std::uint64_t>(down + up + 1)) - down;
  }
  auto move = [&](List v) {
    for (auto& [lo, hi] : v) {
      lo = static_cast<int>(std::int64_t{lo} * k + d), hi = static_cast<int>(std::int64_t{hi} * k + d);
    }
    return v;
  };
  const List got = merged(move(sorted(in)));
  unrelated(r);
  const List want = move(merged(sorted(in)));
  if (got == want) return true;
  char a[400], b[400], c[400];
  show(sorted(in), a, sizeof a), show(got, b, sizeof b), show(want, c, sizeof c);
  std::snprintf(f.text, sizeof f.text,
                "input %s scaled by %d, shifted by %lld merged %s; merged then moved %s", a, k,
                static_cast<long long>(d), b, c);
  return false;
}

bool cover(const List& in, Rng&, Failure& f) {
  const List got = merged(sorted(in));
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
      current_trial = t;
      const List in = input_of(seed, t);
      Rng r = stream(seed, t, k);
      Failure f{};
      if (!rel.check(in, r, f)) {
        std::snprintf(line, sizeof line, "fail %s %d %s", rel.name, t, f.text);
        report(line);
        return 1;
      }
      ++checked;  // every trial ran (dominated holds trivially on an empty input)
    }
    std::snprintf(line, sizeof line, "held %s %d", rel.name, checked);
    report(line);
  }
  if (oracle_trial >= 0) {
    std::snprintf(line, sizeof line, "fail cover %d %s", oracle_trial, oracle_failure.text);
    report(line);
    return 1;
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
    // `done` echoes what was parsed, not what was read: the harness compares the two.
    std::snprintf(stage, sizeof stage, "relations %llu %ld", static_cast<unsigned long long>(seed), trials);
    return relations(seed, static_cast<int>(trials));
  }
  std::fprintf(stderr, "driver: stdin names no stage (golden or relations)\n");
  return 2;
}
