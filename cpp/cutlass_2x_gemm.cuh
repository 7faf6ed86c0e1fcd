// What the two CUTLASS 2.x kernel wrappers (cutlass_simt_gemm.cuh: IEEE fp32 on CUDA cores;
// cutlass_sm80_gemm.cuh: bf16/f16 tensor op at any alignment) share: both are
// cutlass::gemm::device::GemmUniversal, which runs a single GEMM, split along K or not, or a
// strided batch (mode kBatched), with C and D row-major.
//
// Split-K: when the output tiles cannot fill the SMs (the large-K workload, 256 x 256 x 524288,
// is four 128 x 128 tiles), K is split so that about SplitK::kBlocksPerSm thread blocks run per SM,
// each slice covering at least SplitK::kMinKPerSlice of K and at most SplitK::kMaxSlices slices. In
// parallel: mode kGemmSplitKParallel writes each slice's product (alpha = 1, beta = 0) into the
// workspace in C's element type -- fp32 for the SIMT kernels; bf16 / f16 for the SM80 ones, each
// slice's sum rounded once -- and sum_split_k_partials (split_k_reduce.h) adds them in fp32, in a
// fixed order, with the epilogue. Not serially (mode kGemm with slices, a semaphore per output
// tile, each slice adding into D after the one before): that chain cost the large-K fp32
// workload 0.28 ms on the H100 (0.82x cuBLAS; 33 slices a tile, each waiting for the one before
// to read and write its 128 x 128 tile of D), and the SM80 kernels 0.43x torch.matmul over 78
// few-tile problems of session 42's survey (H200, session 43; 1 x 15 x 4095 48 us against 7).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <string>
#include <type_traits>

#include "cutlass/cutlass.h"
#include "cutlass/gemm/device/gemm_universal.h"

#include "cutlass_adapter.cuh"
#include "gemm_problem.h"
#include "split_k_reduce.h"

namespace pycutlass_gemm {

// How a family splits K: below `kTilesPerSmToSplit` output tiles per SM (x 1/denominator: a
// problem splits when tiles * kTilesPerSmToSplit < SMs) a problem is split into slices of at least
// kMinKPerSlice (kMinKPerSliceFewTiles where the tiles fill at most a quarter of the SMs), at most
// kMaxSlices of them, for about kBlocksPerSm thread blocks an SM; never below kMinKToSplit of K (the
// second kernel adding the slices costs more than the unsplit k tiles).
template <int64_t kMinKPerSlice_, int64_t kMaxSlices_, int64_t kTilesPerSmToSplit_, int64_t kBlocksPerSm_,
          int64_t kMinKPerSliceFewTiles_ = kMinKPerSlice_, int64_t kMinKToSplit_ = 0>
struct SplitK {
  static constexpr int64_t kMinKPerSlice = kMinKPerSlice_;
  static constexpr int64_t kMinKPerSliceFewTiles = kMinKPerSliceFewTiles_;
  static constexpr int64_t kMinKToSplit = kMinKToSplit_;
  static constexpr int64_t kMaxSlices = kMaxSlices_;
  static constexpr int64_t kTilesPerSmToSplit = kTilesPerSmToSplit_;
  static constexpr int64_t kBlocksPerSm = kBlocksPerSm_;
};

template <class Gemm_,       // cutlass::gemm::device::GemmUniversal<...>
          class LayoutA_,    // user layout of A (m x k): cutlass::layout::RowMajor / ColumnMajor
          class LayoutB_,    // user layout of B (k x n)
          class SplitK_>     // SplitK<...>
class Cutlass2xGemm : public GemmKernel {
 public:
  using Gemm = Gemm_;
  using Arguments = typename Gemm::Arguments;
  static constexpr int kTileM = Gemm::ThreadblockShape::kM;
  static constexpr int kTileN = Gemm::ThreadblockShape::kN;
  static constexpr int kTileK = Gemm::ThreadblockShape::kK;
  static constexpr Layout kLayoutA = std::is_same_v<LayoutA_, cutlass::layout::RowMajor> ? Layout::Row : Layout::Col;
  static constexpr Layout kLayoutB = std::is_same_v<LayoutB_, cutlass::layout::RowMajor> ? Layout::Row : Layout::Col;
  // The slices' sums are written in C's element type: the accumulator's (SIMT), or D's (SM80).
  static constexpr PartialType kPartials =
      std::is_same_v<typename Gemm::ElementC, float> ? PartialType::kAccumulator : PartialType::kOutput;

  explicit Cutlass2xGemm(KernelInfo info) : info_(std::move(info)) {
    info_.tile_m = kTileM;  // one CTA a tile (and a K slice): no waves to fill
    info_.tile_n = kTileN;
  }

  const KernelInfo& info() const override { return info_; }

  // Output tiles of all batches.
  static int64_t tiles_of(const GemmProblem& p) { return tile_count(p.m, p.n, p.batch, kTileM, kTileN); }

  // Slices of K (1: none). Batched problems are not split.
  static int split_k_slices(const GemmProblem& p) {
    if (p.batch != 1 || p.sm_count <= 0 || p.k < SplitK_::kMinKToSplit) return 1;
    const int64_t tiles = tiles_of(p);  // batch 1
    if (tiles * SplitK_::kTilesPerSmToSplit >= p.sm_count) return 1;
    const int64_t by_sms = SplitK_::kBlocksPerSm * p.sm_count / tiles;
    const int64_t by_k = p.k / (4 * tiles <= p.sm_count ? SplitK_::kMinKPerSliceFewTiles : SplitK_::kMinKPerSlice);
    return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({by_sms, by_k, SplitK_::kMaxSlices})));
  }

  std::string can_implement(const GemmProblem& p) const override {
    std::string why = check_common(info_, p);
    if (!why.empty()) return why;
    if (p.m <= 0 || p.n <= 0 || p.k <= 0 || p.batch <= 0) return "empty problem";
    if (p.m > INT_MAX || p.n > INT_MAX || p.k > INT_MAX) return "m, n and k must fit in int32";
    if (p.batch > 65535) return "at most 65535 batches";
    if (p.batch > 1 && p.d.batch_stride == 0) return "D needs a nonzero batch stride";
    return cutlass_adapter::can_implement<Gemm>(make_arguments(p, nullptr));
  }

  size_t workspace_size(const GemmProblem& p) const override {
    return Gemm::get_workspace_size(make_arguments(p, nullptr));
  }

  // The caller has checked can_implement (the plan cache holds only kernels that accepted the problem's class).
  void run(const GemmProblem& p, void* workspace) const override {
    const Arguments args = make_arguments(p, workspace);
    const cudaStream_t stream = reinterpret_cast<cudaStream_t>(p.stream);
    if (args.mode != cutlass::gemm::GemmUniversalMode::kGemmSplitKParallel) {
      cutlass_adapter::run<Gemm>(info_.name, args, workspace, stream);
      return;
    }
    // The partials go to the workspace through D's pointer: CUTLASS's own workspace stays unused
    // (and unzeroed). Its grid has one z index per slice CUTLASS made of K (it rounds the slice
    // length, so there may be fewer than asked for).
    cutlass_adapter::run<Gemm>(info_.name, args, nullptr, stream);
    sum_split_k_partials(p, static_cast<int>(Gemm::get_grid_shape(args).z), workspace, kPartials);
  }

 protected:
  KernelInfo info_;

 private:
  // `partials`: where a parallel split writes its slices (nullptr when only sizing or checking).
  static Arguments make_arguments(const GemmProblem& p, void* partials) {
    using cutlass::gemm::GemmUniversalMode;
    const bool batched = p.batch > 1;
    const int slices = batched ? 1 : split_k_slices(p);
    if (slices > 1) {
      // Each slice's alpha = 1, beta = 0 product, as an m x n row-major matrix at partials + z * m * n.
      typename Gemm::EpilogueOutputOp::Params unscaled(1.0f, 0.0f);
      return Arguments(GemmUniversalMode::kGemmSplitKParallel,
                       cutlass::gemm::GemmCoord(static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k)),
                       slices, unscaled, p.a.ptr, p.b.ptr, partials, partials, 0, 0, 0, p.m * p.n,
                       p.a.ld(kLayoutA), p.b.ld(kLayoutB), p.n, p.n);
    }
    const bool beta = p.beta != 0.0;
    const MatrixRef& c = beta ? p.c : p.d;  // C is not read when beta == 0
    typename Gemm::EpilogueOutputOp::Params epilogue(static_cast<float>(p.alpha), static_cast<float>(p.beta));
    return Arguments(batched ? GemmUniversalMode::kBatched : GemmUniversalMode::kGemm,
                     cutlass::gemm::GemmCoord(static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k)),
                     batched ? static_cast<int>(p.batch) : slices, epilogue, p.a.ptr, p.b.ptr, c.ptr,
                     const_cast<void*>(p.d.ptr), batched ? p.a.batch_stride : 0, batched ? p.b.batch_stride : 0,
                     batched ? c.batch_stride : 0, batched ? p.d.batch_stride : 0, p.a.ld(kLayoutA), p.b.ld(kLayoutB),
                     c.ld(Layout::Row), p.d.ld(Layout::Row));
  }
};

}  // namespace pycutlass_gemm
