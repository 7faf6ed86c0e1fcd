// A Hopper (wgmma) mainloop for 16-bit operands at any alignment: the producer copies each line of
// a tile as the 4-byte words that hold it into a staging buffer (cp.async, asynchronous, several
// stages in flight), and the consumer warpgroups shift and swizzle the staged lines into the layout
// wgmma reads while the previous k tile's wgmma runs.
//
// Why: TMA needs 16-byte strides and cp.async moves whole 4-byte words, so with K = 777 or N = 1001
// no copy engine can place a line's elements where wgmma wants them: a line that starts 2 bytes past
// a word has every pair of elements straddling two words. cp.async can still move the words (a
// line's 64 elements lie in 33 of them); moving the elements into place is a shift of 2 bytes,
// done on chip. sm90_ldg_mainloop.cuh did it in the producer, through registers: one warpgroup at
// 168 registers kept one stage in flight and issued ~20 instructions a pair (0.84x cuBLAS at
// 1000x3000x777 rr). Here the producer only issues copies, and the 256 consumer threads, idle while
// the tensor cores work, do the shift (two shared loads, a byte_perm and a store a pair), as
// sm90_tf32_smem_rewrite_mainloop.cuh transposes tf32 tiles.
//
// Stages: each holds the staged lines of A and B (kRowWords words a line) and which lines start 2
// bytes past a word (the same for every line of one parity: lines are ld apart). The consumers
// release a stage as soon as it is rewritten, into one of two slots in wgmma's layout (CUTLASS's
// swizzled K- or MN-major atoms): slot t % 2 is rewritten while k tile t - 1's wgmma reads the
// other. Elements outside the problem are zero (words partly outside copy 2 bytes and zero-fill the
// rest; words wholly outside are zero-filled), so ragged M, N and K need nothing more.
//
// The producer arrives on a stage only once its copies have landed (cp.async.wait_group, a lag of
// kStages - 2 stages), with an ordinary release arrive: the consumers read the staging buffer with
// ordinary loads, and wgmma reads only the slots, written by the consumers and fenced
// (fence.proxy.async) before a named barrier. (Arriving from the copies themselves,
// cp.async.mbarrier.arrive.noinc with the flags copied from a table in global memory, read stale
// staging on the H100: 2.2e-2 vs float64, and hung; not understood yet.)
//
// Measured on the H100 (notes/measurements.md, session 12; a tuning candidate): 1.16-1.24x cuBLAS
// where A's rows start on words (odd N), behind the SM80 kernels where they straddle (K = 777);
// ncu: bound by instruction issue (~7200 warp instructions a 128x128x64 k tile), not by memory.
//
// GemmUniversal runs it as CUTLASS's cp.async warp-specialized cooperative kernel (one producer
// warpgroup of 128 threads, two consumer warpgroups); Base is the CollectiveMma CUTLASS's builder
// makes for that kernel with 16-byte alignment, of which the tiled MMA and shared-memory atoms are
// used.
#pragma once

#include <cstdint>

#include "cute/tensor.hpp"
#include "cutlass/arch/barrier.h"
#include "cutlass/arch/memory_sm80.h"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/pipeline/pipeline.hpp"
#include "sm90_unaligned_mainloop_base.cuh"

namespace pycutlass_gemm {

// The mainloop schedule tag that selects this mainloop in CutlassSm90Gemm.
struct KernelStagedWarpSpecializedCooperative {};

namespace staged_detail {

using unaligned_detail::kLineChunk;  // elements a consumer warp moves at a time
using unaligned_detail::kProducerWarps;
constexpr int kConsumerWarps = 8;   // two warpgroups

// One operand's tile (kMN x kK: M x K of A or N x K of B), K-major or MN-major in global memory.
// A line is a row of a K-major operand or a k-row of an MN-major one: kContiguous elements.
template <class Element, int kMN, int kK, bool kKMajor>
struct StagedOperand {
  static_assert(sizeof(Element) == 2, "pairs of 16-bit elements in a 4-byte word");
  static constexpr int kContiguous = kKMajor ? kK : kMN;
  static constexpr int kLines = kKMajor ? kMN : kK;
  static_assert(kContiguous % kLineChunk == 0, "lines are moved in chunks of 64 elements");
  static constexpr int kChunks = kContiguous / kLineChunk;
  static constexpr int kMainWords = kContiguous / 2;       // words a line starting on a word needs
  static constexpr int kRowWords = kMainWords + 1;         // one more when it starts 2 bytes past one
  static constexpr int kStagingWords = kLines * kRowWords;
  static constexpr int kLinesPerProducerWarp = kLines / kProducerWarps;
  static_assert(kLines % kProducerWarps == 0 && kLinesPerProducerWarp <= 32, "the last words: a lane a line");
  static_assert(kMainWords % 32 == 0, "a line's words are copied 32 at a time");
  static constexpr int kSteps = kLines * kChunks / kConsumerWarps;  // chunks a consumer warp rewrites
  static_assert((kLines * kChunks) % kConsumerWarps == 0, "every consumer warp rewrites as many chunks");
  // Consumer steps s and s + kPeriod are 8 lines apart: one swizzle atom further along, at the same
  // place in it, and 8 staged rows further.
  static constexpr int kPeriod = kChunks;

  CUTLASS_DEVICE static int line_extent(int mn_valid, int k_valid) { return kKMajor ? mn_valid : k_valid; }
  CUTLASS_DEVICE static int along_extent(int mn_valid, int k_valid) {
    const int valid = kKMajor ? k_valid : mn_valid;
    return valid < kContiguous ? valid : int(kContiguous);
  }

  // Whether line `line` of the tile starts 2 bytes past a word.
  CUTLASS_DEVICE static uint32_t straddles(const Element* tile, int ld, int line) {
    return (reinterpret_cast<uintptr_t>(tile + line * ld) >> 1) & 1;
  }
  // The first of the words holding line `line`.
  CUTLASS_DEVICE static const char* first_word(const Element* tile, int ld, int line) {
    return reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(tile + line * ld) & ~uintptr_t(3));
  }

  // Producer: copies the words holding each line of the tile (tile: its first element; ld: the
  // leading dimension in elements, 128 * ld fits an int) to the staging stage at shared address
  // `staging`. Word j of a line holds its elements 2 j - s and 2 j + 1 - s (s: the line starts 2
  // bytes past a word); a word is read only when it holds an element inside the problem.
  CUTLASS_DEVICE static void copy(const Element* tile, int ld, int mn_valid, int k_valid, int warp, int lane,
                                  uint32_t staging) {
    const int lines = line_extent(mn_valid, k_valid), along_valid = along_extent(mn_valid, k_valid);
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < kLinesPerProducerWarp; ++i) {
      const int line = warp + kProducerWarps * i;
      const int s = straddles(tile, ld, line);
      const char* words = first_word(tile, ld, line);
      const uint32_t row = staging + uint32_t(line * kRowWords * 4);
      CUTLASS_PRAGMA_UNROLL
      for (int it = 0; it < kMainWords / 32; ++it) {
        const int j = lane + 32 * it, e = 2 * j - s;
        const int bytes = line >= lines ? 0 : e + 1 < along_valid ? 4 : e < along_valid ? 2 : 0;
        copy_word(row + 4 * j, words + 4 * j, bytes);
      }
    }
    if (lane < kLinesPerProducerWarp) {  // word kMainWords of line warp + 4 lane: element kContiguous - 1 if s
      const int line = warp + kProducerWarps * lane;
      const int s = straddles(tile, ld, line);
      const int e = kContiguous - s;  // the word's first element; with s = 0 none of the line's
      const int bytes = line < lines && s && e < along_valid ? 2 : 0;
      copy_word(staging + uint32_t((line * kRowWords + kMainWords) * 4), first_word(tile, ld, line) + 4 * kMainWords,
                bytes);
    }
  }

  // bytes (4, 2 or 0) of the word at src to shared memory at dst, the rest zero-filled.
  CUTLASS_DEVICE static void copy_word(uint32_t dst, const char* src, int bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
  }

  // Consumers (thread 0..255): the staged stage at shared address `staging` into `slot`, the (kMN,
  // kK) tensor of one slot in wgmma's layout, where a pair's two elements are adjacent (within a
  // 16-byte chunk along the contiguous mode). straddle: bit p for the lines of parity p.
  template <class Slot>
  CUTLASS_DEVICE static void rewrite(uint32_t staging, Slot&& slot, uint32_t straddle, int warp, int lane) {
    uint32_t src[kPeriod], dst[kPeriod], selector[kPeriod];
    CUTLASS_PRAGMA_UNROLL
    for (int s = 0; s < kPeriod; ++s) {
      const int q = warp + kConsumerWarps * s;
      const int line = q / kChunks, c = (q % kChunks) * kLineChunk + 2 * lane;
      src[s] = staging + uint32_t((line * kRowWords + c / 2) * 4);
      dst[s] = cute::cast_smem_ptr_to_uint(&slot(kKMajor ? line : c, kKMajor ? c : line));
      selector[s] = (straddle >> (line & 1)) & 1 ? 0x5432u : 0x3210u;
    }
    const uint32_t src_atom = 8 * kRowWords * 4;
    const uint32_t dst_atom = unaligned_detail::eight_lines_bytes<kKMajor>(slot);
    CUTLASS_PRAGMA_UNROLL
    for (int s = 0; s < kSteps; ++s) {
      const uint32_t from = src[s % kPeriod] + uint32_t(s / kPeriod) * src_atom;
      uint32_t lo, hi;
      asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(lo) : "r"(from));
      asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(hi) : "r"(from + 4));
      const uint32_t pair = __byte_perm(lo, hi, selector[s % kPeriod]);
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(dst[s % kPeriod] + uint32_t(s / kPeriod) * dst_atom), "r"(pair));
    }
  }
};

}  // namespace staged_detail

// Base: see above. kStages: staging stages (Mainloop in cutlass_sm90_gemm.cuh fills shared memory).
template <class Base, int kStages>
struct Sm90StagedMainloop : Sm90UnalignedMainloopBase<Base> {
  using Common = Sm90UnalignedMainloopBase<Base>;
  using Element = typename Common::Element;
  using TiledMma = typename Base::TiledMma;
  static_assert(cute::size(TiledMma{}) == 32 * staged_detail::kConsumerWarps, "two consumer warpgroups");
  static_assert(kStages >= 3, "the producer arrives kStages - 2 stages behind its copies");

  using MainloopPipeline = cutlass::PipelineAsync<kStages>;
  using PipelineState = typename MainloopPipeline::PipelineState;
  using PipelineParams = typename MainloopPipeline::Params;

  static constexpr int kTileM = Common::kTileM, kTileN = Common::kTileN, kTileK = Common::kTileK;
  static constexpr bool kKMajorA = Common::kKMajorA, kKMajorB = Common::kKMajorB;
  using OperandA = staged_detail::StagedOperand<Element, kTileM, kTileK, kKMajorA>;
  using OperandB = staged_detail::StagedOperand<Element, kTileN, kTileK, kKMajorB>;

  // wgmma's two slots: CUTLASS's atoms for the operands' major-ness (the builder's choice).
  using SlotLayoutA = decltype(cute::tile_to_shape(typename Base::SmemLayoutAtomA{},
                                                   cute::make_shape(cute::Int<kTileM>{}, cute::Int<kTileK>{}, cute::Int<2>{})));
  using SlotLayoutB = decltype(cute::tile_to_shape(typename Base::SmemLayoutAtomB{},
                                                   cute::make_shape(cute::Int<kTileN>{}, cute::Int<kTileK>{}, cute::Int<2>{})));

  struct TensorStorage : cute::aligned_struct<128, cute::_0> {
    cute::array_aligned<Element, cute::cosize_v<SlotLayoutA>, 1024> slot_A;
    cute::array_aligned<Element, cute::cosize_v<SlotLayoutB>, 1024> slot_B;
    cute::array_aligned<uint32_t, kStages * OperandA::kStagingWords, 16> staging_A;
    cute::array_aligned<uint32_t, kStages * OperandB::kStagingWords, 16> staging_B;
    cute::array_aligned<uint32_t, kStages, 16> straddle;  // bits 0-1: A's even / odd lines; 2-3: B's
  };
  using PipelineStorage = typename MainloopPipeline::SharedStorage;
  struct SharedStorage {
    TensorStorage tensors;
    PipelineStorage pipeline;
  };
  static constexpr int kSharedBytes = int(sizeof(TensorStorage));

  // Producer: gA (BLK_M, BLK_K, k) and gB (BLK_N, BLK_K, k) are the work tile's k tiles; residue_mnk
  // holds M and N left from the tile's first row and column, and K - BLK_K * (number of k tiles).
  template <class TensorA, class TensorB, class KTileIterator, class ResidueMNK>
  CUTLASS_DEVICE void load(MainloopPipeline pipeline, PipelineState smem_pipe_write, TensorA const& gA,
                           TensorB const& gB, KTileIterator k_tile_iter, int k_tile_count, ResidueMNK residue_mnk,
                           int thread_idx, TensorStorage& shared) {
    using namespace cute;
    constexpr int kLag = kStages - 2;  // stages whose copies may still be in flight
    const int warp = (thread_idx / 32) % staged_detail::kProducerWarps, lane = thread_idx % 32;
    const int m_valid = int(get<0>(residue_mnk)), n_valid = int(get<1>(residue_mnk));
    const int k_extent = int(size<1>(gA) * size<2>(gA) + get<2>(residue_mnk));  // K
    const int lda = Common::leading_dimension(gA, kKMajorA), ldb = Common::leading_dimension(gB, kKMajorB);
    const uint32_t staging_a = cast_smem_ptr_to_uint(shared.staging_A.data());
    const uint32_t staging_b = cast_smem_ptr_to_uint(shared.staging_B.data());
    PipelineState arrive_state = smem_pipe_write;
    int in_flight = 0;
    CUTLASS_PRAGMA_NO_UNROLL
    for (; k_tile_count > 0; --k_tile_count, ++k_tile_iter) {
      const int k_tile = *k_tile_iter;
      const int k_valid = k_extent - k_tile * kTileK;
      const Element* tile_a = &gA(0, 0, k_tile);
      const Element* tile_b = &gB(0, 0, k_tile);
      pipeline.producer_acquire(smem_pipe_write);
      const int stage = smem_pipe_write.index();
      if (thread_idx == 0) {
        shared.straddle[stage] = OperandA::straddles(tile_a, lda, 0) | OperandA::straddles(tile_a, lda, 1) << 1 |
                                 OperandB::straddles(tile_b, ldb, 0) << 2 | OperandB::straddles(tile_b, ldb, 1) << 3;
      }
      OperandA::copy(tile_a, lda, m_valid, k_valid, warp, lane, staging_a + uint32_t(stage * OperandA::kStagingWords * 4));
      OperandB::copy(tile_b, ldb, n_valid, k_valid, warp, lane, staging_b + uint32_t(stage * OperandB::kStagingWords * 4));
      cutlass::arch::cp_async_fence();
      ++smem_pipe_write;
      if (++in_flight > kLag) {  // the copies of the oldest stage in flight have landed: publish it
        cutlass::arch::cp_async_wait<kLag>();
        pipeline.producer_commit(arrive_state);
        ++arrive_state;
        --in_flight;
      }
    }
    cutlass::arch::cp_async_wait<0>();
    for (; in_flight > 0; --in_flight, ++arrive_state) pipeline.producer_commit(arrive_state);
  }

  CUTLASS_DEVICE void load_tail(MainloopPipeline pipeline, PipelineState smem_pipe_write) {
    pipeline.producer_tail(smem_pipe_write);
  }

  // The consumer threads meet here: before rewriting a slot (both warpgroups' wgmma that read it are
  // done) and before wgmma reads it (both warpgroups' writes are in).
  CUTLASS_DEVICE static void consumers_sync() {
    cutlass::arch::NamedBarrier::sync(32 * staged_detail::kConsumerWarps,
                                      static_cast<int>(cutlass::arch::ReservedNamedBarriers::FirstUserBarrier));
  }

  template <class FrgTensorC>
  CUTLASS_DEVICE void mma(MainloopPipeline pipeline, PipelineState smem_pipe_read, FrgTensorC& accum, int k_tile_count,
                          int thread_idx, TensorStorage& shared, typename Base::Params const&) {
    using namespace cute;
    Tensor sA = make_tensor(make_smem_ptr(shared.slot_A.data()), SlotLayoutA{});  // (BLK_M, BLK_K, SLOT)
    Tensor sB = make_tensor(make_smem_ptr(shared.slot_B.data()), SlotLayoutB{});  // (BLK_N, BLK_K, SLOT)
    constexpr int kMmaWarpGroups = size(TiledMma{}) / cutlass::NumThreadsPerWarpGroup;
    auto warp_group_thread_layout = make_layout(Int<kMmaWarpGroups>{}, Int<cutlass::NumThreadsPerWarpGroup>{});
    const int warp_group_idx = __shfl_sync(0xFFFFFFFF, thread_idx / cutlass::NumThreadsPerWarpGroup, 0);
    TiledMma tiled_mma;
    auto thread_mma = tiled_mma.get_slice(warp_group_thread_layout(warp_group_idx));
    Tensor tCrA = thread_mma.make_fragment_A(thread_mma.partition_A(sA));  // (MMA, MMA_M, MMA_K, SLOT)
    Tensor tCrB = thread_mma.make_fragment_B(thread_mma.partition_B(sB));  // (MMA, MMA_N, MMA_K, SLOT)
    const int warp = (thread_idx / 32) % staged_detail::kConsumerWarps, lane = thread_idx % 32;
    const uint32_t staging_a = cast_smem_ptr_to_uint(shared.staging_A.data());
    const uint32_t staging_b = cast_smem_ptr_to_uint(shared.staging_B.data());

    warpgroup_fence_operand(accum);
    CUTLASS_PRAGMA_NO_UNROLL
    for (int t = 0; t < k_tile_count; ++t) {
      pipeline.consumer_wait(smem_pipe_read, pipeline.consumer_try_wait(smem_pipe_read));
      const int stage = smem_pipe_read.index(), slot = t & 1;
      const uint32_t straddle = shared.straddle[stage];
      consumers_sync();  // k tile t - 2's wgmma, the slot's last reader, is done in both warpgroups
      OperandA::rewrite(staging_a + uint32_t(stage * OperandA::kStagingWords * 4), sA(_, _, slot), straddle & 3,
                        warp, lane);
      OperandB::rewrite(staging_b + uint32_t(stage * OperandB::kStagingWords * 4), sB(_, _, slot), straddle >> 2,
                        warp, lane);
      cutlass::arch::fence_view_async_shared();  // generic stores, read by wgmma through the async proxy
      consumers_sync();
      pipeline.consumer_release(smem_pipe_read);  // the staging stage is free for the producer
      ++smem_pipe_read;
      warpgroup_fence_operand(accum);
      warpgroup_arrive();
      if (t == 0) tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;
      CUTLASS_PRAGMA_UNROLL
      for (int k_block = 0; k_block < size<2>(tCrA); ++k_block) {
        cute::gemm(tiled_mma, tCrA(_, _, k_block, slot), tCrB(_, _, k_block, slot), accum);
        tiled_mma.accumulate_ = GMMA::ScaleOut::One;
      }
      warpgroup_commit_batch();
      warpgroup_wait<1>();  // k tile t - 1's wgmma is done: its slot is free for k tile t + 1
      warpgroup_fence_operand(accum);
    }
    warpgroup_fence_operand(accum);
  }

  // Every stage was released in mma(); wait for the last wgmma before the epilogue reads accum.
  CUTLASS_DEVICE void mma_tail(MainloopPipeline, PipelineState, int) { cute::warpgroup_wait<0>(); }
};

}  // namespace pycutlass_gemm
