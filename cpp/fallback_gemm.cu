// The fallback and the oracle: a shared-memory tiled GEMM with register
// blocking that takes any layout, stride and alignment. Every faster kernel is
// checked against it; whatever no faster kernel can implement runs here.
//
// A block of 256 threads computes a tile of D: 128x128 (8x8 outputs a thread),
// or 32x32 (2x2 outputs a thread) for products with a skinny side: GEMV-like
// products' 128x128 tiles are almost all padding that the threads multiply all
// the same (1 x 16 x 65535 bf16 took 0.094 ms on the H200, torch.matmul 0.009:
// session 42's survey). Operand tiles are staged in shared memory as Acc
// (fp32, or fp64 for fp64 inputs), k-major, so the inner product reads one column
// of A and one row of B per k step. When D has too few tiles to fill the
// multiprocessors (small M x N, large K), K is split across blocks: each writes
// its partial tile to the workspace and a second kernel sums the partials in a
// fixed order (deterministic, no atomics) and applies the epilogue.
#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "registry.h"
#include "split_k_reduce.h"
#include "strided_gemm.cuh"

namespace pycutlass_gemm {
namespace {

constexpr int kThreadsM = 16, kThreadsN = 16;  // 256 threads
constexpr int kThreads = kThreadsM * kThreadsN;
constexpr int kRowsPerBlock = 128;  // the wide tile's; the narrow tile is used only where its rows fit the grid

// A tile of D (kOutM x kOutN outputs a thread) and how K is split over it.
template <int kOutM_, int kOutN_, int kTileK_, int64_t kMinKPerSplit_, int64_t kBlocksPerSm_>
struct Tiling {
  static constexpr int kOutM = kOutM_, kOutN = kOutN_;
  static constexpr int kTileM = kThreadsM * kOutM, kTileN = kThreadsN * kOutN, kTileK = kTileK_;
  static constexpr int64_t kMinKPerSplit = kMinKPerSplit_;
  static constexpr int64_t kBlocksPerSm = kBlocksPerSm_;  // blocks a split aims for (about what fit on an SM)
};
using WideTiling = Tiling<8, 8, 16, 256, 2>;  // 128x128
// 32x32: 8 KiB of shared memory and few registers a block, so a split aims at 4 blocks an SM, slices of 128.
using NarrowTiling = Tiling<2, 2, 32, 128, 4>;

template <class Tiles>
int64_t padded_area(const GemmProblem& p) {
  return (p.m + Tiles::kTileM - 1) / Tiles::kTileM * Tiles::kTileM * ((p.n + Tiles::kTileN - 1) / Tiles::kTileN) *
         Tiles::kTileN;
}

// The narrow tile multiplies a quarter as fast (a thread's 2x2 outputs take 4 shared-memory loads a k, the wide
// tile's 8x8 take 16), so it runs where the wide tiles would multiply at least 4x its padded area: a side of at
// most 16, or of at most 64 against a side that the wide tile pads too (64 x 4). Session 43, H200, the 48 problems
// of session 42's survey where auto ran the fallback (bf16 / fp16 of 1-512 x 1-256 with K of 4096-65536, unaligned
// or MN-major; tf32 1 x 15 x 255; tf32x3 65536 x 1 x 1), x torch.matmul: 0.18x with the wide tile, 0.48x with this
// (1 x 16 x 65535 rc bf16 94 -> 29 us, 64 x 1 x 16384 cr 51 -> 14). Tried: 128x8 and 8x128 tiles (threads 64 x 4 and
// 4 x 64) where they pad less, 0.42x -- they make half as many blocks a split, each waiting on its loads; slices of
// 32 for 8 blocks an SM, 0.48x.
bool narrow_tiles(const GemmProblem& p) {
  return padded_area<WideTiling>(p) >= 4 * padded_area<NarrowTiling>(p) &&
         (p.m + NarrowTiling::kTileM - 1) / NarrowTiling::kTileM <= 65535;
}

struct SplitK {
  int splits;           // blocks sharing the K range of one output tile
  int64_t k_per_split;  // a multiple of kTileK
};

template <class Tiles>
SplitK choose_split(const GemmProblem& p) {
  const int64_t tiles =
      ((p.m + Tiles::kTileM - 1) / Tiles::kTileM) * ((p.n + Tiles::kTileN - 1) / Tiles::kTileN) * p.batch;
  const int64_t blocks = (p.sm_count > 0 ? p.sm_count : 132) * Tiles::kBlocksPerSm;
  int64_t splits = 1;
  if (2 * tiles < blocks && p.k >= 2 * Tiles::kMinKPerSplit) {
    splits = std::min<int64_t>((blocks + tiles - 1) / tiles, p.k / Tiles::kMinKPerSplit);
    splits = std::min<int64_t>(splits, 65535 / p.batch);
    splits = std::max<int64_t>(splits, 1);
  }
  int64_t k_per_split = (p.k + splits - 1) / splits;
  k_per_split = (k_per_split + Tiles::kTileK - 1) / Tiles::kTileK * Tiles::kTileK;
  splits = std::max<int64_t>(1, (p.k + k_per_split - 1) / k_per_split);  // no empty split
  return {static_cast<int>(splits), k_per_split};
}

// Copies rows [r0, r0+kRows) x cols [c0, c0+kCols) of a strided matrix into
// tile[col][row] (tile is k-major for A, where rows are M and cols are K; for
// B it is called with rows = N, cols = K through swapped strides). Threads walk
// the dimension with the smaller stride (kColsFast: the columns) so that
// neighbours read neighbouring addresses whatever the layout. It is a template
// parameter because a run-time choice doubles the index arithmetic and the
// kernel spills. Out-of-range elements become zero.
template <bool kColsFast, int kRows, int kCols, typename Acc, typename T>
__device__ __forceinline__ void load_tile(Acc (&tile)[kCols][kRows + 1], const T* base, int64_t row_stride,
                                          int64_t col_stride, int64_t rows, int64_t cols, int64_t r0,
                                          int64_t c0) {
  static_assert(kRows * kCols % kThreads == 0, "every thread loads the same number of elements");
#pragma unroll
  for (int it = 0; it < kRows * kCols / kThreads; ++it) {
    const int e = threadIdx.x + it * kThreads;
    const int r = kColsFast ? e / kCols : e % kRows;
    const int c = kColsFast ? e % kCols : e / kRows;
    const int64_t gr = r0 + r, gc = c0 + c;
    tile[c][r] = (gr < rows && gc < cols) ? to_acc<Acc>(base[gr * row_stride + gc * col_stride]) : Acc(0);
  }
}

template <class Tiles, typename T, bool kAStepsK, bool kBStepsK>
__global__ void __launch_bounds__(kThreads)
    fallback_gemm_kernel(int64_t m, int64_t n, int64_t k, int64_t batch, StridedMatrix<T> a, StridedMatrix<T> b,
                         StridedMatrix<T> c, StridedMatrix<T> d, double alpha, double beta, SplitK split,
                         typename AccumulatorOf<T>::type* partials) {
  using Acc = typename AccumulatorOf<T>::type;
  constexpr int kTileM = Tiles::kTileM, kTileN = Tiles::kTileN, kTileK = Tiles::kTileK;
  constexpr int kOutM = Tiles::kOutM, kOutN = Tiles::kOutN;
  __shared__ Acc a_tile[kTileK][kTileM + 1];  // +1: threads storing along K hit distinct banks
  __shared__ Acc b_tile[kTileK][kTileN + 1];

  const int64_t bz = blockIdx.z / split.splits;
  const int s = blockIdx.z % split.splits;
  const int64_t m0 = int64_t(blockIdx.y) * kTileM, n0 = int64_t(blockIdx.x) * kTileN;
  const int64_t k_begin = s * split.k_per_split, k_end = min(k, k_begin + split.k_per_split);
  const T* a_base = a.ptr + bz * a.batch_stride;
  const T* b_base = b.ptr + bz * b.batch_stride;
  // Thread (ty, tx) owns rows ty + 16 i and columns tx + 16 j: reads of a
  // shared row are broadcasts or consecutive words, and stores to a row-major
  // D are coalesced.
  const int tx = threadIdx.x % kThreadsN, ty = threadIdx.x / kThreadsN;

  Acc acc[kOutM][kOutN] = {};
  for (int64_t k0 = k_begin; k0 < k_end; k0 += kTileK) {
    load_tile<kAStepsK, kTileM, kTileK>(a_tile, a_base, a.row_stride, a.col_stride, m, k_end, m0, k0);
    // B is K x N; its tile is stored [k][n], i.e. B^T's rows are N.
    load_tile<kBStepsK, kTileN, kTileK>(b_tile, b_base, b.col_stride, b.row_stride, n, k_end, n0, k0);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTileK; ++kk) {
      Acc av[kOutM], bv[kOutN];
#pragma unroll
      for (int i = 0; i < kOutM; ++i) av[i] = a_tile[kk][ty + i * kThreadsM];
#pragma unroll
      for (int j = 0; j < kOutN; ++j) bv[j] = b_tile[kk][tx + j * kThreadsN];
#pragma unroll
      for (int i = 0; i < kOutM; ++i)
#pragma unroll
        for (int j = 0; j < kOutN; ++j) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();  // the next tile overwrites what this one's products read
  }

#pragma unroll
  for (int i = 0; i < kOutM; ++i) {
    const int64_t gi = m0 + ty + i * kThreadsM;
#pragma unroll
    for (int j = 0; j < kOutN; ++j) {
      const int64_t gj = n0 + tx + j * kThreadsN;
      if (gi >= m || gj >= n) continue;
      if (split.splits == 1)
        store_epilogue(c, d, Acc(alpha), Acc(beta), bz, gi, gj, acc[i][j]);
      else
        partials[((s * batch + bz) * m + gi) * n + gj] = acc[i][j];
    }
  }
}

class FallbackGemm final : public StridedGemmKernel {
 public:
  explicit FallbackGemm(DType dtype)
      : StridedGemmKernel("fallback", dtype,
                          "128x128x16, 8x8 per thread (32x32x32, 2x2, for a skinny D), split-K when tiles < SMs",
                          0, kRowsPerBlock) {}

  size_t workspace_size(const GemmProblem& p) const override {
    const SplitK split = narrow_tiles(p) ? choose_split<NarrowTiling>(p) : choose_split<WideTiling>(p);
    if (split.splits == 1) return 0;
    const size_t acc_bytes = p.dtype == DType::F64 ? 8 : 4;
    return size_t(split.splits) * p.batch * p.m * p.n * acc_bytes;
  }

  void run(const GemmProblem& p, void* workspace) const override {
    if (p.m == 0 || p.n == 0) return;
    if (narrow_tiles(p))
      launch<NarrowTiling>(p, workspace);
    else
      launch<WideTiling>(p, workspace);
  }

 private:
  template <class Tiles>
  static void launch(const GemmProblem& p, void* workspace) {
    const SplitK split = choose_split<Tiles>(p);
    if (split.splits > 1 && workspace == nullptr)
      throw std::runtime_error("fallback: split-K needs a workspace of workspace_size() bytes");
    const cudaStream_t stream = reinterpret_cast<cudaStream_t>(p.stream);
    const dim3 grid((p.n + Tiles::kTileN - 1) / Tiles::kTileN, (p.m + Tiles::kTileM - 1) / Tiles::kTileM,
                    p.batch * split.splits);
    dispatch_dtype(p.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = typename AccumulatorOf<T>::type;
      Acc* partials = static_cast<Acc*>(workspace);
      // Each operand is loaded walking K when K has the smaller stride.
      const bool a_steps_k = std::llabs(p.a.col_stride) <= std::llabs(p.a.row_stride);
      const bool b_steps_k = std::llabs(p.b.row_stride) <= std::llabs(p.b.col_stride);
      auto kernel = a_steps_k ? (b_steps_k ? fallback_gemm_kernel<Tiles, T, true, true>
                                           : fallback_gemm_kernel<Tiles, T, true, false>)
                              : (b_steps_k ? fallback_gemm_kernel<Tiles, T, false, true>
                                           : fallback_gemm_kernel<Tiles, T, false, false>);
      kernel<<<grid, kThreads, 0, stream>>>(p.m, p.n, p.k, p.batch, strided<T>(p.a), strided<T>(p.b),
                                            strided<T>(p.c), strided<T>(p.d), p.alpha, p.beta, split, partials);
      check_launch("fallback");
      if (split.splits > 1) sum_split_k_partials(p, split.splits, partials);
    });
  }
};

}  // namespace

void register_fallback_kernels(std::vector<const GemmKernel*>& out) { register_every_dtype<FallbackGemm>(out); }

}  // namespace pycutlass_gemm
