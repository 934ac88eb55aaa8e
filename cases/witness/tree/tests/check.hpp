// A small test framework with GoogleTest's and Catch2's spellings, so the tests of this
// case read like the real ones (and compile without either library).
#pragma once
#include <cmath>

namespace check {
using Fn = void (*)();
struct Reg {
  Reg(const char* name, Fn fn);
};
bool report(bool ok, const char* what, const char* file, int line);
bool section(const char* name);
int run_all();

template <class A, class B>
bool eq(const A& a, const B& b, const char* what, const char* file, int line) {
  return report(a == b, what, file, line);
}
inline bool near(double a, double b, double tol, const char* what, const char* file, int line) {
  return report(std::fabs(a - b) <= tol, what, file, line);
}
}  // namespace check

#define TESTING_CAT2(a, b) a##b
#define TESTING_CAT(a, b) TESTING_CAT2(a, b)

// GoogleTest's spelling
#define TEST(suite, name)                                                         \
  static void suite##_##name();                                                   \
  static ::check::Reg suite##_##name##_reg(#suite "." #name, suite##_##name);     \
  static void suite##_##name()
#define EXPECT_EQ(a, b) ::check::eq((a), (b), #a " == " #b, __FILE__, __LINE__)
#define EXPECT_TRUE(x) ::check::report(static_cast<bool>(x), #x, __FILE__, __LINE__)
#define EXPECT_NEAR(a, b, tol) ::check::near((a), (b), (tol), #a " ~ " #b, __FILE__, __LINE__)
#define ASSERT_EQ(a, b) \
  if (!EXPECT_EQ(a, b)) return

// Catch2's spelling
#define TEST_CASE(name, ...)                                                        \
  static void TESTING_CAT(test_case_, __LINE__)();                                  \
  static ::check::Reg TESTING_CAT(test_reg_, __LINE__)(name,                        \
                                                       TESTING_CAT(test_case_, __LINE__)); \
  static void TESTING_CAT(test_case_, __LINE__)()
#define SECTION(name) if (::check::section(name))
#define REQUIRE(x) EXPECT_TRUE(x)
#define CHECK(x) EXPECT_TRUE(x)
