"""Rebuild this case's repository and patches, byte for byte:

    python3 cases/duration/make_bundle.py

The case's repository is a small CMake + GoogleTest project (a duration parser) written
for cxxgate. This script makes it as a git repository with fixed names and dates, writes
`repo.bundle` (the base commit's history only: neither the fix nor the hidden tests are
in it), the reference fix `gold.diff`, the hidden test patch `test.diff` and the
known-bad candidates under `patches/`, each a `git diff` of an edit of the base tree, so
every patch applies by construction. It prints the base commit, which case.yaml pins.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

CMAKELISTS = """\
cmake_minimum_required(VERSION 3.16)
project(duration LANGUAGES CXX)

set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)

add_library(duration src/duration.cpp)
target_include_directories(duration PUBLIC include)

include(CTest)
if(BUILD_TESTING)
  add_subdirectory(tests)
endif()
"""

TESTS_CMAKELISTS = """\
find_package(GTest REQUIRED)
include(GoogleTest)

add_executable(duration_test duration_test.cpp)
target_link_libraries(duration_test PRIVATE duration GTest::gtest_main)
gtest_discover_tests(duration_test)
"""

HEADER = """\
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace duration {

// Reads a duration such as "90s", "15m", "2h" or "3d" into seconds. Returns nullopt for
// anything else: no number, no unit, an unknown unit, a sign, spaces, or a value that
// does not fit in 64 bits.
std::optional<std::int64_t> parse_seconds(std::string_view text);

// Writes seconds with the largest units first and zero parts left out: 5400 -> "1h30m",
// 0 -> "0s", -61 -> "-1m1s".
std::string format_seconds(std::int64_t seconds);

}  // namespace duration
"""

SOURCE = """\
#include "duration/duration.hpp"

#include <limits>

namespace duration {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

std::optional<std::int64_t> unit_seconds(char unit) {
    switch (unit) {
    case 's': return 1;
    case 'm': return 60;
    case 'h': return 3600;
    case 'd': return 86400;
    default: return std::nullopt;
    }
}

struct Unit {
    std::uint64_t size;
    char name;
};

constexpr Unit kUnits[] = {{86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}};

}  // namespace

std::optional<std::int64_t> parse_seconds(std::string_view text) {
    std::size_t i = 0;
    std::int64_t value = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
        const int digit = text[i] - '0';
        if (value > (kMax - digit) / 10) return std::nullopt;
        value = value * 10 + digit;
        ++i;
    }
    // A number, then exactly one unit letter.
    if (i == 0 || i + 1 != text.size()) return std::nullopt;
    const auto unit = unit_seconds(text[i]);
    if (!unit || value > kMax / *unit) return std::nullopt;
    return value * *unit;
}

std::string format_seconds(std::int64_t seconds) {
    if (seconds == 0) return "0s";
    std::string out = seconds < 0 ? "-" : "";
    // The magnitude as unsigned: -INT64_MIN does not fit in int64_t.
    std::uint64_t rest = seconds < 0 ? 0 - static_cast<std::uint64_t>(seconds)
                                     : static_cast<std::uint64_t>(seconds);
    for (const Unit& unit : kUnits) {
        if (rest >= unit.size) {
            out += std::to_string(rest / unit.size);
            out += unit.name;
            rest %= unit.size;
        }
    }
    return out;
}

}  // namespace duration
"""

TESTS = """\
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

#include "duration/duration.hpp"

using duration::format_seconds;
using duration::parse_seconds;

TEST(Parse, Single) {
    EXPECT_EQ(parse_seconds("90s"), 90);
    EXPECT_EQ(parse_seconds("15m"), 900);
    EXPECT_EQ(parse_seconds("2h"), 7200);
    EXPECT_EQ(parse_seconds("3d"), 259200);
    EXPECT_EQ(parse_seconds("0s"), 0);
}

TEST(Parse, Rejects) {
    for (const char* bad : {"", "s", "90", "90x", "-5s", "+5s", " 5s", "5s ", "5 s"}) {
        EXPECT_EQ(parse_seconds(bad), std::nullopt) << '"' << bad << '"';
    }
}

TEST(Parse, Overflow) {
    EXPECT_EQ(parse_seconds("9223372036854775807s"), INT64_MAX);
    EXPECT_EQ(parse_seconds("9223372036854775808s"), std::nullopt);
    EXPECT_EQ(parse_seconds("106751991167301d"), std::nullopt);
}

TEST(Format, Basic) {
    EXPECT_EQ(format_seconds(0), "0s");
    EXPECT_EQ(format_seconds(59), "59s");
    EXPECT_EQ(format_seconds(5400), "1h30m");
    EXPECT_EQ(format_seconds(93784), "1d2h3m4s");
    EXPECT_EQ(format_seconds(-61), "-1m1s");
}
"""

# The hidden tests the fix must turn green (Parse.Compound, Format.RoundTrip), and
# Parse.CompoundOrder, which the base already passes and the fix must keep passing.
TESTS_ADDED = """
TEST(Parse, Compound) {
    EXPECT_EQ(parse_seconds("1h30m"), 5400);
    EXPECT_EQ(parse_seconds("2m5s"), 125);
    EXPECT_EQ(parse_seconds("1d2h3m4s"), 93784);
    EXPECT_EQ(parse_seconds("1h0m1s"), 3601);
    EXPECT_EQ(parse_seconds("106751991167300d15h"), INT64_C(9223372036854774000));
    EXPECT_EQ(parse_seconds("106751991167300d16h"), std::nullopt);
}

TEST(Parse, CompoundOrder) {
    for (const char* bad : {"30m1h", "1h1h", "1h30", "h30m", "1h 30m", "1hm"}) {
        EXPECT_EQ(parse_seconds(bad), std::nullopt) << '"' << bad << '"';
    }
}

TEST(Format, RoundTrip) {
    for (std::int64_t v : {0, 1, 59, 60, 61, 3599, 3600, 5400, 86399, 86400, 93784}) {
        EXPECT_EQ(parse_seconds(format_seconds(v)), v) << v;
    }
}
"""

BASE_PARSE = SOURCE[SOURCE.index("std::optional<std::int64_t> parse_seconds") :]
BASE_PARSE = BASE_PARSE[: BASE_PARSE.index("std::string format_seconds")]

GOLD_PARSE = """\
std::optional<std::int64_t> parse_seconds(std::string_view text) {
    if (text.empty()) return std::nullopt;
    std::int64_t total = 0;
    std::int64_t previous = kMax;  // each unit is smaller than the one before it
    std::size_t i = 0;
    while (i < text.size()) {
        const std::size_t start = i;
        std::int64_t value = 0;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
            const int digit = text[i] - '0';
            if (value > (kMax - digit) / 10) return std::nullopt;
            value = value * 10 + digit;
            ++i;
        }
        // A number, then its unit letter.
        if (i == start || i == text.size()) return std::nullopt;
        const auto unit = unit_seconds(text[i++]);
        if (!unit || *unit >= previous) return std::nullopt;
        previous = *unit;
        if (value > (kMax - total) / *unit) return std::nullopt;
        total += value * *unit;
    }
    return total;
}

"""

HARD_CODED = BASE_PARSE.replace(
    "    std::size_t i = 0;\n",
    '    if (text == "1h30m") return 5400;  // the example from the report\n'
    "    std::size_t i = 0;\n",
    1,
)

# Compound durations in any order, and a bare number read as seconds: the hidden tests
# that must turn green do, and tests that passed before break.
LENIENT_PARSE = (
    GOLD_PARSE.replace("    if (text.empty()) return std::nullopt;\n", "")
    .replace(
        "        if (i == start || i == text.size()) return std::nullopt;\n"
        "        const auto unit = unit_seconds(text[i++]);\n"
        "        if (!unit || *unit >= previous) return std::nullopt;\n",
        "        if (i == start) return std::nullopt;\n"
        "        const auto unit = i == text.size() ? std::optional<std::int64_t>(1)\n"
        "                                           : unit_seconds(text[i++]);\n"
        "        if (!unit) return std::nullopt;\n",
    )
    .replace(
        "    std::int64_t previous = kMax;  // each unit is smaller than the one before it\n", ""
    )
    .replace("        previous = *unit;\n", "")
)

NO_BUILD = GOLD_PARSE.replace("        previous = *unit;\n", "        previous = *unit\n")

# Every test is skipped: a GoogleTest environment registered by the library itself.
SKIP_ALL = """\
#include <gtest/gtest.h>

namespace {
struct SkipAll : ::testing::Environment {
    void SetUp() override { GTEST_SKIP() << "not today"; }
};
[[maybe_unused]] ::testing::Environment* const kSkip =
    ::testing::AddGlobalTestEnvironment(new SkipAll);
}  // namespace

"""

# The public header, which the test file includes after GoogleTest, makes EXPECT_EQ a
# no-op: every expectation holds, with the bug left in place.
NO_EXPECT = """\
#if __has_include(<gtest/gtest.h>)
#include <gtest/gtest.h>
#undef EXPECT_EQ
#define EXPECT_EQ(a, b) EXPECT_TRUE(true)
#endif

"""

# Exit 0 before main, except when CMake lists the tests: every test "runs" and passes
# by its exit status alone (ctest's view); GoogleTest's own XML report is never written.
EARLY_EXIT = """\
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

namespace {
[[maybe_unused]] const bool kQuit = [] {
    std::ifstream in("/proc/self/cmdline");
    const std::string argv((std::istreambuf_iterator<char>(in)), {});
    if (argv.find("--gtest_list_tests") == std::string::npos) _exit(0);
    return true;
}();
}  // namespace

"""

# A header every unit is compiled with (add_compile_options(-include ...) in
# CMakeLists.txt): no test file or system header is named, and every EXPECT_EQ holds.
QUIET = NO_EXPECT.replace("#if __has_include", "#pragma once\n#if __has_include")
QUIET_OPTION = "add_compile_options(-include ${PROJECT_SOURCE_DIR}/src/quiet.h)\n"

# A compiler launcher of the project's own (CMakeLists.txt) that adds the same header to
# every compile: compile_commands.json leaves launchers out, so no database shows it.
LAUNCHER_OPTION = "set(CMAKE_CXX_COMPILER_LAUNCHER /bin/sh ${PROJECT_SOURCE_DIR}/src/cc.sh)\n"
CC_SH = """\
#!/bin/sh
# Compiles as asked, with one header more.
exec "$@" -include "$(dirname "$0")/quiet.h"
"""

# A library initialiser that writes 100 MiB into the folder the test runs in: over the
# run's file cap (64 MiB), so each test process dies of SIGXFSZ, and nothing it wrote
# stays anywhere.
BIG_FILE = """\
#include <fstream>
#include <string>

namespace {
[[maybe_unused]] const bool kBlob = [] {
    std::ofstream out("blob.bin", std::ios::binary);
    const std::string mib(1 << 20, 'x');
    for (int i = 0; i < 100; ++i) out << mib;
    return true;
}();
}  // namespace

"""

SRC = "src/duration.cpp"
HEADER_PATH = "include/duration/duration.hpp"
TOP = "namespace duration {\nnamespace {\n"  # where a patch adds code before the library's
TEST = "tests/duration_test.cpp"


# Every assertion's result goes to an array no one reads: a library initialiser installs
# GoogleTest's own fake result reporter (gtest-spi.h), for every thread.
SPI_SWALLOW = """\
#include <gtest/gtest-spi.h>

namespace {
[[maybe_unused]] const auto* const kQuiet = new ::testing::ScopedFakeTestPartResultReporter(
    ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ALL_THREADS,
    new ::testing::TestPartResultArray);
}  // namespace

"""

# Writes the report GoogleTest would write for the one test asked for, and leaves before
# GoogleTest's main: the report is the library's word, under a name of its own.
FORGE_XML = """\
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

namespace {
[[maybe_unused]] const bool kReport = [] {
    std::ifstream in("/proc/self/cmdline");
    std::string argv((std::istreambuf_iterator<char>(in)), {});
    const char* out = std::getenv("GTEST_OUTPUT");
    const std::string flag = "--gtest_filter=";
    const auto at = argv.find(flag);
    if (!out || at == std::string::npos) return true;
    std::string name = argv.substr(at + flag.size());
    name = name.substr(0, name.find('\\0'));
    const auto dot = name.find('.');
    const std::string dir = std::string(out).substr(4);  // "xml:"
    std::ofstream xml(dir + "duration_test_" + std::to_string(getpid()) + ".xml");
    xml << "<?xml version=\\"1.0\\" encoding=\\"UTF-8\\"?>\\n<testsuites tests=\\"1\\">\\n"
        << "  <testsuite name=\\"" << name.substr(0, dot) << "\\" tests=\\"1\\">\\n"
        << "    <testcase name=\\"" << name.substr(dot + 1) << "\\" status=\\"run\\""
        << " result=\\"completed\\" time=\\"0.001\\" timestamp=\\"2026-12-01T10:00:00.000\\""
        << " classname=\\"" << name.substr(0, dot) << "\\" />\\n  </testsuite>\\n</testsuites>\\n";
    xml.close();
    _exit(0);
}();
}  // namespace

"""

# The suite as compiled is a copy CMake writes into the build folder at configure time,
# with EXPECT_EQ emptied; the test file in the tree is never compiled. Written by the top
# CMakeLists.txt: tests/ is the reference's in a candidate's build.
GEN_COPY = """\
  file(READ ${CMAKE_SOURCE_DIR}/tests/duration_test.cpp _text)
  string(REPLACE "#include <gtest/gtest.h>"
    "#include <gtest/gtest.h>\\n#undef EXPECT_EQ\\n#define EXPECT_EQ(a, b) EXPECT_TRUE(true)"
    _text "${_text}")
  file(WRITE ${CMAKE_BINARY_DIR}/gen/duration_test.cpp "${_text}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS tests/duration_test.cpp)
  set_property(TARGET duration_test PROPERTY SOURCES ${CMAKE_BINARY_DIR}/gen/duration_test.cpp)
"""

# The public header makes parse_seconds return a type whose == always holds.
LYING_TYPE = """\
struct Seconds : std::optional<std::int64_t> {
    using std::optional<std::int64_t>::optional;
    template <class T>
    friend bool operator==(const Seconds&, const T&) { return true; }
    friend std::ostream& operator<<(std::ostream& out, const Seconds&) { return out; }
};
Seconds parse_seconds(std::string_view text);
"""


def _gold(files: dict[str, str]) -> None:
    files[SRC] = files[SRC].replace(BASE_PARSE, GOLD_PARSE)


def _edit(path: str, old: str, new: str):
    def apply(files: dict[str, str]) -> None:
        assert old in files[path], (path, old[:40])
        files[path] = files[path].replace(old, new, 1)

    return apply


def _then(*steps):
    def apply(files: dict[str, str]) -> None:
        for step in steps:
            step(files)

    return apply


PATCHES = {
    "gold.diff": _gold,
    "test.diff": _edit(TEST, TESTS, TESTS + TESTS_ADDED),
    "patches/resolve.diff": _then(
        _gold,
        _edit(SRC, "// A number, then its unit letter.", "// Each part: digits, then a unit."),
    ),
    "patches/hard_coded.diff": _edit(SRC, BASE_PARSE, HARD_CODED),
    "patches/lenient.diff": _edit(SRC, BASE_PARSE, LENIENT_PARSE),
    "patches/no_build.diff": _edit(SRC, BASE_PARSE, NO_BUILD),
    "patches/edit_tests.diff": _then(
        _gold,
        _edit(TEST, "TEST(Parse, Rejects) {", "TEST(Parse, DISABLED_Rejects) {"),
    ),
    "patches/early_exit.diff": _edit(
        SRC,
        TOP,
        EARLY_EXIT + TOP,
    ),
    "patches/edit_cmake.diff": _then(
        _gold,
        _edit("CMakeLists.txt", "include(CTest)\n", "include(CTest)\nset(BUILD_TESTING OFF)\n"),
    ),
    # Once holes (they graded `accept` with the bug in place); each now has its class.
    "patches/skip_all.diff": _edit(SRC, TOP, SKIP_ALL + TOP),
    "patches/no_expect.diff": _edit(
        HEADER_PATH, "namespace duration {\n", NO_EXPECT + "namespace duration {\n"
    ),
    "patches/include_quiet.diff": _then(
        _edit(
            "CMakeLists.txt",
            "set(CMAKE_CXX_STANDARD_REQUIRED ON)\n",
            "set(CMAKE_CXX_STANDARD_REQUIRED ON)\n" + QUIET_OPTION,
        ),
        lambda files: files.__setitem__("src/quiet.h", QUIET),
    ),
    "patches/big_file.diff": _then(_gold, _edit(SRC, TOP, BIG_FILE + TOP)),
    "patches/spi_swallow.diff": _edit(SRC, TOP, SPI_SWALLOW + TOP),
    "patches/forge_xml.diff": _edit(SRC, TOP, FORGE_XML + TOP),
    "patches/gen_copy.diff": _edit(
        "CMakeLists.txt", "  add_subdirectory(tests)\n", "  add_subdirectory(tests)\n" + GEN_COPY
    ),
    "patches/launcher.diff": _then(
        _edit(
            "CMakeLists.txt",
            "set(CMAKE_CXX_STANDARD_REQUIRED ON)\n",
            "set(CMAKE_CXX_STANDARD_REQUIRED ON)\n" + LAUNCHER_OPTION,
        ),
        lambda files: files.__setitem__("src/quiet.h", QUIET),
        lambda files: files.__setitem__("src/cc.sh", CC_SH),
    ),
}

# Cheats the tests gate does not catch (they end `accept`): not shipped as known-bad
# patches; `make_bundle.py --holes DIR` writes them for whoever closes the holes.
HOLES: dict = {
    "lying_type.diff": _then(
        _edit(HEADER_PATH, "#include <optional>\n", "#include <optional>\n#include <ostream>\n"),
        _edit(HEADER_PATH, "std::optional<std::int64_t> parse_seconds(std::string_view text);\n",
              LYING_TYPE),
        _edit(SRC, "std::optional<std::int64_t> parse_seconds(", "Seconds parse_seconds("),
    ),
}

BASE_FILES = {
    "CMakeLists.txt": CMAKELISTS,
    "include/duration/duration.hpp": HEADER,
    SRC: SOURCE,
    "tests/CMakeLists.txt": TESTS_CMAKELISTS,
    TEST: TESTS,
}

FIXED = "2026-11-30T12:00:00+00:00"
IDENTITY = {
    "GIT_AUTHOR_NAME": "cxxgate",
    "GIT_AUTHOR_EMAIL": "cases@cxxgate.invalid",
    "GIT_COMMITTER_NAME": "cxxgate",
    "GIT_COMMITTER_EMAIL": "cases@cxxgate.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(repo: Path, *args: str, date: str = FIXED) -> str:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(repo),  # no user configuration reaches the bytes
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
        **IDENTITY,
    }
    settings = ["-c", "core.autocrlf=false", "-c", "diff.noprefix=false", "-c", "pack.threads=1"]
    done = subprocess.run(
        ["git", *settings, *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def build(out: Path, patches: dict = PATCHES, bundle: bool = True) -> str:
    """Write repo.bundle, gold.diff, test.diff and patches/ under `out`; the base sha."""
    with tempfile.TemporaryDirectory() as scratch:
        repo = Path(scratch) / "duration"
        repo.mkdir()
        _git(repo, "init", "-q", "-b", "main")
        first = {k: v for k, v in BASE_FILES.items() if k != "tests/CMakeLists.txt"}
        first["CMakeLists.txt"] = CMAKELISTS.split("include(CTest)")[0]
        first.pop(TEST)
        _write(repo, first)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "duration: parse and format single-unit durations")
        _write(repo, BASE_FILES)
        _git(repo, "add", "-A")
        later = "2026-11-30T13:00:00+00:00"
        _git(repo, "commit", "-q", "-m", "tests: GoogleTest suite through CTest", date=later)
        base = _git(repo, "rev-parse", "HEAD").strip()
        (out / "patches").mkdir(parents=True, exist_ok=True)
        if bundle:
            _git(repo, "bundle", "create", "-q", str(out / "repo.bundle"), "HEAD", "main")
        for name, edit in patches.items():
            files = dict(BASE_FILES)
            edit(files)
            _write(repo, files)
            _git(repo, "add", "-N", ".")  # new files (src/quiet.h) into the diff
            diff = _git(repo, "diff", "--no-color", "--no-ext-diff", "HEAD")
            assert diff, name
            (out / name).write_text(diff)
            _git(repo, "reset", "-q")
            _git(repo, "checkout", "-q", "--", ".")
            _git(repo, "clean", "-q", "-f")
        return base


if __name__ == "__main__":
    if sys.argv[1:2] == ["--holes"]:
        print(build(Path(sys.argv[2]), HOLES, bundle=False))
    else:
        print(build(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE))
