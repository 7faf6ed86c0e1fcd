// What the CUTLASS kernel wrappers (cutlass_sm90_gemm.cuh, cutlass_2x_gemm.cuh) share: the 2.x
// device GemmUniversal and the 3.x kernel types (launched by cutlass_sm90_gemm.cuh itself, without
// CUTLASS's 3.x device adapter) answer can_implement alike, and failures become the same messages.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "cutlass/cutlass.h"

#include "gemm_problem.h"

namespace pycutlass_gemm::cutlass_adapter {

[[noreturn]] inline void throw_status(const std::string& kernel_name, const char* what, cutlass::Status status) {
  cudaError_t err = cudaGetLastError();
  std::string msg = kernel_name + ": CUTLASS " + what + " failed: " + cutlassGetStatusString(status);
  if (err != cudaSuccess) msg += std::string("; CUDA error ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
  throw std::runtime_error(msg);
}

// The calling thread's current device, or -1 (the error cleared) if the runtime cannot say.
inline int current_device() {
  int device = 0;
  if (cudaGetDevice(&device) == cudaSuccess) return device;
  cudaGetLastError();
  return -1;
}

// Makes the current device's primary context current on this thread if none is, once per thread
// and device. CUTLASS's SM90 kernels encode their TMA descriptors on the host (cuTensorMapEncodeTiled,
// a driver call) before anything else of theirs touches the runtime. On a thread where nothing has
// yet (the autograd engine's worker running a backward product through the C++ path, or a Python
// thread whose tensors came from elsewhere) no context is current, the encode fails, and CUTLASS,
// its assert compiled out, went on to crash (H100: the first backward through a tf32x3 or bf16
// product, and a tf32 product on a fresh Python thread, segfaulted in "TMA Desc Addr";
// cudaFree(nullptr) there fixed both). cudaFree(nullptr), the runtime's idiom to bind the context,
// is called only when the driver reports no current context: a thread that has one may be capturing
// a CUDA graph, where cudaFree is not allowed.
// `device`: the current device (current_device()); -1 leaves the thread alone.
inline void make_context_current(int device) {
  constexpr int kMaxDevices = 64;
  thread_local unsigned long long checked = 0;  // bit d: done for device d on this thread
  if (device < 0 || device >= kMaxDevices || (checked >> device & 1ull)) return;
  using CtxGetCurrent = CUresult (*)(CUcontext*);
  static const CtxGetCurrent ctx_get_current = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
#if __CUDACC_VER_MAJOR__ > 12
    const cudaError_t err = cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &found);
#else
    const cudaError_t err = cudaGetDriverEntryPoint("cuCtxGetCurrent", &fn, cudaEnableDefault, &found);
#endif
    if (err != cudaSuccess || found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      fn = nullptr;
    }
    return reinterpret_cast<CtxGetCurrent>(fn);
  }();
  CUcontext current = nullptr;
  if (ctx_get_current == nullptr || ctx_get_current(&current) != CUDA_SUCCESS || current == nullptr) {
    if (cudaFree(nullptr) != cudaSuccess) cudaGetLastError();
  }
  checked |= 1ull << device;
}

// "" if CUTLASS accepts the arguments, else its reason. A 3.x kernel type answers bool, which
// CUTLASS's 3.x device adapter reports as kInvalid; a 2.x device GemmUniversal answers a Status.
template <class Gemm>
std::string can_implement(const typename Gemm::Arguments& args) {
  const auto answer = Gemm::can_implement(args);
  cutlass::Status status;
  if constexpr (std::is_same_v<decltype(answer), const bool>) {
    status = answer ? cutlass::Status::kSuccess : cutlass::Status::kInvalid;
  } else {
    status = answer;
  }
  return status == cutlass::Status::kSuccess ? "" : std::string("CUTLASS can_implement: ") + cutlassGetStatusString(status);
}

// Initialises (this zeroes split-K semaphores and stream-K locks in the workspace) and launches
// on `stream`; throws naming the kernel and the CUDA error.
template <class Gemm>
void run(const std::string& kernel_name, const typename Gemm::Arguments& args, void* workspace, cudaStream_t stream) {
  Gemm gemm;  // per call: run() may be called concurrently
  cutlass::Status status = gemm.initialize(args, workspace, stream);
  if (status != cutlass::Status::kSuccess) throw_status(kernel_name, "initialize", status);
  status = gemm.run(stream);
  if (status != cutlass::Status::kSuccess) throw_status(kernel_name, "run", status);
  check_launch(kernel_name.c_str());
}

}  // namespace pycutlass_gemm::cutlass_adapter
