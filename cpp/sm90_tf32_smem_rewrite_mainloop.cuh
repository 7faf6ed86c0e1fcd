// Hopper tf32 mainloops that rewrite each stage in shared memory between its TMA load and the
// wgmma: TMA loads the operands' tiles as they lie in global memory, the consumer warpgroups
// rewrite them in place as K-major tf32, and wgmma reads both operands from shared memory.
//
// - Smem transpose (KernelTmaWarpSpecializedCooperativeSmemTranspose): tf32 wgmma reads only
//   K-major shared memory, so for an MN-major operand (transposed A, row-major B) CUTLASS's
//   builder sends tf32 through its register-sourced mainloop, which ran transposed A at
//   0.72-0.84x cuBLAS on the H100. Here MN-major tiles are transposed on chip; the operand never
//   leaves the chip in another layout. The rewrite overlaps the previous stage's wgmma (one batch
//   stays in flight, as in CUTLASS's SS mainloop).
// - tf32x3 (KernelTmaWarpSpecializedCooperativeTf32x3): fp32 accuracy from tf32 tensor cores.
//   TMA loads the fp32 bits unrounded; every element x is split into big = tf32(x) (rounded to
//   nearest) and small = tf32(x - big), big rewritten in place (K-major) and small written to a
//   buffer of its own, and three products are accumulated in fp32: small(A) big(B) +
//   big(A) small(B) + big(A) big(B) (small(A) small(B), below fp32's rounding, is left out). The
//   two small products are committed as one wgmma batch and big(A) big(B) as the next, so the
//   small buffer is free again (its batch done) while big(A) big(B) still runs: the next stage's
//   split overlaps it.
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
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/dispatch_policy.hpp"

namespace pycutlass_gemm {

// Mainloop schedule tags that select these mainloops in CutlassSm90Gemm (the kernel schedule
// stays CUTLASS's cooperative one).
struct KernelTmaWarpSpecializedCooperativeSmemTranspose {};
// kPromoteEvery > 0: the tensor cores sum kPromoteEvery k tiles at a time into a fresh accumulator,
// added to the running sum with fp32 adds (as CUTLASS's FP8 mainloops promote): an accumulation
// along K that rounds like FFMA, for twice the accumulator registers.
template <int kPromoteEvery = 0>
struct KernelTmaWarpSpecializedCooperativeTf32x3 {};

namespace smem_rewrite_detail {

// One operand tile of (MN x K) = (kMN x 32) 32-bit elements in stage `stage`, rewritten by
// kThreads threads in 4x4 blocks: a thread reads four 16-byte vectors through the load layout --
// along MN (one per k) when the operand is MN-major, along K (one per mn) when it is K-major --
// and, after all threads have read (the buffer is rewritten in place), writes four 16-byte
// vectors along K (one per mn) through the K-major layout.
//
// The block of thread t: linear block g = t + kThreads * i; 8 consecutive g (a quarter warp, one
// shared-memory wavefront of 16-byte accesses) take blocks a = mn/4 in 8 different 16-byte
// columns of the 128-byte swizzled rows, and b = k/4 rotated by the quarter's index: then the
// MN-major reads (swizzle chunk a ^ (k % 8)) and every K-major access (chunk b ^ (mn % 8)) of a
// quarter warp hit 8 different chunks: no bank conflicts (the SW128 atoms' swizzle XORs the
// 16-byte chunk index with the 128-byte row index mod 8; a check of these claims against CuTe's
// own layouts: tests/smem_rewrite_check.cu).
template <int kMN, int kThreads, class LoadLayout, class MmaLayout, bool kLoadMNMajor>
struct TileRewrite {
  static constexpr int kK = 32;
  static_assert(kMN % 32 == 0, "the tile's MN extent must be a multiple of 32");
  static constexpr int kBlocks = (kMN / 4) * (kK / 4);
  static_assert(kBlocks % kThreads == 0, "4x4 blocks must divide evenly among the threads");
  static constexpr int kPerThread = kBlocks / kThreads;
  static constexpr int kGroupsMN = kMN / 32;  // groups of 8 blocks along MN

  CUTE_HOST_DEVICE static int block_mn(int g) { return 4 * (8 * ((g / 8) % kGroupsMN) + g % 8); }
  CUTE_HOST_DEVICE static int block_k(int g) { return 4 * ((g % 8 + (g / 8) / kGroupsMN) % 8); }

  // The shared-memory address of (mn, k) in `stage` through layout L. The GMMA atoms' swizzle
  // (Swizzle<3,4,3>) acts on byte addresses, as TMA and wgmma apply it: XOR the 16-byte chunk
  // index (bits 4-6) with the 128-byte row index mod 8 (bits 7-9).
  template <class L>
  CUTE_HOST_DEVICE static uint32_t address(uint32_t base, int mn, int k, int stage) {
    return cute::get_swizzle_portion(L{})(base + 4u * cute::get_nonswizzle_portion(L{})(mn, k, stage));
  }
  // Where a thread's 16-byte vector j of block g is read: along MN at k + j, or along K at mn + j.
  CUTE_HOST_DEVICE static uint32_t load_address(uint32_t base, int g, int j, int stage) {
    return kLoadMNMajor ? address<LoadLayout>(base, block_mn(g), block_k(g) + j, stage)
                        : address<LoadLayout>(base, block_mn(g) + j, block_k(g), stage);
  }
  // Where its vector along K of row mn + j is written, through the K-major layout L.
  template <class L = MmaLayout>
  CUTE_HOST_DEVICE static uint32_t store_address(uint32_t base, int g, int j, int stage) {
    return address<L>(base, block_mn(g) + j, block_k(g), stage);
  }

  // One thread's blocks, as read: v[block][kk][mm] is element (mn + mm, k + kk), 32-bit words.
  using Fragment = uint32_t[kPerThread][4][4];

  CUTLASS_DEVICE static void load(uint32_t base, int stage, int thread, Fragment& v) {
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < kPerThread; ++i) {
      const int g = thread + kThreads * i;
      CUTLASS_PRAGMA_UNROLL
      for (int j = 0; j < 4; ++j) {
        uint32_t w[4];
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                     : "r"(load_address(base, g, j, stage))
                     : "memory");
        CUTLASS_PRAGMA_UNROLL
        for (int e = 0; e < 4; ++e) {
          if constexpr (kLoadMNMajor) v[i][j][e] = w[e];  // k + j, mn + e
          else v[i][e][j] = w[e];                         // mn + j, k + e
        }
      }
    }
  }

  CUTLASS_DEVICE static void store_vector(uint32_t address, uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3) {
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(address), "r"(x0), "r"(x1), "r"(x2), "r"(x3)
                 : "memory");
  }

  // The fragment, K-major, into the stage it came from.
  CUTLASS_DEVICE static void store(uint32_t base, int stage, int thread, const Fragment& v) {
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < kPerThread; ++i) {
      const int g = thread + kThreads * i;
      CUTLASS_PRAGMA_UNROLL
      for (int j = 0; j < 4; ++j)
        store_vector(store_address(base, g, j, stage), v[i][0][j], v[i][1][j], v[i][2][j], v[i][3][j]);
    }
  }

  // tf32 rounded to nearest (ties away from zero), as cuBLAS rounds its tf32 inputs: the fp32
  // bits with the low 13 mantissa bits cleared.
  CUTLASS_DEVICE static uint32_t round_tf32(uint32_t x) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "r"(x));
    return r;
  }

  // tf32x3: each element x split into big = tf32(x), K-major into the stage it came from, and
  // small = tf32(x - big) (x - big is exact in fp32), K-major into stage `small_stage` of the
  // buffer at small_base (layout SmallLayout).
  template <class SmallLayout>
  CUTLASS_DEVICE static void store_split(uint32_t base, int stage, uint32_t small_base, int small_stage,
                                         int thread, const Fragment& v) {
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < kPerThread; ++i) {
      const int g = thread + kThreads * i;
      CUTLASS_PRAGMA_UNROLL
      for (int j = 0; j < 4; ++j) {
        uint32_t big[4], small[4];
        CUTLASS_PRAGMA_UNROLL
        for (int kk = 0; kk < 4; ++kk) {
          big[kk] = round_tf32(v[i][kk][j]);
          small[kk] = round_tf32(__float_as_uint(__uint_as_float(v[i][kk][j]) - __uint_as_float(big[kk])));
        }
        store_vector(store_address(base, g, j, stage), big[0], big[1], big[2], big[3]);
        store_vector(store_address<SmallLayout>(small_base, g, j, small_stage), small[0], small[1], small[2],
                     small[3]);
      }
    }
  }
};

template <class Stride>
constexpr bool is_mn_major() {
  return cutlass::gemm::detail::is_mn_major<Stride>();
}

}  // namespace smem_rewrite_detail

// KMajor: the CollectiveMma CUTLASS's builder makes for the same element (float, tf32 math), tile,
// cluster and stage count with K-major A and B (its TiledMma, TMA atoms and K-major layouts); for
// tf32x3 its stage count leaves room for the small buffer.
// StrideA / StrideB: the user's operands (A as M x K x L, B as N x K x L, CUTLASS's convention).
// kTf32x3: split every element into three tf32 products (above); else transpose MN-major tiles.
// kPromoteEvery (tf32x3): see KernelTmaWarpSpecializedCooperativeTf32x3.
// The TMA loads of tf32x3 move raw 32-bit words (uint32_t): CUTLASS's float operands are loaded
// as tf32, which would round away the bits `small` keeps.
template <class KMajor, class StrideA, class StrideB, bool kTf32x3, int kPromoteEvery = 0>
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
  // Which operands mma() rewrites: MN-major ones, or with tf32x3 both (each is split).
  static constexpr bool kRewriteA = kTf32x3 || kMNMajorA;
  static constexpr bool kRewriteB = kTf32x3 || kMNMajorB;
  static_assert(kRewriteA || kRewriteB, "with two K-major tf32 operands use CUTLASS's SS mainloop");

  // Where TMA writes (Base's layouts) and where wgmma reads (the K-major mainloop's): one buffer.
  using LoadLayoutA = typename Base::SmemLayoutA;
  using LoadLayoutB = typename Base::SmemLayoutB;
  using MmaLayoutA = typename KMajor::SmemLayoutA;
  using MmaLayoutB = typename KMajor::SmemLayoutB;
  static_assert(cute::cosize_v<LoadLayoutA> == cute::cosize_v<MmaLayoutA> &&
                cute::cosize_v<LoadLayoutB> == cute::cosize_v<MmaLayoutB>,
                "the load and the K-major layouts must cover the same stage buffers");
  // tf32x3's small parts: one K-major tile of each operand (a "stage" mode of 1).
  using SmallLayoutA = decltype(cute::tile_to_shape(typename KMajor::SmemLayoutAtomA{},
                                                    cute::make_shape(cute::size<0>(TileShape{}), cute::size<2>(TileShape{}), cute::_1{})));
  using SmallLayoutB = decltype(cute::tile_to_shape(typename KMajor::SmemLayoutAtomB{},
                                                    cute::make_shape(cute::size<1>(TileShape{}), cute::size<2>(TileShape{}), cute::_1{})));
  static constexpr int kSmallBytes =
      kTf32x3 ? int(sizeof(float)) * int(cute::cosize_v<SmallLayoutA> + cute::cosize_v<SmallLayoutB>) : 0;

  struct SplitTensorStorage : Base::TensorStorage {
    cute::array_aligned<cutlass::tfloat32_t, cute::cosize_v<SmallLayoutA>, 1024> small_A;
    cute::array_aligned<cutlass::tfloat32_t, cute::cosize_v<SmallLayoutB>, 1024> small_B;
  };
  using TensorStorage = cute::conditional_t<kTf32x3, SplitTensorStorage, typename Base::TensorStorage>;

  static constexpr int kThreads = cute::size(TiledMma{});
  using RewriteA = smem_rewrite_detail::TileRewrite<cute::size<0>(TileShape{}), kThreads, LoadLayoutA, MmaLayoutA, kMNMajorA>;
  using RewriteB = smem_rewrite_detail::TileRewrite<cute::size<1>(TileShape{}), kThreads, LoadLayoutB, MmaLayoutB, kMNMajorB>;

  // The consumer threads meet here between reading a stage and rewriting it, and again before the
  // wgmma reads it.
  CUTLASS_DEVICE static void consumers_sync() {
    cutlass::arch::NamedBarrier::sync(kThreads, static_cast<int>(cutlass::arch::ReservedNamedBarriers::FirstUserBarrier));
  }

  // Both operands are read, then (one barrier: the buffers are rewritten in place) written.
  CUTLASS_DEVICE static void rewrite_stage(TensorStorage& shared, int stage, int thread) {
    const uint32_t smem_a = cute::cast_smem_ptr_to_uint(shared.smem_A.data());
    const uint32_t smem_b = cute::cast_smem_ptr_to_uint(shared.smem_B.data());
    typename RewriteA::Fragment a;
    typename RewriteB::Fragment b;
    if constexpr (kRewriteA) RewriteA::load(smem_a, stage, thread, a);
    if constexpr (kRewriteB) RewriteB::load(smem_b, stage, thread, b);
    consumers_sync();
    if constexpr (kTf32x3) {
      RewriteA::template store_split<SmallLayoutA>(smem_a, stage, cute::cast_smem_ptr_to_uint(shared.small_A.data()), 0,
                                                   thread, a);
      RewriteB::template store_split<SmallLayoutB>(smem_b, stage, cute::cast_smem_ptr_to_uint(shared.small_B.data()), 0,
                                                   thread, b);
    } else {
      if constexpr (kRewriteA) RewriteA::store(smem_a, stage, thread, a);
      if constexpr (kRewriteB) RewriteB::store(smem_b, stage, thread, b);
    }
    // The writes were made through the generic proxy; wgmma reads through the async proxy.
    cutlass::arch::fence_view_async_shared();
    consumers_sync();
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

    if constexpr (kTf32x3) {
      Tensor sA_small = make_tensor(make_smem_ptr(shared_tensors.small_A.data()), SmallLayoutA{});
      Tensor sB_small = make_tensor(make_smem_ptr(shared_tensors.small_B.data()), SmallLayoutB{});
      Tensor tCrA_small = thread_mma.make_fragment_A(thread_mma.partition_A(sA_small));  // (MMA,MMA_M,MMA_K,1)
      Tensor tCrB_small = thread_mma.make_fragment_B(thread_mma.partition_B(sB_small));  // (MMA,MMA_N,MMA_K,1)
      mma_tf32x3(pipeline, smem_pipe_read, accum, k_tile_count, thread_idx, shared_tensors, tiled_mma, tCrA, tCrB,
                 tCrA_small, tCrB_small);
      return;
    }

    PipelineState smem_pipe_release = smem_pipe_read;
    warpgroup_fence_operand(accum);
    {  // the first k tile: accumulators start from zero
      pipeline.consumer_wait(smem_pipe_read, pipeline.consumer_try_wait(smem_pipe_read));
      const int read_stage = smem_pipe_read.index();
      rewrite_stage(shared_tensors, read_stage, thread_idx);
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
      rewrite_stage(shared_tensors, read_stage, thread_idx);
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
  // Per k tile: split the stage (big in place, small into the small buffer), then two wgmma
  // batches: [small(A) big(B), big(A) small(B)] and [big(A) big(B)]. Waiting until one batch is
  // left in flight leaves big(A) big(B) running: the small buffer is free for the next split, and
  // the stage before this one (its last batch done) is released. With kPromoteEvery, the products
  // go to `partial`, which is added to accum (after waiting for every batch) every kPromoteEvery
  // k tiles and after the last.
  template <class FrgTensorC, class FrgA, class FrgB, class FrgASmall, class FrgBSmall>
  CUTLASS_DEVICE void mma_tf32x3(MainloopPipeline pipeline, PipelineState smem_pipe_read, FrgTensorC& accum,
                                 int k_tile_count, int thread_idx, TensorStorage& shared_tensors, TiledMma& tiled_mma,
                                 FrgA& tCrA, FrgB& tCrB, FrgASmall& tCrA_small, FrgBSmall& tCrB_small) {
    using namespace cute;
    constexpr bool kPromote = kPromoteEvery > 0;
    constexpr int kInterval = kPromote ? kPromoteEvery : 1;  // k tiles the tensor cores sum alone
    auto partial = make_fragment_like(accum);
    auto& products = [&]() -> auto& {
      if constexpr (kPromote) return partial;
      else return accum;
    }();
    if constexpr (kPromote) clear(accum);
    PipelineState smem_pipe_release = smem_pipe_read;
    warpgroup_fence_operand(accum);
    for (int tile = 0; k_tile_count > 0; --k_tile_count, ++tile) {
      pipeline.consumer_wait(smem_pipe_read, pipeline.consumer_try_wait(smem_pipe_read));
      const int read_stage = smem_pipe_read.index();
      rewrite_stage(shared_tensors, read_stage, thread_idx);
      // The products start from zero with the first k tile (of each promotion interval).
      const bool fresh = kPromote ? tile % kInterval == 0 : tile == 0;
      warpgroup_fence_operand(products);
      warpgroup_arrive();
      CUTLASS_PRAGMA_UNROLL
      for (int k_block = 0; k_block < size<2>(tCrA); ++k_block) {
        tiled_mma.accumulate_ = fresh && k_block == 0 ? GMMA::ScaleOut::Zero : GMMA::ScaleOut::One;
        cute::gemm(tiled_mma, tCrA_small(_, _, k_block, 0), tCrB(_, _, k_block, read_stage), products);
        tiled_mma.accumulate_ = GMMA::ScaleOut::One;
        cute::gemm(tiled_mma, tCrA(_, _, k_block, read_stage), tCrB_small(_, _, k_block, 0), products);
      }
      warpgroup_commit_batch();
      cute::gemm(tiled_mma, tCrA(_, _, _, read_stage), tCrB(_, _, _, read_stage), products);
      warpgroup_commit_batch();
      if (kPromote && (tile % kInterval == kInterval - 1 || k_tile_count == 1)) {
        warpgroup_wait<0>();
        warpgroup_fence_operand(products);
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < size(accum); ++i) accum(i) += partial(i);
      } else {
        warpgroup_wait<1>();
        warpgroup_fence_operand(products);
      }
      if (tile > 0) {
        pipeline.consumer_release(smem_pipe_release);  // the stage before is consumed
        ++smem_pipe_release;
      }
      ++smem_pipe_read;
    }
    warpgroup_fence_operand(accum);
  }
};

}  // namespace pycutlass_gemm
