// Parallel split-K's reduction (split_k_reduce.h).
#include "split_k_reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "strided_gemm.cuh"

namespace pycutlass_gemm {
namespace {

// A block sums kOutputs consecutive packs of kVec outputs; its kGroups rows of threads split each
// output's slices (row g adds slices g, g + kGroups, ..., in order) and row 0 then adds the rows'
// sums in order and applies the epilogue. A fixed order, so deterministic, and the same bits for
// both pack widths (for at most kGroups slices, the plain slice order). One thread an output
// running through all the slices (before: 256 x 256 x 524288's 66 slices, 64 blocks) waited on
// each round of loads in turn: 9.6 us for 17 MB of partials that L2 holds; the rows put kGroups
// times more loads in flight over all SMs.
constexpr int kOutputs = 32, kGroups = 8;

// kVec = 4: fp32 partials read as float4 (the caller checks alignment and a multiple of 4
// outputs); D and C are written and read element by element, at any alignment.
template <typename T, int kVec>
__global__ void __launch_bounds__(kOutputs * kGroups)
    sum_partials_kernel(int64_t m, int64_t n, int64_t batch, int slices,
                        const typename AccumulatorOf<T>::type* __restrict__ partials, StridedMatrix<T> c,
                        StridedMatrix<T> d, typename AccumulatorOf<T>::type alpha,
                        typename AccumulatorOf<T>::type beta) {
  using Acc = typename AccumulatorOf<T>::type;
  static_assert(kVec == 1 || (kVec == 4 && std::is_same_v<Acc, float>), "float4 packs of fp32 partials");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Launched as the product's programmatic dependent (launch_after_product): the blocks may start
  // while the product's last blocks finish; this waits until it has completed and its partials
  // are visible. A no-op for a plain launch.
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  __shared__ Acc row_sums[kGroups][kOutputs * kVec];
  const int64_t total = batch * m * n, packs = total / kVec;
  const int lane = threadIdx.x % kOutputs, group = threadIdx.x / kOutputs;
  for (int64_t first = blockIdx.x * int64_t(kOutputs); first < packs; first += int64_t(gridDim.x) * kOutputs) {
    const int64_t pack = first + lane;
    Acc sum[kVec] = {};
    if (pack < packs) {
#pragma unroll 4
      for (int s = group; s < slices; s += kGroups) {
        if constexpr (kVec == 4) {
          const float4 v = reinterpret_cast<const float4*>(partials)[s * packs + pack];
          sum[0] += v.x, sum[1] += v.y, sum[2] += v.z, sum[3] += v.w;
        } else {
          sum[0] += partials[s * total + pack];
        }
      }
    }
#pragma unroll
    for (int q = 0; q < kVec; ++q) row_sums[group][lane * kVec + q] = sum[q];
    __syncthreads();
    if (group == 0 && pack < packs) {
#pragma unroll
      for (int q = 0; q < kVec; ++q) {
        Acc out = row_sums[0][lane * kVec + q];
#pragma unroll
        for (int g = 1; g < kGroups; ++g) out += row_sums[g][lane * kVec + q];
        const int64_t e = pack * kVec + q, bz = e / (m * n), i = (e / n) % m, j = e % n;
        store_epilogue(c, d, alpha, beta, bz, i, j, out);
      }
    }
    __syncthreads();  // the next packs overwrite row_sums
  }
}

// Launches the reduction on Hopper (sm_90) as a programmatic dependent of
// the product before it on the stream: its blocks are scheduled as the product's last blocks exit
// instead of after the product has completed, which takes the launch gap (~1.2 us between the two
// kernels at 256 x 256 x 131072, notes/measurements.md) out of the call. PYCUTLASS_GEMM_PDL=0 turns
// it off (a plain launch; the kernel's wait is then a no-op). sm_90 only: that is the build with the
// wait (sm_90a); other GPUs run the compute_80 PTX, which has none, so they launch plainly.
template <typename Kernel, typename... Args>
void launch_after_product(const GemmProblem& p, int blocks, Kernel kernel, Args... args) {
  static const bool pdl_allowed = [] {
    const char* env = std::getenv("PYCUTLASS_GEMM_PDL");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }();
  cudaLaunchAttribute after_product{};
  after_product.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  after_product.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(kOutputs * kGroups);
  config.stream = reinterpret_cast<cudaStream_t>(p.stream);
  config.attrs = &after_product;
  config.numAttrs = pdl_allowed && p.sm == 90 ? 1 : 0;
  const cudaError_t err = cudaLaunchKernelEx(&config, kernel, args...);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear it, so the context stays usable
    throw std::runtime_error(std::string("split-K reduction: CUDA error ") + cudaGetErrorName(err) + ": " +
                             cudaGetErrorString(err));
  }
}

}  // namespace

void sum_split_k_partials(const GemmProblem& p, int slices, const void* partials) {
  const int64_t total = p.batch * p.m * p.n;
  if (total == 0) return;
  const bool by4 = p.dtype != DType::F64 && total % 4 == 0 && reinterpret_cast<uintptr_t>(partials) % 16 == 0;
  const int64_t packs = by4 ? total / 4 : total;
  const int blocks = static_cast<int>(std::min<int64_t>((packs + kOutputs - 1) / kOutputs, 65535));
  dispatch_dtype(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = typename AccumulatorOf<T>::type;
    const auto* acc = static_cast<const Acc*>(partials);
    if constexpr (std::is_same_v<Acc, float>) {
      if (by4) {
        launch_after_product(p, blocks, sum_partials_kernel<T, 4>, p.m, p.n, p.batch, slices, acc, strided<T>(p.c),
                             strided<T>(p.d), Acc(p.alpha), Acc(p.beta));
        return;
      }
    }
    launch_after_product(p, blocks, sum_partials_kernel<T, 1>, p.m, p.n, p.batch, slices, acc, strided<T>(p.c),
                         strided<T>(p.d), Acc(p.alpha), Acc(p.beta));
  });
}

}  // namespace pycutlass_gemm
