#include "registry.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "heuristics.h"

namespace pycutlass_gemm {

const std::vector<const GemmKernel*>& all_kernels() {
  static const std::vector<const GemmKernel*> kernels = [] {
    std::vector<const GemmKernel*> out;
    register_naive_kernels(out);
    register_fallback_kernels(out);
    register_cutlass_kernels(out);
#ifdef PYCUTLASS_GEMM_SMALL_MN
    register_small_mn_kernels(out);
#endif
    register_gemv_kernels(out);  // after small_mn: a tie of priorities is small_mn's (GemvKernel::priority)
    return out;
  }();
  return kernels;
}

const GemmKernel* find_kernel(const std::string& name, DType dtype) {
  for (const GemmKernel* k : all_kernels())
    if (k->info().name == name && k->info().dtype == dtype) return k;
  return nullptr;
}

const GemmKernel& kernel_named(const std::string& name, DType dtype) {
  const GemmKernel* k = find_kernel(name, dtype);
  if (k == nullptr)
    throw std::invalid_argument("no kernel named '" + name + "' for " + dtype_name(dtype) +
                                " inputs; pycutlass_gemm.kernels() lists them");
  return *k;
}

namespace {

// The rules' choice: the kernel of the highest priority for p (ties keep registration order) that can
// implement it. `note` starts its reason.
Plan ruled_plan(const GemmProblem& p, const std::string& note, const std::string& untuned_key) {
  std::vector<const GemmKernel*> order = all_kernels();
  std::stable_sort(order.begin(), order.end(), [&p](const GemmKernel* x, const GemmKernel* y) {
    return x->priority(p) > y->priority(p);
  });
  std::string refused;
  for (const GemmKernel* k : order) {
    const KernelInfo& info = k->info();
    if (info.family == "naive") continue;  // a baseline, never chosen
    // Only kernels built for this dtype, precision and layouts explain why they were passed over.
    const bool relevant = info.dtype == p.dtype &&
                          math_allowed(info.math, p.precision) &&
                          p.a.is(info.a_layout) && p.b.is(info.b_layout);
    std::string why = k->can_implement(p);
    if (why.empty()) {
      std::string reason = note + "highest-priority kernel that can implement the problem (priority " +
                           std::to_string(k->priority(p)) + ")";
      if (!refused.empty()) reason += "; passed over: " + refused;
      if (p.precision != Precision::Ieee && info.math == Precision::Ieee)
        reason += std::string("; computes in IEEE fp32 (no ") + precision_name(p.precision) +
                  " kernel takes the problem; IEEE is at least as accurate)";
      return {k, reason, untuned_key};
    }
    if (relevant) refused += (refused.empty() ? "" : "; ") + info.name + " (" + why + ")";
  }
  return {nullptr, "no kernel can implement the problem: " + refused, ""};
}

}  // namespace

Plan plan(const GemmProblem& p) {
  std::string untuned_key, note;
  if (autotune_enabled()) {
    std::string key = tune_key(p);
    if (std::optional<std::string> name = tuned_kernel(key)) {
      const GemmKernel* k = find_kernel(*name, p.dtype);
      if (k != nullptr && k->can_implement(p).empty())
        return {k, "autotuned: fastest of the kernels timed for '" + key + "'", ""};
      note = "autotuned " + *name + " cannot run it; ";
    } else {
      untuned_key = std::move(key);
    }
  }
  const std::optional<MeasuredChoice> measured = measured_choice(p);
  if (measured && measured->kernel != nullptr) {
    // A table knows only the kernels built when it was swept. A kernel registered since (session 41's fill
    // tiles and 2x1 pairs, against the H100's table) is judged by the rules: where they put it first it runs,
    // elsewhere the table decides. Between the table's points a rule ranking its kernel at kAheadOfTablePriority
    // runs it too: it was measured where the vote picks worse (cutlass_sm90_priority.cuh says where).
    if (measured->registered_after || measured->between_points) {
      const Plan ruled = ruled_plan(p, note, untuned_key);
      const std::string& table_pick = measured->kernel->info().name;
      if (ruled.kernel != nullptr && ruled.kernel != measured->kernel) {
        const char* why = nullptr;
        if (measured->registered_after && measured->registered_after->count(ruled.kernel->info().name))
          why = "registered after the measured table was swept";
        else if (measured->between_points && ruled.kernel->priority(p) >= kAheadOfTablePriority)
          why = "a rule ahead of the measured table between its points";
        if (why != nullptr)
          return {ruled.kernel, std::string(why) + " (the table's pick: " + table_pick + "): " + ruled.reason,
                  untuned_key};
      }
    }
    return {measured->kernel, note + measured->reason, untuned_key};
  }
  if (measured) note += measured->reason + "; ";
  return ruled_plan(p, note, untuned_key);
}

}  // namespace pycutlass_gemm
