#pragma once

// floor(sqrt(n)) for 0 <= n <= 10^12.
long long isqrt(long long n);
