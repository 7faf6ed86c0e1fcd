// Parallel split-K's reduction (split_k_reduce.h).
#include "split_k_reduce.h"

#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <type_traits>

#include "strided_gemm.cuh"

namespace pycutlass_gemm {
namespace {

// A block sums kLanes consecutive packs of kVec outputs; its kGroups rows of threads split each
// output's slices (row g adds slices g, g + kGroups, ..., in order) and row 0 then adds the rows'
// sums in order and applies the epilogue. A fixed order for a problem, so deterministic. One
// thread an output running through all the slices (before: 256 x 256 x 524288's 66 slices, 64
// blocks) waited on each round of loads in turn: 9.6 us for 17 MB of partials that L2 holds; rows
// of threads put more loads in flight over all SMs where the outputs are few and the slices many
// (choose_groups). Indices are 32-bit where the outputs allow: 64-bit division took most of the
// kernel's time (H100, session 27, the kernel alone, us, before -> now: 256 x 256 with 16 slices
// 4.5 -> 3.3, 512 x 512 with 16 9.5 -> 4.9, 1024 x 1024 with 8 26.7 -> 8.7).
//
// kVec = 4: partials read four at a time (a float4 of fp32, 8 bytes of 16-bit ones; the caller
// checks alignment and a multiple of 4 outputs); D and C are written and read element by element,
// at any alignment. P: the partials' element type (Acc, or T: PartialType::kOutput).
template <typename P, typename Acc, int kVec>
__device__ __forceinline__ void add_pack(Acc (&sum)[kVec], const P* partials, size_t index) {
  if constexpr (kVec == 4 && std::is_same_v<P, float>) {
    const float4 v = reinterpret_cast<const float4*>(partials)[index];
    sum[0] += v.x, sum[1] += v.y, sum[2] += v.z, sum[3] += v.w;
  } else if constexpr (kVec == 4) {
    static_assert(sizeof(P) == 2, "packs of four 16-bit partials");
    union { uint2 v; P e[4]; } u;
    u.v = reinterpret_cast<const uint2*>(partials)[index];
#pragma unroll
    for (int q = 0; q < 4; ++q) sum[q] += to_acc<Acc>(u.e[q]);
  } else {
    sum[0] += to_acc<Acc>(partials[index]);
  }
}

// D = alpha * out + beta * C for 4 adjacent outputs of a row (kRowPacks), D written in one store.
template <typename T, typename Acc>
__device__ __forceinline__ void store_row_pack(const StridedMatrix<T>& c, const StridedMatrix<T>& d, Acc alpha,
                                               Acc beta, int64_t b, int64_t i, int64_t j, const Acc (&out)[4]) {
  const int64_t offset_d = b * d.batch_stride + i * d.row_stride + j;
  union { T e[4]; std::conditional_t<sizeof(T) == 4, uint4, uint2> v; } u;
  if (beta != Acc(0)) {
#pragma unroll
    for (int q = 0; q < 4; ++q) u.e[q] = from_acc<T>(alpha * out[q] + beta * to_acc<Acc>(c.at(b, i, j + q)));
  } else {
#pragma unroll
    for (int q = 0; q < 4; ++q) u.e[q] = from_acc<T>(alpha * out[q]);
  }
  *reinterpret_cast<decltype(u.v)*>(d.ptr + offset_d) = u.v;
}

// kRowPacks: D holds each row's outputs adjacent, its rows, batches and pointer at multiples of 4 elements, and N
// is a multiple of 4 (C, read where beta != 0, through its strides): a pack of 4 outputs lies in one row, its
// position takes one pair of divisions (not a pair an output) and D is written 4 outputs a store. Where the outputs
// are many, the element-by-element epilogue (two 32-bit divisions and 64-bit addressing an output) costs more than
// the loads: 176 x 4096 x 4096's 4 slices (11.5 MB of partials in L2) took 7.2 us.
template <typename T, typename P, int kVec, int kLanes, int kGroups, typename Index, bool kRowPacks = false>
__global__ void __launch_bounds__(kLanes * kGroups)
    sum_partials_kernel(int64_t m64, int64_t n64, int64_t batch, int slices, const P* __restrict__ partials,
                        StridedMatrix<T> c, StridedMatrix<T> d, typename AccumulatorOf<T>::type alpha,
                        typename AccumulatorOf<T>::type beta) {
  using Acc = typename AccumulatorOf<T>::type;
  static_assert(kVec == 1 || (kVec == 4 && std::is_same_v<Acc, float>), "packs of four fp32 or 16-bit partials");
  static_assert(kVec == 4 || !kRowPacks, "a row's packs are of four");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Launched as the product's programmatic dependent (launch_after_product): the blocks may start
  // while the product's last blocks finish; this waits until it has completed and its partials
  // are visible. A no-op for a plain launch.
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  __shared__ Acc row_sums[kGroups > 1 ? kGroups : 1][kGroups > 1 ? kLanes * kVec : 1];
  const Index n = n64, mn = m64 * n64, packs = batch * m64 * n64 / kVec;
  const int lane = threadIdx.x % kLanes, group = threadIdx.x / kLanes;
  for (Index first = blockIdx.x * Index(kLanes); first < packs; first += Index(gridDim.x) * kLanes) {
    const Index pack = first + lane;
    Acc sum[kVec] = {};
    if (pack < packs) {
#pragma unroll 4
      for (int s = group; s < slices; s += kGroups) add_pack<P, Acc, kVec>(sum, partials, size_t(s) * packs + pack);
    }
    if constexpr (kGroups > 1) {
#pragma unroll
      for (int q = 0; q < kVec; ++q) row_sums[group][lane * kVec + q] = sum[q];
      __syncthreads();
    }
    if (group == 0 && pack < packs) {
      Acc out[kVec];
#pragma unroll
      for (int q = 0; q < kVec; ++q) {
        out[q] = sum[q];
        if constexpr (kGroups > 1) {
          out[q] = row_sums[0][lane * kVec + q];
#pragma unroll
          for (int g = 1; g < kGroups; ++g) out[q] += row_sums[g][lane * kVec + q];
        }
      }
      if constexpr (kRowPacks) {
        const Index e = pack * kVec, bz = e / mn, r = e - bz * mn, i = r / n, j = r - i * n;
        store_row_pack<T>(c, d, alpha, beta, bz, i, j, out);
      } else {
#pragma unroll
        for (int q = 0; q < kVec; ++q) {
          const Index e = pack * kVec + q, bz = e / mn, r = e - bz * mn, i = r / n, j = r - i * n;
          store_epilogue(c, d, alpha, beta, bz, i, j, out[q]);
        }
      }
    }
    if constexpr (kGroups > 1) __syncthreads();  // the next packs overwrite row_sums
  }
}

// Rows of threads a block (of 32 lanes; 256 with one row): 8 where the slices are many (66 at 256 x
// 256 x 524288), one (a thread a pack through all slices, no shared memory) where the outputs alone
// fill the GPU's threads, else 4. H100, session 27, the kernel alone, us, rows 8 / 4 / 1: 256 x 256
// with 16 slices 3.4 / 3.3 / 3.7, with 66 5.1 / 5.1 / 7.2; 512 x 512 with 16 6.6 / 5.0 / 4.9;
// 1024 x 1024 with 8 16.5 / 10.3 / 8.7; 4 x 16 with 32 2.6 / 2.7 / 3.6.
// And 32 rows of 8 lanes where the outputs are a few packs and the slices many (a GEMV-like product split over
// the SMs: the fallback's 1 x 4 x 16384, 128 slices, 9.7 us the call against 12.1 with 8 rows of 32 lanes, 28 of
// them idle; session 43, H200).
int choose_groups(int slices, int64_t packs) {
  return packs <= 8 && slices >= 64 ? 32 : slices >= 32 ? 8 : packs >= 65536 ? 1 : 4;
}

// Launches the reduction on Hopper (sm_90) as a programmatic dependent of the product before it on
// the stream: its blocks are scheduled as the product's last blocks exit instead of after the product
// has completed, which takes the launch gap (~1.2 us between the two kernels at 256 x 256 x 131072,
// notes/measurements.md) out of the call. PYCUTLASS_GEMM_PDL=0 turns it off (a plain launch; the
// kernel's wait is then a no-op; gemm_problem.h). sm_90 only: that is the build with the wait
// (sm_90a); other GPUs run the compute_80 PTX, which has none, so they launch plainly.
template <typename Kernel, typename... Args>
void launch_after_product(const GemmProblem& p, int blocks, int threads, Kernel kernel, Args... args) {
  cudaLaunchAttribute after_product{};
  after_product.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  after_product.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(threads);
  config.stream = reinterpret_cast<cudaStream_t>(p.stream);
  config.attrs = &after_product;
  config.numAttrs = programmatic_launch_allowed() && p.sm == 90 ? 1 : 0;
  check_launch("split-K reduction", cudaLaunchKernelEx(&config, kernel, args...));
}

// Whether D takes kRowPacks: each pack of 4 outputs (in the m x n order of the partials) is 4 adjacent elements of
// one row of D, at a multiple of 4 elements from an aligned pointer (one vector store).
template <typename T>
bool row_packs_of_d(const GemmProblem& p) {
  const auto multiple_of_4 = [](int64_t stride, int64_t extent) { return extent <= 1 || stride % 4 == 0; };
  return p.n % 4 == 0 && p.d.col_stride == 1 && multiple_of_4(p.d.row_stride, p.m) &&
         multiple_of_4(p.d.batch_stride, p.batch) && reinterpret_cast<uintptr_t>(p.d.ptr) % (4 * sizeof(T)) == 0;
}

}  // namespace

void sum_split_k_partials(const GemmProblem& p, int slices, const void* partials, PartialType type) {
  const int64_t total = p.batch * p.m * p.n;
  if (total == 0) return;
  const bool in_output_type = type == PartialType::kOutput;
  const size_t pack_bytes = in_output_type && p.dtype != DType::F32 ? 8 : 16;
  const bool by4 = p.dtype != DType::F64 && total % 4 == 0 && reinterpret_cast<uintptr_t>(partials) % pack_bytes == 0;
  const int64_t packs = by4 ? total / 4 : total;
  const bool narrow = total < (int64_t(1) << 31);  // 32-bit indices
  dispatch_dtype(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = typename AccumulatorOf<T>::type;
    const auto sum = [&](auto partial_tag) {
      using P = typename decltype(partial_tag)::type;
      const auto* typed = static_cast<const P*>(partials);
      const auto launch = [&](auto kernel, int lanes, int groups) {
        const int blocks = static_cast<int>(std::min<int64_t>((packs + lanes - 1) / lanes, 65535));
        launch_after_product(p, blocks, lanes * groups, kernel, p.m, p.n, p.batch, slices, typed, strided<T>(p.c),
                             strided<T>(p.d), Acc(p.alpha), Acc(p.beta));
      };
      const int groups = choose_groups(slices, packs);
      if constexpr (std::is_same_v<Acc, float>) {
        if (by4 && narrow) {
          const auto launch_by4 = [&](auto row_packs) {
            constexpr bool kRows = decltype(row_packs)::value;
            switch (groups) {
              case 1: return launch(sum_partials_kernel<T, P, 4, 256, 1, uint32_t, kRows>, 256, 1);
              case 4: return launch(sum_partials_kernel<T, P, 4, 32, 4, uint32_t, kRows>, 32, 4);
              case 8: return launch(sum_partials_kernel<T, P, 4, 32, 8, uint32_t, kRows>, 32, 8);
              default: return launch(sum_partials_kernel<T, P, 4, 8, 32, uint32_t, kRows>, 8, 32);
            }
          };
          if (row_packs_of_d<T>(p)) return launch_by4(std::true_type{});
          return launch_by4(std::false_type{});
        }
        if (by4) return launch(sum_partials_kernel<T, P, 4, 32, 8, int64_t>, 32, 8);
      }
      if (narrow && groups == 32) return launch(sum_partials_kernel<T, P, 1, 8, 32, uint32_t>, 8, 32);
      launch(sum_partials_kernel<T, P, 1, 32, 8, int64_t>, 32, 8);
    };
    if (in_output_type)
      sum(TypeTag<T>{});
    else
      sum(TypeTag<Acc>{});
  });
}

}  // namespace pycutlass_gemm
