// What the naive and fallback kernels share: element access through arbitrary
// strides, the alpha/beta epilogue, and one kernel object per dtype.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <vector>

#include "gemm_problem.h"

namespace pycutlass_gemm {

// Accumulate in fp32, except fp64 inputs (their path exists for gradcheck).
template <typename T> struct AccumulatorOf { using type = float; };
template <> struct AccumulatorOf<double> { using type = double; };

template <typename Acc, typename T> __device__ __forceinline__ Acc to_acc(T v) { return static_cast<Acc>(v); }
template <> __device__ __forceinline__ float to_acc<float, __half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_acc<float, __nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T, typename Acc> __device__ __forceinline__ T from_acc(Acc v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ __half from_acc<__half, float>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16, float>(float v) { return __float2bfloat16_rn(v); }

// A matrix as the device sees it: element (i, j) of batch b.
template <typename T>
struct StridedMatrix {
  T* ptr;
  int64_t row_stride, col_stride, batch_stride;
  __device__ __forceinline__ T& at(int64_t b, int64_t i, int64_t j) const {
    return ptr[b * batch_stride + i * row_stride + j * col_stride];
  }
};

template <typename T>
StridedMatrix<T> strided(const MatrixRef& r) {
  return {static_cast<T*>(const_cast<void*>(r.ptr)), r.row_stride, r.col_stride, r.batch_stride};
}

// D = alpha * acc + beta * C, C read only when beta != 0 (it may be unset then).
template <typename T, typename Acc>
__device__ __forceinline__ void store_epilogue(const StridedMatrix<T>& c, const StridedMatrix<T>& d, Acc alpha,
                                               Acc beta, int64_t b, int64_t i, int64_t j, Acc acc) {
  Acc v = alpha * acc;
  if (beta != Acc(0)) v += beta * to_acc<Acc>(c.at(b, i, j));
  d.at(b, i, j) = from_acc<T>(v);
}

template <typename T> struct TypeTag { using type = T; };

// Calls f(TypeTag<T>{}) with T the CUDA element type of `dtype`.
template <typename F>
void dispatch_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::F32: f(TypeTag<float>{}); break;
    case DType::F16: f(TypeTag<__half>{}); break;
    case DType::BF16: f(TypeTag<__nv_bfloat16>{}); break;
    case DType::F64: f(TypeTag<double>{}); break;
  }
}

// The naive and fallback kernels take any stride and any alignment: one object
// per dtype, all with the family's name, so `variant="fallback"` finds the one
// for the inputs' dtype.
class StridedGemmKernel : public GemmKernel {
 public:
  // rows_per_block: rows of D one thread block covers (grid.y is at most 65535).
  StridedGemmKernel(const char* family, DType dtype, const char* tile, int priority, int64_t rows_per_block)
      : info_{family, family, dtype, Precision::Ieee, Layout::Strided, Layout::Strided, 80, 999, tile, 1, priority},
        rows_per_block_(rows_per_block) {}
  const KernelInfo& info() const override { return info_; }
  std::string can_implement(const GemmProblem& p) const override {
    std::string why = check_common(info_, p);
    if (!why.empty()) return why;
    if (p.batch > 65535) return "at most 65535 batches";
    if ((p.m + rows_per_block_ - 1) / rows_per_block_ > 65535)
      return "at most " + std::to_string(65535 * rows_per_block_) + " rows";
    return "";
  }

 private:
  KernelInfo info_;
  int64_t rows_per_block_;
};

template <typename Kernel>
void register_every_dtype(std::vector<const GemmKernel*>& out) {
  static const Kernel kernels[] = {Kernel(DType::F32), Kernel(DType::F16), Kernel(DType::BF16),
                                   Kernel(DType::F64)};
  for (const Kernel& k : kernels) out.push_back(&k);
}

}  // namespace pycutlass_gemm
