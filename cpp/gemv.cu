// Matrix-vector products: D = alpha * A @ B + beta * C with M or N of 1 (one token through a
// weight, a gradient's single column, a dot product), any dtype, stride and alignment. A tiled
// GEMM pads the vector's side to its tile and multiplies the padding: session 42's survey (H200)
// ran its 652 matrix-vector problems at 0.56x torch.matmul (fp32 on SIMT 128x128 tiles 0.36x,
// 65536 x 1 x 4096 1.45 ms against 0.27). Here every warp streams the matrix once, multiplying
// only what is there: a memory-bound product at the speed of its reads.
//
// The product seen as out[l] = sum_k W[l][k] x[k], l < L: for N = 1, W = A (L = M) and x = B's
// column; for M = 1, W = B^T (L = N) and x = A's row. Two ways to read W, by the stride that is
// smaller (coalesced loads, whatever the layout):
//  - along K (a row-major A, a column-major B): a warp sums one row, its lanes reading consecutive
//    elements of K, 16 bytes a lane where W's rows allow, and adds the lanes' sums by shuffles;
//  - along L (a column-major A, a row-major B): a lane sums one row, the 32 lanes of a warp reading
//    32 consecutive rows at each k.
// x is read by every warp (through L1). A warp is one item -- a row or 32 rows, one slice of K --
// and blocks of 8 warps run the items; where L is too short to give the SMs half of kTargetWarpsPerSm
// warps each, K is split into slices whose sums go to an fp32 workspace (fp64 for fp64 inputs) and
// sum_split_k_partials adds them in slice order (deterministic) with the epilogue.
#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "registry.h"
#include "split_k_reduce.h"
#include "strided_gemm.cuh"

namespace pycutlass_gemm {
namespace {

constexpr int kWarps = 8;  // warps of a block, each with an item of its own
constexpr int kThreads = 32 * kWarps;
constexpr int64_t kTargetWarpsPerSm = 32;  // loads in flight enough to stream HBM
constexpr int64_t kMinKAlongK = 512;       // a slice's K where a warp reads along K
constexpr int64_t kMinKAlongL = 64;        // ... and where a lane reads one row along K
constexpr int64_t kSliceAlign = 64;        // slices start at multiples of 16 bytes' worth of any dtype
constexpr int kPriority = 111;             // see GemvKernel::priority

template <typename T>
struct GemvArgs {
  const T* __restrict__ w;  // W[l][k] at w + b * w_b + l * w_l + k * w_k
  const T* __restrict__ x;  // x[k] at x + b * x_b + k * x_k
  int64_t w_l, w_k, w_b, x_k, x_b;
  int64_t len, k, batch;
  int64_t slices, k_slice;  // K in `slices` slices of k_slice (the last one the rest)
  int64_t row_groups;       // along L: ceil(len / 32)
  int64_t items;            // warps with work: batch * (len or row_groups) * slices
  bool out_is_column;       // N = 1: out[l] is D(l, 0); M = 1: D(0, l)
  StridedMatrix<T> c, d;
  typename AccumulatorOf<T>::type alpha, beta;
  typename AccumulatorOf<T>::type* partials;  // slices > 1: slice s, batch b, row l at (s * batch + b) * len + l
};

template <typename T>
__device__ __forceinline__ void store_out(const GemvArgs<T>& g, int64_t s, int64_t b, int64_t l,
                                          typename AccumulatorOf<T>::type sum) {
  if (g.slices > 1)
    g.partials[(s * g.batch + b) * g.len + l] = sum;
  else if (g.out_is_column)
    store_epilogue(g.c, g.d, g.alpha, g.beta, b, l, 0, sum);
  else
    store_epilogue(g.c, g.d, g.alpha, g.beta, b, 0, l, sum);
}

// kVec > 1: W is contiguous along K and every row and slice starts 16-byte aligned, so lane t reads
// elements kVec t .. kVec t + kVec - 1 of each 32 kVec as one 16-byte word.
template <typename T, int kVec>
__global__ void __launch_bounds__(kThreads) gemv_along_k_kernel(GemvArgs<T> g) {
  using Acc = typename AccumulatorOf<T>::type;
  const int lane = threadIdx.x % 32;
  const int64_t item = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (item >= g.items) return;  // the whole warp: items are a warp's
  const int64_t s = item % g.slices, row = item / g.slices, l = row % g.len, b = row / g.len;
  const int64_t k0 = s * g.k_slice, k1 = min(g.k, k0 + g.k_slice);
  const T* w = g.w + b * g.w_b + l * g.w_l;
  const T* x = g.x + b * g.x_b;
  Acc sum = 0;
  if constexpr (kVec > 1) {
    int64_t k = k0 + lane * kVec;
#pragma unroll 4
    for (; k + kVec <= k1; k += 32 * kVec) {
      union { uint4 v; T e[kVec]; } u;
      u.v = *reinterpret_cast<const uint4*>(w + k);
#pragma unroll
      for (int e = 0; e < kVec; ++e) sum += to_acc<Acc>(u.e[e]) * to_acc<Acc>(x[(k + e) * g.x_k]);
    }
    for (int64_t t = k; t < k1 && t < k + kVec; ++t)  // one lane holds the slice's last, partial word
      sum += to_acc<Acc>(w[t]) * to_acc<Acc>(x[t * g.x_k]);
  } else {
#pragma unroll 4
    for (int64_t k = k0 + lane; k < k1; k += 32) sum += to_acc<Acc>(w[k * g.w_k]) * to_acc<Acc>(x[k * g.x_k]);
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) store_out(g, s, b, l, sum);
}

template <typename T>
__global__ void __launch_bounds__(kThreads) gemv_along_l_kernel(GemvArgs<T> g) {
  using Acc = typename AccumulatorOf<T>::type;
  const int64_t item = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (item >= g.items) return;
  const int64_t s = item % g.slices, group = item / g.slices, b = group / g.row_groups;
  const int64_t l = (group % g.row_groups) * 32 + threadIdx.x % 32;
  if (l >= g.len) return;
  const int64_t k0 = s * g.k_slice, k1 = min(g.k, k0 + g.k_slice);
  const T* w = g.w + b * g.w_b + l * g.w_l;
  const T* x = g.x + b * g.x_b;
  Acc sum = 0;
#pragma unroll 8
  for (int64_t k = k0; k < k1; ++k) sum += to_acc<Acc>(w[k * g.w_k]) * to_acc<Acc>(x[k * g.x_k]);
  store_out(g, s, b, l, sum);
}

// How the product is read and split; the same for sizing the workspace and for running.
struct Shape {
  bool n_is_one;                 // W = A and x = B's column (out[l] is D(l, 0)); else W = B^T, x = A's row
  const MatrixRef *w, *x;
  int64_t w_l, w_k, x_k;         // strides, in elements, of W's rows, W along K and x along K
  bool along_k;                  // a warp reads a row of W along K; else a lane reads one, 32 rows a warp
  int64_t len, row_groups, warps, slices, k_slice;  // warps: of one slice of K, over the batch
};

Shape shape_of(const GemmProblem& p) {
  Shape s{};
  s.n_is_one = p.n == 1;
  s.w = s.n_is_one ? &p.a : &p.b;
  s.x = s.n_is_one ? &p.b : &p.a;
  s.w_l = s.n_is_one ? p.a.row_stride : p.b.col_stride;
  s.w_k = s.n_is_one ? p.a.col_stride : p.b.row_stride;
  s.x_k = s.n_is_one ? p.b.row_stride : p.a.col_stride;
  s.len = s.n_is_one ? p.m : p.n;
  s.along_k = s.len == 1 || std::llabs(s.w_k) <= std::llabs(s.w_l);
  s.row_groups = (s.len + 31) / 32;
  s.warps = p.batch * (s.along_k ? s.len : s.row_groups);
  const int64_t target = (p.sm_count > 0 ? p.sm_count : 132) * kTargetWarpsPerSm;
  const int64_t by_k = std::max<int64_t>(1, p.k / (s.along_k ? kMinKAlongK : kMinKAlongL));
  // Split only below half the target: a split's reduction costs a few microseconds, as much as the
  // loads half the warps would leave waiting.
  s.slices = 2 * s.warps >= target ? 1 : std::min((target + s.warps - 1) / s.warps, by_k);
  s.k_slice = (p.k + s.slices - 1) / s.slices;
  s.k_slice = (s.k_slice + kSliceAlign - 1) / kSliceAlign * kSliceAlign;
  if (s.k_slice > 0) s.slices = std::max<int64_t>(1, (p.k + s.k_slice - 1) / s.k_slice);  // no empty slice
  return s;
}

class GemvKernel final : public GemmKernel {
 public:
  explicit GemvKernel(DType dtype)
      : info_{"gemv", "gemv", dtype, Precision::Ieee, Layout::Strided, Layout::Strided, 80, 999,
              "a warp a row along K (16 bytes a lane) or a lane a row along M/N; K split to fill the SMs", 1,
              kPriority} {}

  const KernelInfo& info() const override { return info_; }

  std::string can_implement(const GemmProblem& p) const override {
    std::string why = check_common(info_, p);
    if (!why.empty()) return why;
    if (p.m != 1 && p.n != 1)
      return "needs M or N of 1 (a matrix-vector product), problem is " + std::to_string(p.m) + " x " +
             std::to_string(p.n);
    return "";
  }

  // First wherever it runs (above every CUTLASS kernel's 110 at most), but for the 16-bit x @ W.T that small_mn
  // ranks itself first on: both rank 111 and small_mn is registered first, so the tie is its (registry.cpp).
  // Session 43, H200, the 652 matrix-vector problems of session 42's survey, by name against what auto ran there:
  // 0.672x the time over the 532 that ran CUTLASS, SIMT, SM80 or fallback kernels (SIMT 0.54x, SM90 0.81x, SM80
  // 0.87x, fallback 0.53x; x torch.matmul 0.85 there, from 0.58), but 1.075x small_mn's over its 120. Slower by
  // more than 20% at 51, mostly K <= 64 against 16384-65536 rows (a warp a row of a few elements) and short K
  // along M / N (too few warps); leaving short K over long rows to the others lost more than it saved (0.6761x).
  int priority(const GemmProblem&) const override { return kPriority; }

  size_t workspace_size(const GemmProblem& p) const override {
    const Shape s = shape_of(p);
    if (s.slices == 1) return 0;
    return size_t(s.slices) * p.batch * s.len * (p.dtype == DType::F64 ? 8 : 4);
  }

  void run(const GemmProblem& p, void* workspace) const override {
    if (p.m == 0 || p.n == 0 || p.batch == 0) return;
    const Shape s = shape_of(p);
    if (s.slices > 1 && workspace == nullptr)
      throw std::runtime_error("gemv: split-K needs a workspace of workspace_size() bytes");
    const cudaStream_t stream = reinterpret_cast<cudaStream_t>(p.stream);
    dispatch_dtype(p.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = typename AccumulatorOf<T>::type;
      GemvArgs<T> g{};
      g.w = static_cast<const T*>(s.w->ptr);
      g.x = static_cast<const T*>(s.x->ptr);
      g.w_l = s.w_l, g.w_k = s.w_k, g.w_b = s.w->batch_stride;
      g.x_k = s.x_k, g.x_b = s.x->batch_stride;
      g.len = s.len, g.k = p.k, g.batch = p.batch;
      g.slices = s.slices, g.k_slice = s.k_slice, g.row_groups = s.row_groups;
      g.items = s.warps * s.slices;
      g.out_is_column = s.n_is_one;
      g.c = strided<T>(p.c), g.d = strided<T>(p.d);
      g.alpha = Acc(p.alpha), g.beta = Acc(p.beta);
      g.partials = static_cast<Acc*>(workspace);
      const unsigned blocks = static_cast<unsigned>((g.items + kWarps - 1) / kWarps);
      constexpr int kVec = 16 / sizeof(T);
      const auto aligned = [&](int64_t elements) { return elements % kVec == 0; };
      const bool vector = s.along_k && g.w_k == 1 && kVec > 1 && reinterpret_cast<uintptr_t>(g.w) % 16 == 0 &&
                          (s.len == 1 || aligned(g.w_l)) && (p.batch == 1 || aligned(g.w_b));
      if (!s.along_k)
        gemv_along_l_kernel<T><<<blocks, kThreads, 0, stream>>>(g);
      else if (vector)
        gemv_along_k_kernel<T, kVec><<<blocks, kThreads, 0, stream>>>(g);
      else
        gemv_along_k_kernel<T, 1><<<blocks, kThreads, 0, stream>>>(g);
      check_launch("gemv");
      if (s.slices > 1) sum_split_k_partials(p, static_cast<int>(s.slices), workspace);
    });
  }

 private:
  KernelInfo info_;
};

}  // namespace

void register_gemv_kernels(std::vector<const GemmKernel*>& out) {
  static const GemvKernel kernels[] = {GemvKernel(DType::F32), GemvKernel(DType::F16), GemvKernel(DType::BF16),
                                       GemvKernel(DType::F64)};
  for (const GemvKernel& k : kernels) out.push_back(&k);
}

}  // namespace pycutlass_gemm
