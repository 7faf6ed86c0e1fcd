#include "plan_cache.h"

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <unordered_map>

#include "registry.h"

namespace pycutlass_gemm {
namespace {

// log2 of alignment_bytes: kernels ask for at most 16-byte alignment, so values that agree up to 16
// agree for every kernel.
uint32_t alignment_class(int64_t bytes) {
  uint32_t c = 0;
  for (int a = alignment_bytes(bytes); a > 1; a /= 2) ++c;
  return c;
}

// Everything of one operand that can_implement() reads besides the shape: whether it can be read
// row- and column-major, the alignment of its pointer, of its leading dimension read either way
// and of its batch stride, and whether the batch stride is zero (broadcast) or negative.
uint32_t operand_class(const MatrixRef& r, int elem) {
  const auto bytes = [elem](int64_t v) { return v * elem; };
  uint32_t key = 0;
  key |= uint32_t(r.is(Layout::Row)) << 0;
  key |= uint32_t(r.is(Layout::Col)) << 1;
  key |= uint32_t(r.batch_stride == 0) << 2;
  key |= uint32_t(r.batch_stride < 0) << 3;
  key |= alignment_class(static_cast<int64_t>(reinterpret_cast<uintptr_t>(r.ptr) & 0xffff)) << 4;
  key |= alignment_class(bytes(r.is(Layout::Row) ? r.ld(Layout::Row) : 0)) << 7;
  key |= alignment_class(bytes(r.is(Layout::Col) ? r.ld(Layout::Col) : 0)) << 10;
  key |= alignment_class(bytes(r.batch_stride)) << 13;
  return key;
}

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    size_t h = std::hash<std::string>{}(k.variant);
    const auto mix = [&h](uint64_t v) { h ^= std::hash<uint64_t>{}(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    for (int64_t v : {k.m, k.n, k.k, k.batch}) mix(static_cast<uint64_t>(v));
    mix((uint64_t(k.a) << 32) | k.b);
    mix((uint64_t(k.c) << 32) | k.d);
    mix((uint64_t(uint32_t(k.sm)) << 32) | uint32_t(k.sm_count));
    mix(reinterpret_cast<uintptr_t>(k.device_name));
    mix((uint64_t(k.dtype) << 24) | (uint64_t(k.precision) << 16) | (uint64_t(k.deterministic) << 8) | k.beta_nonzero);
    return h;
  }
};

// Dynamic shapes could grow the cache without end; past this many classes it starts again.
constexpr size_t kMaxEntries = 16384;

std::shared_mutex cache_mutex;
// shared_ptr values: a plan handed out stays valid while another thread clears the cache.
using Cache = std::unordered_map<PlanKey, std::shared_ptr<const CachedPlan>, PlanKeyHash>;
Cache& cache() {
  static auto* entries = new Cache();
  return *entries;  // never destroyed: a launch may race interpreter shutdown
}

CachedPlan compute_plan(const GemmProblem& p, const std::string& variant) {
  CachedPlan out;
  if (variant == "auto") {
    Plan chosen = plan(p);
    out.kernel = chosen.kernel;
    (out.kernel ? out.reason : out.error) = chosen.reason;
    out.untuned_key = chosen.untuned_key;
  } else {
    const GemmKernel& k = kernel_named(variant, p.dtype);
    // An empty problem launches nothing, but a kernel named for it must still suit its dtype,
    // precision, layouts, device and alignment, as it would for a non-empty one.
    const std::string why = is_empty(p) ? check_common(k.info(), p) : k.can_implement(p);
    if (why.empty()) {
      out.kernel = &k;
      out.reason = "named by the caller";
    } else {
      out.error = "kernel '" + variant + "' cannot implement this problem: " + why;
    }
  }
  if (out.kernel != nullptr && !is_empty(p)) out.workspace_bytes = out.kernel->workspace_size(p);
  return out;
}

}  // namespace

bool PlanKey::operator==(const PlanKey& o) const {
  return m == o.m && n == o.n && k == o.k && batch == o.batch && a == o.a && b == o.b && c == o.c && d == o.d &&
         sm == o.sm && sm_count == o.sm_count && device_name == o.device_name && dtype == o.dtype && precision == o.precision &&
         deterministic == o.deterministic && beta_nonzero == o.beta_nonzero && variant == o.variant;
}

PlanKey plan_key(const GemmProblem& p, const std::string& variant) {
  const int elem = dtype_size(p.dtype);
  PlanKey key;
  key.m = p.m, key.n = p.n, key.k = p.k, key.batch = p.batch;
  key.beta_nonzero = has_bias_row(p) ? 2 : p.beta != 0.0;  // a bias row (beta 1, row stride 0) is its own class
  key.a = operand_class(p.a, elem);
  key.b = operand_class(p.b, elem);
  key.c = key.beta_nonzero ? operand_class(p.c, elem) : 0;
  key.d = operand_class(p.d, elem);
  key.sm = p.sm, key.sm_count = p.sm_count, key.device_name = p.device_name;
  key.dtype = static_cast<uint8_t>(p.dtype);
  key.precision = static_cast<uint8_t>(p.precision);
  key.deterministic = p.deterministic;
  key.variant = variant;
  return key;
}

std::shared_ptr<const CachedPlan> cached_plan(const GemmProblem& p, const std::string& variant) {
  PlanKey key = plan_key(p, variant);
  {
    std::shared_lock lock(cache_mutex);
    auto it = cache().find(key);
    if (it != cache().end()) return it->second;
  }
  auto computed = std::make_shared<const CachedPlan>(compute_plan(p, variant));  // outside the lock
  std::unique_lock lock(cache_mutex);
  if (cache().size() >= kMaxEntries) cache().clear();
  return cache().emplace(std::move(key), std::move(computed)).first->second;
}

size_t plan_cache_size() {
  std::shared_lock lock(cache_mutex);
  return cache().size();
}

void clear_plan_cache() {
  std::unique_lock lock(cache_mutex);
  cache().clear();
}

}  // namespace pycutlass_gemm
