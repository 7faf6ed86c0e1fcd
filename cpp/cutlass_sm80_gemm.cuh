// bf16 / f16 / tf32 GEMM on tensor cores for operands that are NOT 16-byte aligned (and, for tf32,
// small problems at any alignment: priority()): CUTLASS 2.x (cutlass::gemm::device::GemmUniversal,
// OpClassTensorOp, Sm80 mma.sync), behind the GemmKernel interface. It runs on sm_90 (Hopper
// executes the sm_80 mma.sync instructions); like the other CUTLASS kernels of the package it is
// built for sm_90a only.
//
// Why this family exists: the SM90 kernels (cutlass_sm90_gemm.cuh) load with TMA, which needs
// 16-byte aligned pointers, leading dimensions and row extents. A K of 777, an N of 1001, a
// vocabulary of 50257 or a view starting one element into its storage fails that, and such
// problems used to drop to the hand-written fallback (about 0.2x cuBLAS).
//
// The choices (CUTLASS example 49 style):
//
//  Element     cutlass::bfloat16_t or cutlass::half_t for A, B, C and D; fp32 accumulation and
//              fp32 alpha/beta (LinearCombination<Element, kAlignment, float, float>). Or float
//              with tf32 math (precision="tf32"): fp32 in memory, mma.sync m16n8k8 on tf32, each
//              operand rounded to nearest on its way from shared memory to the MMA (MmaTensorOp::
//              transform: cvt.rn.tf32.f32 on sm_90, as cuBLAS rounds). Unaligned fp32 (K = 777,
//              N = 4095) ran the IEEE SIMT kernels before: 0.40x torch.matmul's tf32 where K >= 32
//              over session 42's survey problems (H200; 0.82x on these, priority() below).
//  Layouts     A and B row- or column-major (all four combinations); C and D row-major.
//  Alignment   kAlignment elements for A, B, C and D. The package's set uses 1 (2 bytes): any
//              pointer, any leading dimension, any extent. Only the 2-stage mainloop can take
//              that: the multistage mainloop copies global->shared with cp.async, which moves 4,
//              8 or 16 bytes (cutlass/arch/memory_sm80.h static_asserts it), so it needs at least
//              alignment 2 for 16-bit types; the SM90 cp.async warp-specialized collective asserts
//              the same 4-byte minimum (sm90_common.inl: cp_async_min_alignment_bytes = 4). One
//              fp32 element is 4 bytes: tf32 takes any alignment on the multistage mainloop. Its
//              small-problem tile also comes at alignment 4 (16 bytes a cp.async, aligned operands
//              only): a quarter of the copies, 1.24x faster over small rr problems (session 45).
//  Mainloop    kStages == 2: threadblock::MmaPipelined. Each thread loads its part of the next
//              K-slab with predicated 2-byte global loads (PredicatedTileIterator, one predicate
//              per element, so ragged M, N and K edges and odd leading dimensions are exact) into
//              registers while the warps multiply the current slab from shared memory, then
//              stores it to the other shared buffer with 128-bit stores (the shared layout is the
//              usual swizzled tensor-op layout, independent of global alignment).
//              kStages >= 3 (tf32, and 16-bit tuning candidates): MmaMultistage with cp.async,
//              4 bytes and up: alignment 1 for fp32, >= 2 for 16-bit types.
//  MMA         mma.sync m16n8k16 (bf16 and f16 both have it on sm_80+), m16n8k8 for tf32; fp32
//              accumulators.
//  Tile        (tf32 also 128x256x32, and 64x64x16 of 2x2 warps of 32x32 for small problems: priority())
//              128x128x32 thread block of 2x2 warps of 64x64x32: the tile CUTLASS's library
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
//  Split-K     in parallel, as in cutlass_simt_gemm.cuh: when the output tiles cannot fill the SMs,
//              K is split into slices whose sums go to the workspace in D's type (the kernel's only
//              epilogue writes it: a 16-bit slice's sum is rounded once; tf32's are fp32) and a
//              second kernel adds them in fp32, in a fixed order (deterministic), with the epilogue.
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
#include <type_traits>

#include "cutlass/bfloat16.h"
#include "cutlass/epilogue/thread/linear_combination.h"
#include "cutlass/gemm/threadblock/threadblock_swizzle.h"
#include "cutlass/half.h"

#include "cutlass_2x_gemm.cuh"

namespace pycutlass_gemm {
namespace sm80_detail {

// What an element type brings: the package's dtype, the math it runs (KernelInfo::math) and its mma.sync shape.
template <class T> struct Math;
template <> struct Math<cutlass::bfloat16_t> {
  static constexpr DType dtype = DType::BF16;
  static constexpr Precision math = Precision::Ieee;
  using Instruction = cutlass::gemm::GemmShape<16, 8, 16>;
};
template <> struct Math<cutlass::half_t> {
  static constexpr DType dtype = DType::F16;
  static constexpr Precision math = Precision::Ieee;
  using Instruction = cutlass::gemm::GemmShape<16, 8, 16>;
};
template <> struct Math<float> {  // fp32 storage, tf32 products (inputs rounded to nearest in MmaTensorOp::transform)
  static constexpr DType dtype = DType::F32;
  static constexpr Precision math = Precision::Tf32;
  using Instruction = cutlass::gemm::GemmShape<16, 8, 8>;
};

template <class Element, class LayoutA, class LayoutB, class ThreadblockShape, class WarpShape, int kStages,
          int kAlignment>
using Gemm = cutlass::gemm::device::GemmUniversal<
    Element, LayoutA, Element, LayoutB, Element, cutlass::layout::RowMajor, float, cutlass::arch::OpClassTensorOp,
    cutlass::arch::Sm80, ThreadblockShape, WarpShape, typename Math<Element>::Instruction,
    cutlass::epilogue::thread::LinearCombination<Element, kAlignment, float, float>,
    cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<8>, kStages, kAlignment, kAlignment,
    cutlass::arch::OpMultiplyAdd>;

// Split when the tiles fill fewer than half the SMs, for two thread blocks an SM (what fits: 32 KiB of shared
// memory and ~200 registers a thread), slices of at least 128 of K (64 where the tiles fill at most a quarter of
// the SMs), in parallel: each slice's sum rounded to 16 bits once, the slices added in fp32. Session 43, H200, the
// SM80 kernels by name on the 78 problems of session 42's survey where auto ran them split (x torch.matmul,
// geomean): the serial chain (slices of 512, at most 16, one block an SM) 0.43x; the same slices in parallel
// 0.56x; this 0.90x (1 x 15 x 4095 rc 48 -> 16 us, 64 x 4 x 4096 cr fp16 53 -> 10, 512 x 1 x 65536 cr fp16 220 ->
// 56); slices of 256 / 128 0.88x, four blocks an SM 0.82x; splitting up to one tile an SM ran 16383 x 255 x 1023
// cr (128 tiles) at 175 us against 63 unsplit.
template <int64_t kMinKToSplit = 0>
using SplitFrom = SplitK<128, 65535, /*kTilesPerSmToSplit=*/2, /*kBlocksPerSm=*/2, /*kMinKPerSliceFewTiles=*/64,
                         kMinKToSplit>;
using Split = SplitFrom<>;
// The small 16-bit tile (64x64x32, small problems: CutlassSm80Gemm::priority) splits only from K = 512: below it
// the kernel adding the slices (~1.4 us) costs more than the k tiles a split saves. Session 46, H200, bf16 rr, GPU
// time (us) of 64 x 64 / 64 x 256 / 16 x 512 problems unsplit (a batch of two) against split by `Split`: K = 128
// 3.1-3.2 against 4.3-4.5, K = 256 3.7-3.9 against 4.3-4.5, K = 512 5.0-5.1 against 4.6-5.0, K = 1024 7.4-7.6
// against 4.6-5.1 (torch.matmul 2.4 / 2.5-2.8 / 3.0-3.2 / 3.8-4.0).
using SplitSmall16Bit = SplitFrom</*kMinKToSplit=*/512>;
// The small tf32 tile (64x64x16) likewise from K = 256. Session 47, H200, the same method: K = 128 3.8-3.9 unsplit
// against 4.6-4.8 split, K = 256 5.1-5.3 against 4.6-5.0, K = 512 7.7-7.9 against 5.0-5.4.
using SplitSmallTf32 = SplitFrom</*kMinKToSplit=*/256>;
template <class Element, class ThreadblockShape>
using SplitFor = std::conditional_t<ThreadblockShape::kM != 64, Split,
                                    std::conditional_t<std::is_same_v<Element, float>, SplitSmallTf32, SplitSmall16Bit>>;

}  // namespace sm80_detail

template <class Element_,          // cutlass::bfloat16_t, cutlass::half_t, or float (tf32 math)
          class LayoutA_,          // user layout of A (m x k): cutlass::layout::RowMajor / ColumnMajor
          class LayoutB_,          // user layout of B (k x n)
          class ThreadblockShape,  // cutlass::gemm::GemmShape<128, 128, 32>
          class WarpShape,         // cutlass::gemm::GemmShape<64, 64, 32>
          int kStages,             // 2: MmaPipelined (any alignment); >= 3: cp.async multistage
          int kAlignment_>         // elements, for A, B, C and D
class CutlassSm80Gemm
    : public Cutlass2xGemm<sm80_detail::Gemm<Element_, LayoutA_, LayoutB_, ThreadblockShape, WarpShape, kStages,
                                             kAlignment_>,
                           LayoutA_, LayoutB_, sm80_detail::SplitFor<Element_, ThreadblockShape>> {
  using Base = Cutlass2xGemm<sm80_detail::Gemm<Element_, LayoutA_, LayoutB_, ThreadblockShape, WarpShape, kStages,
                                               kAlignment_>,
                             LayoutA_, LayoutB_, sm80_detail::SplitFor<Element_, ThreadblockShape>>;

 public:
  using Element = Element_;
  static constexpr int kAlignment = kAlignment_;
  static_assert(kStages == 2 || kAlignment * int(sizeof(Element)) >= 4,
                "cp.async (kStages >= 3) moves at least 4 bytes: alignment 1 needs the 2-stage mainloop");

  CutlassSm80Gemm(const char* name, const char* tile, int priority)
      : Base(KernelInfo{name, "cutlass_sm80", sm80_detail::Math<Element>::dtype, sm80_detail::Math<Element>::math,
                        Base::kLayoutA, Base::kLayoutB, 90, 90, tile, kAlignment, priority}) {}

  // Two tiles are registered per layout: 128x128 (4 warps) and 128x256 (8 warps of 64x64). The wide
  // one reads A half as often: on the H100 it ran 1.10x / 1.06x / 1.10x cuBLAS at 1000x3000x777,
  // 2048x1001x2048 and 4096x1001x4096 rr bf16, where 128x128 ran 1.05x / 0.77x / 0.92x. With fewer
  // rows than two tile rows (96 x 50257 x 264) 128x128 was ahead (1.06x against 0.93x): the wide
  // tile then wastes the same rows on twice the columns and has half the tiles to spread.
  // Nor for K shorter than one k tile (32): there is no A to read twice, and the 128x128 tile's twice as many
  // tiles ran 0.835x the wide tile's time over the H100 sweep's 1573 such problems the rules gave the wide
  // tile (unaligned bf16 / fp16, K < 32; faster at 1532, slower by > 3% at 10; session 39).
  static constexpr int kWideTileBonus = 5;
  // tf32 (fp32 storage, precision="tf32") ranks ahead of the IEEE SIMT kernels (50 +- 5) from one k tile of K up
  // and behind them (kShortKTf32Priority) below it. Session 45, H200, the tf32 kernels by name over the 299
  // problems of session 42's survey that ran unaligned tf32 on SIMT (x torch.matmul, geomean; SIMT's from that
  // survey): with K >= 32 128x128 was ahead of SIMT at 99 of 100 (0.78x against 0.40x; 15 x 4095 x 65535 rc
  // 0.47 ms against 1.38), with K < 32 behind it at 197 of 199 (0.65x against 0.93x: a k tile of 32 is then
  // mostly padding). Its wide tile leads where M and N both exceed one 128 tile and its tiles fill half the SMs
  // (4095^3 rr 1.06 ms against 1.25, torch 1.01): over the 100, 0.82x, against 0.78x for 128x128 alone and
  // 0.74x for 128x256 alone (the bf16 rule below, M > 128, gave 0.79x).
  static constexpr int kShortKTf32Priority = 40;
  // The 64x64 tf32 tile (k tiles of 16, what cuBLAS runs on small tf32 problems) ranks first for small problems --
  // under 2^31 flop, with at most two of its tiles an SM or M or N of at most 64 -- above the SM90 tf32 kernels
  // (whose 128-row wgmma tiles are mostly padding there, and whose stream-K fix-up alone took ~20 us at 4 x 16 x
  // 1024) and below gemv (111); its 16-byte-copy twin (kAlignment 4, aligned operands only) one above; last
  // elsewhere. Session 45, H200, over session 42's survey problems under 2^31 flop: aligned tf32 (SM90 before) rr
  // 0.66x -> 1.08x torch.matmul with the rule, 1.09x choosing per problem; unaligned (SIMT or the 128-row tiles
  // before) 1.22x -> 1.31x (1.32x). Outside it the 64x64 tile lost to SM90 over many tiles of short K (65536 x
  // 512 x 4, 1024 x 2048 x 256) and to the 128-row tiles over long K (255 x 4095 x 16383: 0.64 ms against 0.35).
  static constexpr int kSmallTf32Priority = 109, kNotSmallPriority = 30;
  // The 16-bit 64x64x32 tile (16-byte copies: aligned operands only) the same way below 2^24 flop, at 110. Session
  // 46, H200, over session 42's survey problems under 2^31 flop that ran SM90 kernels (shuffled rounds, against
  // auto): 1.14-1.24x auto's speed below 2^24 flop, 0.98-1.0x at 2^24-2^26, 0.80-0.89x above 2^28; with this rule
  // bf16 1.26x -> 1.31x torch.matmul over 430 problems, fp16 1.17x -> 1.21x over 358 (outer products, K = 1, over
  // more tiles stay on SM90: the tile clause). With an MN-major operand (any layout but rc) up to 2^30 flop: the SM90
  // kernels built for those layouts have 128-row tiles only (no 64-row ping-pong), and the 64x64 tile ran in 0.80-0.97x
  // their time from 2^24 to 2^30 flop (geomean per octave of flop; 1.04-1.07x at 2^30-2^31). H200, by name in shuffled
  // rounds: session 46's survey problems there (rr / cr / cc: bf16 113, 0.861x the SM90 picks' time, 1.14x -> 1.32x
  // torch.matmul; fp16 77, 0.909x, 0.97x -> 1.07x) and session 48's random bf16 problems (rr / cr, 99, 32 changed:
  // auto 0.805x / 0.786x -> 0.831x / 0.843x torch.matmul on the build with it). rc keeps 2^24: its 64-row ping-pong tiles are ahead above it (the
  // 64x64 tile 0.93x their time at 2^24-2^26, 1.02-1.14x from 2^26).
  static constexpr int kSmall16BitPriority = 110;
  static constexpr double kSmall16BitFlop =
      Base::kLayoutA == Layout::Row && Base::kLayoutB == Layout::Col ? 0x1p24 : 0x1p30;
  static bool small_problem(const GemmProblem& p, double flop_limit) {
    const int64_t tiles = Base::tiles_of(p);
    return 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) *
                   static_cast<double>(p.batch) < flop_limit &&
           (tiles <= 2 * static_cast<int64_t>(p.sm_count) || std::min(p.m, p.n) <= 64);
  }
  int priority(const GemmProblem& p) const override {
    if constexpr (sm80_detail::Math<Element>::math == Precision::Tf32) {
      if constexpr (Base::kTileM == 64)
        return small_problem(p, 0x1p31) ? kSmallTf32Priority + (kAlignment > 1) : kNotSmallPriority;
      if (p.k < Base::kTileK) return kShortKTf32Priority;
      if (Base::kTileN <= 128) return this->info_.priority;
      const bool wide = p.m > Base::kTileM && p.n > 128 && 2 * Base::tiles_of(p) >= p.sm_count;
      return wide ? this->info_.priority + kWideTileBonus : this->info_.priority - kWideTileBonus;
    }
    if constexpr (Base::kTileM == 64)
      return small_problem(p, kSmall16BitFlop) ? kSmall16BitPriority : kNotSmallPriority;
    if (Base::kTileN <= 128) return this->info_.priority;
    return p.m > Base::kTileM && p.k >= Base::kTileK ? this->info_.priority + kWideTileBonus
                                                      : this->info_.priority - kWideTileBonus;
  }
};

}  // namespace pycutlass_gemm
