// Products with a small side: M or N <= 32 against large K and a large other side, as in
// `x @ W.T` at decode time (M = tokens) and its mirror. They are memory-bound on the big operand
// (16 x 4096 x 4096 bf16 reads 33.6 MB of W for 0.5 GFLOP), and a tiled GEMM's 128-row tiles run
// them at half of HBM (issue 10: cuBLAS reaches 48% of the floor). Here nothing stands between W
// and the tensor cores: each warp loads W's rows straight from global memory into mma.sync
// operand registers, 16 bytes a lane, no shared memory and no pipeline to fill.
//
// Both operands are read K-major (the package's rc layouts: A row-major, B column-major), so call
// them X (R x K, the small side, R <= 32) and W (L x K). For small M, X = A and W = B^T, the output
// O[r][l] = D[m][n]; for small N, X = B^T, W = A and O[r][l] = D[l][r].
//
// Fragments without shared memory: mma.m16n8k16 sums over its 16 k in any order, so a lane may
// own any 4 of them as long as A's and B's fragments agree. Lane (g, t) = (lane / 4, lane % 4)
// loads 8 consecutive k of one row, k0 + 8t .. k0 + 8t + 7, as one 16-byte word {x, y, z, w}, and
// one 32-k step is two mmas: the first takes the word's x (the mma's k = 2t, 2t+1) and y (k = 2t+8,
// 2t+9), the second z and w. W's word is B's fragment (n = g) as it stands; X's words of rows g and
// g + 8 make A's. A lane's mma k maps to memory k = k0 + 8t + 4 * (which mma) + (0, 1, 2, 3) the
// same way in both operands, and the 4 lanes of a group cover the 32 k exactly once.
//
// A block of S warps covers 8 * G rows of W (G groups of 8; a warp does all G) and splits K among
// its warps in turns of U steps, each warp issuing its next turn's loads before its mmas wait on
// this turn's; the warps' sums meet in shared memory in a fixed order (deterministic) and the
// block writes O = alpha * sum + beta * C. X is read by every block, so it is loaded through L1
// (a few blocks a multiprocessor share it); W is read once, past L1. Where W has too few rows to
// give half the multiprocessors a block, K is also split across blocks: each slice's sums go to an
// fp32 workspace and sum_split_k_partials adds them in slice order (still deterministic).
//
// On the H100 (session 24) this reaches 54-55% of the HBM floor at 1-16 x 4096 x 4096 (18.6 us,
// 1.16-1.21x cuBLAS) and 69% at 16 x 14336 x 4096; with K split across blocks (session 25) 4 x 16
// x 65536 runs 11.4 us against 44 unsplit (cuBLAS 11.3). Tried and dropped: staging W through
// shared memory with the copy engine (cp.async.bulk, a producer warp, 2-16 stages): 26-37 us at
// 16 x 4096 x 4096 against 19-20 (session 24); X loaded at the mmas, W's spans twice as long:
// 4-40% slower (session 25; notes/measurements.md). One file past 400 lines: one kernel family, its
// device code, launch shapes and GemmKernel, which read together.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "registry.h"
#include "split_k_reduce.h"
#include "strided_gemm.cuh"  // to_acc, from_acc

namespace pycutlass_gemm {
namespace {

constexpr int kMaxSmallSide = 32;  // rows of X: one or two m16 tiles
constexpr int kStepK = 32;         // k one warp covers per step: 4 lanes x 8 elements
constexpr int kMaxWarps = 8;       // warps of a block, splitting K
constexpr int kMeasuredFastestPriority = 111;  // see SmallSideGemm::priority
constexpr int64_t kMinSliceK = 1024;  // k of a slice when K is split across blocks
constexpr int64_t kMaxSplits = 32;

struct SmallSideArgs {
  const void* x;  // R x K, element (r, k) at x + r * x_ld + k, batch b at + b * x_batch
  const void* w;  // L x K likewise
  int64_t x_ld, x_batch, w_ld, w_batch;
  void* out;      // O[r][l] at out + r * out_r + l * out_l + b * out_batch
  int64_t out_r, out_l, out_batch;
  const void* c;  // read only when beta != 0, with C's strides in the same roles
  int64_t c_r, c_l, c_batch;
  int64_t rows, len, k;  // R, L, K
  float alpha, beta;
  // K split across blocks (blockIdx.z: a slice of k_slice k, the last one the rest): each slice's
  // sums go to partials[z * part_split + b * part_batch + r * part_r + l * part_l] (fp32, D's
  // m x n layout) for sum_split_k_partials to add in slice order. nullptr: one slice, O directly.
  float* partials;
  int64_t k_slice, part_split, part_batch, part_r, part_l;
};

// D += A B for one m16n8k16 tile in fp32, A and B bf16 or fp16 (T).
template <typename T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                             uint32_t b0, uint32_t b1) {
#define PYCUTLASS_GEMM_MMA(type)                                                                          \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." type "." type                                    \
               ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"                          \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                          \
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    PYCUTLASS_GEMM_MMA("bf16");
  else
    PYCUTLASS_GEMM_MMA("f16");
#undef PYCUTLASS_GEMM_MMA
}

// W: read once, so not kept in L1, and first out of L2: its lines replace one another rather
// than lines others will read or must write back (session 22's evict-first hint, cpp/
// sm90_l2_hint_mainloop.cuh, took 16x4096x4096 from 0.87x to 0.92-0.95x cuBLAS).
__device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ uint4 load_streaming(const void* p, uint64_t policy) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p), "l"(policy));
  return v;
}
// X: read by every block, kept in L1.
__device__ __forceinline__ uint4 load_cached(const void* p) { return __ldg(static_cast<const uint4*>(p)); }

// The last step of K: `valid` of the 8 elements at p exist (<= 0: none), the rest read as zero
// (both operands: memory past K may hold NaN, and NaN * 0 is NaN).
template <typename T>
__device__ __forceinline__ uint4 load_partial(const T* p, int64_t valid) {
  union { uint4 v; T e[8]; } u;
  u.v = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int i = 0; i < 8; ++i)
    if (i < valid) u.e[i] = p[i];
  return u.v;
}

// A warp's operands for U steps of 32 k: this lane's 16-byte words of X's rows g and g + 8 of
// each m16 tile, and of W's row g of each group.
template <typename T, int kMTiles, int kGroups, int kUnroll>
struct Span {
  uint4 x[kUnroll][2 * kMTiles], w[kUnroll][kGroups];
};

// The span from k0 (every load of its U steps in flight at once). kTail: some of its steps reach
// past K, and what lies past K reads as zero.
template <typename T, int kMTiles, int kGroups, int kUnroll, bool kTail>
__device__ __forceinline__ void load_span(Span<T, kMTiles, kGroups, kUnroll>& s, const T* const (&x_row)[2 * kMTiles],
                                          const T* const (&w_row)[kGroups], int64_t k0, int64_t k, int t,
                                          uint64_t w_policy) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int64_t kk = k0 + u * kStepK + 8 * t;  // this lane's first element (x_row and w_row hold + 8t)
#pragma unroll
    for (int i = 0; i < kGroups; ++i)
      s.w[u][i] = kTail ? load_partial(w_row[i] + k0 + u * kStepK, k - kk) : load_streaming(w_row[i] + k0 + u * kStepK, w_policy);
#pragma unroll
    for (int j = 0; j < 2 * kMTiles; ++j)
      s.x[u][j] = kTail ? load_partial(x_row[j] + k0 + u * kStepK, k - kk) : load_cached(x_row[j] + k0 + u * kStepK);
  }
}

template <typename T, int kMTiles, int kGroups, int kUnroll>
__device__ __forceinline__ void mma_span(float (&acc)[kMTiles][kGroups][4], const Span<T, kMTiles, kGroups, kUnroll>& s) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u)
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      const uint4 lo = s.x[u][2 * mt], hi = s.x[u][2 * mt + 1];  // X rows 16 mt + g and 16 mt + g + 8
#pragma unroll
      for (int i = 0; i < kGroups; ++i) {
        mma_m16n8k16<T>(acc[mt][i], lo.x, hi.x, lo.y, hi.y, s.w[u][i].x, s.w[u][i].y);
        mma_m16n8k16<T>(acc[mt][i], lo.z, hi.z, lo.w, hi.w, s.w[u][i].z, s.w[u][i].w);
      }
    }
}

// A warp's share of K: spans of U steps from k0, every `block_span` k (the block's warps take
// turns), then the part of a span K ends in. The next span's loads are issued before this span's
// mmas wait on its own, so a warp always has one span in flight (H100, session 24: 5-25% faster
// than loading and waiting span by span; 16 x 4096 x 4096 18.7 us against 22.3).
template <typename T, int kMTiles, int kGroups, int kUnroll>
__device__ __forceinline__ void warp_share(float (&acc)[kMTiles][kGroups][4], const T* const (&x_row)[2 * kMTiles],
                                           const T* const (&w_row)[kGroups], int64_t k0, int64_t block_span,
                                           int64_t k, int t, uint64_t w_policy) {
  constexpr int64_t kSpan = int64_t(kUnroll) * kStepK;
  Span<T, kMTiles, kGroups, kUnroll> a, b;
  if (k0 + kSpan <= k) {
    load_span<T, kMTiles, kGroups, kUnroll, false>(a, x_row, w_row, k0, k, t, w_policy);
    // Unrolled by two so that a and b swap roles without a copy (a copy would wait on the loads).
    while (true) {
      bool more = k0 + block_span + kSpan <= k;
      if (more) load_span<T, kMTiles, kGroups, kUnroll, false>(b, x_row, w_row, k0 + block_span, k, t, w_policy);
      mma_span<T, kMTiles, kGroups, kUnroll>(acc, a);
      k0 += block_span;
      if (!more) break;
      more = k0 + block_span + kSpan <= k;
      if (more) load_span<T, kMTiles, kGroups, kUnroll, false>(a, x_row, w_row, k0 + block_span, k, t, w_policy);
      mma_span<T, kMTiles, kGroups, kUnroll>(acc, b);
      k0 += block_span;
      if (!more) break;
    }
  }
  if (k0 < k) {
    load_span<T, kMTiles, kGroups, kUnroll, true>(b, x_row, w_row, k0, k, t, w_policy);
    mma_span<T, kMTiles, kGroups, kUnroll>(acc, b);
  }
}

template <typename T, int kMTiles, int kGroups, int kUnroll>
__global__ void __launch_bounds__(kMaxWarps * 32) small_side_gemm_kernel(SmallSideArgs args) {
  constexpr int kRegs = kMTiles * kGroups * 4;  // accumulators a lane holds
  extern __shared__ float warp_sums[];          // [warp][kRegs][32 lanes]
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const int g = lane / 4, t = lane % 4;
  const int64_t batch = blockIdx.y, l0 = int64_t(blockIdx.x) * 8 * kGroups;
  const int64_t k_begin = blockIdx.z * args.k_slice;
  const int64_t k_end = args.k < k_begin + args.k_slice ? args.k : k_begin + args.k_slice;

  // Rows past R or L are read from row 0 instead: their products land only in accumulators that
  // are never stored (each output of an mma depends on its own row and column alone).
  const T* x = static_cast<const T*>(args.x) + batch * args.x_batch;
  const T* w = static_cast<const T*>(args.w) + batch * args.w_batch;
  const T* x_row[2 * kMTiles];
  const T* w_row[kGroups];
#pragma unroll
  for (int j = 0; j < 2 * kMTiles; ++j) {
    const int64_t r = g + 8 * j;
    x_row[j] = x + (r < args.rows ? r : 0) * args.x_ld + 8 * t;
  }
#pragma unroll
  for (int i = 0; i < kGroups; ++i) {
    const int64_t l = l0 + 8 * i + g;
    w_row[i] = w + (l < args.len ? l : 0) * args.w_ld + 8 * t;
  }

  float acc[kMTiles][kGroups][4] = {};
  constexpr int64_t kWarpSpan = int64_t(kUnroll) * kStepK;
  warp_share<T, kMTiles, kGroups, kUnroll>(acc, x_row, w_row, k_begin + warp * kWarpSpan, warps * kWarpSpan, k_end, t,
                                           evict_first_policy());

  // The warps' partial sums, added in warp order.
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int i = 0; i < kGroups; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) warp_sums[(warp * kRegs + (mt * kGroups + i) * 4 + e) * 32 + lane] = acc[mt][i][e];
  __syncthreads();
  const T* c = static_cast<const T*>(args.c);
  T* out = static_cast<T*>(args.out);
  for (int idx = threadIdx.x; idx < kRegs * 32; idx += blockDim.x) {
    const int reg = idx / 32, src_lane = idx % 32;
    float sum = 0.0f;
    for (int v = 0; v < warps; ++v) sum += warp_sums[(v * kRegs + reg) * 32 + src_lane];
    // Accumulator e of (mt, i) in lane (g, t) is the mma's output (g + 8 (e / 2), 2t + e % 2).
    const int mt = reg / (kGroups * 4), i = reg / 4 % kGroups, e = reg % 4;
    const int64_t r = 16 * mt + src_lane / 4 + 8 * (e / 2);
    const int64_t l = l0 + 8 * i + 2 * (src_lane % 4) + e % 2;
    if (r >= args.rows || l >= args.len) continue;
    if (args.partials) {
      args.partials[blockIdx.z * args.part_split + batch * args.part_batch + r * args.part_r + l * args.part_l] = sum;
      continue;
    }
    float value = args.alpha * sum;
    if (args.beta != 0.0f) value += args.beta * to_acc<float>(c[batch * args.c_batch + r * args.c_r + l * args.c_l]);
    out[batch * args.out_batch + r * args.out_r + l * args.out_l] = from_acc<T>(value);
  }
}

// How one problem is laid out over the GPU.
struct Launch {
  int m_tiles;  // 16-row tiles of X: 1 or 2
  int groups;   // 8-row groups of W a block covers: 1, 2 or 4
  int warps;    // warps of a block, splitting K
  int64_t blocks;
  int splits;      // slices of K, each its own blocks (1: none)
  int64_t k_slice; // k a slice covers (a multiple of a warp's span), the last one the rest
};

// Steps of 32 k in a warp's span: as many as the registers of two spans allow (X's words, two
// rows a lane for each 16-row tile, take more than W's). Loading X at the mmas instead (L1 hits)
// and W in spans twice as long lost 4-40% (H100, session 25).
constexpr int unroll_of(int m_tiles) { return m_tiles == 1 ? 4 : 2; }

// Measured on the H100 (session 24: 1-32 rows against 1024-14336 x 4096-14336, groups 1-4 x
// warps 1-8). One 16-row tile runs best in the narrowest blocks, 1 group, with warps for ~16 a
// multiprocessor (4 at 4096 rows of W, 8 at 1024); two tiles best in 4 groups and 8 warps (32 x
// 4096 x 4096: 21.6 us, 22.9 with 1 group and 4 warps), if that still gives half the
// multiprocessors a block. W of too few rows to give half the multiprocessors a block splits K
// across blocks, a block a multiprocessor, in slices of at least kMinSliceK (4 x 16 x 65536: 11 us
// against 44; with 2 blocks a multiprocessor as the bar, 16 x 1024 x 8192 and 16 x 2048 x 8192
// lost 20-25% to the second pass). No more warps than a slice has turns for.
// PYCUTLASS_GEMM_SMALL_MN_LAUNCH="groups,warps" (groups 1, 2 or 4; warps 1..8) overrides them, for
// tuning runs (scripts/small_mn_launch_sweep.py): read at every call, so one process can time each.
Launch choose_launch(int64_t rows, int64_t len, int64_t k, int64_t batch, int sm_count) {
  Launch c{rows <= 16 ? 1 : 2, 1, 0, 0, 1, k};
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  const auto blocks_of = [&](int groups) { return (len + 8 * groups - 1) / (8 * groups) * batch; };
  if (c.m_tiles == 2 && 2 * blocks_of(4) >= sms) c.groups = 4;
  // The slices follow from the problem alone (the knob below leaves them): run() must find the
  // workspace that workspace_size() asked for, and plans are cached.
  const int64_t span = unroll_of(c.m_tiles) * kStepK;  // a warp's turn
  const int64_t blocks = blocks_of(c.groups);
  const int64_t splits =
      2 * blocks >= sms ? 1
                        : std::max<int64_t>(1, std::min<int64_t>({(sms + blocks - 1) / blocks, k / kMinSliceK, kMaxSplits}));
  c.k_slice = std::max(span, ((k + splits - 1) / splits + span - 1) / span * span);
  c.splits = static_cast<int>((k + c.k_slice - 1) / c.k_slice);
  if (const char* env = std::getenv("PYCUTLASS_GEMM_SMALL_MN_LAUNCH")) {
    int groups = 0, warps = 0;
    if (std::sscanf(env, "%d,%d", &groups, &warps) == 2 && (groups == 1 || groups == 2 || groups == 4) && warps >= 1 &&
        warps <= kMaxWarps) {
      c.groups = groups;
      c.warps = warps;
    }
  }
  c.blocks = blocks_of(c.groups);
  if (c.warps == 0) {
    const int64_t turns = (c.k_slice + span - 1) / span;
    const int64_t per_sm = c.m_tiles == 1 ? std::clamp<int64_t>(16 * sms / (c.blocks * c.splits), 4, kMaxWarps) : kMaxWarps;
    c.warps = static_cast<int>(std::max<int64_t>(1, std::min(per_sm, turns)));
  }
  return c;
}

template <typename T, int kMTiles, int kGroups>
void launch_small_side(const SmallSideArgs& args, const Launch& c, int64_t batch, cudaStream_t stream) {
  const size_t smem = size_t(c.warps) * kMTiles * kGroups * 4 * 32 * sizeof(float);  // <= 32 KB
  const dim3 grid(static_cast<unsigned>(c.blocks / batch), static_cast<unsigned>(batch), static_cast<unsigned>(c.splits));
  small_side_gemm_kernel<T, kMTiles, kGroups, unroll_of(kMTiles)><<<grid, c.warps * 32, smem, stream>>>(args);
}

template <typename T>
void launch_small_side(const SmallSideArgs& args, const Launch& c, int64_t batch, cudaStream_t stream) {
  if (c.m_tiles == 1) {
    if (c.groups == 4) return launch_small_side<T, 1, 4>(args, c, batch, stream);
    if (c.groups == 2) return launch_small_side<T, 1, 2>(args, c, batch, stream);
    return launch_small_side<T, 1, 1>(args, c, batch, stream);
  }
  if (c.groups == 4) return launch_small_side<T, 2, 4>(args, c, batch, stream);
  if (c.groups == 2) return launch_small_side<T, 2, 2>(args, c, batch, stream);
  return launch_small_side<T, 2, 1>(args, c, batch, stream);
}

class SmallSideGemm final : public GemmKernel {
 public:
  explicit SmallSideGemm(DType dtype)
      : info_{std::string("small_mn_") + (dtype == DType::BF16 ? "bf16" : "f16") + "_rc",
              "small_mn",
              dtype,
              Precision::Ieee,
              Layout::Row,
              Layout::Col,
              80,
              999,
              "M or N <= 32: W streamed into mma.sync fragments, K split over a block's warps",
              8,
              // Below every CUTLASS kernel but where priority() says otherwise.
              1,
              true,  // C may be F.linear's bias row: the epilogue reads C through its strides
              1} {}

  const KernelInfo& info() const override { return info_; }

  // Where the measured table does not decide (bias rows, devices without a table), from the H100
  // sweep (notes/sweep-h100-2026-11-26.jsonl.gz, K split across blocks where W has few rows): above
  // the 128x32 swap-AB stream-K kernel (110) on sm_90 and later for K >= 256 with one 16-row tile,
  // any K and W, and with two for K and W of up to 8192 and 4096 rows (1.52x the best other kernel
  // there, geomean of 1106 problems; slower on 53, by at most 0.87x); beyond that the CUTLASS
  // kernels are ahead of two tiles (0.52-0.94x). With a bias row the alternative is the 128x256
  // bias kernel, not the swap-AB one: above it for K >= 256 but where two 16-row tiles meet a short
  // K (<= 1024) and a tall W (>= 4096 rows) (session 24: 2.80x it, geomean of 772 problems, slower
  // on 13, by at most 0.84x). Under K = 256 only one 16-row tile against W of up to 4096 rows, without a bias
  // row (session 40, the H100 sweep, x @ W.T with K of 1-255: 0.84x the rules' CUTLASS kernel over 136
  // problems, faster by > 3% at 135; two tiles or a taller W 0.93-1.47x).
  int priority(const GemmProblem& p) const override {
    const int64_t rows = std::min(p.m, p.n), len = std::max(p.m, p.n);
    if (p.sm < 90) return info_.priority;
    if (p.k < 256)
      return !has_bias_row(p) && rows <= 16 && len <= 4096 ? kMeasuredFastestPriority : info_.priority;
    const bool first = has_bias_row(p) ? rows <= 16 || p.k > 1024 || len < 4096
                                       : rows <= 16 || (p.k <= 8192 && len <= 4096);
    return first ? kMeasuredFastestPriority : info_.priority;
  }

  std::string can_implement(const GemmProblem& p) const override {
    std::string why = check_common(info_, p);
    if (!why.empty()) return why;
    if (std::min(p.m, p.n) > kMaxSmallSide)
      return "needs M or N <= " + std::to_string(kMaxSmallSide) + ", problem is " + std::to_string(p.m) + " x " +
             std::to_string(p.n);
    if (p.batch > 65535) return "at most 65535 batches";
    return "";
  }

  size_t workspace_size(const GemmProblem& p) const override {
    if (p.m == 0 || p.n == 0 || p.batch == 0) return 0;
    const Launch launch = choose_launch(std::min(p.m, p.n), std::max(p.m, p.n), p.k, p.batch, p.sm_count);
    return launch.splits > 1 ? size_t(launch.splits) * p.batch * p.m * p.n * sizeof(float) : 0;
  }

  void run(const GemmProblem& p, void* workspace) const override {
    if (p.m == 0 || p.n == 0 || p.batch == 0) return;
    const bool small_m = p.m <= p.n;  // the smaller side is X; the larger spreads over the blocks
    SmallSideArgs args{};
    const MatrixRef& x = small_m ? p.a : p.b;
    const MatrixRef& w = small_m ? p.b : p.a;
    // A is row-major (row stride: its ld) and B column-major (column stride: its ld); X and W
    // are their K-major views.
    args.x = x.ptr;
    args.x_ld = small_m ? p.a.ld(Layout::Row) : p.b.ld(Layout::Col);
    args.x_batch = x.batch_stride;
    args.w = w.ptr;
    args.w_ld = small_m ? p.b.ld(Layout::Col) : p.a.ld(Layout::Row);
    args.w_batch = w.batch_stride;
    args.out = const_cast<void*>(p.d.ptr);
    args.out_r = small_m ? p.d.row_stride : p.d.col_stride;
    args.out_l = small_m ? p.d.col_stride : p.d.row_stride;
    args.out_batch = p.d.batch_stride;
    args.c = p.c.ptr;
    args.c_r = small_m ? p.c.row_stride : p.c.col_stride;
    args.c_l = small_m ? p.c.col_stride : p.c.row_stride;
    args.c_batch = p.c.batch_stride;
    args.rows = small_m ? p.m : p.n;
    args.len = small_m ? p.n : p.m;
    args.k = p.k;
    args.alpha = static_cast<float>(p.alpha);
    args.beta = static_cast<float>(p.beta);
    const Launch launch = choose_launch(args.rows, args.len, args.k, p.batch, p.sm_count);
    args.k_slice = launch.k_slice;
    if (launch.splits > 1) {  // the slices' sums in D's layout, m x n row-major, one after another
      args.partials = static_cast<float*>(workspace);
      args.part_batch = p.m * p.n;
      args.part_split = p.batch * args.part_batch;
      args.part_r = small_m ? p.n : 1;
      args.part_l = small_m ? 1 : p.n;
    }
    const cudaStream_t stream = reinterpret_cast<cudaStream_t>(p.stream);
    if (p.dtype == DType::BF16)
      launch_small_side<__nv_bfloat16>(args, launch, p.batch, stream);
    else
      launch_small_side<__half>(args, launch, p.batch, stream);
    check_launch(info_.name.c_str());
    if (launch.splits > 1) sum_split_k_partials(p, launch.splits, workspace);
  }

 private:
  KernelInfo info_;
};

}  // namespace

void register_small_mn_kernels(std::vector<const GemmKernel*>& out) {
  static const SmallSideGemm kernels[] = {SmallSideGemm(DType::BF16), SmallSideGemm(DType::F16)};
  for (const SmallSideGemm& k : kernels) out.push_back(&k);
}

}  // namespace pycutlass_gemm
