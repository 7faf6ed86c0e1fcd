// The CUTLASS collectives a CutlassSm90Gemm is assembled from, by its named choices: the
// mainloop each schedule gets (CUTLASS's builder, or the package's own: tf32 rewritten in shared
// memory, any-alignment staged / register loads, the N-split and three-warpgroup 192-row tiles)
// and the tile scheduler tag of K split in parallel. The epilogue each gets: sm90_epilogues.cuh.
#pragma once

#include <type_traits>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass_sm90_headers.cuh"  // the builder, mainloops and kernels of SM90 only
#include "cutlass/gemm/dispatch_policy.hpp"

#include "gemm_problem.h"
#include "sm90_ldg_mainloop.cuh"
#include "sm90_three_warpgroup_kernel.cuh"
#include "sm90_staged_mainloop.cuh"
#include "sm90_tf32_smem_rewrite_mainloop.cuh"
#include "sm90_tf32x3_register_a_mainloop.cuh"

namespace pycutlass_gemm {

// Tile scheduler choice: K split into equal slices that run as the batch of the persistent kernel
// (each slice's A and B reached through the batch stride), each slice's fp32 product written to
// the workspace, then summed in a fixed order with the epilogue (split_k_reduce.h). For long K over
// few output tiles (256 x 256 x 524288: 2 tiles of 128x256): every SM streams its slice of A and
// B once -- a 2x1 cluster multicasts B to both halves of the 256 rows -- and no slice waits for
// another, where stream-K's fix-up chains (deterministic) or contends (atomics).
struct SplitKParallelScheduler {};

// Mainloop schedule: CUTLASS's cooperative kernel (it picks its GemmUniversal specialization by
// is_base_of on the mainloop's DispatchPolicy::Schedule, so a derived tag keeps it), with the two
// consumer warpgroups splitting the tile's N rather than its M: each computes all M rows of one
// half of N, in wgmmas of 64 x N/2. CUTLASS's builder puts them along M in 64-row halves, so M must
// be a multiple of 128; this reaches cuBLAS's 192x192 tile (3072^3 bf16:
// nvjet_sm90_tst_192x192_64x3_2x1_v_bz_coopB, three 64 x 96 row blocks a warpgroup).
// sm90_detail::Mainloop builds its CollectiveMma by hand, sm90_detail::Epilogue its TMA epilogue.
struct KernelTmaWarpSpecializedCooperativeSplitN : cutlass::gemm::KernelTmaWarpSpecializedCooperative {};

namespace sm90_detail {

template <class Tag> struct TransposeTag;
template <> struct TransposeTag<cutlass::layout::RowMajor> { using type = cutlass::layout::ColumnMajor; };
template <> struct TransposeTag<cutlass::layout::ColumnMajor> { using type = cutlass::layout::RowMajor; };

template <class Tag> constexpr Layout layout_of() {
  return std::is_same_v<Tag, cutlass::layout::RowMajor> ? Layout::Row : Layout::Col;
}

template <class T> struct DTypeOf;
template <> struct DTypeOf<cutlass::bfloat16_t> { static constexpr DType value = DType::BF16; };
template <> struct DTypeOf<cutlass::half_t> { static constexpr DType value = DType::F16; };
template <> struct DTypeOf<float> { static constexpr DType value = DType::F32; };

// A cute stride (two of M/N/K with one of them static 1, then L): set the dynamic
// one of the first two modes to `ld` and the batch mode to `batch_stride`.
template <class Stride>
Stride make_stride_ld(int64_t ld, int64_t batch_stride) {
  Stride s{};
  using S0 = std::remove_cv_t<std::remove_reference_t<decltype(cute::get<0>(s))>>;
  if constexpr (cute::is_static<S0>::value) {
    cute::get<1>(s) = ld;
  } else {
    cute::get<0>(s) = ld;
  }
  cute::get<2>(s) = batch_stride;
  return s;
}

// The extent of (rows x cols) along its contiguous dimension, for a layout tag.
template <class Tag>
int64_t contiguous_extent(int64_t rows, int64_t cols) {
  return std::is_same_v<Tag, cutlass::layout::RowMajor> ? cols : rows;
}

// The mainloop: what CUTLASS's builder makes for the choices, or, for the schedules of
// sm90_tf32_smem_rewrite_mainloop.cuh (tf32 with an MN-major operand; tf32x3), a mainloop that
// rewrites each stage in shared memory around the builder's K-major one.
//
// tf32 with an MN-major A (rr run as D^T, cc) goes to CUTLASS's register-sourced mainloop, whose
// builder lays A out in 32-byte swizzled atoms of 8 x 8 (rs_smem_selector: "free bank conflict"
// for the LDS.32 that load A's fragments). TMA then fetches A in boxes of 8 rows' 32 bytes: 16 a
// 128x32 stage, beside one for B. In 128-byte atoms of 32 x 8 (WithWideMnMajorA) A comes in 4
// boxes of 32 x 32 (4 KB, 128-byte lines), as cuBLAS's tf32 nn kernel loads it (4 UTMALDG.4D a
// stage; its LDS of A are 2-way bank conflicted). H100, 4096^3 tf32 rr under ncu, cycles: at 1.40
// GHz ours and cuBLAS's the same (570k / 578k), at 1.70 GHz cuBLAS's the same (581k) and ours
// 12% more (651k): the small boxes did not keep up once the SMs ran faster. With 128-byte atoms,
// 574k at 1.65 GHz; ms (x cuBLAS tf32, same run), 32-byte / 128-byte atoms: 4096^3 rr 0.383 (0.88) /
// 0.332 (1.01), cc 0.384 / 0.331 (1.01), 2048^3 rr 0.055 / 0.048 (1.04), 8192^3 rr 3.222 / 2.824
// (1.01), 2048x4096x8192 rr 0.380 / 0.326 (1.01); split-K 1024x1024x16384 0.117 / 0.101 (1.28).
template <class Op>
struct WithWideMnMajorA {
  using type = Op;
};
template <int kStages, class ClusterShape, class Schedule, class TileShape, class StrideA, class StrideB,
          class TiledMma, class GmemTiledCopyA, class SmemCopyAtomA, class TransformA, class GmemTiledCopyB,
          class SmemLayoutAtomB, class SmemCopyAtomB, class TransformB>
struct WithWideMnMajorA<cutlass::gemm::collective::CollectiveMma<
    cutlass::gemm::MainloopSm90TmaGmmaRmemAWarpSpecialized<kStages, ClusterShape, Schedule>, TileShape, float, StrideA,
    float, StrideB, TiledMma, GmemTiledCopyA, cute::GMMA::Layout_MN_SW32_Atom<cute::tfloat32_t>, SmemCopyAtomA,
    TransformA, GmemTiledCopyB, SmemLayoutAtomB, SmemCopyAtomB, TransformB>> {
  // With B MN-major too (cr) the consumers transpose B's stage in shared memory before its wgmmas
  // (CUTLASS's TransposeB, which takes 32- or 128-byte atoms): B's TMA boxes widened the same way.
  // H100, ms (x cuBLAS tf32), against the package's shared-memory rewrite of both operands (the
  // "cooptranspose" tuning candidates): 2048x4096x8192 cr 0.526 (1.0x) / 0.534, 4096^3 0.532 / 0.541,
  // 8192^3 4.089 / 4.181; with B in 32-byte atoms 0.588 / 0.597 / 4.843.
  using WideB = std::conditional_t<std::is_same_v<SmemLayoutAtomB, cute::GMMA::Layout_MN_SW32_Atom<cute::tfloat32_t>>,
                                   cute::GMMA::Layout_MN_SW128_Atom<cute::tfloat32_t>, SmemLayoutAtomB>;
  using type = cutlass::gemm::collective::CollectiveMma<
      cutlass::gemm::MainloopSm90TmaGmmaRmemAWarpSpecialized<kStages, ClusterShape, Schedule>, TileShape, float,
      StrideA, float, StrideB, TiledMma, GmemTiledCopyA, cute::GMMA::Layout_MN_SW128_Atom<cute::tfloat32_t>,
      SmemCopyAtomA, TransformA, GmemTiledCopyB, WideB, SmemCopyAtomB, TransformB>;
};

template <class Element, class LayoutA, class LayoutB, int kAlignment, class TileShape, class ClusterShape,
          class StageCount, class Schedule>
struct Mainloop {
  using type = typename WithWideMnMajorA<typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, LayoutA, kAlignment, Element, LayoutB, kAlignment,
      float, TileShape, ClusterShape, StageCount, Schedule>::CollectiveOp>::type;
};

template <class LayoutA, class LayoutB, int kAlignment, class TileShape, class ClusterShape, int kCarveout,
          bool kTf32x3, int kPromoteEvery = 0, bool kOneTruncatedOperand = false, bool kRegisterA = false>
struct RewritingMainloop {
  // tf32x3 keeps kSmallSlots more (M + N) x K tiles of small parts beside the stages; with A split in
  // registers N x K, and as many for an MN-major B's big parts (kBigBInSlots).
  static constexpr bool kMNMajorB = smem_rewrite_detail::is_mn_major<cutlass::detail::TagToStrideB_t<LayoutB>>();
  static constexpr int kSmallBytes =
      kTf32x3 ? smem_rewrite_detail::kSmallSlots<kRegisterA> * int(sizeof(float)) *
                    (kRegisterA ? (kMNMajorB ? 2 : 1) * cute::size<1>(TileShape{})
                                : cute::size<0>(TileShape{}) + cute::size<1>(TileShape{})) *
                    cute::size<2>(TileShape{})
              : 0;
  using KMajor = typename Mainloop<float, cutlass::layout::RowMajor, cutlass::layout::ColumnMajor, kAlignment,
                                   TileShape, ClusterShape,
                                   cutlass::gemm::collective::StageCountAutoCarveout<kCarveout + kSmallBytes>,
                                   cutlass::gemm::KernelTmaWarpSpecializedCooperative>::type;
  using StrideA = cutlass::detail::TagToStrideA_t<LayoutA>;
  using StrideB = cutlass::detail::TagToStrideB_t<LayoutB>;
  using type = cute::conditional_t<
      kRegisterA, Sm90Tf32x3RegisterAMainloop<KMajor, StrideA, StrideB, kPromoteEvery, kOneTruncatedOperand>,
      Sm90Tf32SmemRewriteMainloop<KMajor, StrideA, StrideB, kTf32x3, kPromoteEvery, kOneTruncatedOperand>>;
};

template <class LayoutA, class LayoutB, int kAlignment, class TileShape, class ClusterShape, int kCarveout>
struct Mainloop<float, LayoutA, LayoutB, kAlignment, TileShape, ClusterShape,
                cutlass::gemm::collective::StageCountAutoCarveout<kCarveout>,
                KernelTmaWarpSpecializedCooperativeSmemTranspose>
    : RewritingMainloop<LayoutA, LayoutB, kAlignment, TileShape, ClusterShape, kCarveout, false> {};

template <class LayoutA, class LayoutB, int kAlignment, class TileShape, class ClusterShape, int kCarveout,
          int kPromoteEvery, bool kOneTruncatedOperand, bool kRegisterA>
struct Mainloop<float, LayoutA, LayoutB, kAlignment, TileShape, ClusterShape,
                cutlass::gemm::collective::StageCountAutoCarveout<kCarveout>,
                KernelTmaWarpSpecializedCooperativeTf32x3<kPromoteEvery, kOneTruncatedOperand, kRegisterA>>
    : RewritingMainloop<LayoutA, LayoutB, kAlignment, TileShape, ClusterShape, kCarveout, true, kPromoteEvery,
                        kOneTruncatedOperand, kRegisterA> {};

// CUTLASS's cp.async cooperative mainloop for 16-byte aligned operands: the kernel, tiled MMA and
// shared-memory atoms the any-alignment mainloops build on.
template <class Element, class LayoutA, class LayoutB, class TileShape, class ClusterShape, int kCarveout>
using CpAsyncMainloop =
    typename Mainloop<Element, LayoutA, LayoutB, 16 / int(sizeof(Element)), TileShape, ClusterShape,
                      cutlass::gemm::collective::StageCountAutoCarveout<kCarveout>,
                      cutlass::gemm::KernelCpAsyncWarpSpecializedCooperative>::type;

// 16-bit operands at any alignment (sm90_ldg_mainloop.cuh): the cp.async mainloop with the
// producer's loads replaced.
template <class Element, class LayoutA, class LayoutB, int kAlignment, class TileShape, class ClusterShape,
          int kCarveout>
struct Mainloop<Element, LayoutA, LayoutB, kAlignment, TileShape, ClusterShape,
                cutlass::gemm::collective::StageCountAutoCarveout<kCarveout>, KernelLdgWarpSpecializedCooperative> {
  using type = Sm90LdgMainloop<CpAsyncMainloop<Element, LayoutA, LayoutB, TileShape, ClusterShape, kCarveout>>;
};

// CpAsyncMainloop as a class whose ::type is named only when chosen (the builder fails for 192).
template <class Element, class LayoutA, class LayoutB, class TileShape, class ClusterShape, int kCarveout>
struct CpAsyncMainloopOf {
  using type = CpAsyncMainloop<Element, LayoutA, LayoutB, TileShape, ClusterShape, kCarveout>;
};

// The cp.async mainloop for a tile 192 wide: the builder cannot spread a 192-wide MN-major line's
// 24 chunks over the producer's 128 threads, so its tiled copies (which the staged mainloop does
// not use: it copies chunks itself) come from a 64-wide tile; the tiled MMA is the 192-wide tile's
// and the shared-memory atoms are the same for both widths (64-element MN-major atoms, K-major ones
// chosen by K).
template <class Element, class LayoutA, class LayoutB, class TileShape, class ClusterShape, int kCarveout>
struct CpAsyncMainloop192 {
  using Narrow = CpAsyncMainloop<Element, LayoutA, LayoutB,
                                 cute::Shape<decltype(cute::get<0>(TileShape{})), cute::_64,
                                             decltype(cute::get<2>(TileShape{}))>,
                                 ClusterShape, kCarveout>;
  using TiledMma = decltype(cute::make_tiled_mma(
      cute::GMMA::ss_op_selector<Element, Element, float, TileShape,
                                 cutlass::gemm::collective::detail::gmma_ss_tag_to_major_A<Element, LayoutA>(),
                                 cutlass::gemm::collective::detail::gmma_ss_tag_to_major_B<Element, LayoutB>()>(),
      cute::Layout<cute::Shape<cute::_2, cute::_1, cute::_1>>{}));  // two consumer warpgroups along M
  using type = cutlass::gemm::collective::CollectiveMma<
      typename Narrow::DispatchPolicy, TileShape, Element, typename Narrow::StrideA, Element, typename Narrow::StrideB,
      TiledMma, typename Narrow::GmemTiledCopyA, typename Narrow::SmemLayoutAtomA, void, cute::identity,
      typename Narrow::GmemTiledCopyB, typename Narrow::SmemLayoutAtomB, void, cute::identity>;
};

// 16-bit operands at any alignment, staged by cp.async and shifted by the consumers
// (sm90_staged_mainloop.cuh): as many staging stages as shared memory holds beside the two wgmma
// slots and the epilogue.
template <class Element, class LayoutA, class LayoutB, int kAlignment, class TileShape, class ClusterShape,
          int kCarveout>
struct Mainloop<Element, LayoutA, LayoutB, kAlignment, TileShape, ClusterShape,
                cutlass::gemm::collective::StageCountAutoCarveout<kCarveout>, KernelStagedWarpSpecializedCooperative> {
  using CpAsync = typename std::conditional_t<  // (only the chosen one is instantiated)
      cute::size<1>(TileShape{}) == 192, CpAsyncMainloop192<Element, LayoutA, LayoutB, TileShape, ClusterShape, kCarveout>,
      CpAsyncMainloopOf<Element, LayoutA, LayoutB, TileShape, ClusterShape, kCarveout>>::type;
  template <int kStages> using With = Sm90StagedMainloop<CpAsync, kStages>;
  static constexpr int kPerStage = With<4>::kSharedBytes - With<3>::kSharedBytes;
  static constexpr int kFixed = With<3>::kSharedBytes - 3 * kPerStage;
  static constexpr int kPipelineBytes = 64;  // two barriers a stage, with room
  static constexpr int kStages = (cutlass::gemm::collective::detail::sm90_smem_capacity_bytes - kCarveout - kFixed) /
                                 (kPerStage + kPipelineBytes);
  using type = With<kStages>;
};

// CUTLASS's TMA warp-specialized mainloop assembled as its builder does (TMA copies by cluster
// shape, shared-memory atoms, stages from the shared memory the epilogue leaves), but with wgmmas of
// 64 x WgmmaN laid over the consumer warpgroups by WarpgroupLayout, which the builder fixes (two
// warpgroups along M). A's atom is chosen for the whole M, which the warpgroups read in 64-row
// blocks; B's for WgmmaN, the columns one warpgroup's wgmmas read, which must be whole swizzle
// atoms. The mainloop takes any schedule tag and spreads its pipeline's consumer arrivals over
// size(TiledMma) / 128 warpgroups.
template <class Element, class LayoutA, class LayoutB, int kAlignment, class TileShape, class ClusterShape,
          class StageCount, class Schedule, class WgmmaN, class WarpgroupLayout>
struct HandBuiltTmaMainloop {
  static_assert(sizeof(Element) == 2, "for 16-bit operands (either major in shared memory)");
  static_assert(kAlignment * sizeof(Element) % 16 == 0, "TMA loads A and B: 16-byte aligned");
  using TileM = decltype(cute::get<0>(TileShape{}));
  using TileK = decltype(cute::get<2>(TileShape{}));
  static constexpr cute::GMMA::Major kMajorA =
      cutlass::gemm::collective::detail::gmma_ss_tag_to_major_A<Element, LayoutA>();
  static constexpr cute::GMMA::Major kMajorB =
      cutlass::gemm::collective::detail::gmma_ss_tag_to_major_B<Element, LayoutB>();
  using TiledMma = decltype(cute::make_tiled_mma(
      cute::GMMA::ss_op_selector<Element, Element, float, cute::Shape<cute::_64, WgmmaN, TileK>, kMajorA, kMajorB>(),
      WarpgroupLayout{}));
  using SmemLayoutAtomA =
      decltype(cutlass::gemm::collective::detail::ss_smem_selector<kMajorA, Element, TileM, TileK>());
  using SmemLayoutAtomB =
      decltype(cutlass::gemm::collective::detail::ss_smem_selector<kMajorB, Element, WgmmaN, TileK>());
  // A is shared by the CTAs of a cluster's row (multicast when the cluster has several N), B by
  // those of its column, as the builder does.
  using GmemTiledCopyA =
      decltype(cutlass::gemm::collective::detail::sm90_cluster_shape_to_tma_atom(cute::shape<1>(ClusterShape{})));
  using GmemTiledCopyB =
      decltype(cutlass::gemm::collective::detail::sm90_cluster_shape_to_tma_atom(cute::shape<0>(ClusterShape{})));
  static constexpr int kStages = cutlass::gemm::collective::detail::compute_stage_count_or_override<
      cutlass::gemm::collective::detail::sm90_smem_capacity_bytes, Element, Element, TileShape>(StageCount{});
  using type = cutlass::gemm::collective::CollectiveMma<
      cutlass::gemm::MainloopSm90TmaGmmaWarpSpecialized<kStages, ClusterShape, Schedule>, TileShape, Element,
      cutlass::detail::TagToStrideA_t<LayoutA>, Element, cutlass::detail::TagToStrideB_t<LayoutB>, TiledMma,
      GmemTiledCopyA, SmemLayoutAtomA, void, cute::identity, GmemTiledCopyB, SmemLayoutAtomB, void, cute::identity>;
};

// KernelTmaWarpSpecializedCooperativeSplitN: wgmmas of 64 x N/2, the two warpgroups along N, each
// reading its half of B's tile: an MN-major B of 96-wide halves gets the 32-element, 64-byte
// swizzle atom where the builder's 192 would get the 64-element one, across which a half would
// start mid-atom.
template <class Element, class LayoutA, class LayoutB, int kAlignment, class TileShape, class ClusterShape,
          class StageCount>
struct Mainloop<Element, LayoutA, LayoutB, kAlignment, TileShape, ClusterShape, StageCount,
                KernelTmaWarpSpecializedCooperativeSplitN>
    : HandBuiltTmaMainloop<Element, LayoutA, LayoutB, kAlignment, TileShape, ClusterShape, StageCount,
                           KernelTmaWarpSpecializedCooperativeSplitN, cute::Int<cute::size<1>(TileShape{}) / 2>,
                           cute::Layout<cute::Shape<cute::_1, cute::_2, cute::_1>>> {
  static_assert(cute::size<0>(TileShape{}) % 64 == 0 && cute::size<1>(TileShape{}) % 16 == 0,
                "M in 64-row wgmma blocks, N in two halves of a multiple of 8");
};

// KernelTmaWarpSpecializedCooperative3WG (sm90_three_warpgroup_kernel.cuh): wgmmas of 64 x N, three
// warpgroups along M (the builder's cooperative mainloop has two), each reading its 64-row block of
// A (whole 64-row swizzle atoms for an M-major A) and all of B.
template <class Element, class LayoutA, class LayoutB, int kAlignment, class TileShape, class ClusterShape,
          class StageCount>
struct Mainloop<Element, LayoutA, LayoutB, kAlignment, TileShape, ClusterShape, StageCount,
                KernelTmaWarpSpecializedCooperative3WG>
    : HandBuiltTmaMainloop<Element, LayoutA, LayoutB, kAlignment, TileShape, ClusterShape, StageCount,
                           KernelTmaWarpSpecializedCooperative3WG, decltype(cute::get<1>(TileShape{})),
                           cute::Layout<cute::Shape<cute::_3, cute::_1, cute::_1>>> {
  static_assert(cute::size<0>(TileShape{}) == 192, "three warpgroups of 64 rows");
};

template <class Schedule> struct IsTf32x3 : std::false_type {};
template <int kPromoteEvery, bool kOneTruncatedOperand, bool kRegisterA>
struct IsTf32x3<KernelTmaWarpSpecializedCooperativeTf32x3<kPromoteEvery, kOneTruncatedOperand, kRegisterA>>
    : std::true_type {};

// The math a kernel's mainloop does: 16-bit inputs exactly, fp32 inputs as tf32, or as tf32x3.
template <class Element, class Schedule>
constexpr Precision math_of() {
  if constexpr (!std::is_same_v<Element, float>) return Precision::Ieee;
  else if constexpr (IsTf32x3<Schedule>::value) return Precision::Tf32x3;
  else return Precision::Tf32;
}

}  // namespace sm90_detail

}  // namespace pycutlass_gemm
