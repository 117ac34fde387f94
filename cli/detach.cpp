// The parent waits for its child's exit code, not for its teardown (cli/detach.h).
#include "cli/detach.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "core/voxelize.h"

namespace voxtile {
namespace {

int g_report_fd = -1;         // the child's end of the pipe
volatile pid_t g_child = -1;  // the parent's child

void forward(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

bool want_detach() {
  const char* env = std::getenv("VOXTILE_DETACH");
  const std::string mode = env ? env : "auto";
  if (mode == "never") return false;
  if (mode == "always") return true;
  return access("/dev/nvidiactl", F_OK) == 0;  // a machine with an NVIDIA driver
}

}  // namespace

void detach_before_gpu() {
#if defined(__SANITIZE_ADDRESS__)
  return;  // leak reports must reach the caller
#endif
  if (!want_detach()) return;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  std::fflush(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return;
  }
  if (pid == 0) {  // the child: does the work
    close(fds[0]);
    g_report_fd = fds[1];
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a parent killed outright takes its work with it
    if (getppid() != parent) _exit(1);
    return;
  }
  // The parent: forwards signals, waits for the exit code, leaves.
  close(fds[1]);
  g_child = pid;
  struct sigaction sa {};
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &sa, nullptr);
  int code = 0;
  size_t got = 0;
  while (got < sizeof code) {
    const ssize_t n = read(fds[0], reinterpret_cast<char*>(&code) + got, sizeof code - got);
    if (n > 0)
      got += size_t(n);
    else if (n < 0 && errno == EINTR)
      continue;
    else
      break;
  }
  if (got == sizeof code) _exit(code);  // the child tears its GPU context down alone
  // The child died before reporting: leave as it did.
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    signal(WTERMSIG(status), SIG_DFL);
    raise(WTERMSIG(status));
    _exit(128 + WTERMSIG(status));
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

int finish_process(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
#if !defined(__SANITIZE_ADDRESS__)
  if (g_report_fd >= 0) {
    // Nothing more is written: a pipe reading our output sees its end now, not after the teardown.
    const int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 1);
      dup2(null, 2);
    }
    ssize_t n;
    do {
      n = write(g_report_fd, &code, sizeof code);
    } while (n < 0 && errno == EINTR);
  }
  std::_Exit(code);
#else
  end_worker_threads();  // the leak check at exit runs with no thread ending beside it
#endif
  return code;
}

}  // namespace voxtile
