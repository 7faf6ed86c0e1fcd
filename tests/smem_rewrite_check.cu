// Host-side check of cpp/sm90_tf32_tile_rewrite.cuh's claims, against CuTe's own layouts
// (built and run by test_smem_rewrite_cpu.py; no GPU needed). For the tile shapes the package
// uses (MN = 128 and 256, K = 32 tf32, several stages), with the load layout TMA writes (MN-major
// SW128 atoms for an MN-major operand, K-major ones for a K-major operand), the K-major SW128
// layout wgmma reads, and tf32x3's two-slot buffer of small parts:
//  - TileRewrite's addresses equal the addresses CuTe's swizzled tensors give each element;
//  - a stage's addresses are stage 0's plus the stage's offset (stage_bytes), for any base: the
//    mainloop computes stage 0's once;
//  - a 4x4 block's 4 elements along its load direction and along K (store side) are contiguous
//    and 16-byte aligned, so one 16-byte access moves each;
//  - the threads' blocks cover every element of the stage exactly once;
//  - round_tf32 (two integer instructions) rounds to tf32 to nearest, ties away from zero, as
//    cvt.rna.tf32.f32 does, over a sweep of bit patterns (normal, subnormal, the largest floats);
//  - the 8 threads of each quarter warp touch 8 different 16-byte chunks of the 128-byte bank
//    width on every access (no bank conflicts);
//  - the registers-A tf32x3 mainloop's loads of A's wgmma fragments (register_a_swaps_pairs) read
//    each fragment element once and are conflict-free from an MN-major and a K-major stage.
#include <cmath>
#include <cfloat>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>

#include "cute/tensor.hpp"
#include "cute/atom/mma_atom.hpp"
#include "cute/atom/mma_traits_sm90_gmma.hpp"
#include "sm90_tf32_tile_rewrite.cuh"

using namespace cute;

constexpr int kSlots = pycutlass_gemm::smem_rewrite_detail::kSmallSlots<true>;  // the most slots a mainloop keeps

template <int MN, int Stages, bool kLoadMNMajor>
int check() {
  using MNMajorLoad = decltype(tile_to_shape(GMMA::Layout_MN_SW128_Atom<cutlass::tfloat32_t>{},
                                             make_shape(Int<MN>{}, _32{}, Int<Stages>{}), Step<_2, _1, _3>{}));
  using MmaLayout = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<cutlass::tfloat32_t>{},
                                           make_shape(Int<MN>{}, _32{}, Int<Stages>{}), Step<_1, _2, _3>{}));
  using LoadLayout = cute::conditional_t<kLoadMNMajor, MNMajorLoad, MmaLayout>;
  using SmallLayout = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<cutlass::tfloat32_t>{},
                                             make_shape(Int<MN>{}, _32{}, Int<kSlots>{})));
  constexpr int kThreads = 256;
  using T = pycutlass_gemm::smem_rewrite_detail::TileRewrite<MN, kThreads, LoadLayout, MmaLayout, kLoadMNMajor>;
  alignas(1024) static float buffer[MN * 32 * Stages];
  const auto load_view = make_tensor(make_smem_ptr(buffer), LoadLayout{});
  const auto mma_view = make_tensor(make_smem_ptr(buffer), MmaLayout{});
  const auto small_view = make_tensor(make_smem_ptr(buffer), SmallLayout{});
  const uint32_t base = 1u << 20;  // any 1024-byte aligned shared-memory address
  auto cute_address = [&](const auto& view, int mn, int k, int s) {
    return base + uint32_t(reinterpret_cast<const char*>(&view(mn, k, s)) - reinterpret_cast<const char*>(buffer));
  };
  int errors = 0;
  // Stage 0's addresses plus the stage offset, as the mainloop computes them, for the aligned base
  // and for bases off the swizzle's 1024-byte period.
  for (uint32_t b : {base, base + 128u, base + 656u}) {
    for (int t = 0; t < kThreads; ++t) {
      typename T::Addresses load_at, store_at, small_at;
      T::load_addresses(b, t, load_at);
      T::store_addresses(b, t, store_at);
      T::template store_addresses<SmallLayout>(b, t, small_at);
      for (int i = 0; i < T::kPerThread; ++i) {
        for (int j = 0; j < 4; ++j) {
          const int g = t + kThreads * i;
          for (int s = 0; s < Stages; ++s) {
            errors += load_at[i][j] + T::template stage_bytes<LoadLayout>() * s != T::load_address(b, g, j, s);
            errors += store_at[i][j] + T::template stage_bytes<MmaLayout>() * s != T::store_address(b, g, j, s);
          }
          for (int slot = 0; slot < kSlots; ++slot)
            errors += small_at[i][j] + T::template stage_bytes<SmallLayout>() * slot !=
                      T::template store_address<SmallLayout>(b, g, j, slot);
        }
      }
    }
  }
  for (int s = 0; s < Stages; ++s) {
    std::set<uint32_t> loaded, stored, small;
    for (int t = 0; t < kThreads; ++t) {
      for (int i = 0; i < T::kPerThread; ++i) {
        const int g = t + kThreads * i, mn = T::block_mn(g), k = T::block_k(g);
        for (int j = 0; j < 4; ++j) {
          const uint32_t load0 = T::load_address(base, g, j, s);
          const uint32_t store0 = T::store_address(base, g, j, s);
          const uint32_t small0 = T::template store_address<SmallLayout>(base, g, j, s % kSlots);
          errors += (load0 % 16 != 0) + (store0 % 16 != 0) + (small0 % 16 != 0);
          for (int e = 0; e < 4; ++e) {
            // vector j of the load holds (mn + e, k + j) when MN-major, (mn + j, k + e) when K-major
            const int load_mn = kLoadMNMajor ? mn + e : mn + j, load_k = kLoadMNMajor ? k + j : k + e;
            errors += (load0 + 4 * e != cute_address(load_view, load_mn, load_k, s));
            errors += (store0 + 4 * e != cute_address(mma_view, mn + j, k + e, s));
            errors += (small0 + 4 * e != cute_address(small_view, mn + j, k + e, s % kSlots));
            loaded.insert(load0 + 4 * e);
            stored.insert(store0 + 4 * e);
            small.insert(small0 + 4 * e);
          }
        }
      }
    }
    errors += (int(loaded.size()) != MN * 32) + (int(stored.size()) != MN * 32) + (int(small.size()) != MN * 32);
    for (int quarter = 0; quarter < kThreads; quarter += 8) {
      for (int i = 0; i < T::kPerThread; ++i) {
        for (int j = 0; j < 4; ++j) {
          std::set<uint32_t> load_chunks, store_chunks, small_chunks;
          for (int g = quarter + kThreads * i; g < quarter + kThreads * i + 8; ++g) {
            load_chunks.insert(T::load_address(base, g, j, s) / 16 % 8);
            store_chunks.insert(T::store_address(base, g, j, s) / 16 % 8);
            small_chunks.insert(T::template store_address<SmallLayout>(base, g, j, s % kSlots) / 16 % 8);
          }
          errors += (load_chunks.size() != 8) + (store_chunks.size() != 8) + (small_chunks.size() != 8);
        }
      }
    }
  }
  std::printf("MN %d, %d stages, %s load: %s (%d errors)\n", MN, Stages, kLoadMNMajor ? "MN-major" : "K-major",
              errors ? "FAIL" : "ok", errors);
  return errors;
}

// The registers-A tf32x3 mainloop (sm90_tf32x3_register_a_mainloop.cuh) with its tile (128x128x32,
// two consumer warpgroups, RS wgmma): each thread's 16 loads of its A fragment from stage 0, element
// register_a_pair(i) where register_a_swaps_pairs says so. Each load of a warp must read at most one
// 32-bit word of each bank; without the swap an MN-major stage gives two (reported, the reason for
// the swap).
template <bool kMNMajor>
int check_register_a_loads() {
  namespace rewrite = pycutlass_gemm::smem_rewrite_detail;
  using TileShape = Shape<_128, _128, _32>;
  using Atom = cute::conditional_t<kMNMajor, GMMA::Layout_MN_SW128_Atom<cutlass::tfloat32_t>,
                                   GMMA::Layout_K_SW128_Atom<cutlass::tfloat32_t>>;
  using StageLayout = decltype(tile_to_shape(Atom{}, make_shape(_128{}, _32{}, _3{}),
                                             cute::conditional_t<kMNMajor, Step<_2, _1, _3>, Step<_1, _2, _3>>{}));
  auto tiled_mma = make_tiled_mma(SM90::GMMA::rs_op_selector<cutlass::tfloat32_t, cutlass::tfloat32_t, float, TileShape,
                                                             GMMA::Major::K, GMMA::Major::K>(),
                                  Layout<Shape<_2, _1, _1>>{});
  alignas(1024) static float buffer[128 * 32 * 3];
  const auto sA = make_tensor(make_smem_ptr(buffer), StageLayout{});
  int errors = 0, unswapped_extra = 0;
  for (int warp = 0; warp < 8; ++warp) {
    int address[32][16];
    int n = 0;
    for (int lane = 0; lane < 32; ++lane) {
      const auto tCsA0 = tiled_mma.get_thread_slice(warp * 32 + lane).partition_A(sA)(_, _, _, 0);
      n = int(size(tCsA0));
      for (int i = 0; i < n; ++i)
        address[lane][i] = int(reinterpret_cast<const char*>(&tCsA0(i)) - reinterpret_cast<const char*>(buffer));
    }
    errors += n != 16;
    for (int lane = 0; lane < 32; ++lane) {  // the swapped loads read every element of the fragment once
      std::set<int> elements;
      for (int i = 0; i < n; ++i)
        elements.insert(rewrite::register_a_swaps_pairs(kMNMajor, warp * 32 + lane) ? rewrite::register_a_pair(i) : i);
      errors += int(elements.size()) != n || *elements.rbegin() != n - 1;
    }
    for (int swap = 0; swap < 2; ++swap) {
      for (int i = 0; i < n; ++i) {
        std::set<int> words[32];
        for (int lane = 0; lane < 32; ++lane) {
          const bool swapped = swap && rewrite::register_a_swaps_pairs(kMNMajor, warp * 32 + lane);
          const int a = address[lane][swapped ? rewrite::register_a_pair(i) : i];
          words[a / 4 % 32].insert(a);
        }
        size_t wavefronts = 0;
        for (const auto& w : words) wavefronts = std::max(wavefronts, w.size());
        if (swap) errors += wavefronts != 1;
        else unswapped_extra += int(wavefronts) - 1;
      }
    }
  }
  std::printf("registers-A loads of A, %s stage: %s (%d errors; without the swap %d extra wavefronts in 128 loads)\n",
              kMNMajor ? "MN-major" : "K-major", errors ? "FAIL" : "ok", errors, unswapped_extra);
  return errors;
}

// tf32 rounded to nearest, ties away from zero, by arithmetic: tf32 keeps 10 mantissa bits, so its
// unit in the last place is 2^(e - 10) for x in [2^e, 2^(e+1)) (2^-136 below the normal range).
float reference_rna_tf32(float x) {
  int e;
  std::frexp(x, &e);  // x = f * 2^e, f in [0.5, 1)
  const double ulp = std::ldexp(1.0, std::max(e - 1, -126) - 10);
  const double r = std::round(double(x) / ulp) * ulp;  // std::round: halves away from zero
  return std::fabs(r) > FLT_MAX ? std::copysign(INFINITY, x) : float(r);
}

int check_round_tf32() {
  int errors = 0;
  uint32_t state = 12345u;
  for (long i = 0; i < 4000000; ++i) {
    state = state * 1664525u + 1013904223u;  // every exponent, sign and mantissa pattern
    uint32_t bits = state;
    if (i % 4 == 0) bits = (bits & 0x80001fffu) | 0x7f7fe000u;  // near the largest float
    if (i % 4 == 1) bits &= 0x807fffffu;                          // subnormal
    if (i % 4 == 2) bits = (bits & 0xffffe000u) | 0x1000u;        // an exact tie
    float x;
    std::memcpy(&x, &bits, 4);
    if (!std::isfinite(x)) continue;
    const uint32_t got = pycutlass_gemm::smem_rewrite_detail::round_tf32(bits);
    const float want = reference_rna_tf32(x);
    uint32_t want_bits;
    std::memcpy(&want_bits, &want, 4);
    errors += got != want_bits;
  }
  std::printf("round_tf32 against round-to-nearest-away by arithmetic: %s (%d errors)\n", errors ? "FAIL" : "ok",
              errors);
  return errors;
}

int main() {
  return (check_round_tf32() + check<128, 4, true>() + check<256, 3, true>() + check<128, 4, false>() +
          check<256, 2, false>() + check_register_a_loads<true>() + check_register_a_loads<false>()) != 0;
}
