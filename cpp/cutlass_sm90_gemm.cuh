// One CUTLASS 3.x Hopper (SM90, wgmma + TMA) GEMM, assembled from a few named
// choices with the collective builders as in CUTLASS example 49, behind the
// GemmKernel interface. One class past 400 lines: the type its choices assemble (with why each
// is chosen) and the host side that checks and launches it -- arguments, TMA extents, swizzle --
// read together; its collectives, epilogues and rules live in the headers it includes.
//
// Compile only for sm_90a, with -DNDEBUG (without it ptxas serialises wgmma),
// one instantiation a generated file; the build compiles up to six such files of one family and
// mainloop as a translation unit (scripts/translation_units.py: the types
// they share are instantiated once; a unit takes 1-2 minutes and up to ~6 GB).
//
// Conventions (see gemm_problem.h): A is m x k, B is k x n, D (and C) are m x n
// row-major; layouts are the user's. CUTLASS's LayoutB tag describes B as k x n,
// so RowMajor B is N-major and ColumnMajor B is K-major.
//
// kTransposed: run the problem as D^T = B^T A^T, i.e. CUTLASS sees
// M' = n, N' = m, A' = B^T, B' = A^T, and a column-major D' = D^T. Leading
// dimensions stay the same; only the layout tags flip. Used for tf32 with
// row-major A and B: CUTLASS's builder would otherwise pick its "SwapAB" RS
// mainloop, which computes the transposed output tile and is only correct with
// the non-TMA EpilogueTransposed epilogue (see CUTLASS's
// test/unit/gemm/device/sm90_gemm_tf32_tf32_f32_tensor_op_f32.cu, tf32t_tf32t);
// with a TMA epilogue it writes D transposed. Transposed, rr becomes cc
// (A' MN-major in registers, B' K-major in smem): the plain, tested RS path.
// Also used (bf16/f16, rc) for small M: x @ W.T with a few rows of x becomes W x^T, W's rows
// on the 128-row tile and x's few rows on a narrow N tile, both operands K-major. And (bf16) for
// 192-row tiles of D: 128x192 tiles of D^T, where the user's M fills 192-row tiles better.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <mutex>
#include <string>
#include <type_traits>

#include "cutlass/kernel_hardware_info.h"

#include "cutlass_adapter.cuh"
#include "cutlass_sm90_headers.cuh"
#include "cutlass_sm90_priority.cuh"
#include "gemm_problem.h"
#include "sm90_collectives.cuh"
#include "sm90_epilogues.cuh"
#include "sm90_l2_hint_mainloop.cuh"
#include "sm90_lean_tma_epilogue.cuh"
#include "split_k_reduce.h"

namespace pycutlass_gemm {

template <class Element_,            // cutlass::bfloat16_t, cutlass::half_t, or float (tf32 math)
          class LayoutA_,            // user layout of A (m x k): cutlass::layout::RowMajor / ColumnMajor
          class LayoutB_,            // user layout of B (k x n)
          class TileShape_,          // cute::Shape<_M, _N, _K> (in CUTLASS's M'/N' when kTransposed)
          class ClusterShape_,       // cute::Shape<_X, _Y, _1>
          class MainloopSchedule_,   // cutlass::gemm::KernelTmaWarpSpecializedCooperative / ...Pingpong, or
                                     // KernelTmaWarpSpecializedCooperativeSmemTranspose (tf32, MN-major)
                                     // / ...Tf32x3 (fp32 as three tf32 products) / ...SplitN / ...3WG
                                     // (192-row tiles: sm90_collectives.cuh)
          class EpilogueSchedule_,   // cutlass::epilogue::TmaWarpSpecializedCooperative / TmaWarpSpecialized
          class TileScheduler_,      // cutlass::gemm::PersistentScheduler / StreamKScheduler /
                                     // SplitKParallelScheduler (above)
          bool kTransposed_ = false,
          bool kBias_ = false>       // epilogue also adds a bias row (F.linear): see FusionOp
class CutlassSm90Gemm : public GemmKernel {
 public:
  using Element = Element_;
  using UserLayoutA = LayoutA_;
  using UserLayoutB = LayoutB_;
  using TileShape = TileShape_;
  using ClusterShape = ClusterShape_;
  using MainloopSchedule = MainloopSchedule_;
  static constexpr bool kSplitK = std::is_same_v<TileScheduler_, SplitKParallelScheduler>;
  using TileScheduler = std::conditional_t<kSplitK, cutlass::gemm::PersistentScheduler, TileScheduler_>;
  static constexpr bool kTransposed = kTransposed_;
  static constexpr bool kBias = kBias_;
  static constexpr bool kStreamK = std::is_same_v<TileScheduler, cutlass::gemm::StreamKScheduler>;
  static_assert(!kSplitK || !kBias, "split-K in parallel: no bias row");

  // What CUTLASS sees.
  using LayoutA = std::conditional_t<kTransposed, typename sm90_detail::TransposeTag<LayoutB_>::type, LayoutA_>;
  using LayoutB = std::conditional_t<kTransposed, typename sm90_detail::TransposeTag<LayoutA_>::type, LayoutB_>;
  using LayoutC = std::conditional_t<kTransposed, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  using LayoutD = LayoutC;

  using ElementAccumulator = float;
  using ElementCompute = float;
  // Operands loaded with TMA (16-byte alignment), or at any alignment (16-bit operands that TMA
  // cannot load): KernelLdgWarpSpecializedCooperative, KernelStagedWarpSpecializedCooperative.
  static constexpr bool kUnalignedInputs = std::is_same_v<MainloopSchedule_, KernelLdgWarpSpecializedCooperative> ||
                               std::is_same_v<MainloopSchedule_, KernelStagedWarpSpecializedCooperative>;
  static constexpr int kAlignment = kUnalignedInputs ? 1 : 16 / int(sizeof(Element));
  static_assert(!kUnalignedInputs || (sizeof(Element) == 2 && !kBias && !kTransposed),
                "the any-alignment mainloop is for 16-bit operands, without bias row or D^T");
  // C and D at any alignment: CUTLASS's no-smem epilogue reads C and stores D from registers, element
  // by element, with per-element predicates (ragged tiles, odd N, odd leading dimensions). With a
  // TMA mainloop, for problems whose inputs TMA loads but whose output it cannot store (an odd N
  // with B column-major: x @ W.T onto a vocabulary of 50257).
  static constexpr bool kAnyOutput = std::is_same_v<EpilogueSchedule_, cutlass::epilogue::NoSmemWarpSpecialized>;
  // CUTLASS's cooperative TMA epilogue with its store() written out by hand (sm90_lean_tma_epilogue.cuh).
  static constexpr bool kLeanStore = std::is_same_v<EpilogueSchedule_, sm90_detail::TmaWarpSpecializedCooperativeLeanStore>;
  // Each subtile's TMA store issued one subtile later (CUTLASS's DelayTmaStore, which its builder sets only
  // without a C; sm90_epilogues.cuh, kDelayStore): the consumers convert the next subtile while the
  // barrier before a store drains. For the 16-bit persistent kernels of CUTLASS's cooperative TMA
  // mainloop (D row-major) and of three warpgroups, where it was measured (H100, session 35, ms against
  // the builder's epilogue, two runs): 128x256 at 8192x14336x4096 rc bf16 1.260 / 1.247 against 1.266 /
  // 1.252, fp16 1.379 / 1.379 against 1.397 / 1.383; 8192^3 rr bf16 1.396 / 1.383 against 1.399 / 1.385;
  // 3wg at 8192x14336x4096 rc bf16 1.278 / 1.268 against 1.285 / 1.275; 128x192 c2x1 at 4096x1536x4096 rc
  // 0.072 / 0.072 against 0.073 / 0.073; 128x128 c1x2 at 4096x1536x4096 0.076 / 0.077 against 0.077 /
  // 0.077; 128x64 c1x2 at 1024x1024x4096 rr 0.022 / 0.023 against 0.023 / 0.023; 4096^3, 3072^3 and
  // 3072x1536x4096 equal: never slower. 128x64 in clusters of 1x1 and 1x4 follow 128x64 c1x2 (session
  // 36's full build, delayed: 32 x (1024x64x1024) rr 0.035 ms, 128x4096x4096 rc 0.021, as before). Not
  // for stream-K (equal there) nor split-K (fp32 partials). And for the tuning candidates that ask for
  // it (the epilogue schedule TmaWarpSpecializedCooperativeDelayStore).
  static constexpr bool kThreeWarpgroups = std::is_same_v<MainloopSchedule_, KernelTmaWarpSpecializedCooperative3WG>;
  static constexpr bool kMeasuredDelayStore =
      sizeof(Element) == 2 && std::is_same_v<TileScheduler_, cutlass::gemm::PersistentScheduler> && !kBias &&
      !kTransposed && std::is_same_v<EpilogueSchedule_, cutlass::epilogue::TmaWarpSpecializedCooperative> &&
      (kThreeWarpgroups || std::is_same_v<MainloopSchedule_, cutlass::gemm::KernelTmaWarpSpecializedCooperative>);
  static constexpr bool kDelayStore =
      kMeasuredDelayStore || std::is_same_v<EpilogueSchedule_, sm90_detail::TmaWarpSpecializedCooperativeDelayStore>;
  using EpilogueSchedule = std::conditional_t<kLeanStore || kDelayStore, cutlass::epilogue::TmaWarpSpecializedCooperative,
                                              EpilogueSchedule_>;
  // A TMA epilogue (D, and C, 16-byte aligned) also behind the any-alignment mainloops: odd K
  // leaves A's rows unaligned while D's rows (N) may be aligned.
  static constexpr int kOutputAlignment = kAnyOutput ? 1 : 16 / int(sizeof(Element));
  static_assert(!kAnyOutput || (!kBias && !kTransposed), "no bias row or D^T with the no-smem epilogue");
  static_assert(!kSplitK || (!kAnyOutput && !kUnalignedInputs), "split-K in parallel: TMA in and out");
  // Split-K in parallel: the kernel writes fp32 partial products (no C); the reduction writes D
  // from them, element by element, so the user's C and D may have any alignment.
  using ElementOut = std::conditional_t<kSplitK, float, Element>;
  using ElementSource = std::conditional_t<kSplitK, void, Element>;
  static constexpr int kKernelOutputAlignment = kSplitK ? 16 / int(sizeof(float)) : kOutputAlignment;

  // Epilogue: D = alpha * acc + beta * C, and with kBias + bias[n] for a bias row (a vector of n,
  // one value per output column, broadcast down the rows: F.linear's bias). CUTLASS's
  // LinCombPerColBias loads it once per tile into shared memory (Sm90RowBroadcast); a null
  // bias_ptr reads as zeros, so the kernel also runs problems without one. Computing D^T, the
  // user's columns are CUTLASS's rows: LinCombPerRowBias. The bias is not scaled by beta, so a
  // bias row is taken only with beta 1 (has_bias_row) and CUTLASS's beta is then 0.
  using FusionOp = std::conditional_t<
      !kBias, cutlass::epilogue::fusion::LinearCombination<ElementOut, ElementCompute, ElementSource, ElementCompute>,
      std::conditional_t<kTransposed,
                         cutlass::epilogue::fusion::LinCombPerRowBias<Element, ElementCompute, Element, Element,
                                                                      ElementCompute>,
                         cutlass::epilogue::fusion::LinCombPerColBias<Element, ElementCompute, Element, Element,
                                                                      ElementCompute>>>;

  // fp32 D and C (tf32, tf32x3) through the cooperative TMA epilogue: subtiles of 128 x 16, so the
  // mainloop gets another stage (sm90_epilogues.cuh, kFp32EpilogueN); else the builder's.
  static constexpr bool kFp32Subtiles =
      std::is_same_v<Element, float> && !kSplitK && !kBias &&
      std::is_same_v<EpilogueSchedule, cutlass::epilogue::TmaWarpSpecializedCooperative>;
  // With delayed stores the subtiles of the epilogue they delay: the builder's (128 x 32; 128 x 16 where
  // 32 columns do not divide the tile's N: 80, 176), or the three warpgroups' (192 x 16 over 384 threads).
  static constexpr int kCooperativeSubtileN =
      cute::size<1>(TileShape{}) % sm90_detail::kBuilderCooperativeEpilogueN == 0
          ? sm90_detail::kBuilderCooperativeEpilogueN
          : 16;
  using CutlassEpilogue = typename std::conditional_t<
      kFp32Subtiles || kDelayStore,
      sm90_detail::SubtileTmaEpilogue<TileShape, ElementSource, LayoutC, ElementOut, LayoutD, FusionOp,
                                      (kThreeWarpgroups ? 3 : 2) * cutlass::NumThreadsPerWarpGroup,
                                      kFp32Subtiles      ? sm90_detail::kFp32EpilogueN
                                      : kThreeWarpgroups ? sm90_detail::k3WGEpilogueN
                                                         : kCooperativeSubtileN,
                                      kDelayStore>,
      sm90_detail::Epilogue<TileShape, ClusterShape, ElementSource, LayoutC,  // C
                            ElementOut, LayoutD,                               // D
                            kKernelOutputAlignment, EpilogueSchedule, FusionOp, MainloopSchedule_>>::type;
  using CollectiveEpilogue =
      std::conditional_t<kLeanStore, sm90_detail::LeanTmaEpilogue<CutlassEpilogue>, CutlassEpilogue>;

  using CollectiveMainloop = typename sm90_detail::WithL2Hints<typename sm90_detail::Mainloop<
      Element, LayoutA, LayoutB, kAlignment, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      MainloopSchedule_>::type>::type;

  using GemmKernelType = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, CollectiveMainloop,
                                                              CollectiveEpilogue, TileScheduler>;
  using Arguments = typename GemmKernelType::Arguments;
  using StrideA = typename GemmKernelType::StrideA;
  using StrideB = typename GemmKernelType::StrideB;
  using StrideC = typename GemmKernelType::StrideC;
  using StrideD = typename GemmKernelType::StrideD;

  static constexpr int kTileM = cute::size<0>(TileShape{});
  static constexpr int kTileN = cute::size<1>(TileShape{});
  // The tile of the user's D one CTA computes (computing D^T, a kTileM x kTileN tile is kTileN x kTileM of D).
  static constexpr int kTileOfDM = kTransposed ? kTileN : kTileM, kTileOfDN = kTransposed ? kTileM : kTileN;
  // ... and its cluster, in tiles of D.
  static constexpr int kClusterM = cute::size<0>(ClusterShape{}), kClusterN = cute::size<1>(ClusterShape{});
  static constexpr int kClusterOfDM = kTransposed ? kClusterN : kClusterM;
  static constexpr int kClusterOfDN = kTransposed ? kClusterM : kClusterN;

  // Launched as a programmatic dependent of the kernel before it on the stream (PDL; gemm_problem.h,
  // programmatic_launch_allowed): the CTAs are scheduled as that kernel's last ones exit and set up
  // (barriers, TMA descriptor prefetch) while it drains. Safe where every warp that reads global memory
  // waits for the kernel before to complete first (griddepcontrol.wait, compiled in where the unit
  // defines CUTLASS_ENABLE_GDC_FOR_SM90: scripts/generate_kernels.py, every SM90 unit but stream-K's,
  // whose CUTLASS scheduler does not compile with it): CUTLASS's TMA warp-specialized cooperative kernel and
  // the three-warpgroup copy of it wait in the mainloop's and the epilogue's producer warps, and the
  // consumers write D (or split-K's partials) only from what those loaded. Not the cp.async kernels (any
  // alignment: four producer warps load without the wait) nor stream-K (its reduction reads flags in a
  // workspace zeroed just before the launch). H100 (session 36, two machines), bf16 products back to back
  // on one stream (operand sets cycled past L2), us a call, plain / programmatic: 1024x1024x4096 rr 21.4 /
  // 19.1 and 20.1 / 19.3, 1024x2048x4096 rc 28.7 / 26.6 and 27.6 / 26.7, 3072^3 rc (three warpgroups)
  // 83.6 / 82.1, 128x4096x4096 rc 18.5 / 16.8, 256x256x131072 rr (split-K and its pass) 57.2 / 54.3;
  // 2048^3 and 4096^3 within the noise (~1 us). A kernel timed alone is unchanged.
  using KernelSchedule = typename CollectiveMainloop::DispatchPolicy::Schedule;
  static constexpr bool kProgrammaticLaunch =
      !kStreamK && (std::is_base_of_v<cutlass::gemm::KernelTmaWarpSpecializedCooperative, KernelSchedule> ||
                    std::is_same_v<KernelSchedule, KernelTmaWarpSpecializedCooperative3WG>);
#ifndef CUTLASS_ENABLE_GDC_FOR_SM90
  static_assert(!kProgrammaticLaunch, "launched as a programmatic dependent, the kernel must be built to wait");
#endif

  CutlassSm90Gemm(const char* name, const char* tile, int priority)
      : info_{name,
              "cutlass_sm90",
              sm90_detail::DTypeOf<Element>::value,
              sm90_detail::math_of<Element, MainloopSchedule_>(),
              sm90_detail::layout_of<LayoutA_>(),
              sm90_detail::layout_of<LayoutB_>(),
              90,
              90,
              tile,
              kAlignment,
              priority,
              kBias,
              kSplitK ? 1 : kOutputAlignment} {
    info_.tile_m = kTileOfDM;
    info_.tile_n = kTileOfDN;
    info_.tiles_in_waves = !kStreamK && !kSplitK;
    info_.cluster_m = kClusterOfDM;
    info_.cluster_n = kClusterOfDN;
  }

  const KernelInfo& info() const override { return info_; }

  // The rules by which it ranks itself for a problem: cutlass_sm90_priority.cuh.
  int priority(const GemmProblem& p) const override { return Sm90Priority<CutlassSm90Gemm>::of(p, info_.priority); }

  // Slices for split-K in parallel (0: no split): the most, up to one a CTA per SM, that divide K
  // into equal slices of at least kMinKPerSlice elements, each a multiple of 8 (slices are reached
  // through TMA batch strides: 16 bytes). At least half the SMs must get work, else no split.
  static constexpr int64_t kMinKPerSlice = 512;
  static int64_t sm_count_of(const GemmProblem& p) { return sm90_tiles::sm_count_of(p); }
  // Output tiles of p (as many in D as in D^T).
  static int64_t tiles_of(const GemmProblem& p) { return sm90_tiles::tiles_of(p, kTileOfDM, kTileOfDN); }
  static int64_t split_k_slices(const GemmProblem& p) {
    if (p.batch != 1 || p.k <= 0 || p.m <= 0 || p.n <= 0) return 0;
    const int64_t target = sm_count_of(p) / tiles_of(p);
    for (int64_t slices = target; slices >= std::max<int64_t>(2, (target + 1) / 2); --slices)
      if (p.k % (8 * slices) == 0 && p.k / slices >= kMinKPerSlice) return slices;
    return 0;
  }
  static size_t partial_bytes(const GemmProblem& p) {
    const size_t bytes = size_t(split_k_slices(p)) * p.m * p.n * sizeof(float);
    return (bytes + 255) / 256 * 256;
  }

  std::string can_implement(const GemmProblem& p) const override {
    std::string why = check_common(info_, p);
    if (!why.empty()) return why;
    if (p.m <= 0 || p.n <= 0 || p.k <= 0 || p.batch <= 0) return "empty problem";
    if (p.m > INT_MAX || p.n > INT_MAX || p.k > INT_MAX || p.batch > INT_MAX) return "m, n, k and batch must fit in int32";
    if (kSplitK && p.batch > 1) return "splits the K of one product; batched problems are not split";
    if (kSplitK && split_k_slices(p) == 0)
      return "K (" + std::to_string(p.k) + ") does not split into equal slices of at least " +
             std::to_string(kMinKPerSlice) + " (multiples of 8) for at least half the SMs";
    const bool beta = p.beta != 0.0;
    if (p.batch > 1) {
      // A runtime stride of 0 would reach cuTensorMapEncodeTiled as a zero global
      // stride (cute only drops compile-time-0 modes); not verified, so refused. The
      // any-alignment mainloops and the no-smem epilogue address the batch with plain offsets.
      if ((!kUnalignedInputs && (p.a.batch_stride == 0 || p.b.batch_stride == 0)) ||
          (!kAnyOutput && beta && p.c.batch_stride == 0))
        return "batch_stride 0 (an operand broadcast over the batch) is not supported with TMA";
      if (p.d.batch_stride == 0) return "D needs a nonzero batch stride";
      if (p.a.batch_stride < 0 || p.b.batch_stride < 0 || (beta && p.c.batch_stride < 0) || p.d.batch_stride < 0)
        return "negative batch strides are not supported";
    }
    // Behind the any-alignment mainloops, CUTLASS's cp.async kernel runs the epilogue's loads of C
    // from all four producer warps, and its TMA epilogue expects one loader: C is read only by the
    // no-smem epilogue (_anyout) there.
    if (kUnalignedInputs && !kAnyOutput && beta)
      return "reads C (beta != 0) only with the no-smem epilogue (the _anyout twin)";
    if constexpr (kUnalignedInputs) {  // the any-alignment mainloops address a tile's lines with int offsets
      constexpr int64_t kMaxLd = int64_t(1) << 24;
      if (p.a.ld(sm90_detail::layout_of<LayoutA_>()) > kMaxLd || p.b.ld(sm90_detail::layout_of<LayoutB_>()) > kMaxLd)
        return "leading dimensions of A and B must be at most 2^24 elements";
    }
    // TMA needs the contiguous extent of every operand it moves to be a multiple of 16 bytes.
    struct Extent { const char* what; int64_t extent; int alignment; };
    const Extent extents[] = {
        {"A", sm90_detail::contiguous_extent<LayoutA_>(p.m, p.k), kAlignment},
        {"B", sm90_detail::contiguous_extent<LayoutB_>(p.k, p.n), kAlignment},
        {"D", p.n, kKernelOutputAlignment},  // split-K: the fp32 partials, m x n row-major
    };
    for (const Extent& e : extents)
      if (e.extent % e.alignment != 0)
        return std::string("needs the contiguous extent of ") + e.what + " (" + std::to_string(e.extent) +
               ") to be a multiple of " + std::to_string(e.alignment) + " elements (16 bytes, TMA)";
    return cutlass_adapter::can_implement<GemmKernelType>(make_arguments(p));
  }

  // Split-K in parallel: the partial products first, then CUTLASS's own workspace.
  size_t workspace_size(const GemmProblem& p) const override {
    return (kSplitK ? partial_bytes(p) : 0) + GemmKernelType::get_workspace_size(make_arguments(p));
  }

  // The caller has checked can_implement (the plan cache holds only kernels that accepted the
  // problem's class). What GemmUniversalAdapter::initialize() + run() do, less the two
  // cudaFuncSetAttribute calls they make on every launch: the shared-memory limit is raised once
  // per device, and clusters of 2 need no non-portable-size permission.
  void run(const GemmProblem& p, void* workspace) const override {
    void* partials = kSplitK ? workspace : nullptr;
    if (kSplitK) workspace = static_cast<char*>(workspace) + partial_bytes(p);
    Arguments args = make_arguments(p, partials);
    if constexpr (sm90_detail::kHasTmaRows<CollectiveMainloop>) {  // the TMA SS mainloop (Sm90L2HintedMainloop)
      const auto [rows_a, rows_b, k_of_batch, batches] = args.problem_shape;
      args.mainloop.tma_rows_a = tma_rows<kTileM>(args.mainloop.ptr_A, args.mainloop.dA, rows_a, k_of_batch, batches);
      args.mainloop.tma_rows_b = tma_rows<kTileN>(args.mainloop.ptr_B, args.mainloop.dB, rows_b, k_of_batch, batches);
    }
    const auto stream = reinterpret_cast<cudaStream_t>(p.stream);
    const int device = cutlass_adapter::current_device();
    cutlass_adapter::make_context_current(device);  // before the TMA descriptors are encoded
    cutlass::Status status = GemmKernelType::initialize_workspace(args, workspace, stream);
    if (status != cutlass::Status::kSuccess) cutlass_adapter::throw_status(info_.name, "initialize_workspace", status);
    typename GemmKernelType::Params params = GemmKernelType::to_underlying_arguments(args, workspace);
    allow_shared_memory_once(device);
    cudaLaunchConfig_t config{};
    config.gridDim = GemmKernelType::get_grid_shape(params);
    config.blockDim = GemmKernelType::get_block_shape();
    config.dynamicSmemBytes = GemmKernelType::SharedStorageSize;
    config.stream = stream;
    cudaLaunchAttribute attrs[2] = {};
    attrs[0].id = cudaLaunchAttributeClusterDimension;
    attrs[0].val.clusterDim = {static_cast<unsigned>(kClusterM), static_cast<unsigned>(kClusterN), 1};
    attrs[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[1].val.programmaticStreamSerializationAllowed = 1;
    config.attrs = attrs;
    config.numAttrs = kProgrammaticLaunch && programmatic_launch_allowed() ? 2 : 1;
    void* kernel_args[] = {&params};
    check_launch(info_.name.c_str(),
                 cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(cutlass::device_kernel<GemmKernelType>),
                                     kernel_args));
    if constexpr (kSplitK) sum_split_k_partials(p, static_cast<int>(split_k_slices(p)), partials);
  }

 private:
  // Batch stride for CUTLASS: the real one when batched; for a single matrix a
  // harmless nonzero, 16-byte-aligned value (rows x ld), never 0.
  static int64_t batch_stride(const GemmProblem& p, const MatrixRef& r, Layout layout, int64_t outer) {
    return p.batch > 1 ? r.batch_stride : outer * r.ld(layout);
  }

  // The scheduler's swizzle for a problem: the largest of 8, 4, 2, 1 whose padding adds at most an
  // eighth to the tiles and no wave of SMs. CUTLASS rounds the tile grid up to a multiple of the
  // swizzle (times the cluster) in both dimensions, and the tiles it adds fall among a CTA's own: at
  // 1024 x 4096 x 16384 (8 x 16 tiles of 128x256) swizzle 8 padded M to 16 tiles, half the CTAs got
  // two tiles, and the kernel ran 0.400 ms against 0.167 (0.99x cuBLAS) with swizzle 1; at
  // 3072 x 2048 x 4096 (24 x 11 tiles of 128x192: two waves of 132 SMs) swizzle 4 padded N to 12
  // tiles, 288 in all, a third wave: 0.106 ms where 128x192 tiles of D^T (256) ran 0.072.
  template <class Shape>
  static int swizzle_for(const Shape& shape, int64_t sms) {
    const int64_t m = cute::get<0>(shape), n = cute::get<1>(shape), cm = kClusterM, cn = kClusterN;
    const int64_t tiles = tile_count(m, n, 1, kTileM, kTileN, cm, cn);
    const int64_t ctas = std::max<int64_t>(sms / (cm * cn) * (cm * cn), cm * cn);
    const auto waves = [&](int64_t t) { return (t + ctas - 1) / ctas; };
    int swizzle = 8;
    for (; swizzle > 1; swizzle /= 2) {
      const int64_t padded = tile_count(m, n, 1, kTileM, kTileN, swizzle * cm, swizzle * cn);
      if (8 * padded <= 9 * tiles && waves(padded) == waves(tiles)) break;
    }
    return swizzle;
  }

  // The rows (the kernel's M for A, N for B) that an operand's TMA descriptor spans: `rows` rounded up to whole tiles
  // where the operand is K-major (its rows lie ld apart, so the extra rows are whole rows of memory past the last)
  // and that memory is mapped (readable_bytes), else `rows`. TMA then loads a box straddling the edge as an inside
  // one instead of filling its rows past the edge, ~4x slower a row (Sm90L2HintedMainloop::Arguments says why those
  // rows are never seen). An MN-major operand's extra rows would lie inside its next column, past its pitch.
  template <int kTile, class Element, class Stride>
  static int tma_rows(const Element* ptr, const Stride& stride, int rows, int k, int batches) {
    if (ptr == nullptr || rows % kTile == 0 || !cutlass::gemm::detail::is_k_major<Stride>()) return rows;
    const int whole = (rows + kTile - 1) / kTile * kTile;
    const auto bytes = [&](int r) {
      return static_cast<int64_t>(cute::cosize(cute::make_layout(cute::make_shape(r, k, batches), stride))) *
             static_cast<int64_t>(sizeof(Element));
    };
    return readable_bytes(ptr, bytes(rows)) >= bytes(whole) ? whole : rows;
  }

  // `partials`: where split-K in parallel writes its slices' products (nullptr when only sizing or checking).
  static Arguments make_arguments(const GemmProblem& p, void* partials = nullptr) {
    using EA = typename GemmKernelType::ElementA;
    using EB = typename GemmKernelType::ElementB;
    using EC = typename GemmKernelType::ElementC;
    using ED = typename GemmKernelType::ElementD;
    const bool bias = kBias && has_bias_row(p);  // C is the bias row: added by the bias node
    const bool beta = p.beta != 0.0 && !bias;
    const MatrixRef& c = beta ? p.c : p.d;  // C is not read when beta == 0; D stands in for it
    const int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
    const int l = static_cast<int>(p.batch);
    using ProblemShape = typename GemmKernelType::ProblemShape;
    const ProblemShape shape = kTransposed ? ProblemShape{n, m, k, l} : ProblemShape{m, n, k, l};

    // Leading dimensions in the kernel's layouts, and the outer extents (the non-leading
    // dimension) for the single-matrix batch stride.
    constexpr Layout la = sm90_detail::layout_of<LayoutA_>(), lb = sm90_detail::layout_of<LayoutB_>();
    const int64_t lda = p.a.ld(la), ldb = p.b.ld(lb), ldc = c.ld(Layout::Row), ldd = p.d.ld(Layout::Row);
    const int64_t a_bs = batch_stride(p, p.a, la, la == Layout::Row ? p.m : p.k);
    const int64_t b_bs = batch_stride(p, p.b, lb, lb == Layout::Row ? p.k : p.n);
    const int64_t c_bs = batch_stride(p, c, Layout::Row, p.m), d_bs = batch_stride(p, p.d, Layout::Row, p.m);

    Arguments args{};
    args.problem_shape = shape;
    args.mode = l > 1 ? cutlass::gemm::GemmUniversalMode::kBatched : cutlass::gemm::GemmUniversalMode::kGemm;
    if constexpr (!kTransposed) {
      args.mainloop.ptr_A = static_cast<const EA*>(p.a.ptr);
      args.mainloop.dA = sm90_detail::make_stride_ld<StrideA>(lda, a_bs);
      args.mainloop.ptr_B = static_cast<const EB*>(p.b.ptr);
      args.mainloop.dB = sm90_detail::make_stride_ld<StrideB>(ldb, b_bs);
    } else {
      args.mainloop.ptr_A = static_cast<const EA*>(p.b.ptr);
      args.mainloop.dA = sm90_detail::make_stride_ld<StrideA>(ldb, b_bs);
      args.mainloop.ptr_B = static_cast<const EB*>(p.a.ptr);
      args.mainloop.dB = sm90_detail::make_stride_ld<StrideB>(lda, a_bs);
    }
    args.epilogue.ptr_C = static_cast<const EC*>(c.ptr);
    args.epilogue.dC = sm90_detail::make_stride_ld<StrideC>(ldc, c_bs);
    args.epilogue.ptr_D = static_cast<ED*>(const_cast<void*>(p.d.ptr));
    args.epilogue.dD = sm90_detail::make_stride_ld<StrideD>(ldd, d_bs);
    args.epilogue.thread.alpha = static_cast<float>(p.alpha);
    args.epilogue.thread.beta = beta ? static_cast<float>(p.beta) : 0.0f;
    if constexpr (kBias) args.epilogue.thread.bias_ptr = bias ? static_cast<const ED*>(p.c.ptr) : nullptr;
    if constexpr (kSplitK) {
      // Slice s of K is batch s: A and B advance by a slice along K, the partial products (alpha 1,
      // no C) by an m x n matrix; the reduction applies alpha, beta and C.
      // Computing D^T, A and B trade places and the partials are column-major n x m: the same memory.
      const int64_t slices = split_k_slices(p), kslice = p.k / std::max<int64_t>(slices, 1);
      const int ks = static_cast<int>(kslice), ls = static_cast<int>(std::max<int64_t>(slices, 1));
      args.problem_shape = kTransposed ? ProblemShape{n, m, ks, ls} : ProblemShape{m, n, ks, ls};
      args.mode = cutlass::gemm::GemmUniversalMode::kBatched;
      const int64_t a_slice = la == Layout::Row ? kslice : kslice * lda, b_slice = lb == Layout::Row ? kslice * ldb : kslice;
      args.mainloop.dA = sm90_detail::make_stride_ld<StrideA>(kTransposed ? ldb : lda, kTransposed ? b_slice : a_slice);
      args.mainloop.dB = sm90_detail::make_stride_ld<StrideB>(kTransposed ? lda : ldb, kTransposed ? a_slice : b_slice);
      args.epilogue.ptr_C = nullptr;
      args.epilogue.ptr_D = static_cast<ED*>(partials);
      args.epilogue.dD = sm90_detail::make_stride_ld<StrideD>(p.n, p.m * p.n);
      args.epilogue.thread.alpha = 1.0f;
      args.epilogue.thread.beta = 0.0f;
    }

    args.hw_info.sm_count = p.sm_count;
    if (p.sm_count <= 0) {  // CUTLASS queries the device then
      int device = 0;
      cudaGetDevice(&device);
      args.hw_info.device_id = device;
    }
    // Swizzle: consecutive CTAs take blocks of up to 8 tiles across the raster's minor direction
    // rather than one line of tiles, so a wave reads a squarer piece of A and B and more of it
    // comes from L2 (CUTLASS's default is 1, no swizzle). Measured on the H100 (bf16 128x256
    // persistent, x cuBLAS): 8192x14336x4096 rc 0.89x -> 0.98x, 8192^3 rr 1.01x -> 1.02x.
    args.scheduler.max_swizzle_size = swizzle_for(shape, sm_count_of(p));
    if constexpr (kStreamK) {
      using Params = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90StreamKParams;
      // Heuristic: data-parallel when the tiles fill the SMs, split-K / stream-K otherwise
      // (e.g. 4 tiles on 132 SMs becomes a 33-way split).
      args.scheduler.decomposition_mode = Params::DecompositionMode::Heuristic;
      // Deterministic: each split adds its partial tile to the workspace only after the one
      // before it, a chain as long as the split (measured on H100: 0.28 ms at 33 splits, 0.41
      // at 66, for a problem that needs 0.18 ms of memory traffic). Nondeterministic: the splits
      // add concurrently (atomics), the last one applies the epilogue.
      args.scheduler.reduction_mode =
          p.deterministic ? Params::ReductionMode::Deterministic : Params::ReductionMode::Nondeterministic;
    }
    return args;
  }

  // The kernel needs more than the default 48 KiB of shared memory: raise its limit on the current
  // device the first time it launches there (the setting is per device and lasts).
  static void allow_shared_memory_once(int device) {
    constexpr int kMaxDevices = 64;
    static std::once_flag done[kMaxDevices];
    if (device < 0 || device >= kMaxDevices) device = 0;
    std::call_once(done[device], [] {
      cudaFuncSetAttribute(cutlass::device_kernel<GemmKernelType>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           GemmKernelType::SharedStorageSize);
    });
  }

  KernelInfo info_;
};

}  // namespace pycutlass_gemm
