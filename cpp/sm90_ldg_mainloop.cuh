// A Hopper (wgmma) mainloop for 16-bit operands at any alignment: the producer warpgroup loads the
// tiles through registers with ordinary global loads and stores them into the swizzled shared
// memory wgmma reads.
//
// Why: TMA needs 16-byte aligned pointers, leading dimensions and contiguous extents, and cp.async
// moves at least 4 bytes. A K of 777, an N of 1001 or a vocabulary of 50257 fails both; such
// problems ran on CUTLASS 2.x mma.sync kernels with a register-staged 2-stage mainloop
// (cutlass_sm80_gemm.cuh, about 80 TFLOP/s on the H100: 1.10x cuBLAS, which is slow there too).
// Triton reaches 150 TFLOP/s on the same shapes with wgmma; this mainloop keeps the SM90 kernel
// (warp-specialized, persistent, wgmma from shared memory) and changes only how a tile arrives.
//
// How a stage is loaded: each producer warp takes lines of the tile (rows of a K-major operand,
// k-rows of an MN-major one), 64 contiguous elements a warp at a time, two a lane. When the line
// starts on a 4-byte boundary a lane's pair is one word; when it starts 2 bytes past one, every
// pair straddles two words, and the lane takes its second element from the word its right
// neighbour loaded (a shuffle; see TileLoad). Loads are predicated (elements outside the problem
// read as zero: ragged M, N and K), all of a stage's are issued before the stage is acquired and
// before any store, so one global latency covers the stage. The pairs are stored with 4-byte
// shared stores through CUTLASS's swizzled layouts (a line's 64 elements are 128 contiguous bytes
// there: no bank conflicts), then fence.proxy.async makes them visible to wgmma (which reads
// through the async proxy) before the stage's barrier is released.
//
// Measured on the H100 (notes/measurements.md, session 12): right, but slower than the SM80
// kernels: ~20 producer instructions a pair, one stage in flight at the kernel's 168 registers.
// sm90_staged_mainloop.cuh moves the shift to the consumers.
//
// Everything else is CUTLASS's cp.async warp-specialized cooperative mainloop
// (MainloopSm90CpAsyncGmmaWarpSpecialized: tiled MMA, shared layouts, pipeline, mma()) as its
// builder makes it for 16-byte aligned operands; GemmUniversal runs it as the cp.async kernel
// (one producer warpgroup of 128 threads, no register reallocation).
#pragma once

#include <cstdint>

#include "cute/tensor.hpp"
#include "cutlass/arch/barrier.h"
#include "cutlass_sm90_headers.cuh"  // the builder, mainloops and kernels of SM90 only
#include "cutlass/gemm/dispatch_policy.hpp"
#include "sm90_unaligned_mainloop_base.cuh"

namespace pycutlass_gemm {

// The mainloop schedule tag that selects this mainloop in CutlassSm90Gemm.
struct KernelLdgWarpSpecializedCooperative {};

namespace ldg_detail {

using unaligned_detail::kLineChunk;
using unaligned_detail::kProducerWarps;

// One operand's tile (kMN x kK: M x K of A or N x K of B), K-major or MN-major in global memory.
//
// A line's 64 elements are 32 pairs, one a lane. When the line starts on a 4-byte boundary each
// lane loads its pair as one word. When it starts 2 bytes past one, every pair straddles two
// words: each lane loads the word holding its first element, takes its second element from the
// word of the lane to its right (a shuffle), and the last lane's missing word -- one a step -- is
// loaded for all the stage's steps at once, lane s for step s, into one more register. So a stage
// keeps one register a step in flight whatever the alignment (two words a step spilled).
template <class Element, int kMN, int kK, bool kKMajor>
struct TileLoad {
  static_assert(sizeof(Element) == 2, "pairs of 16-bit elements: one 4-byte word, one 4-byte store");
  static constexpr int kContiguous = kKMajor ? kK : kMN;  // extent along the contiguous dimension
  static constexpr int kLines = kKMajor ? kMN : kK;
  static_assert(kContiguous % kLineChunk == 0, "a line is moved in chunks of 64 elements");
  static constexpr int kChunks = kContiguous / kLineChunk;
  static_assert(!kKMajor || kChunks == 1, "K-major: a k tile of 64, so a lane's k is the same at every step");
  static_assert((kLines * kChunks) % kProducerWarps == 0, "every producer warp moves the same number of chunks");
  static constexpr int kSteps = kLines * kChunks / kProducerWarps;  // pairs a lane moves per stage
  static constexpr int kExtraWords = (kSteps + 31) / 32;            // the last lane's missing words

  // Steps s and s + kPeriod are 8 lines apart: one swizzle atom (8 lines of 128 bytes) further
  // along, at the same place in it, and 16 * ld bytes apart in global memory (the same parity).
  // Addresses are kPeriod computed ones plus multiples of a constant: the compiler would otherwise
  // keep one address a step live across k tiles.
  static constexpr int kPeriod = 8 * kChunks / kProducerWarps;
  static_assert(kSteps % kPeriod == 0 && kPeriod <= 32, "whole periods");

  // A stage's loads in flight.
  struct Words {
    uint32_t word[kSteps];        // the word holding the lane's first element
    uint32_t extra[kExtraWords];  // lane s % 32 of extra[s / 32]: step s's word holding element 63
    uint32_t straddles;           // bit s % kPeriod: step s's line starts 2 bytes past a word
    uint32_t mask;                // K-major: the lane's elements at k < K (others would be summed)
  };

  // Step s's line and where the warp's chunk starts along it (the lane's pair is 2 * lane further).
  CUTLASS_DEVICE static void chunk(int s, int warp, int& line, int& along) {
    const int q = warp + kProducerWarps * s;
    line = q / kChunks;
    along = (q % kChunks) * kLineChunk;
  }
  CUTLASS_DEVICE static int line_extent(int mn_valid, int k_valid) { return kKMajor ? mn_valid : k_valid; }
  CUTLASS_DEVICE static int along_extent(int mn_valid, int k_valid) { return kKMajor ? k_valid : mn_valid; }

  // tile: the tile's first element in global memory; ld: the leading dimension (elements; 128 * ld
  // fits an int: can_implement). mn_valid, k_valid: the tile's rows and k columns inside the
  // problem. Predicated loads, no branches: a branch around a load made the compiler wait for each
  // load before issuing the next. A word is loaded only when it holds an element inside the problem.
  CUTLASS_DEVICE static void load(const Element* tile, int ld, int mn_valid, int k_valid, int warp, int lane,
                                  Words& w) {
    const int lines = line_extent(mn_valid, k_valid), along_valid = along_extent(mn_valid, k_valid);
    int first_offset[kPeriod];
    w.straddles = 0;
    CUTLASS_PRAGMA_UNROLL
    for (int s = 0; s < kPeriod; ++s) {
      int line, along;
      chunk(s, warp, line, along);
      first_offset[s] = line * ld + along + 2 * lane;
      w.straddles |= uint32_t((reinterpret_cast<uintptr_t>(tile + line * ld + along) & 2) != 0) << s;
    }
    CUTLASS_PRAGMA_UNROLL
    for (int s = 0; s < kSteps; ++s) {
      int line, along;
      chunk(s, warp, line, along);
      const int c = along + 2 * lane;
      const int straddles = (w.straddles >> (s % kPeriod)) & 1;
      // The word holds elements c - 1 and c when the line straddles, else c and c + 1.
      const Element* p = tile + first_offset[s % kPeriod] + (s / kPeriod) * 8 * ld;
      w.word[s] = load_word_if(word_of(p), line < lines && c - straddles < along_valid);
    }
    CUTLASS_PRAGMA_UNROLL
    for (int e = 0; e < kExtraWords; ++e) {  // lane l: the word of step 32 e + l holding element 63
      const int s = 32 * e + lane;
      int line, along;
      chunk(s, warp, line, along);
      const Element* p = tile + line * ld + along + kLineChunk - 1;
      const bool straddles = (reinterpret_cast<uintptr_t>(tile + line * ld + along) & 2) != 0;
      w.extra[e] = load_word_if(word_of(p),
                                s < kSteps && straddles && line < lines && along + kLineChunk - 1 < along_valid);
    }
    if constexpr (kKMajor) {
      w.mask = (2 * lane < k_valid ? 0xffffu : 0u) | (2 * lane + 1 < k_valid ? 0xffff0000u : 0u);
    } else {
      w.mask = ~0u;  // past M or N: those elements only reach output rows or columns that are not stored
    }
  }

  // The lane's pair at step s.
  CUTLASS_DEVICE static uint32_t pair(Words const& w, int s, int lane) {
    const uint32_t right = __shfl_down_sync(0xffffffffu, w.word[s], 1);
    const uint32_t extra = __shfl_sync(0xffffffffu, w.extra[s / 32], s % 32);
    const uint32_t next = lane == 31 ? extra : right;
    const bool straddles = (w.straddles >> (s % kPeriod)) & 1;
    return __byte_perm(w.word[s], next, straddles ? 0x5432 : 0x3210) & w.mask;
  }

  CUTLASS_DEVICE static const uint32_t* word_of(const Element* p) {
    return reinterpret_cast<const uint32_t*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(3));
  }

  CUTLASS_DEVICE static uint32_t load_word_if(const uint32_t* p, bool pred) {
    uint32_t v;
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n mov.b32 %0, 0;\n @p ld.global.nc.b32 %0, [%1];\n}\n"
        : "=r"(v) : "l"(p), "r"(int(pred)));
    return v;
  }

  // stage: the (kMN, kK) shared-memory tensor of one pipeline stage (CUTLASS's swizzled layout, in
  // which a pair's two elements are adjacent, within one 16-byte chunk along the contiguous mode).
  template <class SmemStage>
  CUTLASS_DEVICE static void store(SmemStage&& stage, int warp, int lane, Words const& w) {
    uint32_t first[kPeriod];
    CUTLASS_PRAGMA_UNROLL
    for (int s = 0; s < kPeriod; ++s) {
      int line, along;
      chunk(s, warp, line, along);
      const int c = along + 2 * lane;
      first[s] = cute::cast_smem_ptr_to_uint(&stage(kKMajor ? line : c, kKMajor ? c : line));
    }
    const uint32_t atom = unaligned_detail::eight_lines_bytes<kKMajor>(stage);
    CUTLASS_PRAGMA_UNROLL
    for (int s = 0; s < kSteps; ++s) {
      const uint32_t addr = first[s % kPeriod] + uint32_t(s / kPeriod) * atom;
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(pair(w, s, lane)));
    }
  }
};

}  // namespace ldg_detail

// Base: the CollectiveMma CUTLASS's builder makes for KernelCpAsyncWarpSpecializedCooperative with
// the same element, layouts, tile and stage count (16-byte alignment; only its types and mma() are
// used). Replaces load().
template <class Base>
struct Sm90LdgMainloop : Sm90UnalignedMainloopBase<Base> {
  using Common = Sm90UnalignedMainloopBase<Base>;
  using typename Base::MainloopPipeline;
  using typename Base::PipelineState;
  using typename Base::TensorStorage;
  using typename Base::SmemLayoutA;
  using typename Base::SmemLayoutB;
  using Element = typename Common::Element;
  static constexpr int kTileK = Common::kTileK;
  static constexpr bool kKMajorA = Common::kKMajorA, kKMajorB = Common::kKMajorB;
  using LoadA = ldg_detail::TileLoad<Element, Common::kTileM, kTileK, kKMajorA>;
  using LoadB = ldg_detail::TileLoad<Element, Common::kTileN, kTileK, kKMajorB>;

  // Producer: gA (BLK_M, BLK_K, k) and gB (BLK_N, BLK_K, k) are the work tile's k tiles; residue_mnk
  // holds M and N left from the tile's first row and column, and K - BLK_K * (number of k tiles).
  template <class TensorA, class TensorB, class KTileIterator, class ResidueMNK>
  CUTLASS_DEVICE void load(MainloopPipeline pipeline, PipelineState smem_pipe_write, TensorA const& gA,
                           TensorB const& gB, KTileIterator k_tile_iter, int k_tile_count, ResidueMNK residue_mnk,
                           int thread_idx, TensorStorage& shared_tensors) {
    using namespace cute;
    Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), SmemLayoutA{});  // (BLK_M, BLK_K, PIPE)
    Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), SmemLayoutB{});  // (BLK_N, BLK_K, PIPE)
    const int warp = (thread_idx / 32) % ldg_detail::kProducerWarps, lane = thread_idx % 32;
    const int m_valid = int(get<0>(residue_mnk)), n_valid = int(get<1>(residue_mnk));
    const int k_extent = int(size<1>(gA) * size<2>(gA) + get<2>(residue_mnk));  // K
    const int lda = Common::leading_dimension(gA, kKMajorA), ldb = Common::leading_dimension(gB, kKMajorB);

    CUTLASS_PRAGMA_NO_UNROLL
    for (; k_tile_count > 0; --k_tile_count, ++k_tile_iter) {
      const int k_tile = *k_tile_iter;
      const int k_valid = k_extent - k_tile * kTileK;
      typename LoadA::Words a;
      typename LoadB::Words b;
      // Loads first: their latency overlaps the wait for a free stage.
      LoadA::load(&gA(0, 0, k_tile), lda, m_valid, k_valid, warp, lane, a);
      LoadB::load(&gB(0, 0, k_tile), ldb, n_valid, k_valid, warp, lane, b);
      pipeline.producer_acquire(smem_pipe_write);
      const int stage = smem_pipe_write.index();
      LoadA::store(sA(_, _, stage), warp, lane, a);
      LoadB::store(sB(_, _, stage), warp, lane, b);
      // Generic-proxy stores, read by wgmma through the async proxy: fence before the release.
      cutlass::arch::fence_view_async_shared();
      pipeline.producer_commit(smem_pipe_write);
      ++smem_pipe_write;
    }
  }
};

}  // namespace pycutlass_gemm
