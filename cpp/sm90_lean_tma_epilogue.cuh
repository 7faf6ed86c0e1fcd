// CUTLASS's SM90 TMA epilogue with a store() written out by hand: the build budget's lever
// (notes/measurements.md, session 33). In a bf16 128x256 persistent unit the device front end spends
// 8 of the kernel body's 21 s instantiating CUTLASS's store(): the CuTe partitions of its register-to-
// shared and shared-to-global copies and the fusion visitor's arguments. Here each thread computes
// where its accumulators sit from the wgmma accumulator layout (PTX ISA, "wgmma .m64nNk16 register
// fragment D"), reads C and writes D in the subtile's shared memory through the smem layout evaluated
// at those coordinates -- 16-bit C and D by ldmatrix / stmatrix, four 8x8 blocks a warp an instruction
// as CUTLASS does (the first version wrote a 4-byte word at a time with a swizzled address each: 0.1-3.5%
// slower kernels, H100 session 34), 32-bit ones an 8-byte word at a time -- and one warp issues the TMA
// store as CUTLASS does. Everything else -- Arguments, Params, shared storage, the producer's C loads, the
// pipelines, store_tail -- is CUTLASS's class, which this derives from.
//
// For what it replaces only: the cooperative kernel (two consumer warpgroups, tiles of 128 or 256 rows,
// 128-row subtiles), 16- or 32-bit C and D in row-major order, D = alpha * acc + beta * C (LinearCombination),
// TMA stores issued at once (not delayed: a C is always there). Not registered: tuning candidates
// (scripts/tuning_kernels.py, `_leanstore`) that match float64 on the H100 but run 0.1-1.8% behind
// their twins on big shapes (session 34), for a unit compiled in 15-20% less time.
#pragma once

#include <type_traits>

#include "cutlass_sm90_headers.cuh"

namespace pycutlass_gemm {
namespace sm90_detail {

// The epilogue schedule that asks CutlassSm90Gemm for it (CUTLASS's builder sees
// TmaWarpSpecializedCooperative).
struct TmaWarpSpecializedCooperativeLeanStore {};

template <class CutlassEpilogue>
class LeanTmaEpilogue;

template <int StagesC_, int StagesD_, int FragmentSize_, bool ReuseSmemC_, bool DelayTmaStore_, class CtaTileMNK_,
          class EpilogueTile_, class ElementC_, class StrideC_, class ElementD_, class StrideD_, class FusionCallbacks_,
          class CopyOpG2S_, class SmemLayoutAtomC_, class CopyOpS2R_, class CopyOpS2G_, class SmemLayoutAtomD_,
          class CopyOpR2S_, class CopyAtomC_, class CopyOpR2R_>
class LeanTmaEpilogue<cutlass::epilogue::collective::CollectiveEpilogue<
    cutlass::epilogue::Sm90TmaWarpSpecialized<StagesC_, StagesD_, FragmentSize_, ReuseSmemC_, DelayTmaStore_>,
    CtaTileMNK_, EpilogueTile_, ElementC_, StrideC_, ElementD_, StrideD_, FusionCallbacks_, CopyOpG2S_,
    SmemLayoutAtomC_, CopyOpS2R_, CopyOpS2G_, SmemLayoutAtomD_, CopyOpR2S_, CopyAtomC_, CopyOpR2R_>>
    : public cutlass::epilogue::collective::CollectiveEpilogue<
          cutlass::epilogue::Sm90TmaWarpSpecialized<StagesC_, StagesD_, FragmentSize_, ReuseSmemC_, DelayTmaStore_>,
          CtaTileMNK_, EpilogueTile_, ElementC_, StrideC_, ElementD_, StrideD_, FusionCallbacks_, CopyOpG2S_,
          SmemLayoutAtomC_, CopyOpS2R_, CopyOpS2G_, SmemLayoutAtomD_, CopyOpR2S_, CopyAtomC_, CopyOpR2R_> {
  using Base = cutlass::epilogue::collective::CollectiveEpilogue<
      cutlass::epilogue::Sm90TmaWarpSpecialized<StagesC_, StagesD_, FragmentSize_, ReuseSmemC_, DelayTmaStore_>,
      CtaTileMNK_, EpilogueTile_, ElementC_, StrideC_, ElementD_, StrideD_, FusionCallbacks_, CopyOpG2S_,
      SmemLayoutAtomC_, CopyOpS2R_, CopyOpS2G_, SmemLayoutAtomD_, CopyOpR2S_, CopyAtomC_, CopyOpR2R_>;

 public:
  using typename Base::Arguments;
  using typename Base::FusionCallbacks;
  using typename Base::LoadPipeline;
  using typename Base::LoadPipelineState;
  using typename Base::StorePipeline;
  using typename Base::StorePipelineState;
  using typename Base::TensorStorage;

  // The shared-memory layouts, derived as CUTLASS's class derives its own (private) ones.
  static constexpr int kEpiM = cute::size<0>(EpilogueTile_{}), kEpiN = cute::size<1>(EpilogueTile_{});
  using SmemLayoutC = decltype(cute::tile_to_shape(SmemLayoutAtomC_{},
                                                   cute::make_shape(cute::Int<kEpiM>{}, cute::Int<kEpiN>{},
                                                                    cute::Int<StagesC_>{}),
                                                   cute::Step<cute::_1, cute::_2, cute::_3>{}));
  using SmemLayoutD = decltype(cute::tile_to_shape(SmemLayoutAtomD_{},
                                                   cute::make_shape(cute::Int<kEpiM>{}, cute::Int<kEpiN>{},
                                                                    cute::Int<ReuseSmemC_ ? StagesC_ : StagesD_>{}),
                                                   cute::Step<cute::_1, cute::_2, cute::_3>{}));

  static_assert(sizeof(ElementC_) == sizeof(ElementD_) && (sizeof(ElementD_) == 2 || sizeof(ElementD_) == 4),
                "16-bit (bf16 / f16 products) or 32-bit (tf32) C and D");
  static_assert(!cutlass::epilogue::collective::detail::is_m_major<StrideC_>() &&
                    !cutlass::epilogue::collective::detail::is_m_major<StrideD_>(),
                "row-major C and D (N contiguous: a thread's two adjacent columns are one word)");
  static_assert(!DelayTmaStore_, "TMA stores issued at once");
  static_assert(kEpiM == 128 && cute::size<0>(CtaTileMNK_{}) % 128 == 0,
                "128-row subtiles: the two consumer warpgroups' 64-row blocks (cooperative), once a subtile");
  static_assert(kEpiN % (32 / sizeof(ElementD_)) == 0,
                "whole 8-column blocks of the accumulator layout in a subtile, pairs of them for 16-bit D");
  // C and D share each subtile stage's bytes (ReuseSmemC): a thread reads its C and writes its D at the
  // same places, so no barrier between the two, if the layouts are the same.
  static_assert(!ReuseSmemC_ || std::is_same_v<SmemLayoutC, SmemLayoutD>, "C and D laid out alike");

  // Params: CUTLASS's, with alpha and beta kept as the arguments gave them (scalars: CutlassSm90Gemm
  // sets args.epilogue.thread.alpha / beta and no pointers).
  struct Params : Base::Params {
    float alpha = 1.0f;
    float beta = 0.0f;
  };

  template <class ProblemShape>
  static Params to_underlying_arguments(ProblemShape const& problem_shape, Arguments const& args, void* workspace) {
    Params params;
    static_cast<typename Base::Params&>(params) = Base::to_underlying_arguments(problem_shape, args, workspace);
    params.alpha = args.thread.alpha;
    params.beta = args.thread.beta;
    return params;
  }

  CUTLASS_HOST_DEVICE
  LeanTmaEpilogue(Params const& params, TensorStorage& shared_tensors)
      : Base(params, shared_tensors), params_(params), fusion_callbacks_(params.thread, shared_tensors.thread) {}

  template <class ProblemShapeMNKL, class TileShapeMNK, class TileCoordMNKL, class AccEngine, class AccLayout,
            class TiledMma>
  CUTLASS_DEVICE auto store(LoadPipeline load_pipeline, LoadPipelineState load_pipe_consumer_state,
                            StorePipeline store_pipeline, StorePipelineState store_pipe_producer_state,
                            ProblemShapeMNKL problem_shape_mnkl, TileShapeMNK, TileCoordMNKL tile_coord_mnkl,
                            cute::Tensor<AccEngine, AccLayout> accumulators, TiledMma, int thread_idx,
                            TensorStorage& shared_tensors, int subtile_idx = -1) {
    using namespace cute;
    static_assert(size(TiledMma{}) == 2 * cutlass::NumThreadsPerWarpGroup, "two consumer warpgroups");
    static_assert(size(AccLayout{}) == size<0>(CtaTileMNK_{}) / 128 * size<1>(CtaTileMNK_{}) / 2,
                  "a 64 x N wgmma accumulator a thread for each 128 rows of the tile: (2 columns, 2 rows, N / 8 "
                  "blocks) x MMA_M");
    constexpr int kEpiTilesM = size<0>(CtaTileMNK_{}) / kEpiM, kEpiTilesN = size<1>(CtaTileMNK_{}) / kEpiN;

    auto [M, N, K, L] = problem_shape_mnkl;
    auto [m_coord, n_coord, k_coord, l_coord] = tile_coord_mnkl;

    // D's tile in global memory and its TMA partition, as CUTLASS's store() makes them.
    Tensor mD = coalesce(params_.tma_store_d.get_tma_tensor(make_shape(M, N, L)), take<0, 2>(CtaTileMNK_{}));
    Tensor gD = local_tile(mD, take<0, 2>(CtaTileMNK_{}), make_coord(m_coord, n_coord, l_coord));
    Tensor gD_epi = flat_divide(gD, EpilogueTile_{});  // (EPI_TILE_M, EPI_TILE_N, EPI_M, EPI_N)
    Tensor sC_epi = as_position_independent_swizzle_tensor(
        make_tensor(make_smem_ptr(shared_tensors.collective.smem_C.begin()), SmemLayoutC{}));
    Tensor sD_epi = as_position_independent_swizzle_tensor(
        make_tensor(make_smem_ptr(shared_tensors.collective.smem_D.begin()), SmemLayoutD{}));
    ThrCopy thrblk_s2g = params_.tma_store_d.get_slice(Int<0>{});
    Tensor bSG_sD = thrblk_s2g.partition_S(sD_epi);  // (S2G, S2G_M, S2G_N, PIPE_D)
    Tensor bSG_gD = thrblk_s2g.partition_D(gD_epi);  // (S2G, S2G_M, S2G_N, EPI_M, EPI_N)

    // This thread's place in the wgmma accumulator layout: value v = c + 2 r + 4 j + (N / 2) mm of its
    // fragment is row 128 mm + 64 wg + 16 warp + 8 r + lane / 4, column 8 j + 2 (lane % 4) + c of the
    // tile (CuTe's CLayout_64xN, the two warpgroups stacked along M, MMA_M = tile rows / 128 = the
    // subtile row mm = epi_m).
    const int lane = thread_idx % 32;
    const int block_row = 64 * (thread_idx / cutlass::NumThreadsPerWarpGroup) + 16 * (thread_idx / 32 % 4);
    const int row = block_row + lane / 4;
    const int col = 2 * (lane % 4);

    const bool is_producer_load_needed = fusion_callbacks_.is_producer_load_needed();
    const bool is_C_load_needed = fusion_callbacks_.is_C_load_needed();
    const float alpha = params_.alpha, beta = params_.beta;
    const bool issue_tma_store = thread_idx / cutlass::NumThreadsPerWarp == 0;
    auto synchronize = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      cutlass::arch::NamedBarrier::sync(size(TiledMma{}), cutlass::arch::ReservedNamedBarriers::EpilogueBarrier);
    };

    // With C's stages reused for D, the C a subtile reads is in the stage its D goes to (CUTLASS's
    // protocol: see its store()).
    LoadPipelineState load_wait_state = load_pipe_consumer_state;
    if constexpr (ReuseSmemC_) {
      load_wait_state = store_pipe_producer_state;
      load_wait_state.phase_ ^= 1;
    }

    CUTLASS_PRAGMA_UNROLL
    for (int epi_n = 0; epi_n < kEpiTilesN; ++epi_n) {
      CUTLASS_PRAGMA_UNROLL
      for (int epi_m = 0; epi_m < kEpiTilesM; ++epi_m) {
        if (subtile_idx != -1 && epi_n * kEpiTilesM + epi_m != subtile_idx) continue;
        const int d_stage = store_pipe_producer_state.index();
        const int c_stage = load_wait_state.index();
        if (is_producer_load_needed) load_pipeline.consumer_wait(load_wait_state);

        // The subtile's first value of this thread's fragment, and D = alpha acc + beta C of a pair.
        const int v0 = size<1>(CtaTileMNK_{}) / 2 * epi_m + 4 * epi_n * (kEpiN / 8);
        auto combine = [&](int v, float c0, float c1) CUTLASS_LAMBDA_FUNC_INLINE {
          cutlass::Array<float, 2> d;
          d[0] = alpha * float(accumulators(v));
          d[1] = alpha * float(accumulators(v + 1));
          if (is_C_load_needed) {
            d[0] = fmaf(beta, c0, d[0]);
            d[1] = fmaf(beta, c1, d[1]);
          }
          return cutlass::NumericArrayConverter<ElementD_, float, 2>{}(d);  // one cvt of a pair
        };
        if constexpr (sizeof(ElementD_) == 2) {
          // 16-bit C and D: four 8x8 blocks a warp an instruction (ldmatrix / stmatrix), whose fragments
          // are the accumulator's (thread `lane` holds row lane / 4, columns 2 (lane % 4) and + 1 of each
          // block). Block i of an instruction is rows 8 (i % 2) of the warp's 16, columns 8 (2 p + i / 2);
          // lanes 8 i .. 8 i + 7 give the addresses of its rows: 16 contiguous bytes each, which the
          // 16-byte granular swizzle keeps together.
          const int q = lane / 8;
          const int m = block_row + 8 * (q % 2) + lane % 8;
          CUTLASS_PRAGMA_UNROLL
          for (int p = 0; p < kEpiN / 16; ++p) {
            const int n = 8 * (2 * p + q / 2);
            uint32_t c[4] = {0, 0, 0, 0};
            if (is_C_load_needed) {
              asm volatile("ldmatrix.sync.aligned.x4.m8n8.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                           : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
                           : "r"(cute::cast_smem_ptr_to_uint(&sC_epi(m, n, c_stage))));
            }
            uint32_t d[4];
            CUTLASS_PRAGMA_UNROLL
            for (int i = 0; i < 4; ++i) {
              auto c_pair = cutlass::NumericArrayConverter<float, ElementC_, 2>{}(
                  reinterpret_cast<cutlass::Array<ElementC_, 2> const&>(c[i]));
              auto pair = combine(v0 + 4 * (2 * p + i / 2) + 2 * (i % 2), c_pair[0], c_pair[1]);
              d[i] = reinterpret_cast<uint32_t const&>(pair);
            }
            asm volatile("stmatrix.sync.aligned.x4.m8n8.shared.b16 [%0], {%1, %2, %3, %4};\n"
                         ::"r"(cute::cast_smem_ptr_to_uint(&sD_epi(m, n, d_stage))),
                         "r"(d[0]), "r"(d[1]), "r"(d[2]), "r"(d[3]));
          }
        } else {
          // 32-bit C and D: a thread's two adjacent columns, one 8-byte word.
          CUTLASS_PRAGMA_UNROLL
          for (int jj = 0; jj < kEpiN / 8; ++jj) {
            CUTLASS_PRAGMA_UNROLL
            for (int r = 0; r < 2; ++r) {
              const int m = row + 8 * r, n = 8 * jj + col;  // in the subtile
              float c0 = 0.0f, c1 = 0.0f;
              if (is_C_load_needed) {
                const ElementC_* c = &sC_epi(m, n, c_stage);
                c0 = float(c[0]);
                c1 = float(c[1]);
              }
              *reinterpret_cast<cutlass::Array<ElementD_, 2>*>(&sD_epi(m, n, d_stage)) =
                  combine(v0 + 4 * jj + 2 * r, c0, c1);
            }
          }
        }

        if (is_producer_load_needed) {
          if constexpr (!ReuseSmemC_) {
            cutlass::arch::fence_view_async_shared();
            load_pipeline.consumer_release(load_pipe_consumer_state);
            ++load_pipe_consumer_state;
          }
          ++load_wait_state;
        }

        // The subtile to global memory by TMA (one warp), then the next D stage once free.
        cutlass::arch::fence_view_async_shared();
        synchronize();
        if (issue_tma_store) {
          copy(params_.tma_store_d, bSG_sD(_, _, _, d_stage), bSG_gD(_, _, _, epi_m, epi_n));
          store_pipeline.producer_commit(store_pipe_producer_state);
        }
        ++store_pipe_producer_state;
        ++issued_stores_;
        if (issue_tma_store) store_pipeline.producer_acquire(store_pipe_producer_state);
        synchronize();
        if constexpr (ReuseSmemC_) {
          // A C stage goes back to the producer once the TMA store that read it has finished.
          if (issued_stores_ > StorePipeline::UnacquiredStages) {
            if (is_producer_load_needed) load_pipeline.consumer_release(load_pipe_consumer_state);
            ++load_pipe_consumer_state;
          }
        }
      }
    }
    return cute::make_tuple(load_pipe_consumer_state, store_pipe_producer_state);
  }

  CUTLASS_DEVICE auto store_tail(LoadPipeline load_pipeline, LoadPipelineState load_pipe_consumer_state,
                                 StorePipeline store_pipeline, StorePipelineState store_pipe_producer_state) {
    issued_stores_ = 0;
    return Base::store_tail(load_pipeline, load_pipe_consumer_state, store_pipeline, store_pipe_producer_state);
  }

 private:
  Params const& params_;
  FusionCallbacks fusion_callbacks_;
  int issued_stores_ = 0;
};

}  // namespace sm90_detail
}  // namespace pycutlass_gemm
