// IEEE fp32 GEMM on CUDA cores: CUTLASS 2.x SIMT (OpClassSimt, Sm80 multistage cp.async
// mainloop, alignment 1), behind the GemmKernel interface (cutlass_2x_gemm.cuh: the
// GemmUniversal wrapper it shares with the SM80 tensor-op kernels: split-K, batches).
// It would run on sm_80 too, but the package's CUTLASS kernels are for Hopper (other GPUs run
// the fallback, with one warning), so it is built for sm_90a beside the SM90 kernels.
#pragma once

#include "cutlass/epilogue/thread/linear_combination.h"
#include "cutlass/gemm/threadblock/threadblock_swizzle.h"

#include "cutlass_2x_gemm.cuh"

namespace pycutlass_gemm {
namespace simt_detail {

template <class LayoutA, class LayoutB, class ThreadblockShape, class WarpShape, int kStages>
using Gemm = cutlass::gemm::device::GemmUniversal<
    float, LayoutA, float, LayoutB, float, cutlass::layout::RowMajor, float, cutlass::arch::OpClassSimt,
    cutlass::arch::Sm80, ThreadblockShape, WarpShape, cutlass::gemm::GemmShape<1, 1, 1>,
    cutlass::epilogue::thread::LinearCombination<float, 1, float, float>,
    cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>, kStages,
    /*AlignmentA=*/1, /*AlignmentB=*/1, cutlass::arch::OpMultiplyAdd>;

// Split below one tile per SM, slices of at least 256 of K, added in parallel (fp32 partials in
// the workspace, then one reduction pass: no chain of fix-ups). Where the tiles fill at most a quarter of
// the SMs, slices of at least 32 (four k tiles of 8): a slice's mainloop waits on memory about 0.7 us a k
// tile when its CTA is alone on its SM, so 1 x 256 x 256 took 32 us on one slice (torch.matmul 5 us).
// Session 42, H200, the SIMT kernels by name on 150 problems of the sweep where auto ran them and 16 larger
// ones, this rule against 256 everywhere: 0.89x and 0.81x the time (x torch.matmul 0.60 -> 0.67, 0.72 -> 0.87;
// 512x512x1024 0.035 -> 0.023 ms, 256x256x4096 0.032 -> 0.022, 16 x 1 x 256 0.028 -> 0.010); none slower where
// the split changed. With more tiles it did not pay everywhere (1023x1023x255 cr, 64 tiles: 0.031 -> 0.050 ms on
// two slices of 32), so they keep 256.
using Split = SplitK<256, 65535, /*kTilesPerSmToSplit=*/1, /*kBlocksPerSm=*/1, /*kMinKPerSliceFewTiles=*/32>;

}  // namespace simt_detail

template <class LayoutA_,          // user layout of A (m x k): cutlass::layout::RowMajor / ColumnMajor
          class LayoutB_,          // user layout of B (k x n)
          class ThreadblockShape,  // cutlass::gemm::GemmShape<128, 128, 8>
          class WarpShape,         // cutlass::gemm::GemmShape<32, 64, 8>
          int kStages>
class CutlassSimtGemm
    : public Cutlass2xGemm<simt_detail::Gemm<LayoutA_, LayoutB_, ThreadblockShape, WarpShape, kStages>, LayoutA_,
                           LayoutB_, simt_detail::Split> {
  using Base = Cutlass2xGemm<simt_detail::Gemm<LayoutA_, LayoutB_, ThreadblockShape, WarpShape, kStages>, LayoutA_,
                             LayoutB_, simt_detail::Split>;

 public:
  CutlassSimtGemm(const char* name, const char* tile, int priority)
      : Base(KernelInfo{name, "cutlass_simt", DType::F32, Precision::Ieee, Base::kLayoutA, Base::kLayoutB, 90, 90,
                        tile, 1, priority}) {}

  // Two tiles are registered per layout: 128x128 (8 warps of 32x64) and 128x256 (8 warps of 64x64,
  // 5 stages). On the H100 the wide one ran 4096^3 at 1.00x / 0.96x cuBLAS SGEMM (rr / rc) and the
  // transposed-B workload at 0.95x, where 128x128 ran 0.87x / 0.82x / 0.81x. With K split in
  // parallel it leads where it splits too: the large-K workload 1.310 ms (1.00x) against 1.478,
  // 512x512x65536 0.683 against 0.811. So it ranks first when its tiles fill a wave of the SMs or
  // K is split to fill them, unless N <= 128 (half its columns would be padding: 128x128x262144
  // ran 0.360 ms against 0.249), and last when neither (1024 x 1024 x 256: 32 wide tiles, 64 narrow).
  static constexpr int kWideTileBonus = 5;
  int priority(const GemmProblem& p) const override {
    if (Base::kTileN <= 128) return this->info_.priority;
    const bool fills = Base::tiles_of(p) >= p.sm_count || Base::split_k_slices(p) > 1;
    return fills && p.n > 128 ? this->info_.priority + kWideTileBonus : this->info_.priority - kWideTileBonus;
  }
};

}  // namespace pycutlass_gemm
