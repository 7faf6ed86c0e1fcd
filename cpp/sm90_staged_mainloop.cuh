// A Hopper (wgmma) mainloop for 16-bit operands at any alignment: the producer copies each line of
// a tile as the 16-byte chunks that hold it into a staging buffer (cp.async, asynchronous, several
// stages in flight), and the consumer warpgroups shift and swizzle the staged lines into the layout
// wgmma reads while the previous k tile's wgmma runs.
//
// Why: TMA needs 16-byte strides, so with K = 777 or N = 1001 no copy engine can place a line's
// elements where wgmma wants them. cp.async can still move the aligned 16-byte chunks around a line
// (64 elements lie in 9 of them, 8 when the line starts on a chunk); moving the elements into
// place is a shift by the line's offset past a chunk boundary (o bytes, even), done on chip.
// sm90_ldg_mainloop.cuh did it in the producer, through registers (~20 instructions a pair: 0.84x
// cuBLAS at 1000x3000x777 rr); session 12's version of this file staged 4-byte words (4224
// cp.async a 128x64 tile, ~730 producer instructions a k tile) and shifted pairs (4 instructions
// per 4 bytes): issue-bound at ~3300 cycles a k tile against 512 of tensor-core work. Here a
// producer thread issues 18 16-byte copies a k tile, and a consumer lane shifts 16 bytes with two
// 16-byte shared loads, four byte_perms and one 16-byte store.
//
// Stages: each holds the staged lines of A and B (a chunk more than wgmma's line a line) and the
// offsets o of lines 0-7 (line l + 8 starts 16 ld bytes after line l: the same o). Consumer warp w
// rewrites lines w, w + 8, ..., so its o is one value and the shift a uniform branch. The consumers
// rewrite a stage into one of two slots in wgmma's layout (CUTLASS's swizzled K- or MN-major atoms,
// whose 16-byte chunks are whole): slot t % 2 is rewritten while k tile t - 1's wgmma reads the
// other. Elements outside the problem are zero (a chunk's bytes past the last element inside the
// problem are zero-filled), so ragged M, N and K need nothing more.
//
// The producer arrives on a stage only once its copies have landed (cp.async.wait_group, a lag of
// kStages - 2 stages), with an ordinary release arrive: the consumers read the staging buffer with
// ordinary loads, and wgmma reads only the slots, written by the consumers and fenced
// (fence.proxy.async) before a named barrier. (Arriving from the copies themselves,
// cp.async.mbarrier.arrive.noinc with the flags copied from a table in global memory, read stale
// staging on the H100: 2.2e-2 vs float64, and hung; not understood yet.)
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
#include "cutlass_sm90_headers.cuh"  // the builder, mainloops and kernels of SM90 only
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/pipeline/pipeline.hpp"
#include "sm90_unaligned_mainloop_base.cuh"

namespace pycutlass_gemm {

// The mainloop schedule tag that selects this mainloop in CutlassSm90Gemm.
struct KernelStagedWarpSpecializedCooperative {};

namespace staged_detail {

constexpr int kProducerThreads = 32 * unaligned_detail::kProducerWarps;
constexpr int kConsumerWarps = 8;   // two warpgroups

// One operand's tile (kMN x kK: M x K of A or N x K of B), K-major or MN-major in global memory.
// A line is a row of a K-major operand or a k-row of an MN-major one: kContiguous elements, 8 a
// 16-byte chunk. A line starting o bytes past a 16-byte boundary (o even, 0-14) lies in kChunks + 1
// aligned chunks; they are staged as they are, and element e of the line is at byte o + 2 e of its
// staged line. Lines l and l + 8 are 16 ld bytes apart, so o depends on l % 8 only.
template <class Element, int kMN, int kK, bool kKMajor>
struct StagedOperand {
  static_assert(sizeof(Element) == 2, "16-bit elements: a line starts an even number of bytes past a chunk");
  static constexpr int kContiguous = kKMajor ? kK : kMN;
  static constexpr int kLines = kKMajor ? kMN : kK;
  static constexpr int kChunks = kContiguous / 8;               // 16-byte chunks of a line in wgmma's layout
  static constexpr int kLineBytes = 16 * (kChunks + 1);         // a staged line: one chunk more
  static constexpr int kStagingBytes = kLines * kLineBytes;
  static_assert(kChunks <= 32, "a consumer warp rewrites whole lines");
  // Consumer warp w rewrites lines w, w + 8, ...: every line it moves starts o bytes past a chunk,
  // for one o, so the shift is the same across the warp (a uniform branch).
  static constexpr int kLinesPerStep = 32 / kChunks;            // lines a warp rewrites at once
  static constexpr int kRewriteLanes = kLinesPerStep * kChunks; // 24 of 32 for 192-wide lines
  static constexpr int kSteps = kLines / (kConsumerWarps * kLinesPerStep);
  static_assert(kLines % (kConsumerWarps * kLinesPerStep) == 0, "every consumer warp rewrites as many lines");

  CUTLASS_DEVICE static int line_extent(int mn_valid, int k_valid) { return kKMajor ? mn_valid : k_valid; }
  CUTLASS_DEVICE static int along_extent(int mn_valid, int k_valid) {
    const int valid = kKMajor ? k_valid : mn_valid;
    return valid < kContiguous ? valid : int(kContiguous);
  }

  // o / 2 of lines 0-7 of the tile (tile: its first element; ld: leading dimension in elements),
  // four bits each: what the consumers need to know of the staged lines.
  CUTLASS_DEVICE static uint32_t line_offsets(const Element* tile, int ld) {
    uint32_t offsets = 0;
    CUTLASS_PRAGMA_UNROLL
    for (int l = 0; l < 8; ++l) offsets |= uint32_t((reinterpret_cast<uintptr_t>(tile + l * ld) & 15) >> 1) << (4 * l);
    return offsets;
  }

  // Producer (thread 0..127): the chunks holding each line of the tile to the staging stage at shared
  // address `staging` (128 * ld fits an int). A chunk's bytes past the line's last element inside
  // the problem are zero-filled (so ragged M, N and K need nothing more); its bytes before the
  // line's first element are read (they share the 16-byte chunk, so the allocation) and never used.
  // (compute-sanitizer counts a cp.async's whole 16 bytes even where src-size is less: with every
  // tensor its own cudaMalloc, PYTORCH_NO_CUDA_MEMORY_CACHING=1, it reports the chunk holding an
  // operand's last bytes as reaching past its allocation; torch's allocator rounds blocks to 512
  // bytes, and there it reports nothing.)
  // A thread copies chunk c = thread % kChunks of lines kMainLineStep apart (for 64- and 128-wide
  // lines a multiple of 8: one o, so one byte count), and then the last chunk of line `thread`.
  // (192-wide lines: 24 chunks, so 120 threads copy lines 5 apart and the last 8 only the last chunks.)
  CUTLASS_DEVICE static void copy(const Element* tile, int ld, int mn_valid, int k_valid, int thread,
                                  uint32_t staging) {
    const int lines = line_extent(mn_valid, k_valid), along_bytes = 2 * along_extent(mn_valid, k_valid);
    if (kMainCopiers == kProducerThreads || thread < kMainCopiers) {
      const int c = thread % kChunks, line = thread / kChunks;
      const Element* first = tile + line * ld;
      const int o = int(reinterpret_cast<uintptr_t>(first) & 15);
      const uint32_t dst = staging + uint32_t(line * kLineBytes + 16 * c);
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < kMainSteps; ++i) {
        if (kLines % kMainLineStep != 0 && line + i * kMainLineStep >= kLines) break;
        // lines 8 apart share o; a 256-wide line's 32 chunks leave a thread lines 4 apart
        const Element* first_i = first + i * kMainLineStep * ld;
        const int o_i = kMainLineStep % 8 == 0 ? o : int(reinterpret_cast<uintptr_t>(first_i) & 15);
        copy_chunk(dst + uint32_t(i * kMainLineStep * kLineBytes), first_i - o_i / 2 + 8 * c,
                   line + i * kMainLineStep < lines ? clamp_chunk(o_i + along_bytes - 16 * c) : 0);
      }
    }
    CUTLASS_PRAGMA_UNROLL
    for (int line = thread; line < kLines; line += kProducerThreads) {
      const Element* first = tile + line * ld;
      const int o = int(reinterpret_cast<uintptr_t>(first) & 15);
      copy_chunk(staging + uint32_t(line * kLineBytes + 16 * kChunks), first - o / 2 + 8 * kChunks,
                 line < lines ? clamp_chunk(o + along_bytes - 16 * kChunks) : 0);
    }
  }
  static constexpr int kMainLineStep = kProducerThreads / kChunks;
  static constexpr int kMainCopiers = kMainLineStep * kChunks;  // threads copying the main chunks
  static constexpr int kMainSteps = (kLines + kMainLineStep - 1) / kMainLineStep;

  CUTLASS_DEVICE static int clamp_chunk(int bytes) { return bytes <= 0 ? 0 : bytes >= 16 ? 16 : bytes; }
  // bytes (0-16) of the 16-byte chunk at src to shared memory at dst, the rest zero-filled.
  CUTLASS_DEVICE static void copy_chunk(uint32_t dst, const Element* src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
  }

  // Consumers (warp 0..7 of the two warpgroups): the staged stage at shared address `staging` into
  // `slot`, the (kMN, kK) tensor of one slot in wgmma's layout (CUTLASS's 128-byte-swizzled atoms:
  // a line's 16-byte chunks stay whole). offsets: line_offsets() of the stage.
  template <class Slot>
  CUTLASS_DEVICE static void rewrite(uint32_t staging, Slot&& slot, uint32_t offsets, int warp, int lane) {
    if (kRewriteLanes < 32 && lane >= kRewriteLanes) return;
    const int line = warp + kConsumerWarps * (lane / kChunks), q = lane % kChunks;
    const uint32_t from = staging + uint32_t(line * kLineBytes + 16 * q);
    const uint32_t to = cute::cast_smem_ptr_to_uint(&slot(kKMajor ? line : 8 * q, kKMajor ? 8 * q : line));
    const uint32_t to_step = kLinesPerStep * unaligned_detail::eight_lines_bytes<kKMajor>(slot);
    switch ((offsets >> (4 * warp)) & 15) {  // o / 2 of the warp's lines
      case 0: shift<0>(from, to, to_step); break;
      case 1: shift<2>(from, to, to_step); break;
      case 2: shift<4>(from, to, to_step); break;
      case 3: shift<6>(from, to, to_step); break;
      case 4: shift<8>(from, to, to_step); break;
      case 5: shift<10>(from, to, to_step); break;
      case 6: shift<12>(from, to, to_step); break;
      default: shift<14>(from, to, to_step); break;
    }
  }

  // A lane's chunk of each step: the 16 bytes at kO past its staged chunk (two 16-byte loads, four
  // byte_perms where kO is not a multiple of 4), stored to wgmma's layout as one 16-byte store.
  template <int kO>
  CUTLASS_DEVICE static void shift(uint32_t from, uint32_t to, uint32_t to_step) {
    constexpr uint32_t kFromStep = kConsumerWarps * kLinesPerStep * kLineBytes;
    CUTLASS_PRAGMA_UNROLL
    for (int s = 0; s < kSteps; ++s) {
      uint32_t v[8], out[4];
      const uint32_t src = from + s * kFromStep;
      asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3]) : "r"(src));
      if constexpr (kO != 0) {
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(v[4]), "=r"(v[5]), "=r"(v[6]), "=r"(v[7]) : "r"(src + 16));
      }
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < 4; ++i) out[i] = kO % 4 ? __byte_perm(v[kO / 4 + i], v[kO / 4 + i + 1], 0x5432u) : v[kO / 4 + i];
      asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(to + s * to_step), "r"(out[0]), "r"(out[1]),
                   "r"(out[2]), "r"(out[3]));
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
    cute::array_aligned<uint32_t, kStages * OperandA::kStagingBytes / 4, 128> staging_A;
    cute::array_aligned<uint32_t, kStages * OperandB::kStagingBytes / 4, 128> staging_B;
    cute::array_aligned<uint32_t, 2 * kStages, 16> line_offsets;  // a stage's A and B: line_offsets()
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
    const int thread = thread_idx % staged_detail::kProducerThreads;
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
      if (thread == 0) {
        shared.line_offsets[2 * stage] = OperandA::line_offsets(tile_a, lda);
        shared.line_offsets[2 * stage + 1] = OperandB::line_offsets(tile_b, ldb);
      }
      OperandA::copy(tile_a, lda, m_valid, k_valid, thread, staging_a + uint32_t(stage * OperandA::kStagingBytes));
      OperandB::copy(tile_b, ldb, n_valid, k_valid, thread, staging_b + uint32_t(stage * OperandB::kStagingBytes));
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
      const uint32_t offsets_a = shared.line_offsets[2 * stage], offsets_b = shared.line_offsets[2 * stage + 1];
      consumers_sync();  // k tile t - 2's wgmma, the slot's last reader, is done in both warpgroups
      OperandA::rewrite(staging_a + uint32_t(stage * OperandA::kStagingBytes), sA(_, _, slot), offsets_a,
                        warp, lane);
      OperandB::rewrite(staging_b + uint32_t(stage * OperandB::kStagingBytes), sB(_, _, slot), offsets_b,
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
