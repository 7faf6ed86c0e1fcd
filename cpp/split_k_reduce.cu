// Parallel split-K's reduction (split_k_reduce.h).
#include "split_k_reduce.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "strided_gemm.cuh"

namespace pycutlass_gemm {
namespace {

// One thread an output element, consecutive threads along a row (coalesced in every slice). The
// partials were just written by the GEMM, so they come from L2: at the large-K workload (256 x 256,
// 64 slices) 17 MB.
template <typename T>
__global__ void sum_partials_kernel(int64_t m, int64_t n, int64_t batch, int slices,
                                    const typename AccumulatorOf<T>::type* __restrict__ partials,
                                    StridedMatrix<T> c, StridedMatrix<T> d, double alpha, double beta) {
  using Acc = typename AccumulatorOf<T>::type;
  const int64_t total = batch * m * n;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    Acc sum = 0;
#pragma unroll 8
    for (int s = 0; s < slices; ++s) sum += partials[s * total + e];
    const int64_t bz = e / (m * n), i = (e / n) % m, j = e % n;
    store_epilogue(c, d, Acc(alpha), Acc(beta), bz, i, j, sum);
  }
}

// The same sums for fp32 partials four outputs a thread, with 16-byte loads (the partials are
// contiguous; D and C are written and read element by element, at any alignment). Each output's
// slices are added in the same order as above, so the results are the same bits.
template <typename T>
__global__ void sum_partials_by4_kernel(int64_t m, int64_t n, int64_t batch, int slices,
                                        const float4* __restrict__ partials, StridedMatrix<T> c, StridedMatrix<T> d,
                                        float alpha, float beta) {
  const int64_t total4 = batch * m * n / 4;
  for (int64_t e4 = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e4 < total4;
       e4 += int64_t(gridDim.x) * blockDim.x) {
    float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll 8
    for (int s = 0; s < slices; ++s) {
      const float4 v = partials[s * total4 + e4];
      sum[0] += v.x, sum[1] += v.y, sum[2] += v.z, sum[3] += v.w;
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int64_t e = 4 * e4 + q, bz = e / (m * n), i = (e / n) % m, j = e % n;
      store_epilogue(c, d, alpha, beta, bz, i, j, sum[q]);
    }
  }
}

}  // namespace

void sum_split_k_partials(const GemmProblem& p, int slices, const void* partials) {
  const int64_t total = p.batch * p.m * p.n;
  if (total == 0) return;
  const auto stream = reinterpret_cast<cudaStream_t>(p.stream);
  const bool by4 = p.dtype != DType::F64 && total % 4 == 0 && reinterpret_cast<uintptr_t>(partials) % 16 == 0;
  const int blocks = static_cast<int>(std::min<int64_t>(((by4 ? total / 4 : total) + 255) / 256, 65535));
  dispatch_dtype(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = typename AccumulatorOf<T>::type;
    if constexpr (std::is_same_v<Acc, float>) {
      if (by4) {
        sum_partials_by4_kernel<T><<<blocks, 256, 0, stream>>>(p.m, p.n, p.batch, slices,
                                                               static_cast<const float4*>(partials), strided<T>(p.c),
                                                               strided<T>(p.d), float(p.alpha), float(p.beta));
        return;
      }
    }
    sum_partials_kernel<T><<<blocks, 256, 0, stream>>>(p.m, p.n, p.batch, slices, static_cast<const Acc*>(partials),
                                                       strided<T>(p.c), strided<T>(p.d), p.alpha, p.beta);
  });
  check_launch("split-K reduction");
}

}  // namespace pycutlass_gemm
