#include "heuristics.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>

#include "plan_cache.h"
#include "registry.h"

namespace pycutlass_gemm {
namespace {

// Bytes (1..16, a power of two) that every address the kernel reads from `r` in layout `l` is a
// multiple of: its pointer, its leading dimension and, batched, its batch stride.
int operand_alignment(const MatrixRef& r, Layout l, int elem, bool batched) {
  int bytes = alignment_bytes(static_cast<int64_t>(reinterpret_cast<uintptr_t>(r.ptr) % 16));
  if (l != Layout::Strided) bytes = std::min(bytes, alignment_bytes(r.ld(l) * elem));
  if (batched) bytes = std::min(bytes, alignment_bytes(r.batch_stride * elem));
  return bytes;
}

// The smallest alignment of A and B.
int input_alignment(const GemmProblem& p) {
  const int elem = dtype_size(p.dtype);
  const bool batched = p.batch > 1;
  return std::min(operand_alignment(p.a, p.a.layout(), elem, batched), operand_alignment(p.b, p.b.layout(), elem, batched));
}

// The smaller alignment of D and C (C only when it is read).
int output_alignment(const GemmProblem& p) {
  const int elem = dtype_size(p.dtype);
  const bool batched = p.batch > 1;
  int bytes = operand_alignment(p.d, p.d.layout(), elem, batched);
  if (p.beta != 0.0 && !has_bias_row(p)) bytes = std::min(bytes, operand_alignment(p.c, p.c.layout(), elem, batched));
  return bytes;
}

// The smallest alignment of any operand the kernels read or write.
int problem_alignment(const GemmProblem& p) { return std::min(input_alignment(p), output_alignment(p)); }

int64_t next_power_of_two(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

struct Point {
  double lm, ln, lk, lb;  // log2 of m, n, k, batch
  bool between_octaves;   // m or n nearer 1.5 x 2^i than a power of two (between_octaves())
  MeasuredPoint at;
};
struct Class {
  std::vector<Point> points;
  bool any_power_of_two_point = false;  // a point with neither m nor n between octaves
};
struct Table {
  MeasuredTable meta;
  std::unordered_map<std::string, Class> classes;
  // The kernels built here that the table's sweep could not time (MeasuredChoice::registered_after).
  std::shared_ptr<const std::unordered_set<std::string>> registered_after;
};

// The kernels built here and not in `registered` (nullptr when there are none, or the table did not record them).
std::shared_ptr<const std::unordered_set<std::string>> registered_after(const std::vector<std::string>& registered) {
  if (registered.empty()) return nullptr;
  const std::unordered_set<std::string> known(registered.begin(), registered.end());
  auto after = std::make_shared<std::unordered_set<std::string>>();
  for (const GemmKernel* k : all_kernels())
    if (!known.count(k->info().name)) after->insert(k->info().name);
  return after->empty() ? nullptr : std::move(after);
}

std::shared_mutex tables_mutex;
std::vector<Table>& tables() {
  static auto* t = new std::vector<Table>();
  return *t;  // never destroyed: a plan may race interpreter shutdown
}

std::atomic<bool> autotune_on{false};
std::shared_mutex tuned_mutex;
std::unordered_map<std::string, std::string>& tuned() {
  static auto* t = new std::unordered_map<std::string, std::string>();
  return *t;
}

double log2_of(int64_t v) { return std::log2(static_cast<double>(std::max<int64_t>(v, 1))); }

// Whether a size (as log2) is nearer 1.5 x 2^i (3072) than a power of two: the fraction of its log2
// nearer log2(1.5) = 0.585 than 0 or 1 (the boundaries are halfway: 0.29 and 0.79).
bool between_octaves(double log2_size) {
  const double f = log2_size - std::floor(log2_size);
  return f > 0.2925 && f < 0.7925;
}
bool between_octaves(double lm, double ln) { return between_octaves(lm) || between_octaves(ln); }

// The tables that may decide for p, in the order they are asked: those measured on p's GPU model, then those
// measured on a model of the same compute capability and SM count (an H200 plans by the H100 80GB HBM3's table: one
// chip, 132 SMs, more and faster HBM); planning for an architecture (no device), those of that compute capability
// and SM count. The first that has p's class and a point within kMaxOctaves decides, so a table of the GPU's own
// that measured some classes leaves the others to its chip's. Session 42, on an H200, the H100 table's picks
// against the rules' where they differ (3276 of 8847 problems of the H100 sweep, timed back to back, L2 flushed):
// 0.899x the rules' time (geomean; bf16 0.893x, fp16 0.914x, tf32 0.894x, fp32 0.852x, tf32x3 0.905x), faster by
// > 3% at 1983, slower by > 3% at 401. Called with tables_mutex held.
std::vector<const Table*> tables_for(const GemmProblem& p) {
  std::vector<const Table*> own, same_chip;
  for (const Table& t : tables()) {
    if (p.device_name != nullptr && t.meta.device == p.device_name) own.push_back(&t);
    else if (t.meta.sm == p.sm && t.meta.sm_count == p.sm_count) same_chip.push_back(&t);
  }
  own.insert(own.end(), same_chip.begin(), same_chip.end());
  return own;
}

std::string format_octaves(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", d);
  return buf;
}

std::string format_ratio(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", r);
  return buf;
}

}  // namespace

std::string problem_class(const GemmProblem& p) {
  std::string c = std::string(dtype_name(p.dtype)) + " " + precision_name(p.precision) + " " +
                  layout_name(p.a.layout()) + " " + layout_name(p.b.layout()) + " ";
  // A and B 16-byte aligned but C or D not (an odd N with B column-major: a vocabulary projection)
  // is a class of its own: TMA still loads the inputs. So is the reverse (an odd K: A's rows are
  // unaligned, D's not): TMA still stores D.
  if (problem_alignment(p) == 16) return c + "aligned";
  if (input_alignment(p) == 16) return c + "unaligned-output";
  return c + (output_alignment(p) == 16 ? "unaligned-input" : "unaligned");
}

void set_measured_tables(std::vector<MeasuredTable> in) {
  std::vector<Table> built;
  for (MeasuredTable& t : in) {
    Table table;
    for (auto& [cls, points] : t.classes) {
      Class& out = table.classes[cls];
      for (MeasuredPoint& mp : points) {
        const bool between = between_octaves(log2_of(mp.m), log2_of(mp.n));
        out.any_power_of_two_point |= !between;
        out.points.push_back({log2_of(mp.m), log2_of(mp.n), log2_of(mp.k), log2_of(mp.batch), between, std::move(mp)});
      }
    }
    t.classes.clear();
    table.registered_after = registered_after(t.registered);
    table.meta = std::move(t);
    built.push_back(std::move(table));
  }
  {
    std::unique_lock lock(tables_mutex);
    tables() = std::move(built);
  }
  clear_plan_cache();
}

std::optional<MeasuredChoice> measured_choice(const GemmProblem& p) {
  if (has_bias_row(p) || p.a.layout() == Layout::Strided || p.b.layout() == Layout::Strided) return std::nullopt;
  const std::string cls = problem_class(p);
  const double lm = log2_of(p.m), ln = log2_of(p.n), lk = log2_of(p.k), lb = log2_of(p.batch);
  // Points with m or n between octaves (the sweep measures bf16 and fp16 at 1536..12288) decide only
  // problems between octaves too: how tiles fill the SMs' waves differs between 3072 and 4096
  // (3072^3 runs 128x192 tiles, 4096^3 128x256), and over the H100 sweep, judged at each
  // power-of-two point from the others, their votes put 88.7% of the choices within 3% of the
  // fastest where leaving them out puts 89.5% (geomean 1.027x against 1.025x the fastest).
  const bool between = between_octaves(lm, ln);
  std::shared_lock lock(tables_mutex);
  for (const Table* candidate : tables_for(p)) {
    const Table& t = *candidate;
    auto it = t.classes.find(cls);
    if (it == t.classes.end()) continue;
    std::vector<std::pair<double, const Point*>> by_distance;
    for (const Point& q : it->second.points)
      if (between || !q.between_octaves || !it->second.any_power_of_two_point)
        by_distance.emplace_back(std::abs(q.lm - lm) + std::abs(q.ln - ln) + std::abs(q.lk - lk) + std::abs(q.lb - lb), &q);
    if (by_distance.empty()) continue;
    std::stable_sort(by_distance.begin(), by_distance.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    const double nearest = by_distance.front().first;
    if (nearest > kMaxOctaves) continue;
    // A measured point decides itself (its kernels by time there). Between points, the kernels by
    // their summed log time over the fastest at the points within kVoteOctaves of the nearest (a
    // kernel not kept at a point counts kSlowestKept there): a kernel a little behind at every
    // point beats one that wins half of them and is far behind at the rest. Each point's time is
    // carried to the problem by how the kernel's tiles fill it against the point (tile_fill,
    // kTileFillWeight of its log): 128x192 tiles fill 3000 columns better than 4096. The clusters'
    // padding counts (session 47): off the points, where a cluster of 1x2 pads 5 N tiles to 6 and a
    // second wave (3240x568x2672 rc bf16, H200: 0.51x torch.matmul where the 2x1 pair ran 0.82x),
    // the vote without it ran random bf16 problems at 1.108x the fastest kernel's time, with it at
    // 1.077x (7 of 80 picks changed, each faster; notes/vote-clusters-session47.py), and the H100
    // sweep's 16-bit points judged each from the others 1.0101x -> 1.0098x.
    const double reach = nearest > 0.0 ? nearest + kVoteOctaves : 0.0;
    std::vector<const Point*> voters;
    for (const auto& [d, q] : by_distance) {
      if (d > reach) break;
      voters.push_back(q);
    }
    std::vector<int> order;  // kernel indices, first seen first (nearest point, its fastest first)
    std::unordered_map<int, double> log_sum;
    for (const Point* q : voters)
      for (const KernelTime& kt : q->at.kernels)
        if (log_sum.emplace(kt.kernel, 0.0).second) order.push_back(kt.kernel);
    std::unordered_map<int, const GemmKernel*> built;  // nullptr: not built here
    for (int k : order) {
      const GemmKernel* kernel = built[k] = find_kernel(t.meta.kernels[static_cast<size_t>(k)], p.dtype);
      // The tile fill (tile_fill; tiles in clusters, in waves of the table's SMs where the kernel's run
      // so) at the problem over that at a point: 1 at a point itself and for kernels without tiles.
      const KernelInfo* info =
          kernel && nearest > 0.0 && !is_empty(p) && kernel->info().tile_m > 0 ? &kernel->info() : nullptr;
      auto fill_at = [&](int64_t m, int64_t n, int64_t batch) {
        return tile_fill(m, n, batch, info->tile_m, info->tile_n, info->tiles_in_waves ? t.meta.sm_count : 0,
                         info->cluster_m, info->cluster_n);
      };
      const double here = info ? fill_at(p.m, p.n, p.batch) : 1.0;
      for (const Point* q : voters) {
        double ratio = kSlowestKept;
        for (const KernelTime& kt : q->at.kernels)
          if (kt.kernel == k) ratio = std::min(kt.ratio, kSlowestKept);
        const double there = info ? fill_at(q->at.m, q->at.n, q->at.batch) : 1.0;
        log_sum[k] += std::log(ratio) + kTileFillWeight * std::log(there / here);
      }
    }
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return log_sum[x] < log_sum[y]; });

    const MeasuredPoint& at = voters.front()->at;
    const std::string serving = p.device_name != nullptr && t.meta.device != p.device_name
                                    ? " for this " + std::string(p.device_name) + " (the same sm_" + std::to_string(p.sm) +
                                          ", " + std::to_string(p.sm_count) + " SMs)"
                                    : "";
    std::string where = t.meta.source + serving + ", class '" + cls + "', " + (nearest > 0.0 ? "near point " : "point ") +
                        (at.batch > 1 ? std::to_string(at.batch) + "x" : "") + std::to_string(at.m) + "x" +
                        std::to_string(at.n) + "x" + std::to_string(at.k) + " (nearest " + format_octaves(nearest) +
                        " octaves away";
    std::string passed_over;  // the kernels ahead of the chosen one, and why
    for (int k : order) {
      const std::string& name = t.meta.kernels[static_cast<size_t>(k)];
      std::string why_not;
      const GemmKernel* kernel = built[k];
      if (kernel == nullptr) why_not = name + ", not built here";
      else if (std::string why = kernel->can_implement(p); !why.empty()) why_not = name + ", which cannot run it: " + why;
      if (why_not.empty()) {
        const std::string how = nearest > 0.0 ? ", least time over the " + std::to_string(voters.size()) +
                                                    " points within " + format_octaves(reach) + " octaves: " +
                                                    format_ratio(std::exp(log_sum[k] / voters.size())) +
                                                    " the fastest, its tiles as they fill this problem)"
                                              : ")";
        return MeasuredChoice{kernel,
                              "fastest measured: " + where + how + (passed_over.empty() ? "" : "; passed over " + passed_over),
                              t.registered_after, nearest > 0.0};
      }
      passed_over += (passed_over.empty() ? "" : "; ") + why_not;
    }
    return MeasuredChoice{nullptr, where + ") names " + passed_over};
  }
  return std::nullopt;
}

std::string tune_key(const GemmProblem& p) {
  const int beta_class = has_bias_row(p) ? 2 : p.beta != 0.0;
  return (p.device_name ? std::string(p.device_name) : "sm_" + std::to_string(p.sm)) + "|" + dtype_name(p.dtype) +
         " " + precision_name(p.precision) + " A " + layout_name(p.a.layout()) + " B " + layout_name(p.b.layout()) +
         " D " + layout_name(p.d.layout()) + " align " + std::to_string(problem_alignment(p)) +
         " m " + std::to_string(next_power_of_two(p.m)) + " n " + std::to_string(next_power_of_two(p.n)) +
         " k " + std::to_string(next_power_of_two(p.k)) + " batch " + std::to_string(next_power_of_two(p.batch)) +
         " beta " + std::to_string(beta_class) + " det " + std::to_string(int(p.deterministic));
}

bool autotune_enabled() { return autotune_on.load(std::memory_order_relaxed); }

void set_autotune_enabled(bool on) {
  autotune_on.store(on);
  clear_plan_cache();
}

std::optional<std::string> tuned_kernel(const std::string& key) {
  std::shared_lock lock(tuned_mutex);
  auto it = tuned().find(key);
  if (it == tuned().end()) return std::nullopt;
  return it->second;
}

void set_tuned(const std::string& key, const std::string& kernel) {
  {
    std::unique_lock lock(tuned_mutex);
    tuned()[key] = kernel;
  }
  clear_plan_cache();
}

void clear_tuned() {
  {
    std::unique_lock lock(tuned_mutex);
    tuned().clear();
  }
  clear_plan_cache();
}

}  // namespace pycutlass_gemm
