// The registry of kernels: the single source of truth that Python lists.
#pragma once

#include <string>
#include <vector>

#include "gemm_problem.h"

namespace pycutlass_gemm {

// Every kernel built into this extension, in registration order.
const std::vector<const GemmKernel*>& all_kernels();
// The kernel of that name built for that dtype (the naive and fallback kernels
// are one name for every dtype); nullptr if absent.
const GemmKernel* find_kernel(const std::string& name, DType dtype);
// The same, or std::invalid_argument naming it (pybind11 raises that as ValueError).
const GemmKernel& kernel_named(const std::string& name, DType dtype);

// What `variant="auto"` runs: the kernel, and why it was chosen (or why each
// faster one was refused).
struct Plan {
  const GemmKernel* kernel;
  std::string reason;
  std::string untuned_key;  // autotuning is on and this problem's class is not tuned: its tune_key()
};
// In order: the autotuned kernel of the problem's class (autotuning on), the measured table's
// choice (heuristics.h), the highest-priority kernel that can implement the problem.
Plan plan(const GemmProblem& p);

// Each kernel family contributes its kernels through one function.
void register_naive_kernels(std::vector<const GemmKernel*>& out);
void register_fallback_kernels(std::vector<const GemmKernel*>& out);
void register_cutlass_kernels(std::vector<const GemmKernel*>& out);  // generated
void register_small_mn_kernels(std::vector<const GemmKernel*>& out);  // built with PYCUTLASS_GEMM_SMALL_MN
void register_gemv_kernels(std::vector<const GemmKernel*>& out);

}  // namespace pycutlass_gemm
