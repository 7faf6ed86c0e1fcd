#include "gemm_problem.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <tuple>

#include <cuda.h>
#include <cuda_runtime.h>

namespace pycutlass_gemm {

const char* dtype_name(DType d) {
  switch (d) {
    case DType::F32: return "float32";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    case DType::F64: return "float64";
  }
  return "?";
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Row: return "row";
    case Layout::Col: return "col";
    case Layout::Strided: return "any";
  }
  return "?";
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::Ieee: return "ieee";
    case Precision::Tf32: return "tf32";
    case Precision::Tf32x3: return "tf32x3";
  }
  return "?";
}

bool math_allowed(Precision math, Precision precision) { return math == Precision::Ieee || math == precision; }

int alignment_bytes(int64_t bytes) {
  int alignment = 16;
  while (alignment > 1 && bytes % alignment != 0) alignment /= 2;
  return alignment;
}

int dtype_size(DType d) {
  switch (d) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::F64: return 8;
  }
  return 0;
}

bool MatrixRef::is(Layout l) const {
  // A row (column) of one element may have any stride: torch gives such
  // dimensions arbitrary strides, and `x.T` of an (n, 1) tensor must still count.
  switch (l) {
    case Layout::Row: return (col_stride == 1 || cols <= 1) && (row_stride >= cols || rows <= 1);
    case Layout::Col: return (row_stride == 1 || rows <= 1) && (col_stride >= rows || cols <= 1);
    case Layout::Strided: return true;
  }
  return false;
}

Layout MatrixRef::layout() const {
  const bool row = is(Layout::Row), col = is(Layout::Col);
  if (row && col) return cols >= rows ? Layout::Row : Layout::Col;  // vectors and 1x1
  if (row) return Layout::Row;
  if (col) return Layout::Col;
  return Layout::Strided;
}

int64_t MatrixRef::ld(Layout l) const {
  switch (l) {
    case Layout::Row: return rows <= 1 ? std::max<int64_t>(cols, 1) : row_stride;
    case Layout::Col: return cols <= 1 ? std::max<int64_t>(rows, 1) : col_stride;
    case Layout::Strided: break;
  }
  return 0;
}

static bool aligned(const void* ptr, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(ptr) % static_cast<uintptr_t>(bytes) == 0;
}

bool is_empty(const GemmProblem& p) { return p.m == 0 || p.n == 0 || p.k == 0 || p.batch == 0; }

int64_t tile_count(int64_t m, int64_t n, int64_t batch, int64_t tile_m, int64_t tile_n, int64_t cluster_m,
                   int64_t cluster_n) {
  const auto sides = [](int64_t size, int64_t tile, int64_t cluster) {
    return ((size + tile - 1) / tile + cluster - 1) / cluster * cluster;
  };
  return sides(m, tile_m, cluster_m) * sides(n, tile_n, cluster_n) * batch;
}

int64_t cluster_slots(int64_t sms, int64_t cluster_size) {
  if (cluster_size == 4) return sms * 120 / 132;
  return std::max<int64_t>(sms / cluster_size * cluster_size, cluster_size);
}

double tile_fill(int64_t m, int64_t n, int64_t batch, int64_t tile_m, int64_t tile_n, int64_t sms,
                 int64_t cluster_m, int64_t cluster_n) {
  if (m <= 0 || n <= 0 || batch <= 0 || tile_m <= 0 || tile_n <= 0) return 0.0;
  const int64_t tiles = tile_count(m, n, batch, tile_m, tile_n, cluster_m, cluster_n);
  const int64_t wave = sms > 0 ? cluster_slots(sms, cluster_m * cluster_n) : 0;
  const int64_t slots = wave > 0 ? (tiles + wave - 1) / wave * wave : tiles;  // tiles the SMs' waves could compute
  return static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(batch) /
         (static_cast<double>(slots) * static_cast<double>(tile_m * tile_n));
}

MatrixRef matrix_of(const void* ptr, int64_t batch, const int64_t* size, const int64_t* stride, int dim) {
  const int64_t batch_stride = dim == 3 && size[0] == batch && batch > 1 ? stride[0] : 0;
  return MatrixRef{ptr, size[dim - 2], size[dim - 1], stride[dim - 2], stride[dim - 1], batch_stride};
}

bool has_bias_row(const GemmProblem& p) {
  return p.beta == 1.0 && p.batch == 1 && p.c.rows > 1 && p.c.row_stride == 0 && (p.c.col_stride == 1 || p.c.cols <= 1);
}

std::string check_common(const KernelInfo& info, const GemmProblem& p) {
  if (p.sm < info.sm_min || p.sm > info.sm_max)
    return "needs compute capability " + std::to_string(info.sm_min) +
           (info.sm_max != info.sm_min ? ".." + std::to_string(info.sm_max) : "") +
           ", device has " + std::to_string(p.sm);
  if (p.dtype != info.dtype)
    return std::string("built for ") + dtype_name(info.dtype) + ", inputs are " + dtype_name(p.dtype);
  if (!math_allowed(info.math, p.precision))
    return std::string("computes as ") + precision_name(info.math) + "; precision is '" + precision_name(p.precision) +
           "'";
  for (const auto& [name, ref, built_for] : {std::tuple{"A", &p.a, info.a_layout}, std::tuple{"B", &p.b, info.b_layout}}) {
    if (ref->is(built_for)) continue;
    const Layout is = ref->layout();
    return std::string("built for ") + layout_name(built_for) + "-major " + name + ", " + name + " is " +
           (is == Layout::Strided ? "neither row- nor column-major" : std::string(layout_name(is)) + "-major");
  }
  // Every kernel but the strided ones writes (and reads C) row-major.
  const bool strided_ok = info.family == "naive" || info.family == "fallback";
  if (!strided_ok && !p.d.is(Layout::Row)) return "needs a row-major output";
  const bool bias_row = info.takes_bias_row && has_bias_row(p);
  if (!strided_ok && p.beta != 0.0 && !p.c.is(Layout::Row) && !bias_row)
    return info.takes_bias_row ? "needs a row-major C, or a bias row with beta 1" : "needs a row-major C";
  const int output_alignment = info.output_alignment > 0 ? info.output_alignment : info.alignment;
  struct Named { const char* name; const MatrixRef* ref; Layout layout; int alignment; };
  const Named operands[] = {{"A", &p.a, info.a_layout, info.alignment},
                            {"B", &p.b, info.b_layout, info.alignment},
                            {"C", &p.c, Layout::Row, output_alignment},
                            {"D", &p.d, Layout::Row, output_alignment}};
  for (const Named& o : operands) {
    if (o.alignment <= 1 || (o.ref == &p.c && p.beta == 0.0)) continue;
    const int64_t bytes = static_cast<int64_t>(o.alignment) * dtype_size(p.dtype);
    if (!aligned(o.ref->ptr, bytes))
      return std::string("needs ") + std::to_string(bytes) + "-byte aligned " + o.name + " pointer";
    if (o.ref->ld(o.layout) % o.alignment != 0)
      return std::string("needs the leading dimension of ") + o.name + " to be a multiple of " +
             std::to_string(o.alignment) + " elements (" + std::to_string(bytes) + " bytes), it is " +
             std::to_string(o.ref->ld(o.layout));
    if (p.batch > 1 && o.ref->batch_stride % o.alignment != 0)
      return std::string("needs the batch stride of ") + o.name + " to be a multiple of " +
             std::to_string(o.alignment) + " elements";
  }
  return "";
}

bool programmatic_launch_allowed() {
  static const bool allowed = [] {
    const char* env = std::getenv("PYCUTLASS_GEMM_PDL");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }();
  return allowed;
}

void check_launch(const char* kernel_name) { check_launch(kernel_name, static_cast<int>(cudaGetLastError())); }

void check_launch(const char* kernel_name, int launch_error) {
  const auto err = static_cast<cudaError_t>(launch_error);
  if (err == cudaSuccess) return;
  cudaGetLastError();  // a launch call's error is also the thread's last one: cleared
  throw std::runtime_error(std::string(kernel_name) + ": CUDA error " + cudaGetErrorName(err) + ": " +
                           cudaGetErrorString(err));
}

int64_t readable_bytes(const void* ptr, int64_t used) {
  // cuPointerGetAttributes from the driver the runtime loaded (the module links only cudart): looked up once.
  using GetAttributes = CUresult (*)(unsigned int, CUpointer_attribute*, void**, CUdeviceptr);
  static const GetAttributes get_attributes = []() -> GetAttributes {
    const char* env = std::getenv("PYCUTLASS_GEMM_READ_PAST_EDGE");  // 0: TMA fills the rows past the edge
    if (env != nullptr && std::strcmp(env, "0") == 0) return nullptr;
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuPointerGetAttributes", &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return reinterpret_cast<GetAttributes>(fn);
  }();
  if (ptr == nullptr || get_attributes == nullptr) return used;
  CUdeviceptr base = 0;
  size_t size = 0;
  unsigned int memory_type = 0;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,
                                      CU_POINTER_ATTRIBUTE_MAPPING_SIZE};
  void* values[] = {&memory_type, &base, &size};
  const auto address = reinterpret_cast<CUdeviceptr>(ptr);
  if (get_attributes(3, attributes, values, address) != CUDA_SUCCESS || memory_type != CU_MEMORYTYPE_DEVICE ||
      size == 0 || address < base)
    return used;
  return std::max<int64_t>(used, static_cast<int64_t>(base + size - address));
}

}  // namespace pycutlass_gemm
