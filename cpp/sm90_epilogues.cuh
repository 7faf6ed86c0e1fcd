// The epilogues a CutlassSm90Gemm is assembled from, by its named choices (the mainloops:
// sm90_collectives.cuh): what CUTLASS's builder makes, or CUTLASS's TMA epilogue put together as its
// builder does for the subtiles the N-split and three-warpgroup tiles, fp32 D and delayed stores need.
#pragma once

#include <type_traits>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass_sm90_headers.cuh"  // the builder, mainloops and kernels of SM90 only
#include "sm90_collectives.cuh"     // the mainloop schedule tags an epilogue is chosen behind

namespace pycutlass_gemm {
namespace sm90_detail {

// The epilogue: what CUTLASS's builder makes for the choices (EpilogueTileAuto), or, behind the
// N-split mainloop with a TMA epilogue, CUTLASS's TMA epilogue put together as its builder does
// (Sm90TmaBuilderImpl) but for subtiles of 64 rows by the whole N, whose shared-memory atom fits a
// warpgroup's half. The epilogue spreads each subtile over all 256 consumer threads by the tiled
// MMA's accumulator layout, whose 64 x N tile now holds both warpgroups' halves of N (the
// builder's cooperative subtiles are 128 x 32: a 64-row half each): a subtile narrower than N lies
// in one warpgroup's half ("Fragment size does not vectorize properly"; the builder also asserts
// 128 rows for the cooperative schedule). Each thread's first stmatrix covers 16 columns of each
// half, N/2 apart, so the subtile's shared-memory layout must step N/2 columns in whole swizzle
// atoms: the atom is chosen for 64 x N/2 (for 192: 32 columns, 64-byte swizzle; the builder's
// 64-column atom for 64 x 192 fails cute's "Stride Divisibility Condition"). Stages and fragment
// size as the builder derives them for the cooperative schedule (256 threads). Accumulators and
// compute in fp32, as CutlassSm90Gemm's.
template <class TileShape, class ClusterShape, class ElementC, class LayoutC, class ElementD, class LayoutD,
          int kOutputAlignment, class EpilogueSchedule, class FusionOp, class MainloopSchedule>
struct Epilogue {
  using type = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, ElementC, LayoutC, kOutputAlignment, ElementD,
      LayoutD, kOutputAlignment, EpilogueSchedule, FusionOp>::CollectiveOp;
};

// CUTLASS's TMA epilogue put together as its builder does (Sm90TmaBuilderImpl), for the given
// subtile (EpilogueTile), dispatch policy, and shared-memory swizzle atoms chosen for SmemAtomTile.
template <class TileShape, class EpilogueTile, class SmemAtomTile, class DispatchPolicy, class ElementC_, class LayoutC,
          class ElementD, class LayoutD, class FusionOp>
struct HandBuiltTmaEpilogue {
  static_assert(!std::is_void_v<ElementD>, "D stored by TMA");
  using ElementC = std::conditional_t<std::is_void_v<ElementC_>, ElementD, ElementC_>;  // void: C not read
  using LayoutCOrD = std::conditional_t<std::is_void_v<ElementC_>, LayoutD, LayoutC>;
  using StrideC = cutlass::detail::TagToStrideC_t<LayoutCOrD>;
  using StrideD = cutlass::detail::TagToStrideC_t<LayoutD>;
  using FusionCallbacks = typename cutlass::epilogue::collective::detail::CallbacksBuilder<
      DispatchPolicy, FusionOp, TileShape, EpilogueTile, float>::Callbacks;
  using type = cutlass::epilogue::collective::CollectiveEpilogue<
      DispatchPolicy, TileShape, EpilogueTile, ElementC_, StrideC, ElementD, StrideD, FusionCallbacks,
      cute::SM90_TMA_LOAD,
      decltype(cutlass::epilogue::collective::detail::sm90_get_epilogue_smem_swizzle_layout_atom<StrideC, ElementC,
                                                                                                   SmemAtomTile>()),
      decltype(cutlass::epilogue::collective::detail::sm90_get_smem_load_op_for_source<StrideC, ElementC,
                                                                                        EpilogueTile>()),
      cute::SM90_TMA_STORE,
      decltype(cutlass::epilogue::collective::detail::sm90_get_epilogue_smem_swizzle_layout_atom<StrideD, ElementD,
                                                                                                   SmemAtomTile>()),
      decltype(cutlass::epilogue::collective::detail::sm90_get_smem_store_op_for_accumulator<StrideD, ElementD,
                                                                                              EpilogueTile>()),
      cute::Copy_Atom<cute::SM90_U32x4_STSM_N, cutlass::half_t>,  // the builder's for N a multiple of 16
      void>;
};

// Behind the N-split mainloop (see Epilogue above): subtiles of 64 x N, atoms for 64 x N/2, the
// builder's dispatch policy for the cooperative schedule.
template <class TileShape, class ClusterShape, class ElementC_, class LayoutC, class ElementD, class LayoutD,
          int kOutputAlignment, class FusionOp>
struct Epilogue<TileShape, ClusterShape, ElementC_, LayoutC, ElementD, LayoutD, kOutputAlignment,
                cutlass::epilogue::TmaWarpSpecializedCooperative, FusionOp, KernelTmaWarpSpecializedCooperativeSplitN>
    : HandBuiltTmaEpilogue<TileShape, cute::Shape<cute::_64, decltype(cute::get<1>(TileShape{}))>,
                           cute::Shape<cute::_64, cute::Int<cute::size<1>(TileShape{}) / 2>>,
                           decltype(cutlass::epilogue::collective::detail::sm90_get_tma_dispatch_policy<
                                    TileShape, cute::Shape<cute::_64, decltype(cute::get<1>(TileShape{}))>, ElementC_,
                                    ElementD, cutlass::epilogue::TmaWarpSpecializedCooperative>()),
                           ElementC_, LayoutC, ElementD, LayoutD, FusionOp> {};

// Behind the three-warpgroup mainloop, CUTLASS's TMA epilogue put together as its builder does
// (Sm90TmaBuilderImpl) for subtiles of all 192 rows by k3WGEpilogueN columns: the epilogue spreads
// each subtile over the 384 consumer threads by the tiled MMA's accumulator layout, so a subtile
// must span the three warpgroups' 64-row blocks (the builder's cooperative subtiles are 128 x 32,
// both warpgroups' rows; it asserts 128 rows for the cooperative schedule). Its dispatch policy
// as the builder derives it, but with the fragment a thread holds of a subtile counted over 384
// threads (the builder divides by 256 for the cooperative schedule: 24 of a 192 x 32 subtile where
// a thread holds 16, "Fragment size does not vectorize properly"). Subtiles of 192 x 16 rather
// than 32: C and D share the epilogue's shared memory in 4 subtile stages (bf16: the builder's
// ReuseSmem), 24 KB against 48, which leaves room for 4 mainloop stages of 48 KB instead of 3.
inline constexpr int k3WGEpilogueN = 16;

// sm90_get_tma_dispatch_policy's stages, reuse and delay for subtiles of the rows one repetition of
// the tiled MMA covers (64 a consumer warpgroup: 128 rows for the cooperative kernel, as CUTLASS's
// builder takes them, 192 for three warpgroups) by kSubtileN columns, its fragment counted over the
// kThreads consumer threads that share a subtile. Not all of a taller tile's rows: with 256-row
// subtiles the tf32 cr 256x128 kernel returned wrong products (session 31: rel. error 1.2e-2 -
// 2.3e-2, the size right values in wrong places give), where the bf16 256x128 kernels on the
// builder's 128-row subtiles were right; on 128-row ones it matches float64 as cuBLAS tf32 does
// (5.5e-5 at 2048x4096x8192, session 32) and is registered.
// kDelayStore: each subtile's TMA store issued after the next subtile's registers are converted, as
// CUTLASS's builder does only without a C (DelayTmaStore; allowed with C and D sharing more stages than
// stores in flight). The 16-bit persistent cooperative kernels delay (cutlass_sm90_gemm.cuh,
// kMeasuredDelayStore); stream-K ones are tuning candidates (TmaWarpSpecializedCooperativeDelayStore).
template <class TileShape, class ElementC_, class ElementD, int kThreads, int kSubtileN, bool kDelayStore = false>
struct SubtileEpiloguePolicy {
  using ElementC = std::conditional_t<std::is_void_v<ElementC_>, ElementD, ElementC_>;
  static constexpr int kSubtileM =
      cute::min(int(cute::size<0>(TileShape{})), 64 * kThreads / cutlass::NumThreadsPerWarpGroup);
  static_assert(cute::size<0>(TileShape{}) % kSubtileM == 0, "whole subtiles across M");
  using EpilogueTile = cute::Shape<cute::Int<kSubtileM>, cute::Int<kSubtileN>>;
  static_assert(cute::size<1>(TileShape{}) % kSubtileN == 0, "whole subtiles across N");
  static constexpr int kEpiTiles = cute::size<0>(TileShape{}) / kSubtileM * (cute::size<1>(TileShape{}) / kSubtileN);
  static constexpr bool kReuseSmem = !std::is_void_v<ElementC_> && cute::sizeof_bits_v<ElementC> ==
                                         cute::sizeof_bits_v<ElementD> && cute::sizeof_bits_v<ElementD> > 8;
  static constexpr bool kDelayTmaStore = std::is_void_v<ElementC_> || kDelayStore;
  static constexpr int kStagesD = cute::min(kEpiTiles, 2);
  static constexpr int kStagesC = kReuseSmem ? cute::max(cute::min(kEpiTiles, 4), kStagesD + 1) : cute::min(kEpiTiles, 4);
  static constexpr int kFragmentSize = cute::size(EpilogueTile{}) / kThreads;
  using type = cutlass::epilogue::Sm90TmaWarpSpecialized<kStagesC, kStagesD, kFragmentSize, kReuseSmem, kDelayTmaStore>;
};

// CUTLASS's TMA epilogue put together as its builder does, for subtiles of SubtileEpiloguePolicy's
// rows by kSubtileN columns shared by kThreads consumer threads.
template <class TileShape, class ElementC_, class LayoutC, class ElementD, class LayoutD, class FusionOp, int kThreads,
          int kSubtileN, bool kDelayStore = false>
struct SubtileTmaEpilogue
    : HandBuiltTmaEpilogue<
          TileShape, typename SubtileEpiloguePolicy<TileShape, ElementC_, ElementD, kThreads, kSubtileN>::EpilogueTile,
          typename SubtileEpiloguePolicy<TileShape, ElementC_, ElementD, kThreads, kSubtileN>::EpilogueTile,
          typename SubtileEpiloguePolicy<TileShape, ElementC_, ElementD, kThreads, kSubtileN, kDelayStore>::type,
          ElementC_, LayoutC, ElementD, LayoutD, FusionOp> {};

// The epilogue schedule tag of the delayed-store candidates: CUTLASS's cooperative epilogue for 16-bit C and
// D as its builder makes it (128 x 32 subtiles, 4 shared stages, 2 stores in flight), stores delayed.
struct TmaWarpSpecializedCooperativeDelayStore {};
inline constexpr int kBuilderCooperativeEpilogueN = 32;

template <class TileShape, class ClusterShape, class ElementC_, class LayoutC, class ElementD, class LayoutD,
          int kOutputAlignment, class FusionOp>
struct Epilogue<TileShape, ClusterShape, ElementC_, LayoutC, ElementD, LayoutD, kOutputAlignment,
                cutlass::epilogue::TmaWarpSpecializedCooperative, FusionOp, KernelTmaWarpSpecializedCooperative3WG>
    : SubtileTmaEpilogue<TileShape, ElementC_, LayoutC, ElementD, LayoutD, FusionOp,
                         3 * cutlass::NumThreadsPerWarpGroup, k3WGEpilogueN> {};

// fp32 D read with an fp32 C (tf32 products; CutlassSm90Gemm::kFp32Subtiles): the builder's
// cooperative subtiles of 128 x 32 keep C in four 16 KB stages, so a 128x256x32 tile's mainloop gets
// 3 stages of 48 KB; subtiles of 128 x 16 halve that (34816 bytes in all, against 67584) and leave
// room for a fourth. H100, session 27, x cuBLAS tf32, builder's / these: 4096^3 rr 0.82 / 0.87, cc
// 0.82 / 0.86, rc 0.97 / 1.00, 2048^3 rr 0.82 / 0.92, 2048x4096x8192 rc 0.985 / 1.00. The cr kernels
// (shared-memory transpose) likewise, session 28: 4096^3 0.556 / 0.546 ms, 2048x4096x8192 0.547 /
// 0.539; the tf32x3 kernels (128x128 tiles) within noise (4096^3 1.33-1.39 ms either way).
inline constexpr int kFp32EpilogueN = 16;

}  // namespace sm90_detail

}  // namespace pycutlass_gemm
