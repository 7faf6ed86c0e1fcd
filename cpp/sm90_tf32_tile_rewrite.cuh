// The shared-memory side of the tf32 rewriting mainloops (sm90_tf32_smem_rewrite_mainloop.cuh): how
// the consumer threads read a stage as TMA left it and write it back K-major (a transpose, or
// tf32x3's split into big and small tf32 parts), with 16-byte accesses and no bank conflicts.
// Plain C++ over shared-memory addresses, so the host can check it against CuTe's layouts
// (tests/smem_rewrite_check.cu).
#pragma once

#include <cstdint>

#include "cute/tensor.hpp"
#include "cutlass_sm90_headers.cuh"  // the builder, mainloops and kernels of SM90 only

namespace pycutlass_gemm {
namespace smem_rewrite_detail {

// tf32 rounded to nearest (ties away from zero), as cuBLAS rounds its tf32 inputs: half a tf32
// ulp added to the magnitude (the bits), then the low 13 mantissa bits cleared; a carry moves
// into the exponent as rounding up should (the largest floats round to infinity, as cvt.rna
// does). Two integer instructions where cvt.rna.tf32.f32 measured slower. A NaN whose top
// mantissa bits are all set rounds to -0 here, but x - big is then NaN, so the products still
// carry the NaN.
CUTE_HOST_DEVICE constexpr uint32_t round_tf32(uint32_t x) { return (x + 0x1000u) & 0xffffe000u; }

// tf32 truncated: the top 19 bits of an fp32 word, what tf32 wgmma reads of it.
CUTE_HOST_DEVICE constexpr uint32_t truncate_tf32(uint32_t x) { return x & 0xffffe000u; }

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

  // A stage of layout L begins stage_bytes<L>() after the one before, a multiple of 1024 bytes,
  // and the swizzle acts on address bits 4-9 only: a thread's addresses in stage s are its
  // addresses in stage 0 plus s * stage_bytes<L>(). The rewrite computes them once per mma() call
  // (on the H100 the per-stage address arithmetic was about a third of the mainloop's instructions).
  template <class L>
  CUTE_HOST_DEVICE static constexpr uint32_t stage_bytes() {
    constexpr uint32_t bytes = 4u * uint32_t(cute::get_nonswizzle_portion(L{})(0, 0, 1));
    static_assert(bytes % 1024 == 0, "stages must begin on a period of the 128-byte swizzle");
    return bytes;
  }

  // A thread's 16-byte vectors in stage 0: at[block][j].
  using Addresses = uint32_t[kPerThread][4];
  CUTE_HOST_DEVICE static void load_addresses(uint32_t base, int thread, Addresses& at) {
    for (int i = 0; i < kPerThread; ++i)
      for (int j = 0; j < 4; ++j) at[i][j] = load_address(base, thread + kThreads * i, j, 0);
  }
  template <class L = MmaLayout>
  CUTE_HOST_DEVICE static void store_addresses(uint32_t base, int thread, Addresses& at) {
    for (int i = 0; i < kPerThread; ++i)
      for (int j = 0; j < 4; ++j) at[i][j] = store_address<L>(base, thread + kThreads * i, j, 0);
  }

  // One thread's blocks, as read: v[block][kk][mm] is element (mn + mm, k + kk), 32-bit words.
  using Fragment = uint32_t[kPerThread][4][4];

  // Read the thread's blocks at `at` + offset (a stage's: stage_bytes<LoadLayout>() * stage).
  CUTLASS_DEVICE static void load(const Addresses& at, uint32_t offset, Fragment& v) {
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < kPerThread; ++i) {
      CUTLASS_PRAGMA_UNROLL
      for (int j = 0; j < 4; ++j) {
        uint32_t w[4];
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                     : "r"(at[i][j] + offset)
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

  // The fragment, K-major, at `at` + offset (the stage it came from).
  CUTLASS_DEVICE static void store(const Addresses& at, uint32_t offset, const Fragment& v) {
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < kPerThread; ++i) {
      CUTLASS_PRAGMA_UNROLL
      for (int j = 0; j < 4; ++j) store_vector(at[i][j] + offset, v[i][0][j], v[i][1][j], v[i][2][j], v[i][3][j]);
    }
  }

  // tf32x3: each element x split into big = tf32(x), K-major at big_at + big_offset (the stage it
  // came from), and small = tf32(x - big) (x - big is exact in fp32), K-major at small_at +
  // small_offset (a slot of the small buffer).
  CUTLASS_DEVICE static void store_split(const Addresses& big_at, uint32_t big_offset, const Addresses& small_at,
                                         uint32_t small_offset, const Fragment& v) {
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < kPerThread; ++i) {
      CUTLASS_PRAGMA_UNROLL
      for (int j = 0; j < 4; ++j) {
        uint32_t big[4], small[4];
        CUTLASS_PRAGMA_UNROLL
        for (int kk = 0; kk < 4; ++kk) {
          big[kk] = round_tf32(v[i][kk][j]);
          small[kk] = round_tf32(__float_as_uint(__uint_as_float(v[i][kk][j]) - __uint_as_float(big[kk])));
        }
        store_vector(big_at[i][j] + big_offset, big[0], big[1], big[2], big[3]);
        store_vector(small_at[i][j] + small_offset, small[0], small[1], small[2], small[3]);
      }
    }
  }

  // tf32x3, an operand whose big part is x truncated, read by the wgmma where TMA left it (K-major):
  // only small = tf32(x - big) is written, K-major at small_at + small_offset.
  CUTLASS_DEVICE static void store_small_of_truncated(const Addresses& small_at, uint32_t small_offset,
                                                      const Fragment& v) {
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < kPerThread; ++i) {
      CUTLASS_PRAGMA_UNROLL
      for (int j = 0; j < 4; ++j) {
        uint32_t small[4];
        CUTLASS_PRAGMA_UNROLL
        for (int kk = 0; kk < 4; ++kk)
          small[kk] = round_tf32(__float_as_uint(__uint_as_float(v[i][kk][j]) -
                                                 __uint_as_float(truncate_tf32(v[i][kk][j]))));
        store_vector(small_at[i][j] + small_offset, small[0], small[1], small[2], small[3]);
      }
    }
  }
};

// tf32x3 keeps the small parts of kSmallSlots stages: tile t's read by the wgmma and tile t + 1's
// written by its split. With A split in registers a third, tile t - 1's, which the other consumer
// warpgroup's wgmma may still read: there a K-major B's split writes without waiting for every
// consumer's reads (split_stage), and the barrier that ends the split of tile t comes after each
// warpgroup waited for its wgmmas of t - 1. (The third slot costs the shared-memory mainloop a
// stage: H100, tf32x3 4096^3 rc 1.336 -> 1.405 ms.)
template <bool kRegisterA>
inline constexpr int kSmallSlots = kRegisterA ? 3 : 2;

// The registers-A tf32x3 mainloop (sm90_tf32x3_register_a_mainloop.cuh) loads a thread's wgmma
// fragment of A one 32-bit element at a time. From an MN-major stage, element i of a lane (row g or
// g + 8, column t or t + 4 of an 8-wide k block; g = lane / 4, t = lane % 4) lies in the 16-byte
// chunk (m / 4) ^ (k % 8) of its 128-byte row, so for one i the lanes with t = 0 and 1 (and 2 and 3)
// fill the same two chunks: 2-way bank conflicts. Where this is true the thread's i-th load takes
// element i ^ 2 (column t + 4 for t: the chunk's bit 2 flipped) and a select puts the pair back:
// conflict-free (tests/smem_rewrite_check.cu checks both on CuTe's layouts).
CUTE_HOST_DEVICE constexpr bool register_a_swaps_pairs(bool mn_major, int thread_idx) {
  return mn_major && (thread_idx & 1);
}
// The element a swapping thread's load i takes: its pair. Called with compile-time i only (unrolled
// loops), so that a register array indexed with it stays in registers.
CUTE_HOST_DEVICE constexpr int register_a_pair(int i) { return i ^ 2; }

template <class Stride>
constexpr bool is_mn_major() {
  return cutlass::gemm::detail::is_mn_major<Stride>();
}

}  // namespace smem_rewrite_detail

}  // namespace pycutlass_gemm
