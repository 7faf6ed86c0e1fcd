// Session 31 host program (not a test): builds the registered tf32 cr mainloop type for 128x256 and
// 256x128 tiles and checks, element by element, that the register-sourced copy of A lands in each
// register the (m, k) the tiled MMA expects there. Result: 0 wrong for both tiles (the copy is
// scalar: the position-independent swizzle makes its strides dynamic). Build from the repository
// root: nvcc -std=c++17 --expt-relaxed-constexpr -Icpp -isystem <cutlass>/include notes/patches/rs-copy-a-emulation-session31.cu
// Host emulation: does the RS mainloop's smem->register copy of A put into each register the (m, k)
// that the tiled MMA expects there? tf32 cr (A and B MN-major), 256x128x32 vs 128x256x32, clusters 2x1.
#include <cstdio>
#include <map>
#include "cutlass_sm90_gemm.cuh"

using namespace cute;

template <class Tile>
int check(const char* name) {
  using ML = typename pycutlass_gemm::sm90_detail::Mainloop<
      float, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor, 4, Tile, Shape<_2, _1, _1>,
      cutlass::gemm::collective::StageCountAutoCarveout<34816>, cutlass::gemm::KernelTmaWarpSpecializedCooperative>::type;
  using TiledMma = typename ML::TiledMma;
  using SmemLayoutA = typename ML::SmemLayoutA;
  using CopyAtomA = typename ML::InternalSmemCopyAtomA;
  constexpr int M = size<0>(Tile{}), K = size<2>(Tile{});
  static std::vector<float> buffer(cosize(SmemLayoutA{}) + 64);
  // value stored at each smem element: code of its (m, k) in stage 0
  auto sA_ = make_tensor(make_smem_ptr(buffer.data()), SmemLayoutA{});
  auto sA = as_position_independent_swizzle_tensor(sA_);
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k) sA(m, k, 0) = float(m * 1000 + k);
  TiledMma tiled_mma;
  int bad = 0, total = 0;
  auto ident = make_identity_tensor(make_shape(Int<M>{}, Int<K>{}));
  for (int t = 0; t < size(tiled_mma); ++t) {
    auto thr = tiled_mma.get_thread_slice(t);
    auto expected = thr.partition_A(ident);                        // (MMA, MMA_M, MMA_K) of (m, k)
    auto tCrA = thr.partition_fragment_A(sA(_, _, Int<0>{}));      // registers
    auto copy_a = make_tiled_copy_A(CopyAtomA{}, tiled_mma);
    auto thr_copy = copy_a.get_thread_slice(t);
    auto dst = thr_copy.retile_D(tCrA);
    auto src = thr_copy.partition_S(sA);
    for (int kb = 0; kb < size<2>(dst); ++kb) {  // element by element: the atom's semantics, not its host path
      auto d = dst(_, _, kb);
      auto s = src(_, _, kb, 0);
      static_assert(decltype(size(d))::value == decltype(size(s))::value);
      if (t == 0 && kb == 0) {
        printf("%s: max_common_vector %d\n  src ", name, int(max_common_vector(s, d)));
        print(s.layout()); printf("\n  dst "); print(d.layout()); printf("\n");
      }
      for (int i = 0; i < size(d); ++i) *reinterpret_cast<float*>(&d(i)) = s(i);
    }
    for (int i = 0; i < size(tCrA); ++i) {
      float v = *reinterpret_cast<float*>(&tCrA(i));
      auto c = expected(i);
      float want = float(get<0>(c) * 1000 + get<1>(c));
      ++total;
      if (v != want) {
        if (bad < 8) printf("%s thread %d elem %d: got m %d k %d, want m %d k %d\n", name, t, i, int(v) / 1000, int(v) % 1000, int(get<0>(c)), int(get<1>(c)));
        ++bad;
      }
    }
  }
  printf("%s: %d of %d A registers wrong (MMA_M %d, tCrA %d a thread)\n", name, bad, total,
         int(size<1>(typename TiledMma::AtomLayoutC_TV{})), int(total / size(tiled_mma)));
  return bad;
}

int main() {
  check<Shape<_128, _256, _32>>("128x256");
  check<Shape<_256, _128, _32>>("256x128");
  return 0;
}
