// bf16 / f16 GEMM on tensor cores for operands that are NOT 16-byte aligned: CUTLASS 2.x
// (cutlass::gemm::device::GemmUniversal, OpClassTensorOp, Sm80 mma.sync), behind the GemmKernel
// interface. It runs on sm_90 (Hopper executes the sm_80 mma.sync instructions); like the other
// CUTLASS kernels of the package it is built for sm_90a only.
//
// Why this family exists: the SM90 kernels (cutlass_sm90_gemm.cuh) load with TMA, which needs
// 16-byte aligned pointers, leading dimensions and row extents. A K of 777, an N of 1001, a
// vocabulary of 50257 or a view starting one element into its storage fails that, and such
// problems used to drop to the hand-written fallback (about 0.2x cuBLAS).
//
// The choices (CUTLASS example 49 style):
//
//  Element     cutlass::bfloat16_t or cutlass::half_t for A, B, C and D; fp32 accumulation and
//              fp32 alpha/beta (LinearCombination<Element, kAlignment, float, float>).
//  Layouts     A and B row- or column-major (all four combinations); C and D row-major.
//  Alignment   kAlignment elements for A, B, C and D. The package's set uses 1 (2 bytes): any
//              pointer, any leading dimension, any extent. Only the 2-stage mainloop can take
//              that: the multistage mainloop copies global->shared with cp.async, which moves 4,
//              8 or 16 bytes (cutlass/arch/memory_sm80.h static_asserts it), so it needs at least
//              alignment 2 for 16-bit types; the SM90 cp.async warp-specialized collective asserts
//              the same 4-byte minimum (sm90_common.inl: cp_async_min_alignment_bytes = 4).
//  Mainloop    kStages == 2: threadblock::MmaPipelined. Each thread loads its part of the next
//              K-slab with predicated 2-byte global loads (PredicatedTileIterator, one predicate
//              per element, so ragged M, N and K edges and odd leading dimensions are exact) into
//              registers while the warps multiply the current slab from shared memory, then
//              stores it to the other shared buffer with 128-bit stores (the shared layout is the
//              usual swizzled tensor-op layout, independent of global alignment).
//              kStages >= 3 (tuning candidates only): MmaMultistage with cp.async, alignment >= 2.
//  MMA         mma.sync m16n8k16 (bf16 and f16 both have it on sm_80+), fp32 accumulators.
//  Tile        128x128x32 thread block of 2x2 warps of 64x64x32: the tile CUTLASS's library
//              generates for its alignment-1 16-bit tensor-op kernels (generator.py,
//              GenerateSM75_TensorOp_1688: [128, 128, 32], 2 stages, warps [2, 2, 1], alignments
//              8, 4, 2, 1). 128 threads, 32 KiB of shared memory and about 200 registers per
//              thread leave room for two thread blocks per SM, which hides the global latency the
//              2-stage pipeline alone would not. 128 wide in N keeps the 2048 x 1001 problem at
//              16 x 8 = 128 tiles, one wave on 132 SMs.
//  Epilogue    the 2.x default tensor-op epilogue: accumulators staged through shared memory,
//              written (and C read, only when beta != 0) with predicated accesses of kAlignment
//              elements, so D may have an odd N, an odd leading dimension and an odd pointer.
//  Swizzle     GemmIdentityThreadblockSwizzle<8>, CUTLASS's library default (L2 reuse of B).
//  Split-K     serial, as in cutlass_simt_gemm.cuh: when the output tiles cannot fill the SMs,
//              K is split into slices that add into D in a fixed order (a semaphore per tile in
//              the workspace, so deterministic). The partial sums pass through D, i.e. they are
//              rounded to bf16/f16 between slices, so the slices are capped at kMaxSlices.
//  Batched     GemmUniversalMode::kBatched with the operands' batch strides (0 broadcasts A, B
//              or C; D needs a nonzero one).
//
// Tested in CUTLASS: the 2-stage tensor-op mainloop with alignment 1 for 16-bit operands is what
// CUTLASS's library generator instantiates for its profiler (GenerateSM75_TensorOp_1688,
// alignment 1, 2 stages, f16; the mainloop and epilogue are the same 2.x templates with the Sm80
// 16x8x16 instruction: test/unit/gemm/threadblock/mma_pipelined_sm80.cu tests MmaPipelined with
// Sm80 instructions); bf16 has no 16x8x8 Sm75 instruction, hence Sm80 16x8x16 for both types.
// The multistage alignment-2/4 candidates are GenerateSM80_TensorOp_16816's (alignments 8, 4, 2).
//
// Conventions as in gemm_problem.h: A is m x k, B is k x n, D (and C) are m x n row-major;
// layouts are the user's, and CUTLASS 2.x takes them as given (B as k x n).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <string>
#include <type_traits>

#include "cutlass/cutlass.h"
#include "cutlass/bfloat16.h"
#include "cutlass/epilogue/thread/linear_combination.h"
#include "cutlass/gemm/device/gemm_universal.h"
#include "cutlass/gemm/threadblock/threadblock_swizzle.h"
#include "cutlass/half.h"

#include "cutlass_adapter.cuh"
#include "gemm_problem.h"

namespace pycutlass_gemm {
namespace sm80_detail {

template <class T> struct DTypeOf;
template <> struct DTypeOf<cutlass::bfloat16_t> { static constexpr DType value = DType::BF16; };
template <> struct DTypeOf<cutlass::half_t> { static constexpr DType value = DType::F16; };

template <class Tag> constexpr Layout layout_of() {
  return std::is_same_v<Tag, cutlass::layout::RowMajor> ? Layout::Row : Layout::Col;
}

}  // namespace sm80_detail

template <class Element_,          // cutlass::bfloat16_t or cutlass::half_t
          class LayoutA_,          // user layout of A (m x k): cutlass::layout::RowMajor / ColumnMajor
          class LayoutB_,          // user layout of B (k x n)
          class ThreadblockShape,  // cutlass::gemm::GemmShape<128, 128, 32>
          class WarpShape,         // cutlass::gemm::GemmShape<64, 64, 32>
          int kStages,             // 2: MmaPipelined (any alignment); >= 3: cp.async multistage
          int kAlignment_>         // elements, for A, B, C and D
class CutlassSm80Gemm : public GemmKernel {
 public:
  using Element = Element_;
  static constexpr int kAlignment = kAlignment_;
  static_assert(kStages == 2 || kAlignment * int(sizeof(Element)) >= 4,
                "cp.async (kStages >= 3) moves at least 4 bytes: alignment 1 needs the 2-stage mainloop");

  using Gemm = cutlass::gemm::device::GemmUniversal<
      Element, LayoutA_, Element, LayoutB_, Element, cutlass::layout::RowMajor, float,
      cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80, ThreadblockShape, WarpShape,
      cutlass::gemm::GemmShape<16, 8, 16>,
      cutlass::epilogue::thread::LinearCombination<Element, kAlignment, float, float>,
      cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<8>, kStages, kAlignment, kAlignment,
      cutlass::arch::OpMultiplyAdd>;
  using Arguments = typename Gemm::Arguments;

  static constexpr int kTileM = ThreadblockShape::kM;
  static constexpr int kTileN = ThreadblockShape::kN;
  // Split-K (single GEMMs whose tiles cannot fill the SMs): at least this much K per slice, and
  // at most kMaxSlices slices, since every slice boundary rounds the partial sum to 16 bits.
  static constexpr int64_t kMinKPerSlice = 512;
  static constexpr int64_t kMaxSlices = 16;
  static constexpr Layout kLayoutA = sm80_detail::layout_of<LayoutA_>();
  static constexpr Layout kLayoutB = sm80_detail::layout_of<LayoutB_>();

  CutlassSm80Gemm(const char* name, const char* tile, int priority)
      : info_{name,
              "cutlass_sm80",
              sm80_detail::DTypeOf<Element>::value,
              Precision::Ieee,
              kLayoutA,
              kLayoutB,
              90,
              90,
              tile,
              kAlignment,
              priority} {}

  const KernelInfo& info() const override { return info_; }

  // Two tiles are registered per layout: 128x128 (4 warps) and 128x256 (8 warps of 64x64). The wide
  // one reads A half as often: on the H100 it ran 1.10x / 1.06x / 1.10x cuBLAS at 1000x3000x777,
  // 2048x1001x2048 and 4096x1001x4096 rr bf16, where 128x128 ran 1.05x / 0.77x / 0.92x. With fewer
  // rows than two tile rows (96 x 50257 x 264) 128x128 was ahead (1.06x against 0.93x): the wide
  // tile then wastes the same rows on twice the columns and has half the tiles to spread.
  static constexpr int kWideTileBonus = 5;
  int priority(const GemmProblem& p) const override {
    if (kTileN <= 128) return info_.priority;
    return p.m > kTileM ? info_.priority + kWideTileBonus : info_.priority - kWideTileBonus;
  }

  // Slices of K for serial split-K (1: none). Batched problems are not split.
  static int split_k_slices(const GemmProblem& p) {
    if (p.batch != 1 || p.sm_count <= 0) return 1;
    const int64_t tiles = ((p.m + kTileM - 1) / kTileM) * ((p.n + kTileN - 1) / kTileN);
    if (2 * tiles >= p.sm_count) return 1;
    const int64_t by_sms = p.sm_count / tiles;
    const int64_t by_k = p.k / kMinKPerSlice;
    return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({by_sms, by_k, kMaxSlices})));
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

  // The caller has checked can_implement (bindings.cpp does before every run).
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
