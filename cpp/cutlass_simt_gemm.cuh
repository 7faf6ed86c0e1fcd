// IEEE fp32 GEMM on CUDA cores: CUTLASS 2.x SIMT (OpClassSimt, Sm80 multistage
// cp.async mainloop, alignment 1), behind the GemmKernel interface. It would run on
// sm_80 too, but the package's CUTLASS kernels are for Hopper (other GPUs run the
// fallback, with one warning), so it is built for sm_90a beside the SM90 kernels.
//
// It uses cutlass::gemm::device::GemmUniversal rather than device::Gemm: the same
// 2.x kernel, but one instantiation serves both a single GEMM with serial split-K
// (mode kGemm, batch_count = slices, a semaphore per output tile in the
// workspace) and a strided batch (mode kBatched).
//
// Split-K: when the output tiles cannot fill the SMs (the large-K workload, 256 x
// 256 x 524288, is four 128 x 128 tiles), K is split so that about one thread
// block runs per SM, each slice covering at least kMinKPerSlice of K.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <string>
#include <type_traits>

#include "cutlass/cutlass.h"
#include "cutlass/epilogue/thread/linear_combination.h"
#include "cutlass/gemm/device/gemm_universal.h"
#include "cutlass/gemm/threadblock/threadblock_swizzle.h"

#include "cutlass_adapter.cuh"
#include "gemm_problem.h"

namespace pycutlass_gemm {

template <class LayoutA_,          // user layout of A (m x k): cutlass::layout::RowMajor / ColumnMajor
          class LayoutB_,          // user layout of B (k x n)
          class ThreadblockShape,  // cutlass::gemm::GemmShape<128, 128, 8>
          class WarpShape,         // cutlass::gemm::GemmShape<32, 64, 8>
          int kStages>
class CutlassSimtGemm : public GemmKernel {
 public:
  using Gemm = cutlass::gemm::device::GemmUniversal<
      float, LayoutA_, float, LayoutB_, float, cutlass::layout::RowMajor, float, cutlass::arch::OpClassSimt,
      cutlass::arch::Sm80, ThreadblockShape, WarpShape, cutlass::gemm::GemmShape<1, 1, 1>,
      cutlass::epilogue::thread::LinearCombination<float, 1, float, float>,
      cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>, kStages,
      /*AlignmentA=*/1, /*AlignmentB=*/1, cutlass::arch::OpMultiplyAdd>;
  using Arguments = typename Gemm::Arguments;

  static constexpr int kTileM = ThreadblockShape::kM;
  static constexpr int kTileN = ThreadblockShape::kN;
  static constexpr int64_t kMinKPerSlice = 256;
  static constexpr Layout kLayoutA = std::is_same_v<LayoutA_, cutlass::layout::RowMajor> ? Layout::Row : Layout::Col;
  static constexpr Layout kLayoutB = std::is_same_v<LayoutB_, cutlass::layout::RowMajor> ? Layout::Row : Layout::Col;

  CutlassSimtGemm(const char* name, const char* tile, int priority)
      : info_{name,
              "cutlass_simt",
              DType::F32,
              Precision::Ieee,
              kLayoutA,
              kLayoutB,
              90,
              90,
              tile,
              1,
              priority} {}

  const KernelInfo& info() const override { return info_; }

  // Slices of K for serial split-K (1: none). Batched problems are not split.
  static int split_k_slices(const GemmProblem& p) {
    if (p.batch != 1 || p.sm_count <= 0) return 1;
    const int64_t tiles = ((p.m + kTileM - 1) / kTileM) * ((p.n + kTileN - 1) / kTileN);
    if (tiles >= p.sm_count) return 1;
    const int64_t by_sms = p.sm_count / tiles;
    const int64_t by_k = p.k / kMinKPerSlice;
    return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({by_sms, by_k, 65535})));
  }

  std::string can_implement(const GemmProblem& p) const override {
    std::string why = check_common(info_, p);
    if (!why.empty()) return why;
    if (p.m <= 0 || p.n <= 0 || p.k <= 0 || p.batch <= 0) return "empty problem";
    if (p.m > INT_MAX || p.n > INT_MAX || p.k > INT_MAX) return "m, n and k must fit in int32";
    if (p.batch > 65535) return "at most 65535 batches";
    if (p.batch > 1 && p.d.batch_stride == 0) return "D needs a nonzero batch stride";
    return cutlass_adapter::can_implement<Gemm>(make_arguments(p));
  }

  size_t workspace_size(const GemmProblem& p) const override {
    return Gemm::get_workspace_size(make_arguments(p));
  }

  void run(const GemmProblem& p, void* workspace) const override {
    cutlass_adapter::run<Gemm>(info_.name, make_arguments(p), workspace, reinterpret_cast<cudaStream_t>(p.stream));
  }

 private:
  static Arguments make_arguments(const GemmProblem& p) {
    const bool batched = p.batch > 1;
    const bool beta = p.beta != 0.0;
    const MatrixRef& c = beta ? p.c : p.d;  // C is not read when beta == 0
    typename Gemm::EpilogueOutputOp::Params epilogue(static_cast<float>(p.alpha), static_cast<float>(p.beta));
    return Arguments(batched ? cutlass::gemm::GemmUniversalMode::kBatched : cutlass::gemm::GemmUniversalMode::kGemm,
                     cutlass::gemm::GemmCoord(static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k)),
                     batched ? static_cast<int>(p.batch) : split_k_slices(p), epilogue, p.a.ptr, p.b.ptr, c.ptr,
                     const_cast<void*>(p.d.ptr), batched ? p.a.batch_stride : 0, batched ? p.b.batch_stride : 0,
                     batched ? c.batch_stride : 0, batched ? p.d.batch_stride : 0, p.a.ld(kLayoutA), p.b.ld(kLayoutB),
                     c.ld(Layout::Row), p.d.ld(Layout::Row));
  }

  KernelInfo info_;
};

}  // namespace pycutlass_gemm
