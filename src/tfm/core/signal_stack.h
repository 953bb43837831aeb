// Alternate signal stacks for the threads that run oneDNN.
//
// oneDNN 2.x's JIT GEMM kernels (f32 and int8: what dnnl_sgemm and some matmul primitives run)
// point rsp at a heap workspace while they compute (oneDNN issue 4845; fixed upstream in 2026,
// after the 2.6 that Debian ships). A signal handled on such a thread has its frame pushed where
// rsp points, over the heap: the rare glibc aborts ("corrupted size vs. prev_size") that a
// SIGTERM to `tfm train` caused. A handler installed with SA_ONSTACK runs on the thread's
// alternate stack wherever rsp points, so each thread that may run oneDNN gets one: tfm's own
// handler (tfm train's SIGINT/SIGTERM) asks for it, and so does CPython's (PyOS_setsig).
#pragma once

namespace tfm {

// Gives the calling thread an alternate signal stack if it has none, and, outside a parallel
// region, the threads of the OpenMP team it starts at the current thread count. Cheap after the
// first call on a thread (a thread-local check); the stacks live as long as their threads.
void ensure_signal_stacks();

}  // namespace tfm
