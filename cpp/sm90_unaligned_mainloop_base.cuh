// What the two wgmma mainloops for 16-bit inputs at any alignment (sm90_ldg_mainloop.cuh,
// sm90_staged_mainloop.cuh) share: both replace parts of the CollectiveMma CUTLASS's builder makes
// for its cp.async warp-specialized cooperative kernel (Base), which GemmUniversal then runs with
// one producer warpgroup and two consumer warpgroups.
#pragma once

#include "cute/tensor.hpp"
#include "cutlass/gemm/dispatch_policy.hpp"

namespace pycutlass_gemm {
namespace unaligned_detail {

constexpr int kProducerWarps = 4;  // one warpgroup
constexpr int kLineChunk = 64;     // contiguous elements a warp moves at a time: 2 a lane, 128 bytes

// Shared-memory bytes between line l and line l + 8 of a tile in CUTLASS's 128-byte-swizzled layout
// (`tile`: a (MN, K) tensor; lines are rows of a K-major tile, k-rows of an MN-major one): one
// swizzle atom, the same for every l, so a warp's addresses are a few computed ones plus multiples.
template <bool kKMajor, class SmemTile>
CUTLASS_DEVICE uint32_t eight_lines_bytes(SmemTile&& tile) {
  return cute::cast_smem_ptr_to_uint(&tile(kKMajor ? 8 : 0, kKMajor ? 0 : 8)) -
         cute::cast_smem_ptr_to_uint(&tile(0, 0));
}

}  // namespace unaligned_detail

template <class Base>
struct Sm90UnalignedMainloopBase : Base {
  using Element = typename Base::ElementA;
  using TileShape = typename Base::TileShape;
  static_assert(cute::is_same_v<Element, typename Base::ElementB>, "one element type for A and B");
  static_assert(cute::is_base_of_v<cutlass::gemm::KernelCpAsyncWarpSpecializedCooperative,
                                   typename Base::DispatchPolicy::Schedule>,
                "GemmUniversal's cp.async cooperative kernel: one producer, two consumer warpgroups");
  static_assert(cute::size(typename Base::GmemTiledCopyA{}) == 32 * unaligned_detail::kProducerWarps,
                "the producer is one warpgroup");

  static constexpr int kTileM = cute::size<0>(TileShape{});
  static constexpr int kTileN = cute::size<1>(TileShape{});
  static constexpr int kTileK = cute::size<2>(TileShape{});

  // A stride is (row, k, batch) with one of the first two static 1: K-major when k's is.
  template <class Stride>
  static constexpr bool is_k_major() {
    return cute::is_static<cute::remove_cvref_t<decltype(cute::get<1>(Stride{}))>>::value;
  }
  static constexpr bool kKMajorA = is_k_major<typename Base::StrideA>();
  static constexpr bool kKMajorB = is_k_major<typename Base::StrideB>();

  // Any alignment of 16-bit elements (CutlassSm90Gemm checks the leading dimensions fit the
  // mainloops' int offsets).
  template <class ProblemShape>
  static bool can_implement(ProblemShape const&, typename Base::Arguments const&) {
    return true;
  }

  // The leading dimension (elements) of a (rows, k, tiles) view of an operand.
  template <class Tensor3>
  CUTLASS_DEVICE static int leading_dimension(Tensor3 const& g, bool k_major) {
    return int(k_major ? cute::stride<0>(g) : cute::stride<1>(g));
  }
};

}  // namespace pycutlass_gemm
