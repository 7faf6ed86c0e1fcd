// IEEE fp32 GEMM on CUDA cores: CUTLASS 2.x SIMT (OpClassSimt, Sm80 multistage cp.async
// mainloop, alignment 1), behind the GemmKernel interface (cutlass_2x_gemm.cuh: the
// GemmUniversal wrapper it shares with the SM80 tensor-op kernels: serial split-K, batches).
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

// Split below one tile per SM, slices of at least 256 of K (fp32 partial sums lose nothing).
using Split = SplitK<256, 65535, 1>;

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
};

}  // namespace pycutlass_gemm
