// Returning to the shell before the CUDA driver tears the process's GPU context down.
//
// A process that used a GPU spends 0.1 to 0.14 s after its last instruction in the kernel's exit
// path, releasing the context's mappings (measured on an H200: a 12-triangle job took 36 ms on the
// CPU and 354-380 ms on the GPU, of which 206-233 ms context creation). The caller waits for all of
// it. With detach_before_gpu(), the work runs in a child process; the parent (the process the shell
// started) waits only for the child's exit code, which the child sends after its outputs are
// complete and its stdout and stderr are closed, and leaves while the child tears down. Signals sent
// to the parent are forwarded to the child; a child that dies early is reported as it died.
#pragma once

namespace voxtile {

// Forks unless disabled (VOXTILE_DETACH=never), no NVIDIA device node exists (VOXTILE_DETACH=always
// forks anyway: tests), or fork fails. Returns in the child (or in the only process); the parent
// never returns. Call it before any CUDA call and before starting threads.
void detach_before_gpu();
// The end of the process: flushes stdout and stderr and, in a detached child, closes them and
// reports `code` to the parent. Then _Exit(code) (sanitizer builds return so leak checks run).
int finish_process(int code);

}  // namespace voxtile
