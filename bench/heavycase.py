"""A generated header-only case shaped like fmt: one umbrella header pulls in every part,
and every part instantiates templates and evaluates constexpr tables when it is included,
so each probe that includes the library costs real compile time. The patches edit a
header, so every tree differs in a file every probe reads: no probe of one tree can be
reused for another (the shape issue 13 names).

Written from scratch by this generator (bench only; never a shipped case).
"""

from __future__ import annotations

import difflib
from pathlib import Path

NAME = "heavy_headers"
PARTS = 12  # headers under include/heavy/part_*.hpp
DEPTH = 128  # recursive template instantiations per part, on every include
ROUNDS = 16  # constexpr fold rounds over each part's table, on every include
RECORDS = 6  # records (struct + formatter specialisation) per part

CORE = """\
#pragma once
// heavy: a generated header-only formatting library (bench/heavycase.py).
#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace heavy {

template <typename T>
struct formatter;

template <typename T>
std::string format_value(const T& value) {
  std::string out;
  formatter<T>{}.format(value, std::back_inserter(out));
  return out;
}

template <typename Out>
Out put_int(long long v, Out out) {
  std::array<char, 24> buf{};
  auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::copy(buf.data(), res.ptr, out);
}

template <typename Out>
Out put_text(std::string_view text, Out out) {
  return std::copy(text.begin(), text.end(), out);
}

// Move-only: copies must keep failing to compile (negcomp's must_fail probes).
class handle {
 public:
  explicit handle(int v) noexcept : v_(v) {}
  handle(const handle&) = delete;
  handle& operator=(const handle&) = delete;
  handle(handle&& other) noexcept : v_(other.v_) { other.v_ = 0; }
  handle& operator=(handle&& other) noexcept {
    v_ = other.v_;
    other.v_ = 0;
    return *this;
  }
  int value() const noexcept { return v_; }

 private:
  int v_;
};

}  // namespace heavy
"""

PART = """\
#pragma once
#include "heavy/core.hpp"

namespace heavy::part{g} {{

template <std::size_t N>
struct mix
    : std::integral_constant<std::uint64_t, (mix<N - 1>::value * 6364136223846793005ull +
                                             {g}ull + N) ^ (mix<N - 1>::value >> 29)> {{}};
template <>
struct mix<0> : std::integral_constant<std::uint64_t, {seed}ull> {{}};

template <std::size_t... I>
constexpr std::array<std::uint64_t, sizeof...(I)> mix_table(std::index_sequence<I...>) {{
  return {{mix<I>::value...}};
}}
inline constexpr auto table = mix_table(std::make_index_sequence<{depth}>{{}});

constexpr std::uint64_t fold(std::size_t rounds) {{
  std::uint64_t h = {g}ull + 1469598103934665603ull;
  for (std::size_t r = 0; r < rounds; ++r) {{
    for (auto v : table) {{
      h = (h ^ (v + r)) * 1099511628211ull;
    }}
  }}
  return h;
}}
inline constexpr std::uint64_t digest = fold({rounds});

{records}
}}  // namespace heavy::part{g}
"""

RECORD = """\
struct record{k} {{
  int id = {k};
  long long weight = {g}{k};
  std::string name = "part{g}.record{k}";
  std::vector<int> tags{{{g}, {k}}};
}};
}}  // namespace heavy::part{g}

template <>
struct heavy::formatter<heavy::part{g}::record{k}> {{
  template <typename Out>
  Out format(const heavy::part{g}::record{k}& r, Out out) const {{
    out = put_text(r.name, out);
    *out++ = '#';
    out = put_int(r.id, out);
    *out++ = ':';
    out = put_int(r.weight, out);
    for (int t : r.tags) {{
      *out++ = ',';
      out = put_int(t, out);
    }}
    return out;
  }}
}};

namespace heavy::part{g} {{
"""

POS_FORMAT = """\
// must_build: records format as name#id:weight,tags.
#include "heavy/all.hpp"

int main() {
  const std::string text = heavy::format_value(heavy::part0::record1{});
  return text == "part0.record1#1:1,0,1" ? 0 : 1;
}
"""

POS_MOVE = """\
// must_build: a moved-from handle is emptied.
#include "heavy/all.hpp"

int main() {
  heavy::handle a{7};
  heavy::handle b = std::move(a);
  return (b.value() == 7 && a.value() == 0 && heavy::part1::digest != 0) ? 0 : 1;
}
"""

NEG_COPY = """\
// must_fail: a handle cannot be copied.
#include "heavy/all.hpp"

int main() {
  heavy::handle a{1};
  { heavy::handle b(a); (void)b; }  // cxxgate: reject
  (void)a;
}
"""

NEG_FROM_INT = """\
// must_fail: no implicit construction from an int.
#include "heavy/all.hpp"

int main() {
  heavy::handle h = 7; (void)h;  // cxxgate: reject
}
"""

CASE_YAML = """\
summary: generated header-only library (bench/heavycase.py); every probe includes all of it
std: c++20
writable: [include/**]
include_dirs: [include]
public_headers: [include/heavy/core.hpp, include/heavy/all.hpp, include/heavy/part_0.hpp]
gates:
  headers: {{}}
  negcomp:
    must_build: [probes/pos_format.cpp, probes/pos_move.cpp]
    must_fail:
      - {{unit: probes/neg_copy.cpp, diagnostic: {{gcc: "use of deleted function"}}}}
      - {{unit: probes/neg_from_int.cpp}}
patches:
{patches}
"""


def part_text(g: int) -> str:
    records = "".join(RECORD.format(g=g, k=k) for k in range(RECORDS))
    return PART.format(g=g, seed=1000003 * (g + 1), depth=DEPTH, rounds=ROUNDS, records=records)


def _diff(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return "".join(lines)


def patches(tree: Path) -> dict[str, tuple[str, str]]:
    """name -> (diff, expected verdict/class for case.yaml)."""
    part0 = (tree / "include/heavy/part_0.hpp").read_text()
    core = (tree / "include/heavy/core.hpp").read_text()
    part = "include/heavy/part_0.hpp"
    return {
        # A record gains a field that its formatter does not print: harmless.
        "good_extra_field": (
            _diff(part, part0, part0.replace("int id = 1;", "int id = 1;\n  bool spare = false;")),
            "{verdict: accept}",
        ),
        # Copy becomes possible: neg_copy.cpp compiles.
        "copyable_handle": (
            _diff(
                "include/heavy/core.hpp",
                core,
                core.replace("handle(const handle&) = delete;", "handle(const handle&) = default;"),
            ),
            "{verdict: reject, negcomp: surface_regression}",
        ),
        # Without its include guard, part_0.hpp included twice redefines everything.
        "drop_pragma_once": (
            _diff(part, part0, part0.replace("#pragma once\n", "", 1)),
            "{verdict: reject, headers: other_compile_error}",
        ),
    }


def write(case_dir: Path) -> list[Path]:
    """Write the case into case_dir (a new folder); return its patch files."""
    tree = case_dir / "tree"
    inc = tree / "include/heavy"
    inc.mkdir(parents=True)
    (inc / "core.hpp").write_text(CORE)
    for g in range(PARTS):
        (inc / f"part_{g}.hpp").write_text(part_text(g))
    (inc / "all.hpp").write_text(
        "#pragma once\n" + "".join(f'#include "heavy/part_{g}.hpp"\n' for g in range(PARTS))
    )
    probes = case_dir / "probes"
    probes.mkdir()
    for name, text in (
        ("pos_format.cpp", POS_FORMAT),
        ("pos_move.cpp", POS_MOVE),
        ("neg_copy.cpp", NEG_COPY),
        ("neg_from_int.cpp", NEG_FROM_INT),
    ):
        (probes / name).write_text(text)
    (case_dir / "patches").mkdir()
    files = []
    listed = []
    for name, (diff, expect) in patches(tree).items():
        path = case_dir / "patches" / f"{name}.diff"
        path.write_text(diff)
        files.append(path)
        listed.append(f"  - {{file: patches/{name}.diff, expect: {expect}}}\n")
    (case_dir / "case.yaml").write_text(CASE_YAML.format(patches="".join(listed)))
    return files


def header_lines(case_dir: Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in (case_dir / "tree").rglob("*.hpp"))
