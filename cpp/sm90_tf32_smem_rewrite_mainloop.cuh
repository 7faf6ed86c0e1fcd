// Hopper tf32 mainloops that rewrite each stage in shared memory between its TMA load and the
// wgmma: TMA loads the operands' tiles as they lie in global memory, the consumer warpgroups
// rewrite them in place as K-major tf32, and wgmma reads both operands from shared memory.
//
// - Smem transpose (KernelTmaWarpSpecializedCooperativeSmemTranspose): tf32 wgmma reads only
//   K-major shared memory, so for an MN-major operand (transposed A, row-major B) CUTLASS's
//   builder sends tf32 through its register-sourced mainloop, which ran transposed A at
//   0.72-0.84x cuBLAS on the H100. Here MN-major tiles are transposed on chip; the operand never
//   leaves the chip in another layout. The rewrite overlaps the previous stage's wgmma (one batch
//   stays in flight, as in CUTLASS's SS mainloop). A tuning candidate since session 28: most of
//   that register-sourced mainloop's gap was its 32-byte TMA boxes, and with them widened
//   (sm90_collectives.cuh, WithWideMnMajorA) it runs transposed A 1.5-2% faster than this.
// - tf32x3 (KernelTmaWarpSpecializedCooperativeTf32x3): fp32 accuracy from tf32 tensor cores.
//   TMA loads the fp32 bits unrounded; every element x is split into big = tf32(x) (rounded to
//   nearest) and small = tf32(x - big), big rewritten in place (K-major) and small written to a
//   buffer of its own, and three products are accumulated: small(A) big(B) + big(A) small(B) +
//   big(A) big(B) (small(A) small(B), below fp32's rounding, is left out). The tensor cores sum
//   a few k tiles at a time into a fresh accumulator that is added to the running sum with fp32
//   adds: their own accumulation truncates (on the H100 an unpromoted tf32x3 kernel measured
//   8.6e-5 against cuBLAS SGEMM's 6.0e-7 on torch.rand inputs, K = 8192: the error of plain tf32).
//   In each fresh accumulator the two small products go first, so the big(A) big(B) sums are
//   added to an accumulator of their own size, not to a running total. The small parts have two
//   buffers: the next stage's split overlaps this stage's wgmma. With kOneTruncatedOperand a
//   K-major operand's big part is x truncated to tf32, which the wgmma reads from x itself: that
//   operand's split writes only its small part (2-4% faster on the H100, the error no larger).
//
// Everything but mma() is CUTLASS's SS warp-specialized mainloop (CollectiveMma of
// MainloopSm90TmaGmmaWarpSpecialized), instantiated with the user's strides and, for an
// MN-major operand, an MN-major shared-memory atom for its TMA load; mma() reads the stage
// buffers through the K-major layouts of the mainloop CUTLASS builds for K-major operands
// (KMajor), after rewriting them. Cooperative schedule only: its two consumer warpgroups share
// one tile, so they share the rewrite (a named barrier of 256 threads).
#pragma once

#include "cute/tensor.hpp"
#include "cutlass/arch/barrier.h"
#include "cutlass_sm90_headers.cuh"  // the builder, mainloops and kernels of SM90 only
#include "cutlass/gemm/dispatch_policy.hpp"
#include "sm90_tf32_tile_rewrite.cuh"

namespace pycutlass_gemm {

// Mainloop schedule tags that select these mainloops in CutlassSm90Gemm (the kernel schedule
// stays CUTLASS's cooperative one).
struct KernelTmaWarpSpecializedCooperativeSmemTranspose {};
// kPromoteEvery: the tensor cores sum kPromoteEvery k tiles at a time into a fresh accumulator,
// added to the running sum with fp32 adds (as CUTLASS's FP8 mainloops promote): an accumulation
// along K that rounds like FFMA, for twice the accumulator registers.
// kOneTruncatedOperand: one K-major operand's big part is its fp32 word as TMA loaded it, since
// tf32 wgmma reads only a word's top 19 bits (big = x truncated to tf32, not written back), and its
// small part is tf32(x - big); the other operand keeps big = tf32(x) rounded to nearest, whose small
// parts have zero mean, so the small(A) small(B) term left out stays unbiased (truncating both
// measured 2.25e-7 on torch.rand against cuBLAS SGEMM's 2.17e-7: that term's mean, left out).
// kRegisterA: A is split in registers, not in shared memory (sm90_tf32x3_register_a_mainloop.cuh).
template <int kPromoteEvery, bool kOneTruncatedOperand = false, bool kRegisterA = false>
struct KernelTmaWarpSpecializedCooperativeTf32x3 {};
// Whether a mainloop schedule is one of the tf32x3 ones (Sm90Priority tells tf32x3 from tf32 by it).
template <class Schedule>
inline constexpr bool kIsTf32x3Schedule = false;
template <int kPromoteEvery, bool kOneTruncatedOperand, bool kRegisterA>
inline constexpr bool
    kIsTf32x3Schedule<KernelTmaWarpSpecializedCooperativeTf32x3<kPromoteEvery, kOneTruncatedOperand, kRegisterA>> = true;

// KMajor: the CollectiveMma CUTLASS's builder makes for the same element (float, tf32 math), tile,
// cluster and stage count with K-major A and B (its TiledMma, TMA atoms and K-major layouts); for
// tf32x3 its stage count leaves room for the small buffer.
// StrideA / StrideB: the user's operands (A as M x K x L, B as N x K x L, CUTLASS's convention).
// kTf32x3: split every element into three tf32 products (above); else transpose MN-major tiles.
// kPromoteEvery (tf32x3): see KernelTmaWarpSpecializedCooperativeTf32x3.
// The TMA loads of tf32x3 move raw 32-bit words (uint32_t): CUTLASS's float operands are loaded
// as tf32, which would round away the bits `small` keeps.
// kOneTruncatedOperand, kRegisterA (tf32x3): see KernelTmaWarpSpecializedCooperativeTf32x3.
template <class KMajor, class StrideA, class StrideB, bool kTf32x3, int kPromoteEvery = 0,
          bool kOneTruncatedOperand = false, bool kRegisterA = false>
struct Sm90Tf32SmemRewriteMainloop
    : cutlass::gemm::collective::CollectiveMma<
          typename KMajor::DispatchPolicy, typename KMajor::TileShape, cute::conditional_t<kTf32x3, uint32_t, float>,
          StrideA, cute::conditional_t<kTf32x3, uint32_t, float>, StrideB, typename KMajor::TiledMma,
          typename KMajor::GmemTiledCopyA,
          cute::conditional_t<smem_rewrite_detail::is_mn_major<StrideA>(),
                              cute::GMMA::Layout_MN_SW128_Atom<cutlass::tfloat32_t>,
                              typename KMajor::SmemLayoutAtomA>,
          void, cute::identity, typename KMajor::GmemTiledCopyB,
          cute::conditional_t<smem_rewrite_detail::is_mn_major<StrideB>(),
                              cute::GMMA::Layout_MN_SW128_Atom<cutlass::tfloat32_t>,
                              typename KMajor::SmemLayoutAtomB>,
          void, cute::identity> {
  using Base = typename Sm90Tf32SmemRewriteMainloop::CollectiveMma;
  using typename Base::MainloopPipeline;
  using typename Base::PipelineState;
  using typename Base::Params;
  using typename Base::TiledMma;
  using TileShape = typename KMajor::TileShape;

  static_assert(cute::is_same_v<typename KMajor::ElementA, float> && cute::is_same_v<typename KMajor::ElementB, float>,
                "the transposing mainloop is for tf32 (float operands)");
  static_assert(cute::size<2>(TileShape{}) == 32, "one 128-byte swizzle atom of K per tile");
  static_assert(cute::is_base_of_v<cutlass::gemm::KernelTmaWarpSpecializedCooperative,
                                   typename KMajor::DispatchPolicy::Schedule>,
                "the two consumer warpgroups of the cooperative schedule share the rewrite");

  static constexpr bool kMNMajorA = smem_rewrite_detail::is_mn_major<StrideA>();
  static constexpr bool kMNMajorB = smem_rewrite_detail::is_mn_major<StrideB>();
  // Which operands mma() rewrites: MN-major ones, or with tf32x3 both (each is split), A only when
  // it is not split in registers.
  static constexpr bool kRewriteA = kTf32x3 ? !kRegisterA : kMNMajorA;
  static constexpr bool kRewriteB = kTf32x3 || kMNMajorB;
  // tf32x3 with one truncated operand: B if K-major, else A if K-major (rr); with both MN-major (cr)
  // both are rewritten anyway and keep rounding. A split in registers is truncated there where B
  // rounds (Sm90Tf32x3RegisterAMainloop::kTruncatedBigA).
  static constexpr bool kTruncatedB = kTf32x3 && kOneTruncatedOperand && !kMNMajorB;
  static constexpr bool kTruncatedA =
      kTf32x3 && kOneTruncatedOperand && !kRegisterA && !kMNMajorA && !kTruncatedB;
  static_assert(!kOneTruncatedOperand || kTf32x3, "only tf32x3 splits operands");
  static_assert(!kRegisterA || kTf32x3, "only tf32x3 splits A in registers");
  // With A split in registers an MN-major B's big part goes to slots of its own beside the small
  // parts, not back into the stage (Sm90Tf32x3RegisterAMainloop).
  static constexpr bool kBigBInSlots = kTf32x3 && kRegisterA && kMNMajorB;
  static_assert(kRewriteA || kRewriteB, "with two K-major tf32 operands use CUTLASS's SS mainloop");
  static_assert(!kTf32x3 || kPromoteEvery > 0, "tf32x3 needs fp32 sums: the tensor cores' own accumulation truncates");

  // Where TMA writes (Base's layouts) and where wgmma reads (the K-major mainloop's): one buffer.
  using LoadLayoutA = typename Base::SmemLayoutA;
  using LoadLayoutB = typename Base::SmemLayoutB;
  using MmaLayoutA = typename KMajor::SmemLayoutA;
  using MmaLayoutB = typename KMajor::SmemLayoutB;
  static_assert(cute::cosize_v<LoadLayoutA> == cute::cosize_v<MmaLayoutA> &&
                cute::cosize_v<LoadLayoutB> == cute::cosize_v<MmaLayoutB>,
                "the load and the K-major layouts must cover the same stage buffers");
  // A K-major B is read and written back through the same addresses (split_stage).
  static_assert(kMNMajorB || cute::is_same_v<LoadLayoutB, MmaLayoutB>,
                "a K-major operand's load and K-major layouts must be one layout");
  // tf32x3's small parts: kSmallSlots K-major tiles of each operand.
  static constexpr int kSmallSlots = smem_rewrite_detail::kSmallSlots<kRegisterA>;
  using SmallLayoutA = decltype(cute::tile_to_shape(typename KMajor::SmemLayoutAtomA{},
                                                    cute::make_shape(cute::size<0>(TileShape{}), cute::size<2>(TileShape{}), cute::Int<kSmallSlots>{})));
  using SmallLayoutB = decltype(cute::tile_to_shape(typename KMajor::SmemLayoutAtomB{},
                                                    cute::make_shape(cute::size<1>(TileShape{}), cute::size<2>(TileShape{}), cute::Int<kSmallSlots>{})));

  struct SplitTensorStorage : Base::TensorStorage {
    cute::array_aligned<cutlass::tfloat32_t, cute::cosize_v<SmallLayoutA>, 1024> small_A;
    cute::array_aligned<cutlass::tfloat32_t, cute::cosize_v<SmallLayoutB>, 1024> small_B;
  };
  struct SplitBTensorStorage : Base::TensorStorage {  // A split in registers
    cute::array_aligned<cutlass::tfloat32_t, cute::cosize_v<SmallLayoutB>, 1024> small_B;
  };
  struct SplitBigBTensorStorage : SplitBTensorStorage {  // and B's big parts in slots (kBigBInSlots)
    cute::array_aligned<cutlass::tfloat32_t, cute::cosize_v<SmallLayoutB>, 1024> big_B;
  };
  using TensorStorage = cute::conditional_t<
      !kTf32x3, typename Base::TensorStorage,
      cute::conditional_t<kRegisterA, cute::conditional_t<kBigBInSlots, SplitBigBTensorStorage, SplitBTensorStorage>,
                          SplitTensorStorage>>;

  static constexpr int kThreads = cute::size(TiledMma{});
  using RewriteA = smem_rewrite_detail::TileRewrite<cute::size<0>(TileShape{}), kThreads, LoadLayoutA, MmaLayoutA, kMNMajorA>;
  using RewriteB = smem_rewrite_detail::TileRewrite<cute::size<1>(TileShape{}), kThreads, LoadLayoutB, MmaLayoutB, kMNMajorB>;

  // The consumer threads meet here between reading a stage and rewriting it, and again before the
  // wgmma reads it.
  CUTLASS_DEVICE static void consumers_sync() {
    cutlass::arch::NamedBarrier::sync(kThreads, static_cast<int>(cutlass::arch::ReservedNamedBarriers::FirstUserBarrier));
  }

  // A consumer thread's rewrite addresses in stage 0 (and slot 0 of the small buffer), computed
  // once per mma() call: every stage is at a fixed offset from them (TileRewrite::stage_bytes).
  struct RewriteAddresses {
    typename RewriteA::Addresses load_a, store_a, small_a;
    typename RewriteB::Addresses load_b, store_b, small_b;
  };
  CUTLASS_DEVICE static RewriteAddresses rewrite_addresses(TensorStorage& shared, int thread) {
    RewriteAddresses at;
    const uint32_t smem_a = cute::cast_smem_ptr_to_uint(shared.smem_A.data());
    const uint32_t smem_b = cute::cast_smem_ptr_to_uint(shared.smem_B.data());
    if constexpr (kRewriteA) {
      RewriteA::load_addresses(smem_a, thread, at.load_a);
      if constexpr (!kTruncatedA) RewriteA::store_addresses(smem_a, thread, at.store_a);
    }
    if constexpr (kRewriteB) {
      RewriteB::load_addresses(smem_b, thread, at.load_b);
      if constexpr (kBigBInSlots)
        RewriteB::template store_addresses<SmallLayoutB>(cute::cast_smem_ptr_to_uint(shared.big_B.data()), thread,
                                                         at.store_b);
      else if constexpr (!kTruncatedB)
        RewriteB::store_addresses(smem_b, thread, at.store_b);
    }
    if constexpr (kTf32x3 && kRewriteA)
      RewriteA::template store_addresses<SmallLayoutA>(cute::cast_smem_ptr_to_uint(shared.small_A.data()), thread,
                                                       at.small_a);
    if constexpr (kTf32x3) {
      RewriteB::template store_addresses<SmallLayoutB>(cute::cast_smem_ptr_to_uint(shared.small_B.data()), thread,
                                                       at.small_b);
    }
    return at;
  }

  // Both operands are read, then (one barrier: the buffers are rewritten in place) written;
  // tf32x3's small parts to slot `small_slot`.
  CUTLASS_DEVICE static void rewrite_stage(const RewriteAddresses& at, int stage, int small_slot = 0) {
    typename RewriteA::Fragment a;
    typename RewriteB::Fragment b;
    if constexpr (kTf32x3) {
      split_stage(at, stage, small_slot, a, b);
    } else {
      if constexpr (kRewriteA) RewriteA::load(at.load_a, RewriteA::template stage_bytes<LoadLayoutA>() * stage, a);
      if constexpr (kRewriteB) RewriteB::load(at.load_b, RewriteB::template stage_bytes<LoadLayoutB>() * stage, b);
      consumers_sync();
      if constexpr (kRewriteA) RewriteA::store(at.store_a, RewriteA::template stage_bytes<MmaLayoutA>() * stage, a);
      if constexpr (kRewriteB) RewriteB::store(at.store_b, RewriteB::template stage_bytes<MmaLayoutB>() * stage, b);
    }
    // The writes were made through the generic proxy; wgmma reads through the async proxy.
    cutlass::arch::fence_view_async_shared();
    consumers_sync();
  }

  // tf32x3's split of a stage. With two small slots every consumer has read before any writes: an
  // MN-major operand is transposed in place (a thread overwrites what others read), and the slot
  // written was read by the other warpgroup's wgmmas of the tile before. With three (A split in
  // registers) B needs no barrier there: a thread writes a K-major B back only where it read it
  // (nothing when truncated), an MN-major B's big part to a slot of its own (kBigBInSlots), and the
  // small parts to a slot no wgmma in flight reads.
  CUTLASS_DEVICE static void split_stage(const RewriteAddresses& at, int stage, int small_slot,
                                         typename RewriteA::Fragment& a, typename RewriteB::Fragment& b) {
    const uint32_t small_a_offset = kRewriteA ? RewriteA::template stage_bytes<SmallLayoutA>() * small_slot : 0;
    const uint32_t small_b_offset = RewriteB::template stage_bytes<SmallLayoutB>() * small_slot;
    const uint32_t a_offset = RewriteA::template stage_bytes<MmaLayoutA>() * stage;
    const uint32_t b_offset = kBigBInSlots ? small_b_offset : RewriteB::template stage_bytes<MmaLayoutB>() * stage;
    auto load_a = [&] {
      if constexpr (kRewriteA) RewriteA::load(at.load_a, RewriteA::template stage_bytes<LoadLayoutA>() * stage, a);
    };
    auto load_b = [&] { RewriteB::load(at.load_b, RewriteB::template stage_bytes<LoadLayoutB>() * stage, b); };
    auto store_a = [&] {
      if constexpr (!kRewriteA) return;
      else if constexpr (kTruncatedA) RewriteA::store_small_of_truncated(at.small_a, small_a_offset, a);
      else RewriteA::store_split(at.store_a, a_offset, at.small_a, small_a_offset, a);
    };
    auto store_b = [&] {
      if constexpr (kTruncatedB) RewriteB::store_small_of_truncated(at.small_b, small_b_offset, b);
      else RewriteB::store_split(at.store_b, b_offset, at.small_b, small_b_offset, b);
    };
    if constexpr (kSmallSlots < 3 || (kMNMajorB && !kBigBInSlots)) {
      load_a();
      load_b();
      consumers_sync();
      store_a();
      store_b();
    } else {
      static_assert(!kRewriteA, "three slots are for A split in registers");
      load_b();
      store_b();
    }
  }

  // CUTLASS's SS mainloop (sm90_mma_tma_gmma_ss_warpspecialized.hpp), with each stage rewritten
  // after its TMA load has landed and the K-major layouts for the wgmma descriptors.
  template <class FrgTensorC>
  CUTLASS_DEVICE void mma(MainloopPipeline pipeline, PipelineState smem_pipe_read, FrgTensorC& accum,
                          int k_tile_count, int thread_idx, TensorStorage& shared_tensors, Params const&) {
    using namespace cute;
    Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), MmaLayoutA{});  // (BLK_M,BLK_K,PIPE)
    Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), MmaLayoutB{});  // (BLK_N,BLK_K,PIPE)

    constexpr int kMmaWarpGroups = kThreads / cutlass::NumThreadsPerWarpGroup;
    auto warp_group_thread_layout = make_layout(Int<kMmaWarpGroups>{}, Int<cutlass::NumThreadsPerWarpGroup>{});
    int warp_group_idx = __shfl_sync(0xFFFFFFFF, thread_idx / cutlass::NumThreadsPerWarpGroup, 0);
    TiledMma tiled_mma;
    auto thread_mma = tiled_mma.get_slice(warp_group_thread_layout(warp_group_idx));
    Tensor tCrA = thread_mma.make_fragment_A(thread_mma.partition_A(sA));  // (MMA,MMA_M,MMA_K,PIPE)
    Tensor tCrB = thread_mma.make_fragment_B(thread_mma.partition_B(sB));  // (MMA,MMA_N,MMA_K,PIPE)

    static_assert(!kRegisterA, "A split in registers: Sm90Tf32x3RegisterAMainloop's mma()");
    if constexpr (kTf32x3) {
      Tensor sA_small = make_tensor(make_smem_ptr(shared_tensors.small_A.data()), SmallLayoutA{});
      Tensor sB_small = make_tensor(make_smem_ptr(shared_tensors.small_B.data()), SmallLayoutB{});
      Tensor tCrA_small = thread_mma.make_fragment_A(thread_mma.partition_A(sA_small));  // (MMA,MMA_M,MMA_K,SLOT)
      Tensor tCrB_small = thread_mma.make_fragment_B(thread_mma.partition_B(sB_small));  // (MMA,MMA_N,MMA_K,SLOT)
      mma_tf32x3(pipeline, smem_pipe_read, accum, k_tile_count, rewrite_addresses(shared_tensors, thread_idx),
                 tiled_mma, tCrA, tCrB, tCrA_small, tCrB_small);
      return;
    }

    const RewriteAddresses at = rewrite_addresses(shared_tensors, thread_idx);
    PipelineState smem_pipe_release = smem_pipe_read;
    warpgroup_fence_operand(accum);
    {  // the first k tile: accumulators start from zero
      pipeline.consumer_wait(smem_pipe_read, pipeline.consumer_try_wait(smem_pipe_read));
      const int read_stage = smem_pipe_read.index();
      rewrite_stage(at, read_stage);
      warpgroup_arrive();
      tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;
      CUTLASS_PRAGMA_UNROLL
      for (int k_block = 0; k_block < size<2>(tCrA); ++k_block) {
        cute::gemm(tiled_mma, tCrA(_, _, k_block, read_stage), tCrB(_, _, k_block, read_stage), accum);
        tiled_mma.accumulate_ = GMMA::ScaleOut::One;
      }
      warpgroup_commit_batch();
      ++smem_pipe_read;
    }
    warpgroup_fence_operand(accum);
    // One wgmma batch in flight (K_PIPE_MMAS = 1): the rewrite of stage k+1 overlaps stage k's.
    CUTLASS_PRAGMA_NO_UNROLL
    for (--k_tile_count; k_tile_count > 0; --k_tile_count) {
      pipeline.consumer_wait(smem_pipe_read, pipeline.consumer_try_wait(smem_pipe_read));
      const int read_stage = smem_pipe_read.index();
      rewrite_stage(at, read_stage);
      warpgroup_fence_operand(accum);
      warpgroup_arrive();
      cute::gemm(tiled_mma, tCrA(_, _, _, read_stage), tCrB(_, _, _, read_stage), accum);
      warpgroup_commit_batch();
      warpgroup_wait<1>();
      warpgroup_fence_operand(accum);
      pipeline.consumer_release(smem_pipe_release);  // the stage before is consumed
      ++smem_pipe_read;
      ++smem_pipe_release;
    }
    warpgroup_fence_operand(accum);
  }

 private:
  // Software-pipelined by one k tile: the wgmma of tile t (its three products into `partial`,
  // fresh every kPromoteEvery tiles) runs while the consumers split tile t + 1 (big in place, small
  // into the other slot); then every wgmma is waited for, `partial` is added to accum at the end of
  // each promotion interval, and stage t is released (the last one by the collective's mma_tail).
  template <class FrgTensorC, class FrgA, class FrgB, class FrgASmall, class FrgBSmall>
  CUTLASS_DEVICE void mma_tf32x3(MainloopPipeline pipeline, PipelineState smem_pipe_read, FrgTensorC& accum,
                                 int k_tile_count, const RewriteAddresses& at, TiledMma& tiled_mma,
                                 FrgA& tCrA, FrgB& tCrB, FrgASmall& tCrA_small, FrgBSmall& tCrB_small) {
    using namespace cute;
    auto partial = make_fragment_like(accum);
    clear(accum);
    PipelineState smem_pipe_release = smem_pipe_read;
    pipeline.consumer_wait(smem_pipe_read, pipeline.consumer_try_wait(smem_pipe_read));
    rewrite_stage(at, smem_pipe_read.index(), 0);
    warpgroup_fence_operand(accum);
    CUTLASS_PRAGMA_NO_UNROLL
    for (int tile = 0; tile < k_tile_count; ++tile) {
      const int read_stage = smem_pipe_read.index();
      const int slot = tile % kSmallSlots;
      warpgroup_fence_operand(partial);
      warpgroup_arrive();
      tiled_mma.accumulate_ = tile % kPromoteEvery == 0 ? GMMA::ScaleOut::Zero : GMMA::ScaleOut::One;
      CUTLASS_PRAGMA_UNROLL
      for (int k_block = 0; k_block < size<2>(tCrA); ++k_block) {
        cute::gemm(tiled_mma, tCrA_small(_, _, k_block, slot), tCrB(_, _, k_block, read_stage), partial);
        tiled_mma.accumulate_ = GMMA::ScaleOut::One;
        cute::gemm(tiled_mma, tCrA(_, _, k_block, read_stage), tCrB_small(_, _, k_block, slot), partial);
      }
      cute::gemm(tiled_mma, tCrA(_, _, _, read_stage), tCrB(_, _, _, read_stage), partial);
      warpgroup_commit_batch();
      ++smem_pipe_read;
      if (tile + 1 < k_tile_count) {  // the other slot's wgmma finished in the previous iteration
        pipeline.consumer_wait(smem_pipe_read, pipeline.consumer_try_wait(smem_pipe_read));
        rewrite_stage(at, smem_pipe_read.index(), (tile + 1) % kSmallSlots);
      }
      warpgroup_wait<0>();
      warpgroup_fence_operand(partial);
      if (tile % kPromoteEvery == kPromoteEvery - 1 || tile + 1 == k_tile_count) {
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < size(accum); ++i) accum(i) += partial(i);
      }
      if (tile + 1 < k_tile_count) {
        pipeline.consumer_release(smem_pipe_release);
        ++smem_pipe_release;
      }
    }
    warpgroup_fence_operand(accum);
  }
};

}  // namespace pycutlass_gemm
