// The per-call plan: which kernel runs a problem, decided once per problem class.
//
// plan() sorts every kernel by priority and asks each can_implement() in turn; for the SM90
// kernels that builds CUTLASS arguments. Doing that on every call cost microseconds a launch, so
// the decision is cached, keyed by everything a kernel's can_implement() and priority() read:
// dtype, precision, the shape (m, n, k, batch), each operand's layouts and alignment classes
// (pointer, leading dimensions, batch stride), zero or negative batch strides, beta != 0 (and
// whether C is a bias row), the
// device (its name, compute capability and SM count), determinism and the variant asked for.
// Pointers, alpha and beta's value are not in the key: two problems with the same key get the
// same answer. What changes answers for every key (a new measured table, autotuning switched or a
// kernel tuned) clears the cache.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "gemm_problem.h"

namespace pycutlass_gemm {

struct PlanKey {
  int64_t m = 0, n = 0, k = 0, batch = 0;
  uint32_t a = 0, b = 0, c = 0, d = 0;  // operand_class() of each (c: 0 when beta == 0)
  int sm = 0, sm_count = 0;
  const char* device_name = nullptr;  // device_name()'s pointers: one per device, so compared as pointers
  uint8_t dtype = 0, precision = 0, deterministic = 0, beta_nonzero = 0;  // beta_nonzero 2: C is a bias row
  std::string variant;  // "auto" or a kernel name

  bool operator==(const PlanKey& o) const;
};

PlanKey plan_key(const GemmProblem& p, const std::string& variant);

// What runs a problem: the kernel and its workspace size, or the reason none can.
struct CachedPlan {
  const GemmKernel* kernel = nullptr;  // nullptr: `error` says why
  std::string reason;                  // auto: why this kernel (plan()'s reason)
  std::string error;                   // the ValueError message when kernel is nullptr
  std::string untuned_key;             // autotuning on and this class not tuned yet: its tune_key()
  size_t workspace_bytes = 0;
};

// Thread-safe; computes and remembers on a miss. An unknown variant name is not cached:
// kernel_named() throws std::invalid_argument naming it.
std::shared_ptr<const CachedPlan> cached_plan(const GemmProblem& p, const std::string& variant);
// How many problem classes are remembered (for tests); clear_plan_cache() forgets them.
size_t plan_cache_size();
void clear_plan_cache();

}  // namespace pycutlass_gemm
