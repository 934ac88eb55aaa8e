// must_fail, written the way fmt writes its compile-error tests: the forbidden call, its
// result discarded. to_text is [[nodiscard]], so under -Werror a version of to_text that
// accepts a double still "fails" here, on this very line, with a promoted warning
// (-Werror=unused-result). Only an error the language makes counts as the rejection.
#include "to_text.hpp"

int main() {
  to_text(1.5);  // cxxgate: reject
}
