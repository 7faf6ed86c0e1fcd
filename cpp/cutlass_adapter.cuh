// What the CUTLASS kernel wrappers (cutlass_sm90_gemm.cuh, cutlass_simt_gemm.cuh) share:
// CUTLASS's device adapters (3.x GemmUniversalAdapter, 2.x GemmUniversal) have the same
// can_implement / initialize / run calls, and their failures become the same messages.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "cutlass/cutlass.h"

#include "gemm_problem.h"

namespace pycutlass_gemm::cutlass_adapter {

[[noreturn]] inline void throw_status(const std::string& kernel_name, const char* what, cutlass::Status status) {
  cudaError_t err = cudaGetLastError();
  std::string msg = kernel_name + ": CUTLASS " + what + " failed: " + cutlassGetStatusString(status);
  if (err != cudaSuccess) msg += std::string("; CUDA error ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
  throw std::runtime_error(msg);
}

// "" if CUTLASS accepts the arguments, else its reason.
template <class Gemm>
std::string can_implement(const typename Gemm::Arguments& args) {
  const cutlass::Status status = Gemm::can_implement(args);
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
