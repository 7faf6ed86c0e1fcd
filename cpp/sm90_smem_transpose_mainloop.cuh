// A Hopper tf32 mainloop for MN-major operands: TMA loads each operand's tile in its own
// (MN-major) layout, the consumer warpgroups transpose it in place to K-major shared memory, and
// wgmma reads both operands from shared memory.
//
// Why: tf32 wgmma reads only K-major shared memory, so for an MN-major operand (transposed A,
// row-major B) CUTLASS's builder sends tf32 through its register-sourced mainloop, which ran
// transposed A at 0.72-0.84x cuBLAS on the H100 (every tile and schedule tried). Here the
// operand never leaves the chip in another layout: the transpose is a pass over the stage in
// shared memory, between the TMA load and the wgmma, and it overlaps the previous stage's wgmma
// (one batch stays in flight, as in CUTLASS's SS mainloop).
//
// Everything but mma() is CUTLASS's SS warp-specialized mainloop (CollectiveMma of
// MainloopSm90TmaGmmaWarpSpecialized), instantiated with the user's strides and an MN-major
// shared-memory atom for the TMA load of an MN-major operand; mma() reads the same stage buffers
// through the K-major layouts of the mainloop CUTLASS builds for K-major operands (KMajor), after
// transposing them. Cooperative schedule only: its two consumer warpgroups share one tile, so
// they share the transpose (a named barrier of 256 threads).
#pragma once

#include "cute/tensor.hpp"
#include "cutlass/arch/barrier.h"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/dispatch_policy.hpp"

namespace pycutlass_gemm {

// The mainloop schedule tag that selects this mainloop in CutlassSm90Gemm (the kernel schedule
// stays CUTLASS's cooperative one).
struct KernelTmaWarpSpecializedCooperativeSmemTranspose {};

namespace smem_transpose_detail {

// For one operand tile of (MN x K) = (kMN x 32) tf32 in stage `stage`: every consumer thread
// moves 4x4 blocks. It reads four 16-byte vectors along MN (one per k) through the load layout
// and, after all threads have read (the buffer is rewritten in place), writes four 16-byte
// vectors along K (one per mn) through the K-major layout.
//
// The block of thread t: linear block g = t + threads * i; 8 consecutive g (a quarter warp, one
// shared-memory wavefront of 16-byte accesses) take blocks a = mn/4 in 8 different 16-byte
// columns of the 128-byte swizzled rows, and b = k/4 rotated by the quarter's index: then both
// the reads (swizzle chunk a ^ (k % 8)) and the writes (chunk b ^ (mn % 8)) of a quarter warp hit
// 8 different chunks, so neither side has bank conflicts (the SW128 atoms' swizzle XORs the
// 16-byte chunk index with the 128-byte row index mod 8; a check of these claims against CuTe's own
// layouts: tests/smem_transpose_check.cu).
template <int kMN, int kThreads, class LoadLayout, class MmaLayout>
struct TileTranspose {
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

  // One thread's blocks, as read: [block][k][mn], 32-bit words.
  using Fragment = uint32_t[kPerThread][4][4];

  CUTLASS_DEVICE static void load(uint32_t base, int stage, int thread, Fragment& v) {
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < kPerThread; ++i) {
      const int g = thread + kThreads * i, mn = block_mn(g), k = block_k(g);
      CUTLASS_PRAGMA_UNROLL
      for (int j = 0; j < 4; ++j)
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(v[i][j][0]), "=r"(v[i][j][1]), "=r"(v[i][j][2]), "=r"(v[i][j][3])
                     : "r"(address<LoadLayout>(base, mn, k + j, stage))
                     : "memory");
    }
  }

  CUTLASS_DEVICE static void store(uint32_t base, int stage, int thread, const Fragment& v) {
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < kPerThread; ++i) {
      const int g = thread + kThreads * i, mn = block_mn(g), k = block_k(g);
      CUTLASS_PRAGMA_UNROLL
      for (int j = 0; j < 4; ++j)
        asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n"
                     :: "r"(address<MmaLayout>(base, mn + j, k, stage)),
                        "r"(v[i][0][j]), "r"(v[i][1][j]), "r"(v[i][2][j]), "r"(v[i][3][j])
                     : "memory");
    }
  }
};

template <class Stride>
constexpr bool is_mn_major() {
  return cutlass::gemm::detail::is_mn_major<Stride>();
}

}  // namespace smem_transpose_detail

// KMajor: the CollectiveMma CUTLASS's builder makes for the same element (float, tf32 math), tile,
// cluster and stage count with K-major A and B (its TiledMma, TMA atoms and K-major layouts).
// StrideA / StrideB: the user's operands (A as M x K x L, B as N x K x L, CUTLASS's convention).
template <class KMajor, class StrideA, class StrideB>
struct Sm90SmemTransposeMainloop
    : cutlass::gemm::collective::CollectiveMma<
          typename KMajor::DispatchPolicy, typename KMajor::TileShape, float, StrideA, float, StrideB,
          typename KMajor::TiledMma, typename KMajor::GmemTiledCopyA,
          cute::conditional_t<smem_transpose_detail::is_mn_major<StrideA>(),
                              cute::GMMA::Layout_MN_SW128_Atom<cutlass::tfloat32_t>,
                              typename KMajor::SmemLayoutAtomA>,
          void, cute::identity, typename KMajor::GmemTiledCopyB,
          cute::conditional_t<smem_transpose_detail::is_mn_major<StrideB>(),
                              cute::GMMA::Layout_MN_SW128_Atom<cutlass::tfloat32_t>,
                              typename KMajor::SmemLayoutAtomB>,
          void, cute::identity> {
  using Base = typename Sm90SmemTransposeMainloop::CollectiveMma;
  using typename Base::MainloopPipeline;
  using typename Base::PipelineState;
  using typename Base::Params;
  using typename Base::TensorStorage;
  using typename Base::TiledMma;
  using TileShape = typename KMajor::TileShape;

  static_assert(cute::is_same_v<typename KMajor::ElementA, float> && cute::is_same_v<typename KMajor::ElementB, float>,
                "the transposing mainloop is for tf32 (float operands)");
  static_assert(cute::size<2>(TileShape{}) == 32, "one 128-byte swizzle atom of K per tile");
  static_assert(cute::is_base_of_v<cutlass::gemm::KernelTmaWarpSpecializedCooperative,
                                   typename KMajor::DispatchPolicy::Schedule>,
                "the two consumer warpgroups of the cooperative schedule share the transpose");

  static constexpr bool kTransposeA = smem_transpose_detail::is_mn_major<StrideA>();
  static constexpr bool kTransposeB = smem_transpose_detail::is_mn_major<StrideB>();
  static_assert(kTransposeA || kTransposeB, "with two K-major operands use CUTLASS's SS mainloop");

  // Where TMA writes (Base's layouts) and where wgmma reads (the K-major mainloop's): one buffer.
  using LoadLayoutA = typename Base::SmemLayoutA;
  using LoadLayoutB = typename Base::SmemLayoutB;
  using MmaLayoutA = typename KMajor::SmemLayoutA;
  using MmaLayoutB = typename KMajor::SmemLayoutB;
  static_assert(cute::cosize_v<LoadLayoutA> == cute::cosize_v<MmaLayoutA> &&
                cute::cosize_v<LoadLayoutB> == cute::cosize_v<MmaLayoutB>,
                "the load and the K-major layouts must cover the same stage buffers");

  static constexpr int kThreads = cute::size(TiledMma{});
  using TransposeA = smem_transpose_detail::TileTranspose<cute::size<0>(TileShape{}), kThreads, LoadLayoutA, MmaLayoutA>;
  using TransposeB = smem_transpose_detail::TileTranspose<cute::size<1>(TileShape{}), kThreads, LoadLayoutB, MmaLayoutB>;

  // The consumer threads meet here between reading a stage and rewriting it, and again before the
  // wgmma reads it.
  CUTLASS_DEVICE static void consumers_sync() {
    cutlass::arch::NamedBarrier::sync(kThreads, static_cast<int>(cutlass::arch::ReservedNamedBarriers::FirstUserBarrier));
  }

  // Both operands are read, then (one barrier: the buffers are rewritten in place) written.
  CUTLASS_DEVICE static void transpose_stage(TensorStorage& shared, int stage, int thread) {
    const uint32_t smem_a = cute::cast_smem_ptr_to_uint(shared.smem_A.data());
    const uint32_t smem_b = cute::cast_smem_ptr_to_uint(shared.smem_B.data());
    typename TransposeA::Fragment a;
    typename TransposeB::Fragment b;
    if constexpr (kTransposeA) TransposeA::load(smem_a, stage, thread, a);
    if constexpr (kTransposeB) TransposeB::load(smem_b, stage, thread, b);
    consumers_sync();
    if constexpr (kTransposeA) TransposeA::store(smem_a, stage, thread, a);
    if constexpr (kTransposeB) TransposeB::store(smem_b, stage, thread, b);
    // The writes were made through the generic proxy; wgmma reads through the async proxy.
    cutlass::arch::fence_view_async_shared();
    consumers_sync();
  }

  // CUTLASS's SS mainloop (sm90_mma_tma_gmma_ss_warpspecialized.hpp), with the stage transposed
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

    PipelineState smem_pipe_release = smem_pipe_read;
    warpgroup_fence_operand(accum);
    {  // the first k tile: accumulators start from zero
      pipeline.consumer_wait(smem_pipe_read, pipeline.consumer_try_wait(smem_pipe_read));
      const int read_stage = smem_pipe_read.index();
      transpose_stage(shared_tensors, read_stage, thread_idx);
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
    // One wgmma batch in flight (K_PIPE_MMAS = 1): the transpose of stage k+1 overlaps stage k's.
    CUTLASS_PRAGMA_NO_UNROLL
    for (--k_tile_count; k_tile_count > 0; --k_tile_count) {
      pipeline.consumer_wait(smem_pipe_read, pipeline.consumer_try_wait(smem_pipe_read));
      const int read_stage = smem_pipe_read.index();
      transpose_stage(shared_tensors, read_stage, thread_idx);
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
};

}  // namespace pycutlass_gemm
