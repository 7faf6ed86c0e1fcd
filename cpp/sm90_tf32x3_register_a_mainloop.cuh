// tf32x3 with A split in registers (KernelTmaWarpSpecializedCooperativeTf32x3<..., kRegisterA = true>):
// the mainloop of sm90_tf32_smem_rewrite_mainloop.cuh with the three products as wgmmas that take A
// from registers (RS). Each consumer thread loads its wgmma fragments of A raw from the stage (as
// TMA left it, K- or MN-major) into registers of their own, splits them once the wgmmas of the tile
// before have retired (the split parts are their operands) into big = tf32(x) (rounded, or
// truncated: kTruncatedBigA) and small = tf32(x - big), and issues them with the next tile; B is
// split in shared memory beside the wgmmas, as there. Shared
// memory then carries no A small parts and the wgmmas read only B: per 128x128x32 k tile ~176 KB
// through shared memory where the split of both moved ~272 KB (tensor work: 1536 clocks; 128 B a
// clock). H100, tf32x3 ms (x SGEMM), against both split in shared memory: 4096^3 rc 1.224 (2.19x) /
// 1.336, transposed B 1.216 / 1.325.
//
// An MN-major B (rr, cr) is transposed as it is split, its big part written to slots of its own
// beside the small parts (kBigBInSlots) rather than back into the stage: no barrier between the
// split's reads and writes, and a stage is released once split and A's fragments are loaded, a tile
// before its wgmmas retire (4096^3 rr 1.324 -> 1.270 ms, cr 1.363 -> 1.333, large K 0.685 -> 0.657).
// Three slots (kSmallSlots<true>): see sm90_tf32_tile_rewrite.cuh. Where A is MN-major (cr) its
// fragments' loads would be 2-way bank conflicted; lanes with an odd t swap the pairs they load (see
// load_a): cr 4096^3 1.318 -> 1.300 ms, transposed A 1.308 -> 1.292. (Session 29's swap of lanes
// 16-31, conflict-free as well by the same emulation, measured 1.333 -> 1.525: how it was written,
// not the swap.) cc stays on the shared-memory split (1.340 against 1.448 here, conflicted loads).
#pragma once

#include "sm90_tf32_smem_rewrite_mainloop.cuh"

namespace pycutlass_gemm {

template <class KMajor, class StrideA, class StrideB, int kPromoteEvery, bool kOneTruncatedOperand>
struct Sm90Tf32x3RegisterAMainloop
    : Sm90Tf32SmemRewriteMainloop<KMajor, StrideA, StrideB, true, kPromoteEvery, kOneTruncatedOperand, true> {
  using Rewrite = Sm90Tf32SmemRewriteMainloop<KMajor, StrideA, StrideB, true, kPromoteEvery, kOneTruncatedOperand, true>;
  using typename Rewrite::MainloopPipeline;
  using typename Rewrite::PipelineState;
  using typename Rewrite::Params;
  using typename Rewrite::TensorStorage;
  using typename Rewrite::TileShape;
  using typename Rewrite::LoadLayoutA;
  using typename Rewrite::MmaLayoutB;
  using typename Rewrite::SmallLayoutB;
  using typename Rewrite::RewriteA;
  using typename Rewrite::RewriteAddresses;
  using Rewrite::kThreads;
  using Rewrite::kSmallSlots;
  using Rewrite::kBigBInSlots;
  using Rewrite::kMNMajorA;
  using Rewrite::rewrite_addresses;
  using Rewrite::rewrite_stage;

  // A's big part: truncated where B's is rounded (an MN-major B, split in shared memory), as
  // kOneTruncatedOperand does for a K-major operand in place (its small parts stay rounded; one
  // operand's big parts rounded keep the left-out small x small term unbiased); rounded where B's is
  // the truncated one (a K-major B read where TMA left it). One instruction less an element on the
  // path between the wgmmas' retirement and the next issue. H100, ms, rounded / truncated, same run:
  // 4096^3 cr 1.334 / 1.323, transposed A 1.321 / 1.306, 8192^3 cr 10.52 / 10.38 (errors unchanged).
  static constexpr bool kTruncatedBigA = kOneTruncatedOperand && kBigBInSlots;
  // A's loads issued beside the wgmmas of the tile before (into raw_a), or after they retired. Beside
  // them where B is K-major (rc: 4096^3 1.226 -> 1.214 ms, transposed B 1.224 -> 1.201); where B is
  // MN-major its split's shared-memory traffic is heavier and the loads beside it cost more than they
  // save (rr 1.271 -> 1.283, cr 1.333 -> 1.344, A rounded in both).
  // (Also measured, not kept: the stage's offset as each load's immediate, one copy of the loads a
  // stage picked by the stage index, to save the 32 address instructions a k tile: rc 1.227 -> 1.307,
  // cr 1.337 -> 1.361 ms.)
  static constexpr bool kLoadABesideWgmmas = !kBigBInSlots;

  // The loop of Rewrite's mma_tf32x3 with the three products as wgmmas that take A from registers.
  template <class FrgTensorC>
  CUTLASS_DEVICE void mma(MainloopPipeline pipeline, PipelineState smem_pipe_read, FrgTensorC& accum,
                          int k_tile_count, int thread_idx, TensorStorage& shared_tensors, Params const&) {
    using namespace cute;
    constexpr int kMmaWarpGroups = kThreads / cutlass::NumThreadsPerWarpGroup;
    using RsTiledMma = decltype(make_tiled_mma(
        cute::SM90::GMMA::rs_op_selector<cutlass::tfloat32_t, cutlass::tfloat32_t, float, TileShape, GMMA::Major::K,
                             GMMA::Major::K>(),
        cute::Layout<cute::Shape<cute::Int<kMmaWarpGroups>, cute::_1, cute::_1>>{}));
    RsTiledMma tiled_mma;
    auto warp_group_thread_layout = make_layout(Int<kMmaWarpGroups>{}, Int<cutlass::NumThreadsPerWarpGroup>{});
    int warp_group_idx = __shfl_sync(0xFFFFFFFF, thread_idx / cutlass::NumThreadsPerWarpGroup, 0);
    auto thread_mma = tiled_mma.get_thread_slice(thread_idx);
    auto warp_group_mma = tiled_mma.get_slice(warp_group_thread_layout(warp_group_idx));

    Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), LoadLayoutA{});  // (BLK_M,BLK_K,PIPE)
    // B's big parts: in the stage (PIPE), or in slots (SLOT) with kBigBInSlots.
    Tensor sB = [&] {
      if constexpr (kBigBInSlots) return make_tensor(make_smem_ptr(shared_tensors.big_B.data()), SmallLayoutB{});
      else return make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), MmaLayoutB{});
    }();
    Tensor sB_small = make_tensor(make_smem_ptr(shared_tensors.small_B.data()), SmallLayoutB{});
    Tensor tCsA = thread_mma.partition_A(sA);                                      // (MMA,MMA_M,MMA_K,PIPE)
    Tensor tCrA_big = thread_mma.partition_fragment_A(sA(_, _, Int<0>{}));         // (MMA,MMA_M,MMA_K)
    Tensor tCrA_small = thread_mma.partition_fragment_A(sA(_, _, Int<0>{}));
    Tensor tCrB = warp_group_mma.make_fragment_B(warp_group_mma.partition_B(sB));  // (MMA,MMA_N,MMA_K,PIPE)
    Tensor tCrB_small = warp_group_mma.make_fragment_B(warp_group_mma.partition_B(sB_small));
    Tensor tCsA0 = tCsA(_, _, _, 0);  // the thread's words of A in stage 0
    auto big_bits = recast<uint32_t>(tCrA_big);
    auto small_bits = recast<uint32_t>(tCrA_small);
    static_assert(decltype(size(big_bits))::value == decltype(size(tCsA0))::value, "one word an element");

    // A's fragments of `stage`, raw (as TMA left them), into registers of their own: loaded beside
    // the wgmmas of the tile before, whose operands big_bits / small_bits still are
    // (kLoadABesideWgmmas), or after they retired; split once they retired. The stage's addresses
    // are stage 0's plus the stage's offset (see TileRewrite::stage_bytes).
    //
    // From an MN-major A (cr) lanes with an odd t load their pairs (i, register_a_pair(i)) the other
    // way round (register_a_swaps_pairs: without it each load is 2-way bank conflicted; ncu, 4096^3:
    // 128 extra wavefronts a k tile, a quarter of the kernel's shared loads), and split_a selects
    // them back.
    const bool swap_pairs = smem_rewrite_detail::register_a_swaps_pairs(kMNMajorA, thread_idx);
    uint32_t a_at[decltype(size(big_bits))::value];  // where the thread's load i reads in stage 0
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < size(big_bits); ++i) {
      const int element = swap_pairs ? smem_rewrite_detail::register_a_pair(i) : i;
      a_at[i] = cast_smem_ptr_to_uint(raw_pointer_cast(&tCsA0(element)));
    }
    uint32_t raw_a[decltype(size(big_bits))::value];
    auto load_a = [&](int stage) {
      const uint32_t offset = RewriteA::template stage_bytes<LoadLayoutA>() * stage;
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < size(big_bits); ++i) {
        asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(raw_a[i]) : "r"(a_at[i] + offset) : "memory");
      }
    };
    auto split_a = [&] {
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < size(big_bits); ++i) {
        const uint32_t x = swap_pairs ? raw_a[smem_rewrite_detail::register_a_pair(i)] : raw_a[i];
        const uint32_t b = kTruncatedBigA ? smem_rewrite_detail::truncate_tf32(x) : smem_rewrite_detail::round_tf32(x);
        big_bits(i) = b;
        small_bits(i) = smem_rewrite_detail::round_tf32(__float_as_uint(__uint_as_float(x) - __uint_as_float(b)));
      }
    };

    const RewriteAddresses at = rewrite_addresses(shared_tensors, thread_idx);
    auto partial = make_fragment_like(accum);
    clear(accum);
    PipelineState smem_pipe_release = smem_pipe_read;
    // With kBigBInSlots a stage is released as soon as it is split and A's fragments are loaded
    // (except the last, which the collective's mma_tail releases); else once its wgmmas retired.
    auto release_early = [&](bool more) {
      if constexpr (kBigBInSlots) {
        if (more) {
          pipeline.consumer_release(smem_pipe_release);
          ++smem_pipe_release;
        }
      }
    };
    pipeline.consumer_wait(smem_pipe_read, pipeline.consumer_try_wait(smem_pipe_read));
    rewrite_stage(at, smem_pipe_read.index(), 0);
    load_a(smem_pipe_read.index());
    split_a();
    release_early(k_tile_count > 1);
    warpgroup_fence_operand(accum);
    CUTLASS_PRAGMA_NO_UNROLL
    for (int tile = 0; tile < k_tile_count; ++tile) {
      const int slot = tile % kSmallSlots;
      const int read_stage = kBigBInSlots ? slot : smem_pipe_read.index();  // where B's big part is
      warpgroup_fence_operand(partial);
      warpgroup_fence_operand(big_bits);
      warpgroup_fence_operand(small_bits);
      warpgroup_arrive();
      tiled_mma.accumulate_ = tile % kPromoteEvery == 0 ? GMMA::ScaleOut::Zero : GMMA::ScaleOut::One;
      CUTLASS_PRAGMA_UNROLL
      for (int k_block = 0; k_block < size<2>(tCrA_big); ++k_block) {
        cute::gemm(tiled_mma, tCrA_small(_, _, k_block), tCrB(_, _, k_block, read_stage), partial);
        tiled_mma.accumulate_ = GMMA::ScaleOut::One;
        cute::gemm(tiled_mma, tCrA_big(_, _, k_block), tCrB_small(_, _, k_block, slot), partial);
      }
      cute::gemm(tiled_mma, tCrA_big, tCrB(_, _, _, read_stage), partial);
      warpgroup_commit_batch();
      ++smem_pipe_read;
      if (tile + 1 < k_tile_count) {  // B's split and A's loads beside this tile's wgmmas
        pipeline.consumer_wait(smem_pipe_read, pipeline.consumer_try_wait(smem_pipe_read));
        rewrite_stage(at, smem_pipe_read.index(), (tile + 1) % kSmallSlots);
        if constexpr (kLoadABesideWgmmas) load_a(smem_pipe_read.index());
      }
      warpgroup_wait<0>();
      warpgroup_fence_operand(partial);
      warpgroup_fence_operand(big_bits);
      warpgroup_fence_operand(small_bits);
      if (tile + 1 < k_tile_count) {
        if constexpr (!kLoadABesideWgmmas) load_a(smem_pipe_read.index());
        split_a();
        release_early(tile + 2 < k_tile_count);
      }
      if (tile % kPromoteEvery == kPromoteEvery - 1 || tile + 1 == k_tile_count) {
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < size(accum); ++i) accum(i) += partial(i);
      }
      if (!kBigBInSlots && tile + 1 < k_tile_count) {
        pipeline.consumer_release(smem_pipe_release);
        ++smem_pipe_release;
      }
    }
    warpgroup_fence_operand(accum);
  }
};

}  // namespace pycutlass_gemm
