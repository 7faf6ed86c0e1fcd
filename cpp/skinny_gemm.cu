// Decode-time products: x @ W.T with a few rows of x (m <= 64) against a large weight W (n x k,
// row-major: B = W.T is column-major). Such a product reads all of W once and x many times, so it
// is a matter of streaming W from HBM on every SM at full bandwidth; the tile kernels spend their
// 128-row tiles on rows x does not have (tracker issue 10: cuBLAS and Triton reach 48% of the HBM
// floor at m = 16).
//
// A warp owns 8 rows of W (one n8 tile of mma.sync m16n8k16) and a share of K; each lane loads 16
// bytes of its W row per 32-element chunk, 4 chunks in flight, and the matching 16 bytes of each
// x row (L1-resident: the block's warps read the same x). Summation over K does not care in which
// order the elements of a chunk are paired, so one 16-byte load feeds two mma steps directly from
// registers: lane (g, t) holds W[n0 + g][8t .. 8t + 7] and x[row][8t .. 8t + 7], and mma step s
// takes elements 8t + 4s .. 8t + 4s + 3 of both as the fragment's k = 2t, 2t+1, 2t+8, 2t+9.
// A block is 4 such n8 tiles x 4 warps splitting K (512 threads, 32 KB of W in flight), reduced
// through shared memory; when n has too few 32-row blocks to fill the SMs, K is split across
// blocks too, each writing fp32 partials that a second kernel sums in a fixed order (deterministic).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "registry.h"

namespace pycutlass_gemm {
namespace {

constexpr int kWarpsN = 4;                        // n8 tiles of W a block: 32 rows
constexpr int kWarpsK = 4;                        // warps sharing those rows, taking turns over K's chunks
constexpr int kThreads = 32 * kWarpsN * kWarpsK;  // 512
constexpr int kRowsPerBlock = 8 * kWarpsN;
constexpr int kChunk = 32;                        // elements of K a warp takes per step (16 bytes a lane)
constexpr int kUnroll = 4;                        // chunks a warp has in flight
constexpr int kMaxM = 64;                         // up to 4 m16 tiles of x
constexpr int64_t kMinKPerSplit = 2048;

struct Params {
  const void* a;  // x: m x k, row-major
  const void* b;  // W: n x k, row-major (B = W.T)
  const void* c;  // C: row stride ldc (0: a bias row), contiguous columns; read when beta != 0
  void* d;        // D: m x n, row-major
  int64_t lda, ldb, ldc, ldd;
  int64_t m, n, k, k_per_split;
  float alpha, beta;
  float* partials;  // [splits][m][n] when K is split across blocks
};

template <typename T>
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// W is read once: streaming loads (evict first), so that x stays in L1.
__device__ __forceinline__ uint4 load_stream(const void* p, bool ok) {
  return ok ? __ldcs(static_cast<const uint4*>(p)) : make_uint4(0, 0, 0, 0);
}
__device__ __forceinline__ uint4 load_cached(const void* p, bool ok) {
  return ok ? __ldg(static_cast<const uint4*>(p)) : make_uint4(0, 0, 0, 0);
}

template <typename T>
__device__ __forceinline__ float to_float(T v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v); else return __half2float(v);
}
template <typename T>
__device__ __forceinline__ T from_float(float v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v); else return __float2half_rn(v);
}

template <typename T>
__device__ __forceinline__ void store_output(const Params& p, int64_t row, int64_t col, float acc) {
  if (row >= p.m || col >= p.n) return;
  float v = p.alpha * acc;
  if (p.beta != 0.0f) v += p.beta * to_float(static_cast<const T*>(p.c)[row * p.ldc + col]);
  static_cast<T*>(p.d)[row * p.ldd + col] = from_float<T>(v);
}

template <typename T, int kTiles>
__global__ void __launch_bounds__(kThreads) skinny_gemm_kernel(Params p) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wn = warp % kWarpsN, wk = warp / kWarpsN;
  const int g = lane / 4, t = lane % 4;
  const int64_t n0 = (int64_t(blockIdx.x) * kWarpsN + wn) * 8;
  const bool w_ok = n0 + g < p.n;
  const T* w_row = static_cast<const T*>(p.b) + (w_ok ? n0 + g : 0) * p.ldb;
  const T* x = static_cast<const T*>(p.a);
  const int64_t k_begin = int64_t(blockIdx.y) * p.k_per_split;
  const int64_t k_end = p.k < k_begin + p.k_per_split ? p.k : k_begin + p.k_per_split;  // a multiple of 8 long
  const int64_t chunks = (k_end - k_begin + kChunk - 1) / kChunk;

  float acc[kTiles][4] = {};
  for (int64_t c0 = wk; c0 < chunks; c0 += int64_t(kWarpsK) * kUnroll) {
    uint4 w[kUnroll], a[kUnroll][kTiles][2];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t kk = k_begin + (c0 + int64_t(u) * kWarpsK) * kChunk + 8 * t;
      const bool k_ok = kk < k_end;
      w[u] = load_stream(w_row + kk, w_ok && k_ok);
#pragma unroll
      for (int i = 0; i < kTiles; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int64_t row = 16 * i + 8 * h + g;
          a[u][i][h] = load_cached(x + (row < p.m ? row : 0) * p.lda + kk, k_ok && row < p.m);
        }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int i = 0; i < kTiles; ++i) {
        const uint4 lo = a[u][i][0], hi = a[u][i][1];
        mma_16816<T>(acc[i], {lo.x, hi.x, lo.y, hi.y}, w[u].x, w[u].y);
        mma_16816<T>(acc[i], {lo.z, hi.z, lo.w, hi.w}, w[u].z, w[u].w);
      }
  }

  // The kWarpsK warps of one n8 tile add their shares of K.
  __shared__ float shared[kWarpsK - 1][kWarpsN][kTiles * 4][32];
  if (wk > 0) {
#pragma unroll
    for (int i = 0; i < kTiles; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) shared[wk - 1][wn][4 * i + j][lane] = acc[i][j];
  }
  __syncthreads();
  if (wk > 0) return;
#pragma unroll
  for (int s = 0; s < kWarpsK - 1; ++s)
#pragma unroll
    for (int i = 0; i < kTiles; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] += shared[s][wn][4 * i + j][lane];

  // Accumulator fragment: acc[i][2h + e] is row 16i + 8h + g, column n0 + 2t + e.
#pragma unroll
  for (int i = 0; i < kTiles; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int64_t row = 16 * i + 8 * h + g, col = n0 + 2 * t + e;
        if (gridDim.y == 1) {
          store_output<T>(p, row, col, acc[i][2 * h + e]);
        } else if (row < p.m && col < p.n) {
          p.partials[(int64_t(blockIdx.y) * p.m + row) * p.n + col] = acc[i][2 * h + e];
        }
      }
}

template <typename T>
__global__ void sum_splits_kernel(Params p, int splits) {
  const int64_t total = p.m * p.n;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int s = 0; s < splits; ++s) sum += p.partials[s * total + e];  // a fixed order: deterministic
    store_output<T>(p, e / p.n, e % p.n, sum);
  }
}

int tiles_for(int64_t m) { return m <= 16 ? 1 : m <= 32 ? 2 : 4; }

// Blocks across K when the 32-row blocks cannot occupy half the SMs, each split at least
// kMinKPerSplit long (a multiple of the chunk).
int64_t splits_for(const GemmProblem& p) {
  const int64_t blocks = (p.n + kRowsPerBlock - 1) / kRowsPerBlock;
  const int64_t sms = p.sm_count > 0 ? p.sm_count : 132;
  if (2 * blocks >= sms) return 1;
  return std::max<int64_t>(1, std::min<int64_t>({(sms + blocks - 1) / blocks, p.k / kMinKPerSplit, 32}));
}

int64_t k_per_split(const GemmProblem& p, int64_t splits) {
  const int64_t per = (p.k + splits - 1) / splits;
  return (per + kChunk - 1) / kChunk * kChunk;
}

template <typename T>
class SkinnyGemm final : public GemmKernel {
 public:
  SkinnyGemm(const char* name, DType dtype)
      : info_{name, "skinny", dtype, Precision::Ieee, Layout::Row, Layout::Col, 80, 90,
              "x @ W.T for m <= 64: warps of 8 W rows stream K (mma.sync m16n8k16 from registers), "
              "split-K across blocks for narrow W",
              8, kPriority, /*takes_bias_row=*/true} {}

  const KernelInfo& info() const override { return info_; }

  std::string can_implement(const GemmProblem& p) const override {
    std::string why = check_common(info_, p);
    if (!why.empty()) return why;
    if (p.m > kMaxM) return "takes m <= " + std::to_string(kMaxM) + " rows of A, has " + std::to_string(p.m);
    if (p.batch != 1) return "takes one product, not a batch";
    if (p.k % 8 != 0) return "needs k to be a multiple of 8 (16-byte loads of W's rows)";
    if (p.beta != 0.0 && p.c.col_stride != 1 && p.n > 1) return "needs C's columns contiguous";
    return "";
  }

  // Streaming W is what decode-time shapes need; the tile kernels do better once x has more rows.
  int priority(const GemmProblem& p) const override { return p.m <= 16 ? kPriority : kBehindTilesPriority; }

  size_t workspace_size(const GemmProblem& p) const override {
    const int64_t splits = splits_for(p);
    return splits > 1 ? size_t(splits) * p.m * p.n * sizeof(float) : 0;
  }

  void run(const GemmProblem& p, void* workspace) const override {
    const int64_t splits = splits_for(p);
    if (splits > 1 && workspace == nullptr) throw std::runtime_error(info_.name + ": split-K needs a workspace");
    Params params{p.a.ptr, p.b.ptr, p.c.ptr, const_cast<void*>(p.d.ptr),
                  p.a.ld(Layout::Row), p.b.ld(Layout::Col), p.c.row_stride, p.d.ld(Layout::Row),
                  p.m, p.n, p.k, k_per_split(p, splits), static_cast<float>(p.alpha), static_cast<float>(p.beta),
                  static_cast<float*>(workspace)};
    const cudaStream_t stream = reinterpret_cast<cudaStream_t>(p.stream);
    const dim3 grid(static_cast<unsigned>((p.n + kRowsPerBlock - 1) / kRowsPerBlock), static_cast<unsigned>(splits));
    switch (tiles_for(p.m)) {
      case 1: skinny_gemm_kernel<T, 1><<<grid, kThreads, 0, stream>>>(params); break;
      case 2: skinny_gemm_kernel<T, 2><<<grid, kThreads, 0, stream>>>(params); break;
      default: skinny_gemm_kernel<T, 4><<<grid, kThreads, 0, stream>>>(params); break;
    }
    check_launch(info_.name.c_str());
    if (splits > 1) {
      const int blocks = static_cast<int>(std::min<int64_t>((p.m * p.n + 255) / 256, 1024));
      sum_splits_kernel<T><<<blocks, 256, 0, stream>>>(params, static_cast<int>(splits));
      check_launch(info_.name.c_str());
    }
  }

 private:
  static constexpr int kPriority = 120;             // above the swap-AB stream-K kernels' 110 for m <= 16
  static constexpr int kBehindTilesPriority = 30;   // 16 < m <= 64: callable, measured by the sweep
  KernelInfo info_;
};

}  // namespace

void register_skinny_kernels(std::vector<const GemmKernel*>& out) {
  static const SkinnyGemm<__nv_bfloat16> bf16("skinny_bf16_rc_m64", DType::BF16);
  static const SkinnyGemm<__half> f16("skinny_f16_rc_m64", DType::F16);
  out.push_back(&bf16);
  out.push_back(&f16);
}

}  // namespace pycutlass_gemm
