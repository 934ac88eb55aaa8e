// cxxgate entry: the `main` of every program the harness links from a unit of its own.
//
// The unit's own `main` is renamed to cxxgate_unit_main in its object file (objcopy, after
// it compiled as a real main: implicit `return 0` and all). This entry calls it and, only
// once it has returned, hands the run's nonce back on a descriptor the harness checks. A
// program that ends before that (a static initialiser calling _exit(0), a `main` hidden by a
// macro) leaves no nonce, and the harness reports that it never returned from main.
//
// The nonce waits in a pipe at a fixed descriptor (cxxgate/run.py RETURN_FDS), named in no
// environment variable or argument. A `.preinit_array` hook reads it and closes the pipe:
// that hook is the first code of the program to run (this object is linked first, and
// cxxgate/premain.py refuses candidate objects with `.preinit_array` entries, IFUNC
// resolvers or constructor priorities up to 101), so no code of the candidate's finds
// the pipe open.
//
// In a coverage build (CXXGATE_GCOV, set by cxxgate/cell.py for `--coverage`), the counts
// are reset right before the unit's main and written right after it: only what ran while
// the test ran counts, not a static initialiser or a destructor calling the new code.
//
// No #include at all: a patched header, or a file in the tree shadowing a system header,
// cannot reach this file. No C library call either: the candidate's objects could define
// `read` or `write` and see the nonce go by. System calls are made here directly.
extern "C" {
int cxxgate_unit_main(int argc, char** argv, char** envp);
#ifdef CXXGATE_GCOV
void __gcov_reset(void);
void __gcov_dump(void);
#endif
}

namespace {

constexpr long kNonceIn = 1000;    // RETURN_FDS[0]: the pipe holding the nonce
constexpr long kNonceBack = 1001;  // RETURN_FDS[1]: where it goes once main returned

#if defined(__x86_64__)
constexpr long kRead = 0, kWrite = 1, kClose = 3;
long sys3(long number, long a, long b, long c) {
  long ret;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(number), "D"(a), "S"(b), "d"(c)
               : "rcx", "r11", "memory");
  return ret;
}
#elif defined(__aarch64__)
constexpr long kRead = 63, kWrite = 64, kClose = 57;
long sys3(long number, long a, long b, long c) {
  register long x8 asm("x8") = number;
  register long x0 asm("x0") = a;
  register long x1 asm("x1") = b;
  register long x2 asm("x2") = c;
  asm volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
  return x0;
}
#else
#error "cxxgate entry: no direct system call for this architecture"
#endif

char nonce[128];
long nonce_size = 0;

void take_nonce(int, char**, char**) {
  long got = 0;
  while (got < static_cast<long>(sizeof nonce) - 1) {  // a byte kept for the status
    const long n = sys3(kRead, kNonceIn, reinterpret_cast<long>(nonce + got),
                        static_cast<long>(sizeof nonce) - 1 - got);
    if (n <= 0) break;  // the end of the pipe; or no pipe: run outside the harness
    got += n;
  }
  sys3(kClose, kNonceIn, 0, 0);
  nonce_size = got;
}

// The harness's hook: the dynamic linker (or, linked statically, the C library's start)
// runs .preinit_array before any constructor.
[[gnu::used, gnu::section(".preinit_array")]] void (*take)(int, char**, char**) = take_nonce;

// The nonce, then one byte: the status main returned (mod 256). The harness checks it
// against the process's exit: code that runs after main (an atexit handler, a destructor)
// calling _exit(0) cannot turn a failing main into a success.
void report_return(int status) {
  if (nonce_size == 0) return;
  nonce[nonce_size] = static_cast<char>(status & 0xff);
  const long size = nonce_size + 1;
  for (long sent = 0; sent < size;) {
    const long n = sys3(kWrite, kNonceBack, reinterpret_cast<long>(nonce + sent), size - sent);
    if (n <= 0) break;
    sent += n;
  }
  sys3(kClose, kNonceBack, 0, 0);
}

}  // namespace

int main(int argc, char** argv, char** envp) {
#ifdef CXXGATE_GCOV
  __gcov_reset();  // what ran before the test's main does not count
#endif
  const int status = cxxgate_unit_main(argc, argv, envp);
#ifdef CXXGATE_GCOV
  __gcov_dump();  // nor what runs after it (destructors, atexit handlers): counts written now
#endif
  report_return(status);
  return status;
}
