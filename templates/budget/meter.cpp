// cxxgate meter: run one program and report its own resource accounting.
//
//   meter REPORT_FD MEMORY_MIB PROGRAM [ARGS...]
//
// Why a launcher: ru_maxrss survives exec, so a child forked straight from the Python
// harness reports at least Python's resident size (~15-35 MB) whatever it does itself, and
// under bubblewrap the harness only sees bwrap's accounting, which never includes the
// sandboxed program at all. This small static program forks the candidate itself, so the
// floor is its own few hundred KiB, and wait4 gives that one child's peak RSS and CPU.
// The report goes to REPORT_FD, which the candidate never inherits, so it cannot forge it.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static double since(const timespec& t0) {
  timespec t1{};
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return static_cast<double>(t1.tv_sec - t0.tv_sec) + static_cast<double>(t1.tv_nsec - t0.tv_nsec) / 1e9;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: meter REPORT_FD MEMORY_MIB PROGRAM [ARGS...]\n");
    return 125;
  }
  const int report = std::atoi(argv[1]);
  const long memory_mib = std::atol(argv[2]);
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  // Orphans of the candidate are re-parented here, so a child left behind is seen.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  timespec t0{};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  const pid_t pid = fork();
  if (pid < 0) return 125;
  if (pid == 0) {
    // The program stays in the meter's process group, which the harness kills whole
    // after the run (or at its time limit): nothing it forks outlives the run.
    close(report);
    if (memory_mib > 0) {
      const rlim_t bytes = static_cast<rlim_t>(memory_mib) << 20;
      const rlimit lim{bytes, bytes};
      setrlimit(RLIMIT_AS, &lim);
    }
    execv(argv[3], argv + 3);
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  const double wall = since(t0);
  // Reap whatever already ended; a child still alive (ours, or an orphan re-parented
  // to us) was left behind. The harness kills it with the group.
  int other = 0;
  pid_t left = 0;
  while ((left = waitpid(-1, &other, WNOHANG)) > 0) {
  }
  const bool stray = left == 0;
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  dprintf(report, "exit=%d signal=%d maxrss_kib=%ld utime=%.6f stime=%.6f wall=%.6f stray=%d\n",
          code, sig, usage.ru_maxrss,
          static_cast<double>(usage.ru_utime.tv_sec) + static_cast<double>(usage.ru_utime.tv_usec) / 1e6,
          static_cast<double>(usage.ru_stime.tv_sec) + static_cast<double>(usage.ru_stime.tv_usec) / 1e6,
          wall, stray ? 1 : 0);
  close(report);
  if (sig != 0) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return 128 + sig;
  }
  return code;
}
