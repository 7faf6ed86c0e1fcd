// CUTLASS's TMA warp-specialized SS mainloop (sm90_mma_tma_gmma_ss_warpspecialized.hpp) with an
// L2 eviction hint on each operand's loads, chosen per problem on the host.
//
// Why: an operand whose tiles no other output tile reads -- the weight of x @ W.T when x's rows
// fit one tile (decode: M = 16 or 128), read exactly once -- gains nothing from staying in L2, yet
// with the default policy every line it brings in evicts a line of what L2 held: in a model the
// activations the previous layer just wrote, in the benchmark the dirty lines of its flush, each
// of which costs a write to HBM as it goes. Loaded with EVICT_FIRST, such an operand's lines
// replace one another and what L2 held stays. H100, bf16, auto, ms (x cuBLAS, same run), before ->
// after: 16x4096x4096 rc 0.025-0.026 (0.87x) -> 0.023-0.024 (0.92-0.95x); 128x4096x4096 rc 0.025-0.026
// (0.85x) -> 0.023 (0.96-0.97x); 16x14336x4096 rc 0.054 (0.98x) -> 0.050 (1.08x); batched 32 x
// (1024x64x1024) rr 0.039 (1.00x) -> 0.034 (1.11x); 4096^3 and the other operand layouts unchanged.
// An operand that other tiles re-read keeps EVICT_NORMAL: evict-first on both operands of
// 256x256x524288's 128x64 tiles (A read by four N tiles, B by two) ran 0.228 -> 0.279 ms.
// A cluster's CTAs along M share each tile of B (TMA multicast: one read from L2 feeds them all), and those along N
// each tile of A, so where M fits one cluster's tile rows B is read once too (and A where N fits its tile columns).
// H200, session 55 (notes/l2-hint-clusters-session55.py), bf16, every kernel of 2x1 clusters over the 64-256 rows of
// 140 layer products it covers, cluster rule against the one-tile rule, time ratio geomean: 1.03-1.04 (128x80,
// 128x128, 128x160, 128x192, stream-K and split-K 128x256; 0.94-0.97 at worst, 1.13-1.18 at best), 1.05 / 1.07 for
// the 64x64 pair (rc / rr; 128 x 4096 x 4096 rc 1.02x -> 1.09x torch.matmul, rr 0.97x -> 1.11x), 1.00 for 192x192
// (three warpgroups) and 128x256 persistent.
//
// And a TMA box wholly past the matrix's edge is loaded from inside it (see load), one that straddles the edge
// from the memory past it where that is mapped (Arguments): TMA fills a box's rows past the edge with zeros ~4-5x
// slower than it loads them from memory.
#pragma once

#include <algorithm>
#include <type_traits>
#include <utility>

#include "cute/arch/copy_sm90_desc.hpp"
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass_sm90_headers.cuh"  // the builder, mainloops and kernels of SM90 only
#include "cutlass/gemm/dispatch_policy.hpp"

namespace pycutlass_gemm {

template <class Base>
struct Sm90L2HintedMainloop : Base {
  // CUTLASS's arguments and the rows A's and B's TMA descriptors span (M and N of the problem the kernel computes,
  // or more: rows past the last that are readable memory; 0 for the problem's own). Why: a box that straddles the
  // operand's edge loads its inside rows and TMA fills the rest, each filled row ~4x slower than a loaded one
  // (notes/tma-box-edge-session48.cu: 128-row boxes half past the edge 78.8 us against 21.8 inside), so the last
  // tile row of every problem whose M is not a multiple of the tile paid for it (H200, 200 x 4096 x 4096 rr on 128x64
  // tiles: 32 us against 24 at 248 rows). Rows read past the edge feed only output rows past it, which the epilogue
  // does not store: what they hold is never seen. CutlassSm90Gemm::tma_rows says where make_arguments sets them.
  struct Arguments : Base::Arguments {
    int tma_rows_a = 0, tma_rows_b = 0;
  };
  using typename Base::DispatchPolicy;
  using typename Base::MainloopPipeline;
  using typename Base::PipelineState;
  using typename Base::SmemLayoutA;
  using typename Base::SmemLayoutB;
  using typename Base::GmemTiledCopyA;
  using typename Base::GmemTiledCopyB;
  using typename Base::TensorStorage;
  using TileShape = typename Base::TileShape;
  using ClusterShape = typename DispatchPolicy::ClusterShape;

  struct Params : Base::Params {
    uint64_t hint_a = static_cast<uint64_t>(cute::TMA::CacheHintSm90::EVICT_NORMAL);
    uint64_t hint_b = static_cast<uint64_t>(cute::TMA::CacheHintSm90::EVICT_NORMAL);
    int rows_a = 0, rows_b = 0;  // M and N of the problem the kernel computes
  };

  // EVICT_FIRST for the operand whose tiles no other cluster reads: A when N fits one cluster's tile
  // columns, else B when M fits its tile rows. Never both: at 256x256x524288 (128x256 tiles, 2x1 clusters)
  // evict-first on A and B ran 0.216 ms against 0.211-0.212 with either alone or neither.
  template <class ProblemShape>
  static Params to_underlying_arguments(ProblemShape const& problem_shape, Arguments const& args,
                                        void* workspace) {
    Params params;
    const auto shape = cute::append<4>(problem_shape, 1);
    params.rows_a = int(cute::get<0>(shape));
    params.rows_b = int(cute::get<1>(shape));
    const auto tma_shape = cute::make_shape(std::max(params.rows_a, args.tma_rows_a),  // the descriptors' extents
                                            std::max(params.rows_b, args.tma_rows_b), int(cute::get<2>(shape)),
                                            int(cute::get<3>(shape)));
    static_cast<typename Base::Params&>(params) = Base::to_underlying_arguments(tma_shape, args, workspace);
    constexpr int kTileM = cute::size<0>(TileShape{}), kTileN = cute::size<1>(TileShape{});
    constexpr int kClusterM = cute::size<0>(ClusterShape{}), kClusterN = cute::size<1>(ClusterShape{});
    const int tiles_m = (params.rows_a + kTileM - 1) / kTileM;
    const int tiles_n = (params.rows_b + kTileN - 1) / kTileN;
    constexpr auto kFirst = static_cast<uint64_t>(cute::TMA::CacheHintSm90::EVICT_FIRST);
    if (tiles_n <= kClusterN) {
      params.hint_a = kFirst;
    } else if (tiles_m <= kClusterM) {
      params.hint_b = kFirst;
    }
    return params;
  }

  // The first row of the operand's tile (tile index `tile` of kTile rows) that this CTA's copy brings: the tile's
  // first, or with the operand multicast over `kShare` CTAs and K-major (the box then split along its rows: cute's
  // make_tma_copy truncates the outermost box mode) the first of the CTA's share of the rows.
  template <int kTile, int kShare, bool kSliced>
  CUTLASS_DEVICE static int first_row_loaded(int tile, int share) {
    return tile * kTile + (kSliced ? share * (kTile / kShare) : 0);
  }

  // Base::load with the hints passed to the TMA copies (marked "hint") and boxes past the edge loaded from inside
  // (marked "edge"); otherwise CUTLASS 4.2's code.
  //
  // Edge: a box whose rows all lie at or past the operand's last (the half of a 128-row A tile that a 1x2
  // cluster's second CTA loads where M ends in the first half; a cluster's CTA past the last tile) comes from tile
  // 0 instead. Those rows of shared memory feed only output rows past the edge, which the epilogue does not store,
  // and each output row reads only its own row of A (column of B), so what they hold is never seen. A box that
  // straddles the edge loads as it is: its rows past the edge from memory where the descriptor spans them
  // (Arguments::tma_rows_a / _b), else filled by TMA. Why: TMA fills a box wholly past the edge ~5x slower than it
  // loads an inside one (notes/tma-box-edge-session48.cu, H200: 128 CTAs streaming 224 boxes of 128x64 bf16, 21.8 us
  // inside, 107 us outside, 78.8 us half outside; 64-row boxes 20.9 / 65.3), and 192 x 4096 x 14336 rc bf16 on 128x64
  // tiles in clusters of 1x2 ran 87.6 us against 60.2 at 256 rows on the same tiles.
  template <class TensorA, class TensorB, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load(Params const& mainloop_params, MainloopPipeline pipeline, PipelineState smem_pipe_write,
                           cute::tuple<TensorA, TensorB> const& load_inputs, BlockCoord const& blk_coord,
                           KTileIterator k_tile_iter, int k_tile_count, int thread_idx, uint32_t block_rank_in_cluster,
                           TensorStorage& shared_tensors) {
    using namespace cute;
    int lane_predicate = cute::elect_one_sync();
    if (lane_predicate) {
      Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), SmemLayoutA{});  // (BLK_M,BLK_K,PIPE)
      Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), SmemLayoutB{});  // (BLK_N,BLK_K,PIPE)

      constexpr uint32_t cluster_shape_x = get<0>(ClusterShape());
      uint2 cluster_local_block_id = {block_rank_in_cluster % cluster_shape_x, block_rank_in_cluster / cluster_shape_x};

      Tensor gA_mkl = get<0>(load_inputs);
      Tensor gB_nkl = get<1>(load_inputs);

      auto block_tma_a = mainloop_params.tma_load_a.get_slice(cluster_local_block_id.y);
      auto block_tma_b = mainloop_params.tma_load_b.get_slice(cluster_local_block_id.x);

      auto [m_coord, n_coord, k_coord, l_coord] = blk_coord;
      constexpr int kTileM = size<0>(TileShape{}), kTileN = size<1>(TileShape{});
      constexpr int kClusterM = size<0>(ClusterShape{}), kClusterN = size<1>(ClusterShape{});
      constexpr bool kSlicedA = std::is_same_v<GmemTiledCopyA, cute::SM90_TMA_LOAD_MULTICAST> &&
                                cutlass::gemm::detail::is_k_major<typename Base::StrideA>();
      constexpr bool kSlicedB = std::is_same_v<GmemTiledCopyB, cute::SM90_TMA_LOAD_MULTICAST> &&
                                cutlass::gemm::detail::is_k_major<typename Base::StrideB>();
      const bool a_past_edge = first_row_loaded<kTileM, kClusterN, kSlicedA>(int(m_coord), int(cluster_local_block_id.y)) >=
                               mainloop_params.rows_a;  // edge
      const bool b_past_edge = first_row_loaded<kTileN, kClusterM, kSlicedB>(int(n_coord), int(cluster_local_block_id.x)) >=
                               mainloop_params.rows_b;  // edge
      Tensor gA = gA_mkl(_, _, a_past_edge ? 0 : int(m_coord), _, l_coord);  // (BLK_M,BLK_K,k); edge
      Tensor gB = gB_nkl(_, _, b_past_edge ? 0 : int(n_coord), _, l_coord);  // (BLK_N,BLK_K,k); edge

      Tensor tAgA = block_tma_a.partition_S(gA);  // (TMA,TMA_M,TMA_K,k)
      Tensor tAsA = block_tma_a.partition_D(sA);  // (TMA,TMA_M,TMA_K,PIPE)
      Tensor tBgB = block_tma_b.partition_S(gB);  // (TMA,TMA_N,TMA_K,k)
      Tensor tBsB = block_tma_b.partition_D(sB);  // (TMA,TMA_N,TMA_K,PIPE)

      uint16_t mcast_mask_a = 0;
      uint16_t mcast_mask_b = 0;
      if constexpr (std::is_same_v<GmemTiledCopyA, cute::SM90_TMA_LOAD_MULTICAST>) {
        auto block_layout = cute::Layout<ClusterShape>{};  // (m,n) -> block_id
        for (int n = 0; n < size<1>(block_layout); ++n)
          mcast_mask_a |= (uint16_t(1) << block_layout(cluster_local_block_id.x, n, Int<0>{}));
      }
      if constexpr (std::is_same_v<GmemTiledCopyB, cute::SM90_TMA_LOAD_MULTICAST>) {
        auto block_layout = cute::Layout<ClusterShape>{};  // (m,n) -> block_id
        for (int m = 0; m < size<0>(block_layout); ++m)
          mcast_mask_b |= (uint16_t(1) << block_layout(m, cluster_local_block_id.y, Int<0>{}));
      }
      const auto hint_a = static_cast<cute::TMA::CacheHintSm90>(mainloop_params.hint_a);  // hint
      const auto hint_b = static_cast<cute::TMA::CacheHintSm90>(mainloop_params.hint_b);  // hint

      CUTLASS_PRAGMA_NO_UNROLL
      for (; k_tile_count > 0; --k_tile_count) {
        pipeline.producer_acquire(smem_pipe_write);
        using BarrierType = typename MainloopPipeline::ProducerBarrierType;
        BarrierType* tma_barrier = pipeline.producer_get_barrier(smem_pipe_write);
        int write_stage = smem_pipe_write.index();
        copy(mainloop_params.tma_load_a.with(*tma_barrier, mcast_mask_a, hint_a), tAgA(_, _, _, *k_tile_iter),
             tAsA(_, _, _, write_stage));
        copy(mainloop_params.tma_load_b.with(*tma_barrier, mcast_mask_b, hint_b), tBgB(_, _, _, *k_tile_iter),
             tBsB(_, _, _, write_stage));
        ++k_tile_iter;
        ++smem_pipe_write;
      }
    }
  }
};

namespace sm90_detail {

// Whether a mainloop takes the rows its TMA descriptors span (Sm90L2HintedMainloop::Arguments).
template <class Mainloop, class = void>
inline constexpr bool kHasTmaRows = false;
template <class Mainloop>
inline constexpr bool
    kHasTmaRows<Mainloop, std::void_t<decltype(std::declval<typename Mainloop::Arguments&>().tma_rows_a)>> = true;

// The mainloop a kernel gets: CUTLASS's TMA SS mainloop with the hints above; any other (the
// register-sourced tf32 one, cp.async, the package's rewriting and staged ones) as it is.
template <class Op>
struct WithL2Hints {
  using type = Op;
};
template <int kStages, class ClusterShape, class Schedule, class TileShape, class ElementA, class StrideA,
          class ElementB, class StrideB, class TiledMma, class GmemTiledCopyA, class SmemLayoutAtomA,
          class SmemCopyAtomA, class TransformA, class GmemTiledCopyB, class SmemLayoutAtomB, class SmemCopyAtomB,
          class TransformB>
struct WithL2Hints<cutlass::gemm::collective::CollectiveMma<
    cutlass::gemm::MainloopSm90TmaGmmaWarpSpecialized<kStages, ClusterShape, Schedule>, TileShape, ElementA, StrideA,
    ElementB, StrideB, TiledMma, GmemTiledCopyA, SmemLayoutAtomA, SmemCopyAtomA, TransformA, GmemTiledCopyB,
    SmemLayoutAtomB, SmemCopyAtomB, TransformB>> {
  using type = Sm90L2HintedMainloop<cutlass::gemm::collective::CollectiveMma<
      cutlass::gemm::MainloopSm90TmaGmmaWarpSpecialized<kStages, ClusterShape, Schedule>, TileShape, ElementA,
      StrideA, ElementB, StrideB, TiledMma, GmemTiledCopyA, SmemLayoutAtomA, SmemCopyAtomA, TransformA,
      GmemTiledCopyB, SmemLayoutAtomB, SmemCopyAtomB, TransformB>>;
};

}  // namespace sm90_detail
}  // namespace pycutlass_gemm
