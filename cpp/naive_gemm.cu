// The baseline users had: one thread per output element, looping over K.
// Neighbouring threads take neighbouring columns of D, so with B transposed
// they read B addresses K apart -- slow on purpose; it is what we measure against.
#include "registry.h"
#include "strided_gemm.cuh"

namespace pycutlass_gemm {
namespace {

template <typename T>
__global__ void naive_gemm_kernel(int64_t m, int64_t n, int64_t k, StridedMatrix<T> a, StridedMatrix<T> b,
                                  StridedMatrix<T> c, StridedMatrix<T> d, double alpha, double beta) {
  using Acc = typename AccumulatorOf<T>::type;
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y;
  const int64_t batch = blockIdx.z;
  if (i >= m || j >= n) return;
  Acc acc = 0;
  for (int64_t kk = 0; kk < k; ++kk) acc += to_acc<Acc>(a.at(batch, i, kk)) * to_acc<Acc>(b.at(batch, kk, j));
  store_epilogue(c, d, Acc(alpha), Acc(beta), batch, i, j, acc);
}

class NaiveGemm final : public StridedGemmKernel {
 public:
  explicit NaiveGemm(DType dtype) : StridedGemmKernel("naive", dtype, "1 output per thread, 32x8 threads", -1, 8) {}

  void run(const GemmProblem& p, void*) const override {
    if (p.m == 0 || p.n == 0) return;
    const dim3 block(32, 8);
    const dim3 grid((p.n + 31) / 32, (p.m + 7) / 8, p.batch);
    dispatch_dtype(p.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      naive_gemm_kernel<T><<<grid, block, 0, reinterpret_cast<cudaStream_t>(p.stream)>>>(
          p.m, p.n, p.k, strided<T>(p.a), strided<T>(p.b), strided<T>(p.c), strided<T>(p.d), p.alpha, p.beta);
    });
    check_launch("naive");
  }
};

}  // namespace

void register_naive_kernels(std::vector<const GemmKernel*>& out) { register_every_dtype<NaiveGemm>(out); }

}  // namespace pycutlass_gemm
